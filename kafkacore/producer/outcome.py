"""What to do with one partition's answer to a Produce request: a pure decision.

Theory of operation
-------------------
The sender hands :func:`decide` the partition's error code and three facts
(is the producer transactional, is it idempotent, does an earlier batch of
the same partition still wait for its answer, does the batch hold more than
one record); it gets back an :class:`Verdict`. The rules are data
(:data:`RULES`, first match wins), read top to bottom like the Java
producer's ``Sender.completeBatch`` / ``TransactionManager`` handling:

- success, and DUPLICATE_SEQUENCE_NUMBER (an earlier attempt was written,
  KIP-98), complete the batch;
- PRODUCER_FENCED / INVALID_PRODUCER_EPOCH fence a transactional producer;
- sequence trouble (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID,
  INVALID_PRODUCER_EPOCH): abortable for transactions; a plain retry while
  an earlier batch is unfinished (its retry fills the gap); otherwise an
  epoch bump then retry (KIP-360);
- MESSAGE_TOO_LARGE / RECORD_LIST_TOO_LARGE: split a multi-record batch,
  fail a single record;
- any other retriable code: retry; everything else fails the batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from kafkacore.protocol.enums import PRODUCER_FENCING, ErrorCode
from kafkacore.protocol.error_codes import error_class

__all__ = ["RULES", "Facts", "Verdict", "decide"]


class Verdict(Enum):
    COMPLETE = "complete"  # written: report success
    DUPLICATE = "duplicate"  # written by an earlier attempt: success, offset unknown
    FENCE = "fence"  # a newer producer took over: fatal
    ABORTABLE = "abortable"  # fail the batch; the transaction must abort
    RETRY = "retry"  # same bytes, same sequence, after retry_backoff_ms
    BUMP_AND_RETRY = "bump_and_retry"  # new epoch first (KIP-360), then resend
    SPLIT = "split"  # resend as two halves
    TOO_LARGE = "too_large"  # fail: one record the broker will never take
    FAIL = "fail"  # fail the batch with the broker's error


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    code: int
    transactional: bool
    idempotent: bool
    earlier_unfinished: bool
    multi_record: bool


_SEQUENCE = frozenset(
    {
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        ErrorCode.UNKNOWN_PRODUCER_ID,
        ErrorCode.INVALID_PRODUCER_EPOCH,
    }
)
_TOO_LARGE = frozenset({ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE})


def _retriable(f: Facts) -> bool:
    cls = error_class(f.code)
    return cls is not None and cls.retriable


#: (condition, action): the first condition that holds decides.
RULES: tuple[tuple[Callable[[Facts], bool], Verdict], ...] = (
    (lambda f: f.code == ErrorCode.NONE, Verdict.COMPLETE),
    (lambda f: f.code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER, Verdict.DUPLICATE),
    (lambda f: f.code in PRODUCER_FENCING and f.transactional, Verdict.FENCE),
    (lambda f: f.code in _SEQUENCE and f.transactional, Verdict.ABORTABLE),
    (
        lambda f: f.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and f.earlier_unfinished,
        Verdict.RETRY,
    ),
    (lambda f: f.code in _SEQUENCE, Verdict.BUMP_AND_RETRY),
    (lambda f: f.code in _TOO_LARGE and f.multi_record, Verdict.SPLIT),
    (lambda f: f.code in _TOO_LARGE, Verdict.TOO_LARGE),
    (_retriable, Verdict.RETRY),
)


def decide(facts: Facts) -> Verdict:
    for condition, action in RULES:
        if condition(facts):
            return action
    return Verdict.FAIL
