"""The broker transport: kombu's Redis transport, surviving the loss of Redis mid-task.

When Redis goes away while a worker holds unacknowledged messages (a task is running), kombu
closes the channel and tries to hand those messages back at once — over the connection that
just failed. That raises ``AttributeError: 'NoneType' object has no attribute 'hostname'`` from
inside the consumer's error handler, which Celery treats as unrecoverable: the whole worker
stops (kombu issue 582's failure mode; seen here with kombu 5.7 and Celery 5.7). Here the
hand-back, and the acknowledgement of a task that finished while Redis was away (the same
failure through ``ack``), are skipped when they cannot be done: the worker reconnects and its
running task finishes; a message it could not acknowledge comes back after the visibility
timeout, and the job's stage converges when re-run (an ended job returns at once).
"""

from __future__ import annotations

import logging
from typing import Any

from kombu.transport import redis as kombu_redis

logger = logging.getLogger(__name__)
RESTORE_ERRORS: tuple[type[BaseException], ...] = (
    AttributeError,
    *kombu_redis.Transport.connection_errors,
)


class QoS(kombu_redis.QoS):
    def ack(self, delivery_tag: Any) -> None:
        # A task that finished while Redis was away is acknowledged over the lost channel.
        try:
            super().ack(delivery_tag)
        except RESTORE_ERRORS as error:
            logger.warning(
                "broker unreachable: message %s not acknowledged (%s); it comes back after the"
                " visibility timeout and its stage, already done, returns at once",
                delivery_tag,
                type(error).__name__,
            )

    def reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        try:
            super().reject(delivery_tag, requeue=requeue)
        except RESTORE_ERRORS as error:
            logger.warning(
                "broker unreachable: message %s not rejected (%s)",
                delivery_tag,
                type(error).__name__,
            )

    def restore_unacked_once(self, stderr: Any = None) -> Any:
        try:
            return super().restore_unacked_once(stderr)
        except RESTORE_ERRORS as error:
            logger.warning(
                "broker unreachable: %s unacknowledged message(s) not handed back now (%s)",
                len(self._delivered or ()),
                type(error).__name__,
            )
            return None


class Channel(kombu_redis.Channel):
    QoS = QoS


class Transport(kombu_redis.Transport):
    Channel = Channel
