"""Getting and bumping the producer id: InitProducerId for idempotence (KIP-98, KIP-360).

Theory of operation
-------------------
:class:`ProducerIds` drives the :class:`~kafkacore.producer.idempotence.ProducerIdentity`
through its table with InitProducerId requests
(:class:`~kafkacore.producer.coordinator.CoordinatorRequests` retries them):

* an idempotent producer asks any broker for an id at start
  (:meth:`ProducerIds.wants`); after a failure it fails what waits to be
  sent (nothing can be sent without an id) and asks again after a backoff
  that grows while it keeps failing (KIP-580);
* a sequence the broker no longer accepts, or a batch that failed after it
  got a sequence, asks for an epoch bump (:meth:`ProducerIds.need_bump`);
  the bump waits until nothing is in flight, then InitProducerId with the
  current id and epoch returns the next epoch and every partition's
  sequence restarts at 0 (KIP-360). A queued batch whose earlier attempt
  may have been written fails instead of being resent under the new
  epoch: the broker could not tell it is a duplicate (as Java fails
  unresolved batches);
* a transactional producer asks its transaction coordinator, once per
  ``init_transactions``; the :class:`IdListener` (the transaction driver)
  learns the outcome.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

from kafkacore.client import AnyNode, Target, TransactionCoordinator
from kafkacore.errors import KafkaTimeoutError
from kafkacore.producer.accumulator import RecordAccumulator
from kafkacore.producer.batch import ProducerBatch
from kafkacore.producer.causes import FailureLog, auth_error_in, authentication_failed
from kafkacore.producer.config import ProducerConfig
from kafkacore.producer.coordinator import CoordinatorCall, CoordinatorRequests, error_code
from kafkacore.producer.idempotence import IdState, ProducerIdentity
from kafkacore.producer.ledger import DeliveryLedger
from kafkacore.protocol.messages import InitProducerIdRequest, InitProducerIdResponse

__all__ = ["INIT_PRODUCER_ID_MAX", "IdListener", "ProducerIds", "unresolved"]

INIT_PRODUCER_ID_MAX = 5  # v6 is KIP-939 two-phase commit

#: States in which an epoch bump may be asked for (KIP-360).
_BUMPABLE = (IdState.READY, IdState.BUMP_PENDING, IdState.BUMPING)


class IdListener(Protocol):
    """Told how a transactional producer's InitProducerId ended."""

    def id_assigned(self, now: float) -> None: ...

    def id_failed(self, error: BaseException, now: float) -> None: ...


class ProducerIds:
    """See the module docstring."""

    __slots__ = (
        "_acc",
        "_backoff_s",
        "_cfg",
        "_coordinator",
        "_failures",
        "_identity",
        "_ledger",
        "failed_in_row",
        "listener",
        "retry_at",
    )

    def __init__(
        self,
        cfg: ProducerConfig,
        identity: ProducerIdentity,
        acc: RecordAccumulator,
        ledger: DeliveryLedger,
        coordinator: CoordinatorRequests,
        failures: FailureLog,
        backoff_s: Callable[[int], float],
    ) -> None:
        self._cfg = cfg
        self._identity = identity
        self._acc = acc
        self._ledger = ledger
        self._coordinator = coordinator
        self._failures = failures
        self._backoff_s = backoff_s
        self.listener: IdListener | None = None  # set for a transactional producer
        # A failed InitProducerId of an idempotent producer: next try not before.
        self.retry_at = -math.inf
        self.failed_in_row = 0

    @property
    def _automatic(self) -> bool:
        """An idempotent producer without transactions asks on its own."""
        return self._cfg.idempotent and self.listener is None

    def wants(self, now: float, produce_in_flight: int) -> bool:
        """True if an idempotent producer should ask for an id (or a bump) now."""
        if not self._automatic or now < self.retry_at:
            return False
        state = self._identity.state
        return state is IdState.NONE or (state is IdState.BUMP_PENDING and produce_in_flight == 0)

    def wake(self, now: float) -> float | None:
        """When a failed InitProducerId is tried again, if that is still to come."""
        waiting = self._identity.state in (IdState.NONE, IdState.BUMP_PENDING)
        if self._automatic and waiting and self.retry_at > now:
            return self.retry_at
        return None

    def need_bump(self) -> None:
        if self._automatic and self._identity.state in _BUMPABLE:
            self._identity.fire("need_bump")

    def request(self, now: float) -> None:
        """Ask for the producer id (or, in state BUMP_PENDING, the next epoch)."""
        ident = self._identity
        ident.fire("request")
        bump = ident.state is IdState.BUMPING
        tid = self._cfg.transactional_id
        target: Target = TransactionCoordinator(tid) if tid is not None else AnyNode()
        request = InitProducerIdRequest(
            transactional_id=tid,
            transaction_timeout_ms=self._cfg.transaction_timeout_ms,
            producer_id=ident.producer_id if bump else -1,
            producer_epoch=ident.epoch if bump else -1,
        )
        call = CoordinatorCall(
            request,
            target,
            self._assigned,
            self._failed,
            max_version=INIT_PRODUCER_ID_MAX,
            codes=error_code,
            note=self._note,
            busy=False,
        )
        self._coordinator.call(call, now)

    def _note(self, error: BaseException) -> None:
        self._failures.producer_id = error

    def _assigned(
        self,
        _call: CoordinatorCall[InitProducerIdResponse],
        response: InitProducerIdResponse,
        now: float,
    ) -> None:
        ident = self._identity
        bumped = ident.state is IdState.BUMPING
        if bumped:
            for batch in self._acc.take_unknown():  # their gap is closed by the bump itself
                self._ledger.complete(batch, -1, -1, unresolved(batch))
        ident.assign(response.producer_id, response.producer_epoch)
        self.failed_in_row = 0
        self._failures.producer_id = None
        if bumped or self.listener is not None:
            self._acc.reset_sequences()
        if self.listener is not None:
            self.listener.id_assigned(now)

    def _failed(
        self, _call: CoordinatorCall[InitProducerIdResponse], error: BaseException, now: float
    ) -> None:
        if self.listener is not None:
            self._identity.state = IdState.NONE
            self.listener.id_failed(error, now)
            return
        # Without an id nothing can be sent: fail what waits, then try again
        # after a backoff that grows while it keeps failing (KIP-580).
        self._failures.producer_id = error
        self._identity.fire("failed")
        self.failed_in_row += 1
        self.retry_at = now + self._backoff_s(self.failed_in_row)
        auth = auth_error_in(error)
        for batch in self._acc.take_all():
            what = f"{batch.record_count} records for {batch.tp.topic}-{batch.tp.partition}"
            self._ledger.complete(
                batch, -1, -1, authentication_failed(what, auth) if auth is not None else error
            )


def unresolved(batch: ProducerBatch) -> KafkaTimeoutError:
    """The error of a batch that cannot be resent after an epoch bump."""
    last = batch.last_error
    error = KafkaTimeoutError(
        f"{batch.record_count} records for {batch.tp.topic}-{batch.tp.partition}: an earlier "
        "attempt got no answer"
        + (f" ({type(last).__name__}: {last})" if last is not None else "")
        + " and the producer epoch had to be bumped; not resent, since "
        "the broker could not drop a duplicate (they may or may not be in the log)"
    )
    error.__cause__ = last
    return error
