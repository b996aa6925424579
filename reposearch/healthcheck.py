"""Container healthchecks: ``python -m reposearch.healthcheck web|worker [...]``.

Exit 0 when the process answers, 1 (with one line saying why) when it does not; docker compose
restarts what stays unhealthy. ``web`` asks ``/api/health`` and counts any answer from Django
(200, or 503 naming a part that is down elsewhere) as the web being up; ``worker`` pings the
Celery worker of this host by its node name and, when it does not answer, names the workers that
did (a wrong ``--prefix`` shows at once). Neither needs Django set up for the web check, so
the check stays cheap.
"""

from __future__ import annotations

import argparse
import socket
import sys
import urllib.error
import urllib.request

# How long the ping to every worker waits for replies, after the named one did not answer.
LISTING_TIMEOUT_SECS = 2.0


def check_web(url: str, timeout: float) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - our URL
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    except (urllib.error.URLError, OSError) as error:
        return f"web does not answer at {url}: {error}"
    if status in (200, 503):
        return None
    return f"web answered {status} at {url}"


def check_worker(name: str, timeout: float) -> str | None:
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    from reposearch.celery import app

    try:
        replies = app.control.ping(destination=[name], timeout=timeout)
        if any(name in reply for reply in replies or []):
            return None
        # Who did answer, so a wrong --prefix (make up's work@ / embed@ for compose's git@ ...)
        # shows at once. Only now: a ping to every worker waits its whole timeout.
        replies = app.control.ping(timeout=min(timeout, LISTING_TIMEOUT_SECS))
    except Exception as error:
        return f"could not ping {name}: {type(error).__name__}: {error}"
    answered = sorted({node for reply in replies or [] for node in reply})
    if name in answered:
        return None  # it answered, late
    if not answered:
        return f"worker {name} did not answer a ping, and no other worker did"
    return f"worker {name} did not answer a ping; workers that did: {', '.join(answered)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    web = sub.add_parser("web")
    web.add_argument("--url", default="http://127.0.0.1:9000/api/health")
    worker = sub.add_parser("worker")
    worker.add_argument("--name", help="node name (default: <prefix>@<this host>)")
    worker.add_argument(
        "--prefix",
        default="celery",
        help="the part before @ of the node name: git, index or embed under compose; work or"
        " embed under make up",
    )
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args(argv)
    if args.what == "web":
        problem = check_web(args.url, args.timeout)
    else:
        problem = check_worker(args.name or f"{args.prefix}@{socket.gethostname()}", args.timeout)
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
