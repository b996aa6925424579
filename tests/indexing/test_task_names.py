"""The pipeline sends its tasks by name (``indexing.task_names``): each name must be a task the
worker has registered, on the queue its stage runs on, or the job would wait forever."""

from __future__ import annotations

from indexing import task_names
from reposearch.celery import app

QUEUES = {
    task_names.FETCH: "git",
    task_names.INDEX: "index",
    task_names.EMBED: "embed",
    task_names.POLL: "default",
}


def test_every_name_the_pipeline_sends_is_a_registered_task_on_its_queue() -> None:
    app.loader.import_default_modules()
    for name, queue in QUEUES.items():
        assert name in app.tasks, name
        route = app.amqp.router.route({}, name, args=(1,))
        assert route["queue"].name == queue, (name, route)
