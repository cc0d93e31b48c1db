"""Requests to a coordinator (InitProducerId and the transaction APIs), retried until they hold.

Theory of operation
-------------------
The producer id and every transaction step are requests to a coordinator
(the transaction coordinator, the group coordinator for TxnOffsetCommit,
any broker for an idempotent producer's InitProducerId). Each is a
:class:`CoordinatorCall`: the request, where it goes, how to read the
error code out of the answer, and what to do on success or failure. The
call lives in :class:`CoordinatorRequests` until it succeeds or fails for
good; a retry waits in the producer's
:class:`~kafkacore.timers.Deadlines` under ``("coordinator", id)``.

What an answer means is data (:data:`RULES`, first match wins), as the
Java producer's ``TransactionManager`` handlers read:

===============================================  ===========
answer                                           reaction
===============================================  ===========
no error                                         OK
coordinator moved, loading or busy               RETRY
any other retriable code, except fencing codes   RETRY
PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, ...     FENCE (transactional producers)
anything else                                    FAIL
===============================================  ===========

A request that got no answer (connection lost, timeout, no coordinator
found) is retried too, unless the brokers refused our credentials or the
FindCoordinator refusal itself is not retriable: the same request would get
the same answer. Retries back off exponentially with jitter (KIP-580) and
each failure is handed to the call's ``note`` (the producer keeps the last
InitProducerId failure to explain undelivered records).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, Protocol

from kafkacore.client import RequestHandle, Target
from kafkacore.client.stack import Answer, R, Send
from kafkacore.errors import BrokerError
from kafkacore.producer.causes import broker_refusal, retry_cannot_help
from kafkacore.protocol._base import Request
from kafkacore.protocol.enums import PRODUCER_FENCING, TXN_COORDINATOR_RETRY, ErrorCode
from kafkacore.protocol.error_codes import error_class
from kafkacore.timers import Deadlines

__all__ = ["RULES", "CoordinatorCall", "CoordinatorRequests", "Reaction", "error_code", "react"]


class Reaction(Enum):
    OK = "ok"
    RETRY = "retry"
    FENCE = "fence"
    FAIL = "fail"


def _retriable(code: int, _transactional: bool) -> bool:
    cls = error_class(code)
    return cls is not None and cls.retriable and code not in PRODUCER_FENCING


#: (condition on (error code, transactional producer), reaction): first match wins.
RULES: tuple[tuple[Callable[[int, bool], bool], Reaction], ...] = (
    (lambda code, _t: code == ErrorCode.NONE, Reaction.OK),
    (lambda code, _t: code in TXN_COORDINATOR_RETRY, Reaction.RETRY),
    (_retriable, Reaction.RETRY),
    (lambda code, transactional: code in PRODUCER_FENCING and transactional, Reaction.FENCE),
)


def react(code: int, transactional: bool) -> Reaction:
    """What an answer carrying ``code`` means (see :data:`RULES`)."""
    for condition, reaction in RULES:
        if condition(code, transactional):
            return reaction
    return Reaction.FAIL


class _Coded(Protocol):
    """An answer with one top-level error code."""

    error_code: int


def error_code(response: _Coded) -> int:
    """The ``codes`` of an answer that carries one error code."""
    return int(response.error_code)


#: Called with (call, response, now) on success and (call, error, now) on failure.
OnOk = Callable[["CoordinatorCall[R]", R, float], None]
OnFail = Callable[["CoordinatorCall[R]", BaseException, float], None]


@dataclass(slots=True, eq=False)
class CoordinatorCall(Generic[R]):
    """One coordinator request until it succeeds or fails for good; ``R`` is
    its response class."""

    request: Request[R]
    target: Target
    on_ok: OnOk[R]
    on_fail: OnFail[R]
    max_version: int | None = None
    #: Reads the error code that decides (several partitions may each carry
    #: one); :func:`error_code` for an answer with one.
    codes: Callable[[R], int] = field(kw_only=True)
    #: What the callbacks need to know about the call (e.g. the partitions it adds).
    data: Any = None
    #: Told of every failed attempt.
    note: Callable[[BaseException], None] | None = None
    #: Counts for :attr:`CoordinatorRequests.busy` (a transaction step in progress).
    busy: bool = True
    id: int = 0
    attempts: int = 0
    handle: RequestHandle[R] | None = field(default=None, repr=False)


class CoordinatorRequests:
    """Sends :class:`CoordinatorCall` s and retries them; see the module docstring."""

    __slots__ = (
        "_backoff_s",
        "_deadlines",
        "_next_id",
        "_send",
        "calls",
        "on_fence",
        "transactional",
    )

    def __init__(
        self,
        send: Send,
        deadlines: Deadlines[Hashable],
        backoff_s: Callable[[int], float],
        *,
        transactional: bool,
    ) -> None:
        self._send = send
        self._deadlines = deadlines
        self._backoff_s = backoff_s
        self.transactional = transactional
        #: Told when a transactional producer is fenced (set by the transaction driver).
        self.on_fence: Callable[[BaseException, float], None] | None = None
        #: Calls sent or waiting to be sent again, by id.
        # Calls of every response type: the table erases it (each call is typed).
        self.calls: dict[int, CoordinatorCall[Any]] = {}
        self._next_id = 1

    def call(self, call: CoordinatorCall[R], now: float) -> CoordinatorCall[R]:
        """Send ``call`` now; its callbacks run in a later step."""
        call.id = self._next_id
        self._next_id += 1
        self.calls[call.id] = call
        self._post(call, now)
        return call

    def resend(self, call_id: int, now: float) -> None:
        """The backoff of ``call_id`` is over (a ``("coordinator", id)`` deadline)."""
        call = self.calls.get(call_id)
        if call is not None:
            self._post(call, now)

    def cancel_all(self) -> None:
        for call_id in self.calls:
            self._deadlines.cancel(("coordinator", call_id))
        self.calls.clear()

    def _post(self, call: CoordinatorCall[R], now: float) -> None:
        call.handle = self._send(
            call.request,
            functools.partial(self._answered, call),
            now=now,
            target=call.target,
            max_version=call.max_version,
        )

    def _answered(self, call: CoordinatorCall[R], response: Answer[R], now: float) -> None:
        if call.id not in self.calls:
            return  # cancelled (the producer closed)
        if isinstance(response, BaseException):
            error = response
            if call.note is not None:
                call.note(error)
            if retry_cannot_help(error) or (isinstance(error, BrokerError) and not error.retriable):
                # Refused credentials, a request that cannot be encoded, or
                # FindCoordinator refusing the transactional id or group: the
                # same request gets the same answer.
                self._fail(call, error, now)
            else:
                self._retry(call, error, now)
            return
        code = call.codes(response)
        reaction = react(code, self.transactional)
        if reaction is Reaction.OK:
            del self.calls[call.id]
            call.on_ok(call, response, now)
            return
        node = None if call.handle is None else call.handle.node_id
        api = type(call.request).__name__
        if node is not None:
            api += f" (broker {node})" if node >= 0 else " (a bootstrap server)"
        exc = broker_refusal(code, api, node_id=node)
        if reaction is Reaction.RETRY:
            self._retry(call, exc, now)
        elif reaction is Reaction.FENCE and self.on_fence is not None:
            del self.calls[call.id]
            self.on_fence(exc, now)
        else:
            self._fail(call, exc, now)

    def _retry(self, call: CoordinatorCall[R], error: BaseException, now: float) -> None:
        call.attempts += 1
        if call.note is not None:
            call.note(error)
        self._deadlines.set(("coordinator", call.id), now + self._backoff_s(call.attempts))

    def _fail(self, call: CoordinatorCall[R], error: BaseException, now: float) -> None:
        del self.calls[call.id]
        call.on_fail(call, error, now)

    @property
    def busy(self) -> bool:
        """A transaction step is in flight or waits for its retry."""
        return any(call.busy for call in self.calls.values())
