"""The gateway's segmentation model, run on one worker thread.

``start`` submits ``warm_up`` to the thread when the app starts and returns at once:
the server answers other routes while the model loads (rembg's first import can take
minutes on a cold numba cache). ``cut_out`` awaits the warm-up without a time limit,
so a request arriving meanwhile waits rather than fails. A failed warm-up (weights
missing) answers 503 and is tried again by the next request, so fetching the weights
needs no restart. One thread: inference already uses every core, and queueing
requests in front of it is fairer than running them side by side. A daemon thread,
not a ``ThreadPoolExecutor``: the interpreter joins those at exit, so a server stopped
while the model loads would not exit until the load had finished, minutes later.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from tollway import Segmenter, ServiceUnavailable

if TYPE_CHECKING:
    from PIL import Image

log = logging.getLogger("tollway.removebg")

T = TypeVar("T")
_Call = tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...]]


class _ModelThread:
    """One daemon thread running submitted calls in turn, each answered by a future."""

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def submit(self, function: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._calls.put((future, function, args))
        return future

    def shutdown(self) -> None:
        """Cancel the calls not yet started and end the thread after the running one."""
        while True:
            try:
                call = self._calls.get_nowait()
            except queue.Empty:
                break
            if call is not None:
                call[0].cancel()
        self._calls.put(None)

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            future, function, args = call
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = function(*args)
            except BaseException as error:
                future.set_exception(error)
            else:
                future.set_result(result)


class Model:
    def __init__(self, segmenter: Segmenter) -> None:
        self.segmenter = segmenter
        self._lock = threading.Lock()
        self._executor: _ModelThread | None = None
        self._warm_up: concurrent.futures.Future[None] | None = None

    def _thread(self) -> _ModelThread:
        if self._executor is None:
            self._executor = _ModelThread("removebg-model")
        return self._executor

    def start(self) -> concurrent.futures.Future[None]:
        """Begin loading the model (again, if the last attempt failed)."""
        with self._lock:
            warm_up = self._warm_up
            if warm_up is None or (warm_up.done() and warm_up.exception() is not None):
                log.info("loading segmentation model %s", self.segmenter.name)
                warm_up = self._warm_up = self._thread().submit(self.segmenter.warm_up)
            return warm_up

    async def ready(self) -> None:
        """Wait until the model is loaded; 503 if it cannot be."""
        try:
            await asyncio.wrap_future(self.start())
        except Exception as error:
            log.error("segmentation model %s unavailable: %s", self.segmenter.name, error)
            raise ServiceUnavailable(
                f"The background removal model is unavailable: {error}"
            ) from None

    async def cut_out(self, image: Image.Image) -> Image.Image:
        await self.ready()
        return await asyncio.wrap_future(self._thread().submit(self.segmenter.cut_out, image))

    def stop(self) -> None:
        """Drop queued work; a running call finishes on its own."""
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown()
            self._executor = None
            self._warm_up = None
