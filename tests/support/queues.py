"""Whether RQ's queues are idle, as a test waiting for workers needs to know it."""

from rq import Queue


def idle(queues: list[Queue]) -> bool:
    """No job waiting, taken by a worker (RQ moves it to the queue's intermediate list
    before its started registry), nor being run."""
    return not any(
        q.count or q.intermediate_queue.get_job_ids() or q.started_job_registry.count
        for q in queues
    )
