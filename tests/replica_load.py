"""Clients of the replica lab (tests/replica_lab.py), run on its db host: ``--clients`` threads
send ``POST /api/search`` to the web hosts in turn for ``--seconds`` (or ``--count`` searches in
all), and print every answer as JSON: when it came back, its HTTP status (0: no answer), the
database that served it, the replicas passed over and why, its result paths and its count of
exact matches (a one-identifier query's).

    python -m tests.replica_load --clients=50 --seconds=20 --query="function_7 value" URL...
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any


def _search(url: str, body: bytes) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{url}/api/search", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.loads(response.read())
            served = answer.get("served_by") or {}
            return {
                "status": response.status,
                "database": served.get("database"),
                "lag_bytes": served.get("lag_bytes"),
                "skipped": served.get("skipped", {}),
                "paths": [hit["file_path"] for hit in answer["results"]],
                "exact_matches": answer.get("exact_matches"),
            }
    except urllib.error.HTTPError as error:
        return {"status": error.code, "error": error.read()[:300].decode(errors="replace")}
    except OSError as error:
        return {"status": 0, "error": str(error)[:300]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=0.0)
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--query", required=True)
    parser.add_argument("--limit", type=int, default=5)
    options = parser.parse_args(argv)
    body = json.dumps({"query": options.query, "limit": options.limit}).encode()
    turns = itertools.count()
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()
    started = time.monotonic()

    def client() -> None:
        while True:
            turn = next(turns)
            if options.count and turn >= options.count:
                return
            if options.seconds and time.monotonic() - started > options.seconds:
                return
            sent = time.monotonic() - started
            answer = _search(options.urls[turn % len(options.urls)], body)
            answer.update(sent=round(sent, 3), back=round(time.monotonic() - started, 3))
            with lock:
                answers.append(answer)

    threads = [threading.Thread(target=client) for _ in range(options.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({"answers": sorted(answers, key=lambda a: a["sent"])}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
