"""The driver's half of the exactly-once sink: end (or fence) the tasks' open transactions.

Theory of operation
-------------------
Each task of an exactly-once write leaves its Kafka transaction open and
reports a :class:`TaskTransaction` (transactional id, producer id, epoch) in
its commit message. Spark's driver then calls the writer's ``commit`` (all
tasks succeeded) or ``abort``; both come here:

* :func:`end_transactions` sends one EndTxn per task straight to the
  transaction coordinator (``TransactionCoordinator`` routing of
  :class:`kafkacore.transports.selector.KafkaClient`), with the task's producer id and
  epoch: the coordinator accepts it from any client, as it would from the
  task's own producer. Under transactions v2 (KIP-890, the 4.x default) the
  coordinator bumps the epoch when the transaction ends; an EndTxn retried
  after its answer was lost gets NONE again (checked on Kafka 4.3.1), so
  retrying is safe.
* :func:`fence_transactional_ids` sends InitProducerId for transactional ids
  whose task failed without a commit message: the coordinator aborts the
  transaction such a task may have left open, instead of holding back
  ``read_committed`` readers until the transaction timeout.

All requests go out at once; answers are classified by :data:`END_TXN_OUTCOMES`
/ :data:`INIT_PID_OUTCOMES` (coordinator moves and CONCURRENT_TRANSACTIONS,
which the coordinator answers while it writes the markers of the previous
step, are retried after ``retry.backoff.ms``; a lost connection or timeout
too), until every request settled or the deadline passed. The result maps
each transactional id that did not end as asked to its error; the caller
decides whether that fails the write (commit) or is only logged (abort).
"""

from __future__ import annotations

import concurrent.futures
import enum
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafkacore.client import TransactionCoordinator
from kafkacore.errors import KafkaError, KafkaTimeoutError
from kafkacore.protocol.enums import PRODUCER_FENCING, TXN_COORDINATOR_RETRY, ErrorCode
from kafkacore.protocol.error_codes import error_for_code
from kafkacore.protocol.messages import EndTxnRequest, InitProducerIdRequest

__all__ = [
    "END_TXN_OUTCOMES",
    "INIT_PID_OUTCOMES",
    "Outcome",
    "TaskTransaction",
    "end_transactions",
    "fence_transactional_ids",
    "settle",
]


class Outcome(enum.Enum):
    DONE = "done"
    RETRY = "retry"
    FENCED = "fenced"  # a newer producer (a later task attempt, or the timeout) owns the id
    FAILED = "failed"


# The coordinator moved (the client looks it up again), the request timed out,
# or the markers of the previous step are still being written.
_RETRY_CODES: dict[int, Outcome] = dict.fromkeys(TXN_COORDINATOR_RETRY, Outcome.RETRY)

# EndTxn answers; any other code is FAILED.
END_TXN_OUTCOMES: Mapping[int, Outcome] = {
    ErrorCode.NONE: Outcome.DONE,
    **_RETRY_CODES,
    **dict.fromkeys(PRODUCER_FENCING, Outcome.FENCED),
}

# InitProducerId answers; any other code is FAILED.
INIT_PID_OUTCOMES: Mapping[int, Outcome] = {ErrorCode.NONE: Outcome.DONE, **_RETRY_CODES}


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskTransaction:
    """An open transaction a task left for the driver to end."""

    transactional_id: str
    producer_id: int
    epoch: int
    v2: bool  # KIP-890 transactions v2 (the coordinator bumps the epoch at the end)


class TransactionFencedError(KafkaError):
    """The transaction was ended by someone else (a newer producer or its timeout)."""


def settle(
    answers: Mapping[str, int | BaseException], table: Mapping[int, Outcome]
) -> tuple[set[str], dict[str, BaseException]]:
    """Split one round of answers into (ids to retry, ids that failed with their error).

    Ids absent from both sets are done. An exception (lost connection,
    timeout, cancelled request) is retried: the deadline bounds it.
    """
    retry: set[str] = set()
    failed: dict[str, BaseException] = {}
    for key, answer in answers.items():
        if isinstance(answer, BaseException):
            retry.add(key)
            continue
        outcome = table.get(answer, Outcome.FAILED)
        if outcome is Outcome.RETRY:
            retry.add(key)
        elif outcome is Outcome.FENCED:
            failed[key] = TransactionFencedError(
                f"transaction of {key!r}: {error_for_code(answer)!r}; a newer producer with "
                "this transactional id, or the coordinator's transaction timeout, ended it"
            )
        elif outcome is Outcome.FAILED:
            failed[key] = error_for_code(answer) or KafkaError(f"error code {answer}")
    return retry, failed


def _drive(
    client: Any,
    requests: Mapping[str, Any],
    table: Mapping[int, Outcome],
    *,
    timeout_s: float,
    backoff_s: float,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, BaseException]:
    deadline = clock() + timeout_s
    pending = dict(requests)
    failed: dict[str, BaseException] = {}
    last: dict[str, BaseException | int] = {}
    while pending:
        futures = {
            key: client.submit(request, target=TransactionCoordinator(key))
            for key, request in pending.items()
        }
        remaining = max(deadline - clock(), 0.0)
        concurrent.futures.wait(list(futures.values()), timeout=remaining)
        answers: dict[str, int | BaseException] = {}
        for key, fut in futures.items():
            if not fut.done():
                fut.cancel()
                answers[key] = KafkaTimeoutError(f"no answer for {key!r} within {timeout_s} s")
            elif fut.exception() is not None:
                answers[key] = fut.exception()
            else:
                answers[key] = fut.result().error_code
        last.update(answers)
        retry, round_failed = settle(answers, table)
        failed.update(round_failed)
        pending = {key: request for key, request in pending.items() if key in retry}
        if pending and clock() + backoff_s >= deadline:
            for key in pending:
                answer = last[key]
                cause = answer if isinstance(answer, BaseException) else error_for_code(answer)
                failed[key] = KafkaTimeoutError(
                    f"transaction of {key!r} not settled within {timeout_s} s (last: {cause!r})"
                )
            break
        if pending:
            sleep(backoff_s)
    return failed


def end_transactions(
    client: Any,
    transactions: Sequence[TaskTransaction],
    *,
    commit: bool,
    timeout_s: float,
    backoff_s: float,
) -> dict[str, BaseException]:
    """Commit (or abort) every transaction; return the ones that did not end so, with why.

    ``client`` is a started :class:`kafkacore.transports.selector.KafkaClient`.
    """
    requests = {
        t.transactional_id: EndTxnRequest(
            transactional_id=t.transactional_id,
            producer_id=t.producer_id,
            producer_epoch=t.epoch,
            committed=commit,
        )
        for t in transactions
    }
    return _drive(client, requests, END_TXN_OUTCOMES, timeout_s=timeout_s, backoff_s=backoff_s)


def fence_transactional_ids(
    client: Any,
    transactional_ids: Sequence[str],
    *,
    transaction_timeout_ms: int,
    timeout_s: float,
    backoff_s: float,
) -> dict[str, BaseException]:
    """InitProducerId for each id: the coordinator aborts what an old producer left open."""
    requests = {
        tid: InitProducerIdRequest(
            transactional_id=tid,
            transaction_timeout_ms=transaction_timeout_ms,
            producer_id=-1,
            producer_epoch=-1,
        )
        for tid in transactional_ids
    }
    return _drive(client, requests, INIT_PID_OUTCOMES, timeout_s=timeout_s, backoff_s=backoff_s)
