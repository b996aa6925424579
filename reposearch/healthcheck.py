"""Container healthchecks: ``python -m reposearch.healthcheck web|worker [...]``.

Exit 0 when the process answers, 1 (with one line saying why) when it does not; docker compose
restarts what stays unhealthy. ``web`` asks ``/api/health`` and counts any answer from Django
(200, or 503 naming a part that is down elsewhere) as the web being up; ``worker`` pings the
Celery worker of this host by its node name. Neither needs Django set up for the web check, so
the check stays cheap.
"""

from __future__ import annotations

import argparse
import socket
import sys
import urllib.error
import urllib.request


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
    except Exception as error:
        return f"could not ping {name}: {type(error).__name__}: {error}"
    if not any(name in reply for reply in replies or []):
        return f"worker {name} did not answer a ping"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    web = sub.add_parser("web")
    web.add_argument("--url", default="http://127.0.0.1:9000/api/health")
    worker = sub.add_parser("worker")
    worker.add_argument("--name", help="node name (default: <prefix>@<this host>)")
    worker.add_argument("--prefix", default="celery", help="the part before @ of the node name")
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
