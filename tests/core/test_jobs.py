"""The in-process job queue: the default behind the job-queue hook."""

from __future__ import annotations

import asyncio

import pytest

from tollway.jobs import RESERVED_ARGUMENTS, InProcessJobQueue


async def test_jobs_run_in_the_background_with_their_arguments() -> None:
    queue = InProcessJobQueue(concurrency=2)
    done: list[int] = []

    async def record(value: int) -> None:
        await asyncio.sleep(0.01)
        done.append(value)

    queue.register("record", record)
    await queue.start()
    for value in range(10):
        await queue.enqueue("record", value=value)
    await queue.stop()
    assert sorted(done) == list(range(10))


async def test_a_failing_job_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    queue = InProcessJobQueue(concurrency=1)
    done: list[str] = []

    async def flaky(name: str) -> None:
        if name == "bad":
            raise RuntimeError("broken job")
        done.append(name)

    queue.register("flaky", flaky)
    await queue.start()
    for name in ("a", "bad", "b"):
        await queue.enqueue("flaky", name=name)
    await queue.stop()
    assert done == ["a", "b"]
    assert "job flaky failed" in caplog.text


async def test_unknown_and_duplicate_jobs_are_refused() -> None:
    queue = InProcessJobQueue()

    async def job() -> None: ...

    queue.register("job", job)
    with pytest.raises(ValueError, match="already registered"):
        queue.register("job", job)
    with pytest.raises(KeyError, match="nope"):
        await queue.enqueue("nope")


async def test_arguments_the_queue_would_take_for_itself_are_refused() -> None:
    queue = InProcessJobQueue()

    async def job(**_: object) -> None:
        return None

    queue.register("job", job)
    with pytest.raises(ValueError, match=r"\['attempts'\] are reserved"):
        await queue.enqueue("job", message_id=1, attempts=2)


def test_the_reserved_names_are_saqs_job_fields() -> None:
    """SAQ would read these keyword arguments as the job's own settings."""
    import dataclasses

    import saq

    assert {field.name for field in dataclasses.fields(saq.Job)} == RESERVED_ARGUMENTS
