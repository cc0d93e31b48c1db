"""Blocking Kafka client: the sans-IO core on a ``selectors`` loop thread.

Theory of operation
-------------------
:class:`KafkaClient` owns one :class:`~kafkacore.client.KafkaClientCore`
driven by the selector transport's driver
(:class:`~kafkacore.transports._selector_driver.LoopThread`): one background thread
running a selector loop, the only thread touching the core, so heartbeats
and timeouts go on while user code works. User calls, from any thread,
become core commands run on that thread (:mod:`kafkacore.transports._client_common`
says what each does); they return a ``concurrent.futures.Future``
(``submit``) or block on it (``send``).

Client life (:class:`ClientState`)::

    NEW --start()/connect()/__enter__--> RUNNING --close()--> CLOSED

``close()`` is bounded: it asks the loop to shut the core down (every
pending request ends with ``RequestCancelled``), waits at most ``timeout``
seconds for the thread, then closes every socket itself either way.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from kafkacore.client import ClusterMetadata, KafkaClientCore, RequestHandle, Target
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError, RequestCancelled

from ._client_common import ClientSurface
from ._common import ClientState, bound_ms, resolve_target
from ._lazy import ADMIN_TYPES, lazy_exports
from ._selector_driver import Delivery, LoopThread, failer

if TYPE_CHECKING:
    from kafkacore.admin import ConfigResourceType

    from ._admin_acls import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        NoError,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )
    from ._admin_common import ConfigResource, NewPartitions, NewTopic
    from ._admin_selector import KafkaAdminClient
    from ._consumer_selector import KafkaConsumer
    from ._producer_selector import KafkaProducer
    from ._share_selector import KafkaShareConsumer

__all__ = [
    "ACL",
    "ACLFilter",
    "ACLOperation",
    "ACLPermissionType",
    "ACLResourcePatternType",
    "ClientState",
    "ConfigResource",
    "ConfigResourceType",
    "KafkaAdminClient",
    "KafkaClient",
    "KafkaConsumer",
    "KafkaProducer",
    "KafkaShareConsumer",
    "NewPartitions",
    "NewTopic",
    "NoError",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
]

# The producer, consumer, share consumer and admin client load on first use
# (see _lazy): a program that only produces never imports the others.
if not TYPE_CHECKING:  # type checkers read the imports above
    __getattr__, __dir__ = lazy_exports(
        globals(),
        {
            **ADMIN_TYPES,
            "KafkaAdminClient": "._admin_selector",
            "KafkaConsumer": "._consumer_selector",
            "KafkaProducer": "._producer_selector",
            "KafkaShareConsumer": "._share_selector",
        },
    )

T = TypeVar("T")


class KafkaClient(ClientSurface):
    """Blocking client; see the module docstring. Options as ``ClientConfig``."""

    _NAME = "KafkaClient"

    def _setup(self) -> None:
        self._loop = LoopThread(
            self._NAME, self._parts, noun="client", thread_name="kafkacore-selector"
        )
        # The core is built by start(), when the loop thread that will carry
        # out its intents starts: a core built earlier would ask for
        # connections nobody opens and time them out (socket set-up timeout)
        # before the first call.
        self._core: KafkaClientCore
        self._state_lock = threading.Lock()

    # -- life -------------------------------------------------------------
    def start(self) -> None:
        """Start the loop thread (idempotent); connections open on demand."""
        with self._state_lock:
            if self._state is ClientState.CLOSED:
                raise LocalProtocolError("KafkaClient.start: client is closed; make a new one")
            if self._state is ClientState.RUNNING:
                return
            self._state = ClientState.RUNNING
            self._core = self._build_core(self._loop.clock())
            self._loop.start(self._core, self._router.on_event, on_crash=self._router.fail_all)

    def connect(self, timeout: float | None = None) -> None:
        """Start and wait until cluster metadata arrived (bootstrap done), at most
        ``timeout`` s (default ``request_timeout_ms``); refused connections are
        retried with the reconnect backoff meanwhile.

        Raises ``NoBrokersAvailable`` (naming each bootstrap server's last
        error) when no broker was reached by then.
        """
        self.start()
        fut = Delivery()
        ms = bound_ms("KafkaClient.connect", timeout)

        def wait(now: float) -> None:
            core = self._core
            self._router.expect_bootstrap(
                fut.fill, lambda: core.wait_bootstrapped(now=now, timeout_ms=ms)
            )

        self._call(wait, fut)
        self._wait(fut, None, "connect")  # the core fails the wait at its deadline

    def __enter__(self) -> KafkaClient:
        try:
            self.connect()
        except BaseException:
            self.close()  # __exit__ will not run: leave no thread or socket behind
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self, timeout: float = 5.0) -> None:
        """Cancel everything, close every connection; returns within ~``timeout`` s."""
        with self._state_lock:
            old, self._state = self._state, ClientState.CLOSED
        if old is ClientState.CLOSED:
            return
        if old is ClientState.NEW:
            # Never started: no core, no socket; only waiters to release.
            self._router.fail_all(RequestCancelled("KafkaClient closed"))
            self._loop.stop(None, timeout)
            return
        if self._loop.on_loop:
            raise LocalProtocolError(
                "KafkaClient.close: called on the client's own loop thread; call it from user code"
            )
        self._loop.stop(self._shutdown_core, timeout)

    def _shutdown_core(self) -> None:
        self._loop.bridge.command(lambda now: self._core.shutdown(now=now))
        self._router.fail_all(RequestCancelled("KafkaClient closed"))

    # -- requests -----------------------------------------------------------
    def submit(
        self,
        request: Any,
        *,
        node_id: int | None = None,
        target: Target | None = None,
        lane: str | None = None,
        timeout_ms: int | None = None,
    ) -> concurrent.futures.Future[Any]:
        """Queue ``request``; the future resolves to its decoded response.

        ``future.cancel()`` (from any thread) cancels the request in the core.
        """
        dest = resolve_target("KafkaClient.submit", node_id, target)
        fut = Delivery()
        done = fut.fill
        box: list[RequestHandle[Any]] = []

        def issue(now: float) -> None:
            if fut.cancelled():
                return  # cancelled before it reached the loop: never sent
            box.append(
                self._issue(
                    self._core,
                    request,
                    target=dest,
                    lane=lane,
                    timeout_ms=timeout_ms,
                    done=done,
                    now=now,
                )
            )

        def withdraw(now: float) -> None:
            if box:
                self._withdraw(self._core, box[0], now)

        def on_done(f: concurrent.futures.Future[Any]) -> None:
            if f.cancelled() and self._state is ClientState.RUNNING and not self._loop.stopping:
                self._call(withdraw)

        fut.add_done_callback(on_done)
        self._call(issue, fut)
        return fut

    def send(
        self,
        request: Any,
        *,
        node_id: int | None = None,
        target: Target | None = None,
        lane: str | None = None,
        timeout_ms: int | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Send ``request`` and block for its response (or raise its error).

        ``timeout`` (seconds) bounds the wait here; the core's own
        ``request_timeout_ms`` bounds the request itself.
        """
        fut = self.submit(request, node_id=node_id, target=target, lane=lane, timeout_ms=timeout_ms)
        try:
            return self._wait(fut, timeout, "send")
        except KafkaTimeoutError:
            fut.cancel()  # and so the request in the core (see submit)
            raise

    # -- metadata -----------------------------------------------------------
    def metadata(
        self, topics: Sequence[str] | None = None, *, timeout: float | None = None
    ) -> ClusterMetadata:
        """Refresh metadata (tracking ``topics`` too) and return a snapshot of it."""
        self.start()
        fut = Delivery()
        done = fut.fill
        self._call(lambda now: self._refresh(self._core, topics, done, now), fut)
        self._wait(fut, timeout, "metadata")
        return self.cluster()

    def cluster(self) -> ClusterMetadata:
        """A snapshot of the current cluster metadata (a copy: safe across threads)."""
        return self.run_on_loop(lambda core: core.cluster.with_partitions(()))

    def run_on_loop(self, fn: Callable[[KafkaClientCore], T], timeout: float | None = None) -> T:
        """Run ``fn(core)`` on the loop thread and return its result (for queries)."""
        self.start()
        fut = Delivery()
        self._call(lambda now: fut.set_result(fn(self._core)), fut)
        result: T = self._wait(fut, timeout, "run_on_loop")
        return result

    # -- plumbing -------------------------------------------------------------
    def _call(self, fn: Callable[[float], object], fut: Delivery | None = None) -> None:
        """Run ``fn(now)`` as a core command on the loop thread; errors go to ``fut``."""
        if self._state is ClientState.NEW:
            self.start()
        if self._state is ClientState.CLOSED:
            if fut is not None:
                fut.set_exception(LocalProtocolError("KafkaClient: closed; make a new client"))
            return
        self._loop.post(fn, None if fut is None else failer(fut))

    def _wait(self, fut: concurrent.futures.Future[T], timeout: float | None, what: str) -> T:
        if self._loop.on_loop and not fut.done():
            raise LocalProtocolError(
                f"KafkaClient.{what}: would block the client's loop thread; use submit()"
            )
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            raise KafkaTimeoutError(f"KafkaClient.{what}: no answer within {timeout} s") from None
