"""The compose image's files, assembled from its Dockerfile without a Docker engine.

``assemble(context, root)`` reads ``<context>/Dockerfile`` and ``<context>/.dockerignore`` and does
to a scratch directory what ``docker build`` does to the image's file system: each ``COPY`` of
the build context (filtered by ``.dockerignore`` with Docker's matching rules) lands at its
destination under ``WORKDIR``; a ``RUN`` line's ``mkdir`` is made; its ``pip install`` commands
are recorded with their ``WORKDIR`` and ``ENV``, and ``Image.install`` runs them, in order, in a
fresh virtualenv that stands for the base image's Python. What leaves no file (``useradd``) is
noted, ``chown`` is applied to the user the processes run as, ``chmod`` (octal modes) as
written; a command or instruction this module does not know fails the assembly, so a new
Dockerfile step is never skipped unseen.

``Image.environment`` and ``Image.container_path`` give a process of the image what a container
would see: the ``ENV`` lines, ``/app``, ``/data`` and ``/tmp`` under the scratch root, the
virtualenv's ``bin`` first on ``PATH`` (where ``python``, ``uvicorn`` and ``celery`` are).
``Image.process_user`` runs them as an unprivileged user when the tests run as root, as the
image's ``USER`` line does: the code under ``/app`` is then read-only to them.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from tests.dockerignore import UnsupportedStep, context_files, pattern_regex, read_dockerignore

# Commands of a RUN line that leave nothing this emulation needs (the user exists implicitly).
NOTED_COMMANDS = {"useradd", "groupadd", "adduser"}
# The uid/gid processes of the image run as when the tests run as root ("nobody").
UNPRIVILEGED_ID = 65534


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    line: int


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with their continuation lines joined (comment lines inside them dropped)."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # Docker drops comment lines inside a continued instruction
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        joined = " ".join(part for part in pending if part)
        pending = []
        keyword, _, arguments = joined.partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip(), start))
    if pending:
        raise UnsupportedStep(f"Dockerfile line {start}: a continuation with nothing after it")
    return instructions


def _exec_form(arguments: str) -> list[str] | None:
    if arguments.startswith("["):
        parsed = json.loads(arguments)
        if not isinstance(parsed, list) or not all(isinstance(item, str) for item in parsed):
            raise UnsupportedStep(f"not a JSON list of strings: {arguments}")
        return parsed
    return None


def _env_pairs(arguments: str) -> dict[str, str]:
    words = shlex.split(arguments)
    if words and "=" not in words[0]:  # the legacy form: ENV NAME value with spaces
        return {words[0]: " ".join(words[1:])}
    pairs = {}
    for word in words:
        name, sep, value = word.partition("=")
        if not sep:
            raise UnsupportedStep(f"ENV {arguments!r}: {word!r} is not NAME=value")
        pairs[name] = value
    return pairs


# --- The image ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PipInstall:
    arguments: tuple[str, ...]  # after "pip"
    workdir: str
    env: Mapping[str, str]


@dataclass
class Image:
    root: Path  # the image's "/"
    base: str = ""
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    user: str = "root"
    cmd: list[str] = field(default_factory=list)
    pip_installs: list[PipInstall] = field(default_factory=list)
    owned_by_user: list[str] = field(default_factory=list)  # chown'd to the image's user
    noted: list[str] = field(default_factory=list)
    copied: list[str] = field(default_factory=list)  # container paths of every copied file
    unprivileged: bool = False  # processes run as UNPRIVILEGED_ID (decided by ``install``)

    @property
    def venv(self) -> Path:
        """The virtualenv standing for the base image's Python (its ``/usr/local``)."""
        return self.root / "usr" / "local"

    def container_path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    @property
    def app(self) -> Path:
        return self.container_path(self.workdir)

    def map_paths(self, text: str) -> str:
        """``text`` with the image's own absolute paths (/app, /data, /tmp ...) under the root."""
        made = {entry.name for entry in self.root.iterdir()} | {"tmp", "home"}
        tops = "|".join(re.escape(top) for top in sorted(made - {"usr"}, key=len, reverse=True))
        pattern = rf"(?<![\w./-])/({tops})(?=/|$|[^\w.-])"
        return re.sub(pattern, lambda match: f"{self.root}/{match.group(1)}", text)

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A container's environment: the image's ENV, then ``extra`` (paths mapped in both)."""
        env = {
            "PATH": f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.container_path(f"/home/{self.user}")),
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.container_path("/tmp")),
            "HOSTNAME": os.uname().nodename,
        }
        env.update({name: self.map_paths(value) for name, value in self.env.items()})
        env.update({name: self.map_paths(value) for name, value in (extra or {}).items()})
        return env

    def process_user(self) -> dict[str, Any]:
        """``subprocess`` arguments that run a process as the image's unprivileged ``USER``
        (none when the tests run unprivileged already, or no Python here is open to others)."""
        if not self.unprivileged:
            return {}
        return {"user": UNPRIVILEGED_ID, "group": UNPRIVILEGED_ID, "extra_groups": []}

    def install(self, log: Path) -> None:
        """The base image's Python (a fresh virtualenv), then every ``pip install`` in order."""
        wanted = self.user not in ("root", "0") and os.geteuid() == 0
        python = _base_python(unprivileged=wanted)
        if python is None:  # the processes run as this test does; only the files are the image's
            wanted, python = False, _base_python(unprivileged=False)
        assert python is not None
        self.unprivileged = wanted
        subprocess.run(
            [python, "-m", "venv", str(self.venv)], check=True, capture_output=True, timeout=300
        )
        # This machine's pip configuration (its index, certificates) applies, as a build's would.
        outside = {
            name: value
            for name, value in os.environ.items()
            if name.startswith("PIP_") or name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
        }
        for step in self.pip_installs:
            env = {**outside, **self.environment(step.env)}
            env.pop("TMPDIR", None)  # the build's /tmp is the machine's
            # The image leaves pip's cache out of its layers; here the warm cache saves minutes
            # and changes nothing that is installed.
            env.pop("PIP_NO_CACHE_DIR", None)
            with log.open("ab") as out:
                out.write(f"$ pip {shlex.join(step.arguments)}\n".encode())
                out.flush()
                done = subprocess.run(
                    [str(self.venv / "bin" / "python"), "-m", "pip", *step.arguments],
                    cwd=self.container_path(step.workdir), env=env, stdout=out,
                    stderr=subprocess.STDOUT, timeout=1800,
                )  # fmt: skip
            if done.returncode != 0:
                tail = log.read_text(errors="replace")[-4000:]
                raise AssertionError(f"pip {shlex.join(step.arguments)} failed:\n{tail}")

    def prepare_for_user(self) -> None:
        """Let the image's unprivileged user reach the root and own what the Dockerfile gave it
        (and its home and /tmp, as the base image and ``useradd --create-home`` do)."""
        home = self.container_path(f"/home/{self.user}")
        home.mkdir(parents=True, exist_ok=True)
        tmp = self.container_path("/tmp")
        tmp.mkdir(exist_ok=True)
        tmp.chmod(0o1777)
        for parent in [self.root, *self.root.parents]:
            if parent.stat().st_mode & 0o005 != 0o005:  # a private temporary folder
                parent.chmod(parent.stat().st_mode | 0o055)
        owner = self.process_user()
        if not owner:
            return
        for path in [home, *(self.container_path(p) for p in self.owned_by_user)]:
            os.chown(path, owner["user"], owner["group"])


def _others_may_run(path: Path) -> bool:
    resolved = path.resolve()
    return all(os.stat(folder).st_mode & 0o001 for folder in resolved.parents) and bool(
        os.stat(resolved).st_mode & 0o001
    )


def _base_python(unprivileged: bool) -> str | None:
    """A Python of this test's version outside any virtualenv (the image's is python:3.11); for
    an unprivileged user, one it may run (pyenv's, under /root, it may not)."""
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [getattr(sys, "_base_executable", sys.executable)]
    candidates += [f"/usr/local/bin/{name}", f"/usr/bin/{name}"]
    for candidate in map(Path, candidates):
        if candidate.is_file() and (not unprivileged or _others_may_run(candidate)):
            return str(candidate)
    return None


def _copy(context: Path, files: Sequence[str], arguments: list[str], image: Image) -> None:
    flags = [word for word in arguments if word.startswith("--")]
    if any(flag.startswith("--from") for flag in flags):
        raise UnsupportedStep("COPY --from (a multi-stage build)")
    words = [word for word in arguments if not word.startswith("--")]
    *sources, dest = words
    if not sources:
        raise UnsupportedStep(f"COPY {arguments}: no source")
    target = dest if dest.startswith("/") else f"{image.workdir.rstrip('/')}/{dest}"
    into_folder = dest.endswith("/") or dest in (".", "./") or len(sources) > 1
    for source in sources:
        pattern = os.path.normpath(source).replace(os.sep, "/").lstrip("/")
        if pattern == ".":
            matches = list(files)
            base = ""
        else:
            regex = pattern_regex(pattern)
            under = [f for f in files if regex.match(f)]
            folder = [f for f in files if f.startswith(pattern + "/")]
            if not under and not folder:
                raise UnsupportedStep(f"COPY {source}: nothing in the context (or .dockerignore'd)")
            matches, base = (folder, pattern + "/") if folder else (under, "")
        for relative in matches:
            if base:
                name = relative[len(base) :]
            elif pattern == ".":
                name = relative
            else:
                name = PurePosixPath(relative).name
            if into_folder or base or pattern == ".":
                destination = posixpath.normpath(f"{target}/{name}")
            else:
                destination = posixpath.normpath(target)
            path = image.container_path(destination)
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(context / relative, path, follow_symlinks=False)
            image.copied.append(destination)


def _simple_commands(script: str) -> Iterator[list[str]]:
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    for token in lexer:
        if token in ("&&", ";"):
            if words:
                yield words
            words = []
        elif token in ("|", "||", "&", ">", ">>", "<", "(", ")"):
            raise UnsupportedStep(f"RUN {script!r}: {token!r} is beyond this emulation")
        else:
            words.append(token)
    if words:
        yield words


def _run(arguments: str, image: Image) -> None:
    commands = _exec_form(arguments)
    for words in [commands] if commands is not None else _simple_commands(arguments):
        program = PurePosixPath(words[0]).name
        if program in ("pip", "pip3") or (
            program.startswith("python") and words[1:3] == ["-m", "pip"]
        ):
            rest = words[1:] if program.startswith("pip") else words[3:]
            if rest[:1] != ["install"]:
                raise UnsupportedStep(f"RUN {shlex.join(words)}: only pip install is emulated")
            image.pip_installs.append(PipInstall(tuple(rest), image.workdir, dict(image.env)))
        elif program == "mkdir":
            for path in words[1:]:
                if not path.startswith("-"):
                    image.container_path(path).mkdir(parents=True, exist_ok=True)
        elif program == "chmod":
            mode, *paths = [word for word in words[1:] if not word.startswith("-")]
            if not re.fullmatch(r"[0-7]{3,4}", mode):
                raise UnsupportedStep(f"RUN {shlex.join(words)}: only octal modes are emulated")
            for path in paths:
                image.container_path(path).chmod(int(mode, 8))
        elif program == "chown":
            image.owned_by_user += [word for word in words[2:] if not word.startswith("-")]
        elif program in NOTED_COMMANDS:
            image.noted.append(shlex.join(words))
        else:
            raise UnsupportedStep(f"RUN {shlex.join(words)}: {program} is not emulated")


def assemble(
    context: Path,
    root: Path,
    *,
    dockerfile: str | None = None,
    dockerignore: str | None = None,
) -> Image:
    """The image's file system under ``root`` from ``context``'s Dockerfile and .dockerignore
    (or the texts given), its pip installs recorded for ``Image.install``."""
    text = (context / "Dockerfile").read_text() if dockerfile is None else dockerfile
    if dockerignore is None:
        ignore_file = context / ".dockerignore"
        dockerignore = ignore_file.read_text() if ignore_file.exists() else ""
    files = context_files(context, read_dockerignore(dockerignore))
    image = Image(root)
    root.mkdir(parents=True, exist_ok=True)
    for step in parse_dockerfile(text):
        if step.keyword == "FROM":
            if image.base:
                raise UnsupportedStep("a second FROM (a multi-stage build)")
            image.base = step.arguments
        elif step.keyword == "ENV":
            image.env.update(_env_pairs(step.arguments))
        elif step.keyword == "WORKDIR":
            path = step.arguments
            image.workdir = path if path.startswith("/") else f"{image.workdir}/{path}"
            image.container_path(image.workdir).mkdir(parents=True, exist_ok=True)
        elif step.keyword == "COPY":
            _copy(context, files, shlex.split(step.arguments), image)
        elif step.keyword == "RUN":
            _run(step.arguments, image)
        elif step.keyword == "USER":
            image.user = step.arguments
        elif step.keyword == "CMD":
            image.cmd = _exec_form(step.arguments) or ["/bin/sh", "-c", step.arguments]
        elif step.keyword in ("EXPOSE", "LABEL"):
            pass
        else:
            raise UnsupportedStep(f"Dockerfile line {step.line}: {step.keyword} is not emulated")
    return image


def top_level(paths: Iterable[str], workdir: str) -> set[str]:
    """The first path component under ``workdir`` of each container path."""
    prefix = workdir.rstrip("/") + "/"
    return {path[len(prefix) :].split("/", 1)[0] for path in paths if path.startswith(prefix)}


# Another Dockerfile to assemble instead of the checkout's, e.g. an older one, to see the image
# tests fail on it: REPOSEARCH_IMAGE_TEST_DOCKERFILE=<(git show e61879c:Dockerfile) pytest ...
OTHER_DOCKERFILE = os.environ.get("REPOSEARCH_IMAGE_TEST_DOCKERFILE")


def given_dockerfile() -> str | None:
    """The Dockerfile REPOSEARCH_IMAGE_TEST_DOCKERFILE names, else None (the checkout's)."""
    return Path(OTHER_DOCKERFILE).read_text() if OTHER_DOCKERFILE else None
