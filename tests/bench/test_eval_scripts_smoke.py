"""Every script of ``bench/eval`` runs on two tiny corpora, so a change that breaks one fails.

The corpora are two tiny Python "packages" served as sdists from a local folder (pip's
``--find-links``, no index), so ``fetch_corpus.py`` downloads, checks the sha256 of and commits
them as it does the real ones; the manifest (``--manifest``) and its query files are in a
temporary directory, the trees in ``BENCH_CORPORA_DIR``, and the scripts' database is one of
their own (``DATABASE_URL``, as ``manage.py`` reads it). Each script runs as its own process, as
a person runs it; a test checks it exits 0 and prints its figures, never what they are: with
three questions a corpus they mean nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.bench.script_runs import run_script
from tests.tiny_code import RETRY, SETTINGS, retry_test_source

# An in-tree PEP 517 backend with no requirements: ``pip download`` prepares the sdist's
# metadata without reaching an index for setuptools.
BACKEND = """import os


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(directory, config_settings=None):
    info = os.path.join(directory, "PACKAGE-1.0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as out:
        out.write("Metadata-Version: 2.1\\nName: PACKAGE\\nVersion: 1.0\\n")
    return os.path.basename(info)
"""
PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'

SLUGS = '''"""Turning titles into URL slugs."""

import re

RESERVED = {"admin", "api", "login"}


def slugify(title):
    """Lower-case ``title`` and join its words with hyphens."""
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words)


def check_reserved(slug):
    """Refuse a slug that names one of the site's own pages."""
    if slug in RESERVED:
        raise ValueError(f"{slug!r} is reserved")
    return slug
'''
SLUG_GUIDE = "# slugkit\n\n## Install\n\nRun pip install slugkit, then import slugify.\n"

PACKAGES = {
    "retrykit": {
        "src/retrykit/retry.py": RETRY,
        "src/retrykit/settings.py": SETTINGS,
        "tests/test_retry.py": retry_test_source("retrykit"),
        "README.md": "# retrykit\n\nRetry flaky calls with exponential backoff.\n",
    },
    "slugkit": {"src/slugkit/text.py": SLUGS, "README.md": SLUG_GUIDE},
}


def _expected(path: str, start: int, end: int, symbol: str = "", heading: str = "") -> dict:
    found = {"path": path, "start_line": start, "end_line": end}
    return {**found, "symbol": symbol} if symbol else {**found, "heading": heading}


QUESTIONS = {
    "retrykit": [
        ("ident", "retry_with_backoff", "identifier",
         _expected("src/retrykit/retry.py", 6, 13, "retry_with_backoff")),
        ("how", "where is the connection pool size read from the environment", "how",
         _expected("src/retrykit/settings.py", 14, 16, "load_settings_from_environment")),
        ("tests", "tests for retry with backoff", "tests",
         _expected("tests/test_retry.py", 4, 7, "test_retry_with_backoff_gives_up")),
    ],
    "slugkit": [
        ("how", "how are titles turned into url slugs", "how",
         _expected("src/slugkit/text.py", 8, 11, "slugify")),
        ("locate", "where are reserved words refused", "locate",
         _expected("src/slugkit/text.py", 14, 18, "check_reserved")),
        ("docs", "how do I install it", "docs", _expected("README.md", 3, 5, heading="Install")),
    ],
}  # fmt: skip


@dataclass
class TinyCorpora:
    env: dict[str, str]  # the scripts' database, the trees' folder, pip's local archives
    manifest: Path
    queries: dict[str, Path]  # corpus name -> its query file
    trees: Path
    fetched: str  # what fetch_corpus.py printed
    indexed: str  # what index_corpus.py printed

    def corpus_args(self) -> list[str]:
        """``--corpus NAME=QUERIES`` for every corpus (levers.py, centroid_intent.py)."""
        return [f"--corpus={name}={path}" for name, path in self.queries.items()]


def _sdist(package: str, files: dict[str, str], into: Path) -> Path:
    top = into / "source" / f"{package}-1.0"
    backend = BACKEND.replace("PACKAGE", package)
    for path, text in {**files, "pyproject.toml": PYPROJECT, "backend.py": backend}.items():
        (top / path).parent.mkdir(parents=True, exist_ok=True)
        (top / path).write_text(text)
    archive = into / "archives" / f"{package}-1.0.tar.gz"
    archive.parent.mkdir(exist_ok=True)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(top, arcname=top.name)
    return archive


@pytest.fixture(scope="module")
def corpora(migrated_database: str, tmp_path_factory: pytest.TempPathFactory) -> TinyCorpora:
    """Both corpora fetched (``fetch_corpus.py --all --check``) and indexed with their vectors
    (``index_corpus.py --split all``), as ``docs/evaluation.md`` has them prepared."""
    work = tmp_path_factory.mktemp("eval-corpora")
    entries, queries = [], {}
    for split, (package, files) in zip(("tune", "report"), PACKAGES.items(), strict=True):
        archive = _sdist(package, files, work)
        name = f"{package}-1.0"
        queries[name] = work / f"{package}-queries.json"
        rows = [
            {"id": qid, "query": text, "kind": kind, "expected": [expected]}
            for qid, text, kind, expected in QUESTIONS[package]
        ]
        queries[name].write_text(json.dumps({"corpus": {"package": package}, "queries": rows}))
        entries.append({
            "name": name, "language": "python", "source": "pypi", "package": package,
            "version": "1.0", "sha256": hashlib.sha256(archive.read_bytes()).hexdigest(),
            "split": split, "queries": str(queries[name]),
        })  # fmt: skip
    manifest = work / "corpora.json"
    manifest.write_text(json.dumps({"corpora": entries}))
    env = {
        "DATABASE_URL": migrated_database,
        "BENCH_CORPORA_DIR": str(work / "trees"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(work / "archives"),
    }
    fetched = run_script(
        "eval/fetch_corpus.py", "--manifest", str(manifest), "--all", "--check", env=env
    )
    indexed = run_script(
        "eval/index_corpus.py", "--manifest", str(manifest), "--split", "all", env=env
    )
    return TinyCorpora(env, manifest, queries, work / "trees", fetched, indexed)


def test_fetch_and_index_corpus(corpora: TinyCorpora) -> None:
    for package, count in (("retrykit", 3), ("slugkit", 3)):
        assert f"built {corpora.trees / package}-1.0 at " in corpora.fetched, corpora.fetched
        assert f"{package}-queries.json: {count} queries" in corpora.fetched
    assert corpora.fetched.count(" expected ranges, 0 problems") == 2, corpora.fetched
    for name, files in (("retrykit-1.0", 6), ("slugkit-1.0", 4)):  # with pyproject + backend
        line = re.search(
            rf"^{name}: (\d+) files, (\d+) chunks, (\d+) embedded, job done", corpora.indexed, re.M
        )
        assert line, corpora.indexed[-3000:]
        assert int(line[1]) == files and int(line[2]) == int(line[3]) > 0
    again = run_script(
        "eval/index_corpus.py", "--manifest", str(corpora.manifest), "--name", "slugkit-1.0",
        env=corpora.env,
    )  # fmt: skip
    assert re.search(r"^slugkit-1.0: indexed at [0-9a-f]{12}, \d+ chunks \(reused\)", again, re.M)


def test_list_chunks(corpora: TinyCorpora) -> None:
    output = run_script(
        "eval/list_chunks.py", "--manifest", str(corpora.manifest), "retrykit-1.0", "src", "tests",
        env=corpora.env,
    )  # fmt: skip
    assert "-- src/retrykit/retry.py:6-13 function retry_with_backoff" in output, output
    assert "T- tests/test_retry.py:4-7 function test_retry_with_backoff_gives_up" in output
    assert "README.md" not in output  # only the files asked for


def test_levers_and_centroid_intent(corpora: TinyCorpora, tmp_path: Path) -> None:
    levers = run_script(
        "eval/levers.py", *corpora.corpus_args(), "--levers", "no intent,k1 1.5", env=corpora.env
    )
    assert "retrykit-1.0: 3 queries, MRR@10" in levers, levers[-3000:]
    assert re.search(r"^\| k1 1\.5 \| \d\.\d{3} \| [+-]\d\.\d{3} \[", levers, re.M)
    assert "pooled over 2 corpora (6 queries), MRR@10" in levers
    vocab = run_script(
        "eval/vocab_expansion.py", *corpora.corpus_args(), "--levers", "vocab 0.5,vocab only 0.5",
        *("--cache", str(tmp_path / "cache")), env=corpora.env,
    )  # fmt: skip
    assert re.search(r"^\| vocab only 0\.5 \| \d\.\d{3} \| [+-]\d\.\d{3} \[", vocab, re.M), vocab
    assert (tmp_path / "cache" / "local_all-MiniLM-L6-v2_384.npz").exists()  # words embedded
    centroid = run_script(
        "eval/centroid_intent.py", *corpora.corpus_args(), "--margins", "0,0.05", env=corpora.env
    )
    assert re.search(r"^slugkit-1.0: defaults \d\.\d{3} \| margin 0\.0: ", centroid, re.M)
    assert re.search(r"^pooled margin 0\.05: [+-]\d\.\d{3} \[", centroid, re.M), centroid


def test_index_variants_paired(corpora: TinyCorpora) -> None:
    """index_variant.py and header_variant.py index a corpus again under another name;
    pair_repos.py pairs two repositories question by question."""
    manifest = ("--manifest", str(corpora.manifest))
    copied = run_script(
        "eval/index_variant.py", *manifest, "retrykit-1.0", "+copy", env=corpora.env
    )
    assert re.search(
        r"^retrykit-1.0\+copy: 6 files, \d+ chunks, \d+ embedded, job done", copied, re.M
    )
    assert (corpora.trees / "retrykit-1.0+copy" / ".git").is_dir()
    split = run_script(
        "eval/header_variant.py", *manifest, "retrykit-1.0", "+splitname", env=corpora.env
    )
    assert re.search(r"^retrykit-1.0\+splitname: 6 files, .* job done", split, re.M), split
    queries = str(corpora.queries["retrykit-1.0"])
    same = run_script(
        "eval/pair_repos.py", queries, "retrykit-1.0", "retrykit-1.0+copy", env=corpora.env
    )
    # The same tree, chunks and vectors: every question ranks alike.
    assert re.search(
        r"\[defaults\] \d\.\d{3}: \+0\.000 \[\+0\.000, \+0\.000\]$", same.splitlines()[0]
    ), same
    paired = run_script(
        "eval/pair_repos.py", queries, "retrykit-1.0", "retrykit-1.0+splitname", "defaults",
        "no intent", env=corpora.env,
    )  # fmt: skip
    assert re.match(
        r"retrykit-1.0 \[defaults\] \d\.\d{3} -> retrykit-1.0\+splitname \[no intent\]", paired
    )
    assert re.search(r"^  identifier: \d\.\d{3} -> \d\.\d{3}$", paired, re.M), paired


def test_ltr_capture_and_train(corpora: TinyCorpora, tmp_path: Path) -> None:
    captured = tmp_path / "ltr.json"
    output = run_script(
        "eval/ltr_capture.py", "--manifest", str(corpora.manifest), "--split", "all",
        *("--depth", "20", "--out", str(captured)), env=corpora.env,
    )  # fmt: skip
    assert "retrykit-1.0: 3 questions captured" in output and "slugkit-1.0: 3 questions" in output
    assert [c["corpus"] for c in json.loads(captured.read_text())["corpora"]] == [
        "retrykit-1.0",
        "slugkit-1.0",
    ]
    weights = tmp_path / "weights.json"
    trained = run_script(
        "eval/ltr_train.py", str(captured), *("--depth", "20", "--lambdas", "0.01,1"),
        *("--write", "--out", str(weights)), env=corpora.env,
    )  # fmt: skip
    assert "6 questions; replayed default top 10 equals the pipeline's for" in trained, trained
    assert re.search(
        r"^  lambda 0\.01: \d\.\d{3}  retrykit-1.0 \d\.\d{3}  slugkit-1.0", trained, re.M
    )
    model = json.loads(weights.read_text())
    assert len(model["weights"]) == len(model["features"]) > 0
    assert model["meta"]["corpora"] == ["retrykit-1.0", "slugkit-1.0"]
    # The same capture, replayed with a doc-summary vector list as a pool source and features.
    doc = run_script(
        "eval/doc_vector_ltr.py", str(captured), *("--depth", "20", "--lambdas", "0.01,1"),
        *("--cache", str(tmp_path / "cache")), env=corpora.env,
    )  # fmt: skip
    assert re.search(r"'questions': 6, 'answer_added': \d+, 'answer_in_doc_top': \d+", doc), doc
    assert re.search(r"^  lambda 1: \d\.\d{3} \| \d\.\d{3}  retrykit-1.0 ", doc, re.M), doc
    assert re.search(r"^best lambdas: base [\d.]+ \(\d\.\d{3}\), doc ", doc, re.M), doc


def test_granularity(corpora: TinyCorpora, tmp_path: Path) -> None:
    """granularity.py also runs doc_comments.py (a module: the prose of a chunk)."""
    report = tmp_path / "granularity.json"
    output = run_script(
        "eval/granularity.py", "--corpus", str(corpora.trees / "retrykit-1.0"),
        *("--queries", str(corpora.queries["retrykit-1.0"]), "--merge", "30"),
        *("--json", str(report), "--cache", str(tmp_path / "cache")), env=corpora.env,
    )  # fmt: skip
    variants = json.loads(report.read_text())["variants"]
    assert {"header+content", "content", "header+doc", "maxsim-doc", "merged<=30"} <= set(variants)
    assert {"doc-only", "rrf-doc"} <= set(variants)  # the second vector alone, and fused
    assert re.search(r"^header\+content +units +\d+  hit@1 \d\.\d{3}", output, re.M), output
    assert (tmp_path / "cache" / "local_all-MiniLM-L6-v2_384.npz").exists()


def _tiny_mpnet(folder: Path) -> Path:
    """An MPNet-shaped model of random numbers (one layer; the real model's width, 768, since
    the scripts store its vectors in the 768-dimension space) and a word-level tokenizer."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers

    model = folder / "all-mpnet-base-v2"
    model.mkdir(parents=True)
    words = ["<s>", "<pad>", "</s>", "<unk>", "how", "are", "where", "is", "the", "a", "session"]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(model / "tokenizer.json"))
    hidden, inner, heads, positions = 768, 32, 12, 40
    config = {
        "hidden_size": hidden, "num_attention_heads": heads, "num_hidden_layers": 1,
        "pad_token_id": 1, "layer_norm_eps": 1e-5,
    }  # fmt: skip
    (model / "config.json").write_text(json.dumps(config))
    (model / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 32}))
    rng = np.random.default_rng(16)

    def random(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    weights = {
        "embeddings.word_embeddings.weight": random(len(words), hidden),
        "embeddings.position_embeddings.weight": random(positions, hidden),
        "embeddings.LayerNorm.weight": np.ones(hidden, np.float32),
        "embeddings.LayerNorm.bias": random(hidden),
        "encoder.relative_attention_bias.weight": random(32, heads),
    }
    layer = "encoder.layer.0."
    for name in ("q", "k", "v", "o"):
        weights[f"{layer}attention.attn.{name}.weight"] = random(hidden, hidden)
        weights[f"{layer}attention.attn.{name}.bias"] = random(hidden)
    shapes = {"intermediate.dense": (inner, hidden), "output.dense": (hidden, inner)}
    for name, shape in shapes.items():
        weights[f"{layer}{name}.weight"] = random(*shape)
        weights[f"{layer}{name}.bias"] = random(shape[0])
    for norm in ("attention.LayerNorm", "output.LayerNorm"):
        weights[f"{layer}{norm}.weight"] = np.ones(hidden, np.float32)
        weights[f"{layer}{norm}.bias"] = random(hidden)
    save_file(weights, str(model / "model.safetensors"))
    return folder


def test_mpnet_runtime_encoder_hybrid_and_compare_runs(
    corpora: TinyCorpora, tmp_path: Path
) -> None:
    """mpnet_runtime.py on a stand-in for all-mpnet-base-v2 (random weights of its shape, so its
    418 MB are never downloaded here: it proves the forward pass runs, not that the vectors mean
    anything); encoder_hybrid.py with the built-in bge-small; compare_runs.py then pairs the
    run with MiniLM (``manage.py eval``) against the same run with bge-small."""
    folder = _tiny_mpnet(tmp_path / "mpnet")
    runtime = run_script("eval/mpnet_runtime.py", str(folder))
    assert re.search(
        r"all-mpnet-base-v2 \(3, 768\) cos\(q, related\) [-\d.e]+ cos\(q, other\)", runtime
    ), runtime
    split = ("--split", "all", "--manifest", str(corpora.manifest), "--configs", "vector,hybrid")
    before, after = tmp_path / "minilm.json", tmp_path / "bge.json"
    run_script("manage.py", "eval", *split, "--json", str(before), env=corpora.env)
    hybrid = run_script(
        "eval/encoder_hybrid.py", "bge-small-en-v1.5", *split, "--json", str(after),
        env=corpora.env,
    )  # fmt: skip
    assert re.search(r"^retrykit-1.0: \d+ texts with bge-small-en-v1.5 in ", hybrid, re.M), hybrid
    assert set(json.loads(after.read_text())["per_corpus"]) == {"retrykit-1.0", "slugkit-1.0"}
    compared = run_script(
        "eval/compare_runs.py", str(before), str(after), "--config", "vector", "--list",
        "--resamples", "200",
    )  # fmt: skip
    assert compared.startswith(f"{before} -> {after}, k=10"), compared
    assert re.search(r"^\d+ questions moved \(reciprocal rank before -> after", compared, re.M)


def test_ask_stream(corpora: TinyCorpora, model_server: Any, tmp_path: Path) -> None:
    """bench/ask_stream.py (streamed ask through uvicorn) with the tests' Ollama-speaking model
    server as the chat model, on an indexed tiny corpus."""
    model_server.chat_handler = lambda messages: "It sleeps longer after each failure [1]."
    report = tmp_path / "ask.json"
    chat = {
        "LLM_PROVIDER": "ollama", "LLM_EMBEDDING_PROVIDER": "local",
        "LLM_BASE_URL": model_server.url, "LLM_CHAT_MODEL": "llama3.2",
    }  # fmt: skip
    output = run_script(
        "ask_stream.py", "--repo", "retrykit-1.0", "--questions",
        str(corpora.queries["retrykit-1.0"]), *("--count", "2", "--k", "3"),
        "--json", str(report), env={**corpora.env, **chat},
    )  # fmt: skip
    answered = re.findall(r" ms sources +[\d.]+ ms first word +[\d.]+ ms done  json 200 ", output)
    assert len(answered) == 2, output
    summary = json.loads(report.read_text())["summary"]
    assert summary["questions"] == summary["answered"] == 2
    assert summary["median_first_word_ms"] is not None
