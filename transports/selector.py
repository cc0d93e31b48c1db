"""Blocking Kafka client: the sans-IO core on a ``selectors`` loop thread.

Theory of operation
-------------------
:class:`KafkaClient` owns one :class:`~kafkacore.client.KafkaClientCore`
and one background thread running a selector loop
(:class:`~transports._selector_io.SelectorIo`). Only that thread touches
the core, so heartbeats and timeouts go on while user code works. User
calls, from any thread, become closures put on the loop's queue followed
by one byte on a wake-up socketpair; they return a
``concurrent.futures.Future`` (``submit``) or block on it (``send``).

Client life (:class:`ClientState`)::

    NEW --start()/connect()/__enter__--> RUNNING --close()--> CLOSED

``close()`` is bounded: it asks the loop to shut the core down (every
pending request ends with ``RequestCancelled``), waits at most ``timeout``
seconds for the thread, then closes every socket itself either way.
"""

from __future__ import annotations

import concurrent.futures
import random
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, TypeVar

from kafkacore.client import ClusterMetadata, KafkaClientCore, RequestHandle, Target
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError, RequestCancelled

from ._bridge import Bridge
from ._common import ClientState, make_parts, resolve_target
from ._consumer_selector import KafkaConsumer
from ._producer_selector import KafkaProducer
from ._router import Router
from ._selector_io import SelectorIo

__all__ = ["ClientState", "KafkaClient", "KafkaConsumer", "KafkaProducer"]

T = TypeVar("T")


class KafkaClient:
    """Blocking client; see the module docstring. Options as ``ClientConfig``."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] | None = "localhost:9092",
        *,
        ssl_server_hostname: str | None = None,
        rng: random.Random | None = None,
        **options: Any,
    ) -> None:
        parts = make_parts(
            "KafkaClient",
            bootstrap_servers,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        self.config = parts.config
        self._io = SelectorIo(
            sockets=parts.sockets,
            ssl_context=parts.ssl_context_factory(),
            ssl_server_hostname=ssl_server_hostname,
        )
        self._router = Router()
        self._rng = parts.rng
        # The core is built by start(), when the loop thread that will carry
        # out its intents starts: a core built earlier would ask for
        # connections nobody opens and time them out (socket set-up timeout)
        # before the first call.
        self._core: KafkaClientCore
        self._bridge: Bridge
        self._state = ClientState.NEW
        self._state_lock = threading.Lock()
        self._stopping = False
        self._crashed: BaseException | None = None
        self._thread: threading.Thread | None = None

    # -- life -------------------------------------------------------------
    @property
    def state(self) -> ClientState:
        return self._state

    def start(self) -> None:
        """Start the loop thread (idempotent); connections open on demand."""
        with self._state_lock:
            if self._state is ClientState.CLOSED:
                raise LocalProtocolError("KafkaClient.start: client is closed; make a new one")
            if self._state is ClientState.RUNNING:
                return
            self._state = ClientState.RUNNING
            self._core = KafkaClientCore(self.config, now=self._io.clock(), rng=self._rng)
            self._bridge = Bridge(
                self._core, self._io, clock=self._io.clock, on_event=self._router.on_event
            )
            self._io.bridge = self._bridge
            self._thread = threading.Thread(
                target=self._run, name="kafkacore-selector", daemon=True
            )
            self._thread.start()
        # The core may have asked for connections while being built.
        self._io.call_soon_threadsafe(self._bridge.pump)

    def connect(self, timeout: float | None = None) -> None:
        """Start and wait until cluster metadata arrived (bootstrap done).

        Raises ``NoBrokersAvailable`` when every bootstrap address failed.
        """
        self.start()
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._call(lambda now: self._router.expect_bootstrap(_resolver(fut)))
        self._wait(fut, timeout, "connect")

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
        thread = self._thread
        if old is ClientState.NEW or thread is None:
            # Never started: no core, no socket; only waiters to release.
            self._stopping = True
            self._router.fail_all(RequestCancelled("KafkaClient closed"))
            self._io.close_all()
            return
        if thread is threading.current_thread():
            raise LocalProtocolError(
                "KafkaClient.close: called on the client's own loop thread; call it from user code"
            )
        self._io.call_soon_threadsafe(self._shutdown_core)
        thread.join(timeout)
        # Whether or not the loop finished, no socket survives close().
        self._io.close_all()
        for fn in self._io.drain_calls():
            fn()  # never-run user calls: they fail with "closed"

    def _shutdown_core(self) -> None:
        self._stopping = True
        self._bridge.command(lambda now: self._core.shutdown(now=now))
        self._router.fail_all(RequestCancelled("KafkaClient closed"))

    def _run(self) -> None:
        io = self._io
        try:
            while not self._stopping:
                io.run_once()
        except BaseException as exc:
            # A bug in the core or here. Nobody may wait forever on a dead
            # loop: fail every waiter with the error and refuse new calls.
            self._crashed = exc
            self._stopping = True
            self._router.fail_all(exc)
            for fn in io.drain_calls():
                fn()
            io.close_all()
            raise

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
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        done = _resolver(fut)
        box: list[RequestHandle[Any]] = []

        def issue(now: float) -> None:
            if fut.cancelled():
                return  # cancelled before it reached the loop: never sent
            kwargs: dict[str, Any] = {"now": now, "target": dest, "timeout_ms": timeout_ms}
            if lane is not None:
                kwargs["lane"] = lane
            handle = self._core.send(request, **kwargs)
            box.append(handle)
            self._router.expect_request(handle, done)

        def withdraw(now: float) -> None:
            if box and not box[0].done:
                self._router.forget(box[0])
                self._core.cancel(box[0], now=now)

        def on_done(f: concurrent.futures.Future[Any]) -> None:
            if f.cancelled() and self._state is ClientState.RUNNING and not self._stopping:
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
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def issue(now: float) -> None:
            if topics:
                self._core.set_topics(self._core.topics | set(topics), now=now)
            waiter = self._core.request_metadata_update(now=now)
            self._router.expect_metadata(waiter, _resolver(fut))

        self._call(issue, fut)
        self._wait(fut, timeout, "metadata")
        return self.cluster()

    def cluster(self) -> ClusterMetadata:
        """A snapshot of the current cluster metadata (a copy: safe across threads)."""
        return self.run_on_loop(lambda core: core.cluster.with_partitions(()))

    def run_on_loop(self, fn: Callable[[KafkaClientCore], T], timeout: float | None = None) -> T:
        """Run ``fn(core)`` on the loop thread and return its result (for queries)."""
        self.start()
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()

        def issue(now: float) -> None:
            fut.set_result(fn(self._core))

        self._call(issue, fut)
        return self._wait(fut, timeout, "run_on_loop")

    # -- plumbing -------------------------------------------------------------
    def _call(
        self, fn: Callable[[float], None], fut: concurrent.futures.Future[Any] | None = None
    ) -> None:
        """Run ``fn(now)`` as a core command on the loop thread; errors go to ``fut``."""
        if self._state is ClientState.NEW:
            self.start()

        def run() -> None:
            if self._stopping:
                if fut is not None and not fut.done():
                    fut.set_exception(self._crashed or RequestCancelled("KafkaClient closed"))
                return
            try:
                self._bridge.command(fn)
            except Exception as exc:
                if fut is None or fut.done():
                    raise
                fut.set_exception(exc)

        if self._state is ClientState.CLOSED:
            if fut is not None:
                fut.set_exception(LocalProtocolError("KafkaClient: closed; make a new client"))
            return
        if self._crashed is not None:
            if fut is not None:
                fut.set_exception(
                    LocalProtocolError(
                        f"KafkaClient: its loop thread died ({self._crashed!r}); close it "
                        "and make a new client"
                    )
                )
            return
        if self._thread is threading.current_thread():
            run()
        else:
            self._io.call_soon_threadsafe(run)

    def _wait(self, fut: concurrent.futures.Future[T], timeout: float | None, what: str) -> T:
        if self._thread is threading.current_thread() and not fut.done():
            raise LocalProtocolError(
                f"KafkaClient.{what}: would block the client's loop thread; use submit()"
            )
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            raise KafkaTimeoutError(f"KafkaClient.{what}: no answer within {timeout} s") from None


def _resolver(fut: concurrent.futures.Future[Any]) -> Callable[[Any, BaseException | None], None]:
    def done(value: Any, error: BaseException | None) -> None:
        if fut.done():
            return
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(value)

    return done
