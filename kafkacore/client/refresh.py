"""Metadata refreshes of the client core, bootstrap and rebootstrap (KIP-899, KIP-1102).

Theory of operation
-------------------
:class:`MetadataRefresh` decides when the client core asks for metadata,
builds the request, and reads the answer into the
:class:`~kafkacore.client.metadata.ClusterMetadata` (which keeps the
schedule: age, on demand, after errors, with its backoff). At most one
Metadata request is in flight.

It also tracks where the core gets its brokers from:

    BOOTSTRAPPING --first metadata--> BOOTSTRAPPED --rebootstrap--> BOOTSTRAPPING

While BOOTSTRAPPING only the bootstrap addresses are candidates; when every
one of them failed in a row, :meth:`bootstrap_failed` returns the
NoBrokersAvailable the core reports (a ``BootstrapFailed`` event, a log
line). It fails nothing: refused connections are retried with the reconnect
backoff, and whoever waits does so until its own bound (issue 26: a cluster
started a moment after its clients must be used).

A caller that waits for the first metadata (``KafkaClient.connect()``)
holds a *bootstrap wait* (:meth:`wait_bootstrapped`): a
:class:`~kafkacore.client.handles.MetadataWaiter` completed by the next
successful answer, failed by an authentication failure, by shutdown, or at
its deadline (:meth:`expire_waits`, with the error the core words), never
by a refresh that failed on the way.
With ``metadata_recovery_strategy="rebootstrap"``, a REBOOTSTRAP_REQUIRED
answer (KIP-1102), or no successful metadata for
``metadata_recovery_rebootstrap_trigger_ms`` while refreshes fail, makes the
core forget the known brokers and bootstrap again.

Every answer ends in an event: ``MetadataUpdated`` naming the waiters it
completed, or ``MetadataUpdateFailed``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from typing import TYPE_CHECKING

from kafkacore.client import _codec
from kafkacore.client.config import ClientConfig
from kafkacore.client.events import MetadataUpdated, MetadataUpdateFailed
from kafkacore.client.handles import Answer, MetadataWaiter
from kafkacore.client.metadata import ClusterMetadata
from kafkacore.client.outputs import Outputs
from kafkacore.errors import (
    KafkaConnectionError,
    LocalProtocolError,
    NoBrokersAvailable,
    RequestCancelled,
)
from kafkacore.protocol.enums import ErrorCode

if TYPE_CHECKING:
    from kafkacore.protocol.messages import MetadataRequest, MetadataResponse

__all__ = ["TRANSITIONS", "BrokerSource", "MetadataRefresh"]


class BrokerSource(Enum):
    """Where the client core takes the brokers it may connect to from."""

    BOOTSTRAPPING = "bootstrapping"  # the bootstrap addresses
    BOOTSTRAPPED = "bootstrapped"  # the brokers of the last metadata


TRANSITIONS: Mapping[BrokerSource, frozenset[BrokerSource]] = {
    BrokerSource.BOOTSTRAPPING: frozenset({BrokerSource.BOOTSTRAPPED}),
    BrokerSource.BOOTSTRAPPED: frozenset({BrokerSource.BOOTSTRAPPING}),
}


class MetadataRefresh:
    """See the module docstring."""

    def __init__(self, cluster: ClusterMetadata, config: ClientConfig, out: Outputs) -> None:
        self._cluster = cluster
        self._config = config
        self._out = out
        self.source = BrokerSource.BOOTSTRAPPING
        #: True while a Metadata request is queued or in flight.
        self.in_flight = False
        #: The error of the last failed refresh (None once one succeeds).
        self.last_error: BaseException | None = None
        # Since when refreshes fail (None: the last one succeeded).
        self._failing_since: float | None = None
        self._bootstrap_failed: set[int] = set()
        # Bootstrap waits (deadline, timeout_ms, waiter): one per caller waiting,
        # each gone by its deadline; and those finished, for the next event.
        self._waits: list[tuple[float, int, MetadataWaiter]] = []
        self._waits_done: list[MetadataWaiter] = []

    # -- queries --------------------------------------------------------------
    @property
    def bootstrapping(self) -> bool:
        return self.source is BrokerSource.BOOTSTRAPPING

    @property
    def may_rebootstrap(self) -> bool:
        """KIP-1102 is on and the core is not bootstrapping already."""
        return self._config.metadata_recovery_strategy == "rebootstrap" and not self.bootstrapping

    def due(self, now: float) -> bool:
        """A refresh should start now."""
        return not self.in_flight and self._cluster.ttl(now=now) == 0

    def next_deadline(self, now: float) -> float | None:
        """When the next refresh is due (None while one is under way)."""
        return None if self.in_flight else max(self._cluster.next_refresh_at(), now)

    # -- the request ----------------------------------------------------------
    def start(self, now: float, topics: set[str]) -> Callable[[int], MetadataRequest]:
        """Begin a refresh: the build function of its request (per negotiated version)."""
        if self.in_flight:
            raise LocalProtocolError("MetadataRefresh.start: a refresh is already under way")
        self._rebootstrap_on_timer(now)
        wanted = None if self._config.metadata_all_topics else sorted(topics)
        allow = self._config.allow_auto_create_topics

        def build(version: int) -> MetadataRequest:
            return _codec.metadata_request(wanted, allow_auto_create=allow, version=version)

        self.in_flight = True
        self._cluster.update_started()
        self._out.trace("metadata_request", topics=wanted, attempts=self._cluster.refresh_attempts)
        return build

    def finished(
        self,
        source: str | None,
        answer: Answer[MetadataResponse],
        now: float,
        topics: set[str],
        node_id: int | None = None,
    ) -> bool:
        """The refresh ended with ``answer``, the response or the error
        (``source`` names the broker that answered, ``node_id`` is its id);
        True when the cluster metadata was updated."""
        self.in_flight = False
        if isinstance(answer, BaseException):
            self.failed(answer, now)
            return False
        # The top-level code: Metadata v13+ (KIP-1102).
        code = answer.error_code
        if code == ErrorCode.REBOOTSTRAP_REQUIRED and self.may_rebootstrap:
            # Ask the bootstrap servers instead; whoever waits for
            # metadata waits for that answer.
            self.rebootstrap(f"{source or 'a broker'} answered REBOOTSTRAP_REQUIRED", now)
            self._cluster.update_abandoned()
            return False
        if code:
            error = _codec.error_for_code(
                code, f"{source or 'the broker'} refused the Metadata request", node_id=node_id
            )
            if error is not None:
                self.failed(error, now)
                return False
        return self._update(source, answer, now, topics, node_id)

    def failed(self, error: BaseException, now: float) -> None:
        """A refresh failed with ``error``: tell the metadata and whoever waits."""
        self._out.counters.metadata_failures += 1
        self._cluster.failed_update(error, now=now)
        self._note_failure(error, now)
        self.announce(None, error)

    def fail_waiters(self, error: BaseException, now: float) -> None:
        """Fail whoever waits for metadata (the client stopped with ``error``),
        bootstrap waits included."""
        self._finish_waits(None, error)
        waiting = self._cluster.waiting
        if waiting:
            self._cluster.failed_update(error, now=now)
        if waiting or self._waits_done:
            self.announce(None, error)

    def _update(
        self,
        source: str | None,
        response: MetadataResponse,
        now: float,
        topics: set[str],
        node_id: int | None = None,
    ) -> bool:
        cluster = self._cluster
        before = cluster.update_count
        # Topics that already had a failure: their error is traced once, not per refresh.
        failing_before = {t for t in topics if cluster.topic_failure(t) is not None}
        cluster.update_metadata(response, now=now, source=source, node_id=node_id)
        if cluster.update_count == before:
            error = cluster.last_failure or KafkaConnectionError("Metadata failed")
            self._out.counters.metadata_failures += 1
            self._note_failure(error, now)
            self.announce(None, error)
            return False
        self._out.counters.metadata_updates += 1
        self._bootstrap_failed.clear()
        self._finish_waits(cluster, None)
        if self.bootstrapping:
            self._goto(BrokerSource.BOOTSTRAPPED)
        self.last_error = None
        self._failing_since = None
        for topic in sorted(topics):
            failure = cluster.topic_failure(topic)
            if failure is not None and topic not in failing_before:
                self._out.trace("topic_error", topic=topic, error=failure)
        self._out.trace(
            "metadata_updated",
            source=source,
            brokers=len(cluster),
            topics=len(cluster.topics(exclude_internal_topics=False)),
            incomplete=cluster.incomplete,
            retry_in_ms=cluster.retry_delay_ms if cluster.incomplete else None,
        )
        self.announce(response, None)
        return True

    def _note_failure(self, error: BaseException, now: float) -> None:
        self.last_error = error
        if self._failing_since is None:
            self._failing_since = now
        self._out.trace(
            "metadata_failed",
            error=error,
            attempts=self._cluster.refresh_attempts,
            retry_in_ms=self._cluster.retry_delay_ms,
        )

    def announce(self, response: MetadataResponse | None, error: BaseException | None) -> None:
        """The event for the waiters that finished (a shutdown passes neither)."""
        waiters = (*self._cluster.take_finished_waiters(), *self._waits_done)
        self._waits_done = []
        cluster = self._cluster
        if error is not None:
            self._out.emit(MetadataUpdateFailed(error=error, waiters=waiters))
        elif response is not None:
            self._out.emit(
                MetadataUpdated(
                    cluster_id=cluster.cluster_id,
                    controller_id=cluster.controller_id,
                    broker_ids=frozenset(cluster),
                    topics=frozenset(cluster.topics(exclude_internal_topics=False)),
                    waiters=waiters,
                )
            )
        elif waiters:
            self._out.emit(
                MetadataUpdateFailed(error=RequestCancelled("client shut down"), waiters=waiters)
            )

    # -- bootstrap waits ------------------------------------------------------
    def wait_bootstrapped(self, waiter: MetadataWaiter, deadline: float, timeout_ms: int) -> None:
        """``waiter`` waits for the next successful metadata until ``deadline``."""
        self._waits.append((deadline, timeout_ms, waiter))

    def waits_deadline(self) -> float | None:
        """The earliest deadline of a bootstrap wait (None: nobody waits)."""
        return min((deadline for deadline, _, _ in self._waits), default=None)

    def expire_waits(self, now: float, error_for: Callable[[int], BaseException]) -> None:
        """Fail the bootstrap waits whose deadline passed, each with
        ``error_for(its timeout_ms)``, in a ``MetadataUpdateFailed`` of its own."""
        due = [w for w in self._waits if w[0] <= now]
        if not due:
            return
        self._waits = [w for w in self._waits if w[0] > now]
        for _, timeout_ms, waiter in due:
            error = error_for(timeout_ms)
            waiter._complete(None, error)
            self._out.emit(MetadataUpdateFailed(error=error, waiters=(waiter,)))

    def _finish_waits(self, cluster: ClusterMetadata | None, error: BaseException | None) -> None:
        """Complete every bootstrap wait (metadata came, or the client stopped)."""
        waits, self._waits = self._waits, []
        for _, _, waiter in waits:
            waiter._complete(cluster, error)
            self._waits_done.append(waiter)

    def cancel_waits(self, error: BaseException) -> None:
        """The client shuts down: the bootstrap waits end with ``error`` (announced
        with the other waiters)."""
        self._finish_waits(None, error)

    # -- bootstrap ------------------------------------------------------------
    def reset_bootstrap_failures(self) -> None:
        """A bootstrap address answered (or the client stopped): the failures so
        far no longer add up."""
        self._bootstrap_failed.clear()

    def bootstrap_failed(self, node_id: int, error: BaseException) -> NoBrokersAvailable | None:
        """Bootstrap address ``node_id`` failed with ``error``; NoBrokersAvailable when
        every bootstrap address has failed since one last answered."""
        if not self.bootstrapping:
            return None
        self._bootstrap_failed.add(node_id)
        brokers = self._cluster.bootstrap_brokers()
        if not {b.node_id for b in brokers} <= self._bootstrap_failed:
            return None
        self._bootstrap_failed.clear()
        addresses = ", ".join(f"{b.host}:{b.port}" for b in brokers)
        exhausted = NoBrokersAvailable(
            f"no bootstrap server answered ({addresses}); check bootstrap_servers "
            f"and that the brokers are up (last error: {error})"
        )
        exhausted.__cause__ = error
        return exhausted

    def rebootstrap(self, reason: str, now: float) -> None:
        """Forget the brokers and start again from bootstrap_servers (KIP-899/KIP-1102)."""
        self._out.trace("rebootstrap", reason=reason)
        self._cluster.rebootstrap()
        self._goto(BrokerSource.BOOTSTRAPPING)
        self._bootstrap_failed.clear()
        self._failing_since = now
        self._out.counters.rebootstraps += 1

    def _rebootstrap_on_timer(self, now: float) -> None:
        """KIP-1102: no known broker gave metadata for the trigger time: bootstrap again."""
        since = self._failing_since
        if since is None or not self.may_rebootstrap:
            return
        trigger_ms = self._config.metadata_recovery_rebootstrap_trigger_ms
        if (now - since) * 1000 >= trigger_ms:
            self.rebootstrap(
                f"no metadata from any known broker for {trigger_ms} ms "
                f"(last error: {self.last_error})",
                now,
            )

    def _goto(self, new: BrokerSource) -> None:
        if new not in TRANSITIONS[self.source]:
            raise LocalProtocolError(f"metadata refresh: {self.source.value} -> {new.value}")
        self.source = new
