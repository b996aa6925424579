"""Which branch names git accepts: the rules of ``git check-ref-format --branch``.

Checked when a repository is added, so a name git would refuse is a 400 at once instead of a
job that fails in the fetch. Names git accepts stay accepted even when they look odd to a
shell (``a;b``, ```id```, ``$(x)``): they are only ever passed as data, never to a shell.
"""

from __future__ import annotations

FORBIDDEN_CHARACTERS = frozenset(" ~^:?*[\\")


def branch_name_problem(name: str) -> str | None:
    """Why git would refuse ``name`` as a branch name, or None when it is valid.

    Mirrors git's ``check_refname_format`` for ``refs/heads/<name>`` plus the two extra
    rules of ``--branch`` (no leading ``-``, not ``HEAD``).
    """
    if not name:
        return "it is empty"
    if name == "HEAD":
        return "HEAD is not a branch name"
    if name.startswith("-"):
        return "it starts with '-'"
    for char in name:
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return "it contains a control character"
        if char in FORBIDDEN_CHARACTERS:
            shown = "a space" if char == " " else repr(char)
            return f"it contains {shown}"
    if ".." in name:
        return "it contains '..'"
    if "@{" in name:
        return "it contains '@{'"
    if name.startswith("/") or name.endswith("/"):
        return "it starts or ends with '/'"
    if "//" in name:
        return "it contains '//'"
    if name.endswith("."):
        return "it ends with '.'"
    for component in name.split("/"):
        if component.startswith("."):
            return "a part of it starts with '.'"
        if component.endswith(".lock"):
            return "a part of it ends with '.lock'"
    return None
