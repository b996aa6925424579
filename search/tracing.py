"""Recording a search stage into the trace: its status, why, and how long it took."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from search.types import StageStatus, StageTrace

logger = logging.getLogger("search.executor")


class StageRecorder:
    """Times one stage and records its outcome (``ran`` unless told otherwise)."""

    def __init__(self, name: str) -> None:
        self.trace = StageTrace(name=name, status="ran")

    def set(self, status: StageStatus | str, reason: str = "", **detail: Any) -> None:
        self.trace.status = status  # type: ignore[assignment]
        self.trace.reason = reason
        self.trace.detail.update(detail)


@contextmanager
def record_stage(trace: list[StageTrace], name: str) -> Iterator[StageRecorder]:
    stage = StageRecorder(name)
    started = time.perf_counter()
    try:
        yield stage
    except Exception as exc:  # a stage's failure must never fail the search
        logger.exception("search stage %s failed", name)
        stage.set("failed", f"{type(exc).__name__}: {str(exc)[:200]}")
    finally:
        stage.trace.ms = round((time.perf_counter() - started) * 1000, 1)
        trace.append(stage.trace)
