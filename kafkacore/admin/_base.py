"""The admin machine's engine: jobs, requests, retries and deadlines.

Theory of operation
-------------------
Every admin command becomes a :class:`Job`: one
:class:`~kafkacore.operation.Operation`, the *items* it is about (topics,
groups, partitions, config resources; a single ``None`` item for commands
about one thing), a deadline (``timeout_ms`` of the command, else
``default_api_timeout_ms``) and a rule that turns the settled items into
the operation's value (:func:`items_outcome`, :func:`single_outcome`).

A job sends requests through the client core (:meth:`AdminBase._send`),
each covering some of its items, with the request timeout capped by what is
left of the deadline. An answer settles items (a value or that item's own
error), or asks for some of them again:

- a request that failed as a whole (connection lost, request timed out)
  is sent again for the same items if the failure is retriable
  (:func:`retriable`); otherwise its items fail with it;
- an item whose error code the command retries (coordinator moved,
  not the controller, leader moved...) is sent again.

"Again" always waits first: exponential backoff from ``retry_backoff_ms``
to ``retry_backoff_max_ms`` with jitter (KIP-580), one attempt counter per
job, timers kept in the machine's :class:`~kafkacore.timers.Deadlines`. A
retry that would start after the deadline does not happen: its items fail
with ``KafkaTimeoutError`` naming the last error (also its ``__cause__``),
or with ``NoBrokersAvailable`` when no broker was ever reached (a cluster
not reached yet is retried until then: issue 26).
When the deadline itself passes, whatever is unsettled fails the same way
and requests still in flight are cancelled.

A job completes when every item is settled, or when nothing is in flight or
scheduled any more; its operation is completed exactly once and
``OperationCompleted`` emitted in the same step. An operation fails only
when one request-level error took every item down (no broker reachable,
authentication refused, the deadline passed with no answer at all);
otherwise its value carries each item's own outcome.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeAlias

from kafkacore.admin.config import AdminConfig
from kafkacore.admin.results import ItemResult, ItemResults
from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.config import ClientConfig
from kafkacore.client.core import KafkaClientCore
from kafkacore.client.events import CLIENT_EVENTS, ClientEvent, RequestCompleted
from kafkacore.client.handles import RequestHandle
from kafkacore.client.pool import unreachable_within
from kafkacore.client.response_errors import broker_error
from kafkacore.client.routing import GroupCoordinator, Target, TransactionCoordinator
from kafkacore.client.stack import Answer, R, StackedMachine
from kafkacore.errors import (
    AuthenticationError,
    BrokerError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    LocalProtocolError,
    RemoteProtocolError,
    RequestCancelled,
)
from kafkacore.operation import Operation, OperationCompleted
from kafkacore.protocol._base import Request
from kafkacore.protocol.enums import CoordinatorType, ErrorCode

__all__ = [
    "CONTROLLER_RETRY",
    "AdminBase",
    "Job",
    "answering_broker",
    "code_error",
    "items_outcome",
    "retriable",
    "single_outcome",
]

#: Keys of the machine's deadlines: (_EXPIRE, job id) and (_RETRY, timer id).
_EXPIRE = "expire"
_RETRY = "retry"

#: Answers after which a controller command is sent again: another broker is
#: the controller now, or the controller's mutation quota is used up (KIP-599).
CONTROLLER_RETRY = frozenset({ErrorCode.NOT_CONTROLLER, ErrorCode.THROTTLING_QUOTA_EXCEEDED})

#: Re-issue the request for these items at this time.
Again = Callable[[list[Any], float], None]
#: Handle a successful answer: (response, handle, now); failures go elsewhere
#: (``_send``'s ``on_error``), so a handler gets its response type, never None.
OnResponse: TypeAlias = Callable[[R, RequestHandle[R], float], None]


class Job:
    """One command in progress; see the module docstring."""

    __slots__ = (
        "attempts",
        "deadline",
        "finish",
        "keys",
        "known",
        "last_error",
        "op",
        "requests",
        "results",
        "timeout_ms",
        "timers",
        "wide_errors",
    )

    def __init__(
        self,
        op: Operation[Any],
        keys: Sequence[Hashable],
        *,
        deadline: float,
        timeout_ms: int,
        finish: Callable[[Job], tuple[Any, BaseException | None]],
    ) -> None:
        self.op = op
        self.keys: list[Any] = list(keys)
        self.known: set[Hashable] = set(self.keys)
        self.deadline = deadline
        self.timeout_ms = timeout_ms
        self.finish = finish
        self.results: dict[Hashable, ItemResult[Any]] = {}
        self.requests: set[RequestHandle[Any]] = set()
        self.timers: set[int] = set()
        self.attempts = 0
        self.last_error: BaseException | None = None
        # Request-level errors that settled items (see items_outcome).
        self.wide_errors: list[BaseException] = []

    def add(self, keys: Iterable[Hashable]) -> None:
        """Items found while working (the brokers a fan-out reaches)."""
        fresh = [k for k in keys if k not in self.known]
        self.known.update(fresh)
        self.keys.extend(fresh)

    def unsettled(self, keys: Iterable[Hashable] | None = None) -> list[Any]:
        """The items (of ``keys``, default all) that have no outcome yet."""
        return [k for k in (self.keys if keys is None else keys) if k not in self.results]

    def settle(self, key: Hashable, value: Any = None, error: BaseException | None = None) -> None:
        """Give ``key`` its outcome (the first one stands)."""
        if key not in self.results:
            self.results[key] = ItemResult(value, error)

    def __repr__(self) -> str:
        return f"<Job {self.op!r} {len(self.results)}/{len(self.keys)} settled>"


def items_outcome(job: Job) -> tuple[Any, BaseException | None]:
    """ItemResults in request order, or the one request-level error that failed them all."""
    errors = [job.results[k].error for k in job.keys]
    first = errors[0] if errors else None
    if (
        first is not None
        and all(e is first for e in errors)
        and any(first is w for w in job.wide_errors)
    ):
        return None, first
    return ItemResults({k: job.results[k] for k in job.keys}), None


def single_outcome(job: Job) -> tuple[Any, BaseException | None]:
    """The value or error of a job's only item."""
    item = job.results[job.keys[0]]
    return item.value, item.error


def retriable(error: BaseException) -> bool:
    """Whether a request that failed with ``error`` is worth sending again."""
    if isinstance(error, BrokerError):
        return error.retriable
    if isinstance(error, AuthenticationError | RequestCancelled | LocalProtocolError):
        return False  # refused credentials, shut down, or our own mistake
    if isinstance(error, RemoteProtocolError):
        return False  # the broker broke the protocol; asking again repeats it
    return isinstance(error, KafkaTimeoutError | KafkaConnectionError)


def code_error(code: int, message: str | None, what: str, *, node_id: int | None) -> BrokerError:
    """The exception of a non-zero error code that broker ``node_id`` answered, naming
    ``what`` it was about and that broker; the error keeps both (``code``, ``node_id``).

    ``node_id`` has no default so that no call site forgets it (issue 13): an
    answer's handler passes :meth:`AdminBase._answerer`.
    """
    if node_id is None:
        where = what
    else:
        where = f"{what} (broker {node_id})" if node_id >= 0 else f"{what} (a bootstrap server)"
    error = broker_error(code, f"{where}: {message}" if message else where, node_id=node_id)
    assert error is not None, "code_error needs a non-zero code"
    return error


def answering_broker(client: KafkaClientCore, node_id: int | None) -> int | None:
    """The broker id of a connection: a bootstrap address (a negative id, used before
    the metadata names the brokers) is the broker the metadata lists at that address."""
    if node_id is None or node_id >= 0:
        return node_id
    seed = client.cluster.broker_metadata(node_id)
    if seed is not None:
        for b in client.cluster.brokers():
            if b.node_id >= 0 and (b.host, b.port) == (seed.host, seed.port):
                return b.node_id
    return node_id


#: Everything :meth:`AdminCore.pull_events` can return: a closed union (the
#: completion of its commands, and the client's events passed through).
AdminEvent: TypeAlias = OperationCompleted | ClientEvent


class AdminBase(StackedMachine[AdminEvent]):
    """The job engine the admin commands are written on (see the module docstring)."""

    EVENT_TYPES = (OperationCompleted, *CLIENT_EVENTS)

    def __init__(
        self,
        config: AdminConfig | None = None,
        *,
        now: float,
        rng: random.Random,
        client_config: ClientConfig | None = None,
        client: KafkaClientCore | None = None,
    ) -> None:
        if config is not None and not isinstance(config, AdminConfig):
            raise TypeError(f"AdminCore: config must be an AdminConfig, got {config!r}")
        if client is not None and client_config is not None:
            raise ValueError("AdminCore: give client_config or client, not both")
        if client is None:
            client = KafkaClientCore(client_config, now=now, rng=rng)
        super().__init__(client)
        self.config = config if config is not None else AdminConfig()
        self._rng = rng
        ccfg = client.config
        self._backoff = ExponentialBackoff(ccfg.retry_backoff_ms, ccfg.retry_backoff_max_ms)
        self._jobs: dict[int, Job] = {}
        self._timers: dict[int, tuple[Job, Callable[[float], None]]] = {}
        self._next_id = 1
        self._closed = False

    # ------------------------------------------------------------ queries
    @property
    def pending_operations(self) -> int:
        """Commands not completed yet."""
        return len(self._jobs)

    @property
    def closed(self) -> bool:
        return self._closed

    # ----------------------------------------------------------- lifecycle
    def close(self, *, now: float) -> None:
        """Fail every pending command with RequestCancelled and shut the client down."""
        if self._closed:
            return
        for job in list(self._jobs.values()):
            cancelled = RequestCancelled(f"{job.op.kind}: the admin client closed")
            self._fail_all(job, job.unsettled(), cancelled)
            self._close_job(job, now)
        self._closed = True
        self.client.shutdown(now=now)
        self._step(now)

    # ------------------------------------------------- StackedMachine hooks
    def _on_client_event(self, event: object, now: float) -> None:
        if not isinstance(event, RequestCompleted):  # ours are routed to their callbacks
            self._emit(event)

    def _on_deadline(self, key: Hashable, now: float) -> None:
        assert isinstance(key, tuple), key
        kind: str = key[0]
        ident: int = key[1]
        if kind == _RETRY:
            job, again = self._timers.pop(ident)
            job.timers.discard(ident)
            again(now)
            self._check_done(job, now)
            return
        job = self._jobs[ident]
        self._fail_all(job, job.unsettled(), self._timeout_error(job, job.last_error))
        self._close_job(job, now)

    def _stopped(self) -> bool:
        return self._closed

    def _answerer(self) -> int | None:
        """While an answer is handled: the id of the broker that sent it, a bootstrap
        connection's negative id mapped to the broker's own (:func:`answering_broker`);
        None outside a handler. Every error built from the answer carries it."""
        return answering_broker(self.client, self.answered_by)

    # ------------------------------------------------------------- jobs
    def _begin(
        self,
        kind: str,
        keys: Sequence[Hashable],
        finish: Callable[[Job], tuple[Any, BaseException | None]],
        timeout_ms: int | None,
        now: float,
    ) -> Job:
        """Register a new job (its arguments are checked already)."""
        if self._closed:
            raise LocalProtocolError(f"{kind}: the admin client is closed; make a new one")
        limit = self.config.max_pending_operations
        if len(self._jobs) >= limit:
            raise LocalProtocolError(
                f"{kind}: {limit} admin commands are already pending "
                "(max_pending_operations); wait for some to complete"
            )
        timeout = self.config.default_api_timeout_ms if timeout_ms is None else timeout_ms
        op: Operation[Any] = Operation(self._next_id, kind)
        self._next_id += 1
        job = Job(op, keys, deadline=now + timeout / 1000, timeout_ms=timeout, finish=finish)
        self._jobs[op.id] = job
        self.deadlines.set((_EXPIRE, op.id), job.deadline)
        return job

    def _started(self, job: Job, now: float) -> Operation[Any]:
        """Run the step the command's first requests need; return its operation."""
        self._check_done(job, now)
        self._step(now)
        return job.op

    def _check_done(self, job: Job, now: float) -> None:
        if not job.unsettled() or not (job.requests or job.timers):
            self._close_job(job, now)

    def _close_job(self, job: Job, now: float) -> None:
        for key in job.unsettled():
            # Every handler settles what its answer covers; reaching here is a
            # broker answer that left an item out.
            what = f"no broker answer mentioned {key!r}" if key is not None else "no result came"
            job.settle(key, error=RemoteProtocolError(f"{job.op.kind}: {what}"))
        for handle in list(job.requests):
            self._forget(handle)
            self.client.cancel(handle, now=now)
        job.requests.clear()
        for ident in job.timers:
            self._timers.pop(ident, None)
            self.deadlines.cancel((_RETRY, ident))
        job.timers.clear()
        self.deadlines.cancel((_EXPIRE, job.op.id))
        del self._jobs[job.op.id]
        value, error = job.finish(job)
        job.op._complete(value, error)
        self._emit(OperationCompleted(handle=job.op))

    # ---------------------------------------------------------- requests
    def _send(
        self,
        job: Job,
        keys: list[Any],
        request: Request[R],
        on_answer: OnResponse[R],
        again: Again,
        *,
        now: float,
        target: Target,
        build: Callable[[int], Request[R]] | None = None,
        max_version: int | None = None,
        on_error: Callable[[BaseException, float], None] | None = None,
    ) -> None:
        """Send ``request`` for ``keys``; a request-level failure goes to ``on_error``,
        by default :meth:`_failed` (retry or fail the items)."""
        timeout_ms = self._budget_ms(job, now)
        box: list[RequestHandle[R]] = []

        def done(answer: Answer[R], t: float) -> None:
            # A closed job forgot its requests: their answers never get here.
            handle = box[0]
            job.requests.discard(handle)
            if not isinstance(answer, BaseException):
                on_answer(answer, handle, t)
            else:
                if retriable(answer):
                    self._forget_route(handle)
                if on_error is not None:
                    on_error(answer, t)
                else:
                    self._failed(job, keys, answer, again, t)
            self._check_done(job, t)

        try:
            handle = self._request(
                request,
                done,
                now=now,
                target=target,
                timeout_ms=timeout_ms,
                build=build,
                max_version=max_version,
            )
        except LocalProtocolError as exc:  # the client's queue is full
            self._fail_all(job, keys, exc)
            return
        box.append(handle)
        job.requests.add(handle)

    def _forget_route(self, handle: RequestHandle[R]) -> None:
        """A coordinator request that got no answer: look the coordinator up again.

        The client core forgets a coordinator when an answer says it moved;
        one that does not answer at all (killed, partitioned) must be looked
        up again too, or every retry would wait for the same dead broker (the
        Java admin client does the same). Controllers and leaders need
        nothing here: the client core refreshes its metadata after a failed
        connection, and leader lookups are the admin's own, made afresh.
        """
        target = handle.target
        if isinstance(target, GroupCoordinator):
            self.client.cluster.mark_coordinator_unknown(CoordinatorType.GROUP, target.group_id)
        elif isinstance(target, TransactionCoordinator):
            self.client.cluster.mark_coordinator_unknown(
                CoordinatorType.TRANSACTION, target.transactional_id
            )

    def _failed(
        self, job: Job, keys: list[Any], error: BaseException, again: Again, now: float
    ) -> None:
        """A request for ``keys`` failed as a whole: retry it or fail its items."""
        if retriable(error):
            self._again(job, keys, error, again, now)
        else:
            self._fail_all(job, keys, error)

    def _fail_all(self, job: Job, keys: list[Any], error: BaseException) -> None:
        """Settle the unsettled ``keys`` with one request-level ``error``."""
        keys = job.unsettled(keys)
        if keys:  # so wide_errors never outgrows the items
            job.wide_errors.append(error)
        for key in keys:
            job.settle(key, error=error)

    def _retry_items(
        self, job: Job, failed: list[tuple[Any, BaseException]], again: Again, now: float
    ) -> None:
        """Ask again for the items an answer refused with a code the command retries."""
        if failed:
            self._again(job, [k for k, _ in failed], failed[0][1], again, now)

    def _controller_retry(
        self, job: Job, retry: list[tuple[Any, BaseException]], again: Again, now: float
    ) -> None:
        """Send again what a controller refused; look the controller up again first."""
        if any(getattr(e, "code", None) == ErrorCode.NOT_CONTROLLER for _, e in retry):
            self.client.request_metadata_update(now=now)
        self._retry_items(job, retry, again, now)

    def _top_level(
        self,
        job: Job,
        keys: list[Any],
        code: int,
        message: str | None,
        what: str,
        again: Again,
        now: float,
    ) -> bool:
        """True when a controller answer's top-level ``code`` is success; else retry
        (CONTROLLER_RETRY) or fail ``keys`` with it."""
        if not code:
            return True
        error = code_error(code, message, what, node_id=self._answerer())
        if code in CONTROLLER_RETRY:
            self._controller_retry(job, [(k, error) for k in keys], again, now)
        else:
            self._fail_all(job, keys, error)
        return False

    def _again(
        self, job: Job, keys: list[Any], cause: BaseException, again: Again, now: float
    ) -> None:
        """Ask for ``keys`` again after the backoff, or time them out."""
        keys = job.unsettled(keys)
        if not keys:
            return
        job.last_error = cause
        job.attempts += 1
        at = now + self._backoff.delay_ms(job.attempts, self._rng) / 1000
        if at >= job.deadline:
            self._fail_all(job, keys, self._timeout_error(job, cause))
            return
        ident = self._next_id
        self._next_id += 1
        self._timers[ident] = (job, lambda t: again(keys, t))
        job.timers.add(ident)
        self.deadlines.set((_RETRY, ident), at)

    def _budget_ms(self, job: Job, now: float) -> int:
        """A broker-side wait (CreateTopics' TimeoutMs...) that ends with the job."""
        left_ms = max(1, math.ceil((job.deadline - now) * 1000))
        return min(self.client.config.request_timeout_ms, left_ms)

    def _timeout_error(self, job: Job, cause: BaseException | None) -> KafkaError:
        """The job's bound passed: NoBrokersAvailable naming each bootstrap server's
        last error when no broker was ever reached (until then refused connections
        are retried: issue 26), else a timeout naming the last error."""
        text = f"{job.op.kind}: not done within {job.timeout_ms} ms"
        unreachable = self.client.unreachable_from_the_start()
        if unreachable is not None:
            return unreachable_within(text, unreachable)
        if cause is not None:
            text += f"; last error: {cause}"
        error = KafkaTimeoutError(text)
        error.__cause__ = cause
        return error
