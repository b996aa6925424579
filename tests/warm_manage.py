"""``manage.py`` commands for a stack of the test's own, each in a fresh process without the
start-up: a server process imports Django, the project and its URL configuration once, then
forks a child for every command.

A child is what ``python manage.py <args>`` would be (the same start as ``reposearch.cli``, then
``call_command`` with the same arguments, in the stack's environment; no state left by an
earlier command: each child starts from the server's, which never opened a database, broker or
model connection), minus the one to five seconds of imports -- paid once per stack instead of
once per command. The fault tests run dozens of commands (add a repository, ask health, run
the doctor, search) per stack.

Used by ``tests.fault_stack``; ``WarmManage.run`` answers as ``subprocess.run`` did: the exit
status (0, or 1 for an exception, which is printed) and what the command printed.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent

# The server: reads one JSON list of arguments a line, forks, and answers one JSON line.
SERVER = r"""
import contextlib, io, json, os, sys, traceback

from reposearch.startup import load_settings_or_exit

load_settings_or_exit()  # as reposearch.cli (manage.py): the package, then the settings
import django

django.setup()
from django.core.management import call_command
from django.db import connections

from reposearch.cli import unreachable_server_message

import reposearch.urls  # noqa: F401 - the views and the search stack, imported once

connections.close_all()  # nothing open to share with a child
replies = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # what anything but a command prints goes to the log
for line in sys.stdin:
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        out, status = io.StringIO(), 0
        try:
            with contextlib.redirect_stdout(out):
                call_command(*json.loads(line))
        except SystemExit as exit:
            status = exit.code if isinstance(exit.code, int) else 1
        except BaseException as error:
            message = unreachable_server_message(error) if isinstance(error, Exception) else None
            out.write(f"reposearch: {message}\n" if message else traceback.format_exc())
            status = 1
        with os.fdopen(write_end, "w") as pipe:
            json.dump({"status": status, "stdout": out.getvalue()}, pipe)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        reply = pipe.read()
    os.waitpid(child, 0)
    replies.write((reply or json.dumps({"status": 1, "stdout": "the command died"})) + "\n")
    replies.flush()
"""


class WarmManage:
    """One server process per stack (``start``/``stop``); ``run(*args)`` per command."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.log_path = log_path
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        log = open(self.log_path, "a")  # noqa: SIM115 - the child process owns it
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER], cwd=ROOT, env=self.env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
        )  # fmt: skip
        log.close()

    def run(self, *args: str, timeout: float = 120) -> tuple[int, str]:
        if self.process is None or self.process.poll() is not None:
            self.start()
        assert self.process is not None
        stdin: IO[str] = self.process.stdin  # type: ignore[assignment]
        stdout: IO[str] = self.process.stdout  # type: ignore[assignment]
        stdin.write(json.dumps(list(args)) + "\n")
        stdin.flush()
        if not select.select([stdout], [], [], timeout)[0]:
            self.process.kill()  # as subprocess.run(timeout=...) would: the command is stuck
            self.process.wait(10)
            raise TimeoutError(f"manage.py {' '.join(args)} ran past {timeout:g} s")
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"the manage server exited; see {self.log_path}")
        reply = json.loads(line)
        return int(reply["status"]), str(reply["stdout"])

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
