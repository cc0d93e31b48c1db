"""Blocking share consumer (KIP-932): the sans-IO share core on a selector loop thread.

Theory of operation
-------------------
:class:`KafkaShareConsumer` owns one :class:`~kafkacore.share.ShareConsumerCore`
driven by the selector transport's driver
(:class:`~kafkacore.transports._selector_driver.LoopThread`): the loop
thread keeps heartbeats, fetches and acknowledgements going while user code
works between polls. The user's calls run the core in the caller's thread
under the core lock the loop also holds whenever it touches the core (as
the blocking producer's appends do), then ask the loop to write what they
queued: a poll does not wait for the loop thread to be scheduled and to
answer, which cost the blocking share consumer 3-7% of its throughput
against the asyncio one (the next ShareFetch, carrying the acknowledgements,
goes out only after the poll). What each
call does is :class:`~kafkacore.transports._share_common.ShareSurface`;
this module makes it blocking: ``poll`` sleeps on the loop's condition
between steps, ``commit_sync`` and ``close`` wait for their operation,
``commit_async`` returns a ``concurrent.futures.Future``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
from types import TracebackType
from typing import Any

from kafkacore.client import TopicPartition
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError, RequestCancelled
from kafkacore.share import ShareRecord

from ._consumer_common import Wait, drive
from ._selector_driver import Delivery, LoopThread
from ._share_common import ShareCommand, ShareState, ShareSurface, T

__all__ = ["KafkaShareConsumer"]


class KafkaShareConsumer(ShareSurface):
    """Blocking share consumer; options as ClientConfig + ShareConsumerConfig."""

    _NAME = "KafkaShareConsumer"

    def _setup(self) -> None:
        self._loop = LoopThread(
            self._NAME, self._parts, noun="share consumer", thread_name="kafkacore-share"
        )
        self._core = self._build_core(self._loop.clock())
        self._lock = threading.RLock()
        self._pump_due = False
        self._state = ShareState.RUNNING
        self._loop.start(
            self._core, self._router.on_event, on_crash=self._router.fail_all, lock=self._lock
        )
        if self._topics:
            self.subscribe(self._topics)

    def __enter__(self) -> KafkaShareConsumer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def poll(self, timeout: float = 0.0, max_records: int | None = None) -> list[ShareRecord]:
        """Settle the previous poll's records, then wait up to ``timeout`` s for more."""
        return drive(self._poll_steps(max_records, timeout), self._block)

    def commit_sync(self, timeout: float | None = None) -> dict[TopicPartition, Any]:
        """Send every acknowledgement so far and wait: each partition's error or None."""
        limit = self.config.default_api_timeout_ms / 1000 if timeout is None else timeout
        fut = self._future(self._commit_command())
        try:
            result: dict[TopicPartition, Any] = fut.result(limit + 1)
        except concurrent.futures.TimeoutError:
            raise KafkaTimeoutError(f"{self._NAME}.commit_sync: no answer in {limit} s") from None
        finally:
            self._run_callbacks()
        return result

    def commit_async(self) -> concurrent.futures.Future[Any]:
        """Send every acknowledgement so far; the callback hears of the outcome later."""
        return self._future(self._commit_command())

    def close(self, timeout: float = 30.0) -> None:
        """Send what is acknowledged, close the sessions, leave; within ~``timeout`` s."""
        if self._state is ShareState.CLOSED:
            return
        try:
            with contextlib.suppress(Exception):
                self._future(self._close_command(timeout)).result(timeout + 1)
            self._run_callbacks()
        finally:
            self._state = ShareState.CLOSED
            self._loop.stop(self._shutdown_core, timeout)

    def _shutdown_core(self) -> None:
        self._loop.bridge.command(lambda now: self._core.shutdown(now=now))
        self._router.fail_all(RequestCancelled(f"{self._NAME} closed"))

    # -- the idiom: blocking -------------------------------------------------------
    def _call(self, fn: ShareCommand[T]) -> T:
        if self._state is ShareState.CLOSED:
            raise LocalProtocolError(f"{self._NAME}: closed; make a new share consumer")
        loop = self._loop
        refused = loop.refusal()
        if refused is not None:
            raise refused
        loop.let_loop_in()
        try:
            with self._lock:
                return fn(self._core, loop.clock())
        finally:
            # What the call queued (a ShareFetch, an acknowledgement, events)
            # is written and routed by the loop, as after any command.
            if not self._pump_due:
                self._pump_due = True
                loop.io.call_soon_threadsafe(self._pump)

    def _pump(self) -> None:
        if not self._loop.stopping:
            self._loop.bridge.command(self._pumped)

    def _pumped(self, now: float) -> None:
        self._pump_due = False  # under the lock: later calls ask again

    def _clock(self) -> float:
        return self._loop.clock()

    def _notify(self) -> None:
        self._loop.notify()

    def _block(self, wait: Wait) -> None:
        self._loop.wait_change(self._news_since(wait), wait.deadline)

    def _future(self, command: ShareCommand[Any]) -> concurrent.futures.Future[Any]:
        fut = Delivery()
        self._start(command, fut.fill)
        return fut
