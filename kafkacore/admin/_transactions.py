"""Producer and transaction commands (KIP-664): who writes to a partition, the
transactions the coordinators hold, and aborting a hanging transaction.

Routing: DescribeProducers and WriteTxnMarkers go to the partition leaders
(:class:`~kafkacore.admin._routing.LeaderRouting`); ListTransactions to every
broker (each lists the transactions it coordinates); DescribeTransactions to
each transactional id's coordinator, found with FindCoordinator and looked up
again when it moved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kafkacore.admin._base import Job, OnResponse, code_error, items_outcome, single_outcome
from kafkacore.admin._checks import check_int, check_names, check_partitions, check_timeout
from kafkacore.admin._routing import SEARCH, BrokerFanout, LeaderRouting
from kafkacore.admin.results import ItemResults
from kafkacore.admin.types import (
    AbortTransactionSpec,
    ProducerState,
    TransactionDescription,
    TransactionListing,
    TransactionListings,
    TransactionState,
)
from kafkacore.client.handles import RequestHandle
from kafkacore.client.metadata import TopicPartition
from kafkacore.client.routing import Node, TransactionCoordinator
from kafkacore.errors import NoCommonVersionError
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import COORDINATOR_MOVED
from kafkacore.protocol.messages.describe_producers_request import TopicRequest
from kafkacore.protocol.messages.write_txn_markers_request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
)

__all__ = ["TransactionCommands"]

#: ListTransactions v1 filters by duration (KIP-994), v2 by a transactional id pattern.
_DURATION_VERSION = 1
_PATTERN_VERSION = 2


def _or_none(value: int) -> int | None:
    return None if value < 0 else value


def _listings_outcome(job: Job) -> tuple[Any, BaseException | None]:
    search = job.results[SEARCH]
    if search.error is not None:
        return None, search.error
    found: list[TransactionListing] = []
    errors: dict[int, BaseException] = {}
    for key in job.keys[1:]:
        item = job.results[key]
        if item.error is not None:
            errors[key] = item.error
        else:
            found.extend(item.value or ())
    found.sort(key=lambda t: t.transactional_id)
    return TransactionListings(transactions=tuple(found), errors=errors), None


class TransactionCommands(LeaderRouting, BrokerFanout):
    """Producer and transaction commands of :class:`~kafkacore.admin.AdminCore`."""

    def describe_producers(
        self,
        partitions: Iterable[TopicPartition],
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[TopicPartition, tuple[ProducerState, ...]]]:
        """The producers each partition's leader knows, with their open transactions."""
        kind = "describe_producers"
        parts = check_partitions(f"{kind}: partitions", partitions)
        job = self._begin(kind, parts, items_outcome, check_timeout(kind, timeout_ms), now)

        def to_leader(
            leader: int, items: list[tuple[TopicPartition, int]], again: Any, t: float
        ) -> None:
            by_topic: dict[str, list[int]] = {}
            for tp, _ in items:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            request = m.DescribeProducersRequest(
                topics=[TopicRequest(name=k, partition_indexes=v) for k, v in by_topic.items()]
            )

            def answer(
                response: m.DescribeProducersResponse,
                handle: RequestHandle[m.DescribeProducersResponse],
                t2: float,
            ) -> None:
                retry: list[tuple[TopicPartition, BaseException]] = []
                for topic in response.topics:
                    for p in topic.partitions:
                        states = tuple(
                            ProducerState(
                                producer_id=s.producer_id,
                                producer_epoch=s.producer_epoch,
                                last_sequence=s.last_sequence,
                                last_timestamp=_or_none(s.last_timestamp),
                                coordinator_epoch=_or_none(s.coordinator_epoch),
                                current_transaction_start_offset=_or_none(
                                    s.current_txn_start_offset
                                ),
                            )
                            for s in p.active_producers
                        )
                        self._leader_outcome(
                            job,
                            TopicPartition(topic.name, p.partition_index),
                            p.error_code,
                            states,
                            retry,
                            leader,
                        )
                self._retry_items(job, retry, again, t2)

            self._send(
                job, [tp for tp, _ in items], request, answer, again, now=t, target=Node(leader)
            )

        self._to_leaders(job, parts, to_leader, now)
        return self._started(job, now)

    def list_transactions(
        self,
        *,
        states: Iterable[TransactionState | str] | None = None,
        producer_ids: Iterable[int] | None = None,
        duration_ms: int | None = None,
        transactional_id_pattern: str | None = None,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[TransactionListings]:
        """Transactions every coordinator holds; filters by state, producer id, running
        longer than ``duration_ms`` (v1+) or an id regular expression (v2+)."""
        kind = "list_transactions"
        state_filter = [] if states is None else _states(kind, states)
        id_filter = (
            []
            if producer_ids is None
            else [check_int(f"{kind}: producer id", p, minimum=0) for p in producer_ids]
        )
        if duration_ms is not None:
            check_int(f"{kind}: duration_ms", duration_ms, minimum=0)
        pattern = transactional_id_pattern
        if pattern is not None and not isinstance(pattern, str):
            raise TypeError(f"{kind}: transactional_id_pattern: expected a str, got {pattern!r}")
        job = self._begin(kind, [SEARCH], _listings_outcome, check_timeout(kind, timeout_ms), now)

        build = _list_builder(kind, state_filter, id_filter, duration_ms, pattern)

        def ask(nodes: list[int], t: float) -> None:
            for node in nodes:
                self._send(
                    job,
                    [node],
                    m.ListTransactionsRequest(),
                    listed(node),
                    ask,
                    now=t,
                    target=Node(node),
                    build=build,
                )

        def listed(node: int) -> OnResponse[m.ListTransactionsResponse]:
            def answer(
                response: m.ListTransactionsResponse,
                handle: RequestHandle[m.ListTransactionsResponse],
                t: float,
            ) -> None:
                code = response.error_code
                if code:
                    error = code_error(code, None, "ListTransactions", node_id=node)
                    if code in COORDINATOR_MOVED:
                        self._retry_items(job, [(node, error)], ask, t)
                    else:
                        job.settle(node, error=error)
                    return
                job.settle(
                    node,
                    [
                        TransactionListing(
                            transactional_id=s.transactional_id,
                            producer_id=s.producer_id,
                            state=TransactionState.parse(s.transaction_state),
                            coordinator=node,
                        )
                        for s in response.transaction_states
                    ],
                )

            return answer

        self._each_broker(job, ask, now)
        return self._started(job, now)

    def describe_transactions(
        self, transactional_ids: Iterable[str], *, timeout_ms: int | None = None, now: float
    ) -> Operation[ItemResults[str, TransactionDescription]]:
        """State, producer and partitions of transactions, from their coordinators."""
        kind = "describe_transactions"
        ids = check_names(f"{kind}: transactional_ids", transactional_ids)
        job = self._begin(kind, ids, items_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[str], t: float) -> None:
            for tid in keys:
                request = m.DescribeTransactionsRequest(transactional_ids=[tid])
                self._send(
                    job, [tid], request, answer, send, now=t, target=TransactionCoordinator(tid)
                )

        def answer(
            response: m.DescribeTransactionsResponse,
            handle: RequestHandle[m.DescribeTransactionsResponse],
            t: float,
        ) -> None:
            retry: list[tuple[str, BaseException]] = []
            for s in response.transaction_states:
                if s.transactional_id not in job.known:
                    continue
                if s.error_code:
                    error = code_error(
                        s.error_code,
                        None,
                        f"transactional id {s.transactional_id!r}",
                        node_id=self._answerer(),
                    )
                    if s.error_code in COORDINATOR_MOVED:
                        retry.append((s.transactional_id, error))
                    else:
                        job.settle(s.transactional_id, error=error)
                    continue
                job.settle(
                    s.transactional_id,
                    TransactionDescription(
                        coordinator=handle.node_id,
                        state=TransactionState.parse(s.transaction_state),
                        producer_id=s.producer_id,
                        producer_epoch=s.producer_epoch,
                        transaction_timeout_ms=s.transaction_timeout_ms,
                        transaction_start_time_ms=_or_none(s.transaction_start_time_ms),
                        partitions=frozenset(
                            TopicPartition(d.topic, p) for d in s.topics for p in d.partitions
                        ),
                    ),
                )
            self._retry_items(job, retry, send, t)

        send(ids, now)
        return self._started(job, now)

    def abort_transaction(
        self, spec: AbortTransactionSpec, *, timeout_ms: int | None = None, now: float
    ) -> Operation[None]:
        """Abort a hanging transaction on one partition by writing the abort marker
        its coordinator never wrote (KIP-664); ``describe_producers`` finds the ids."""
        kind = "abort_transaction"
        if not isinstance(spec, AbortTransactionSpec):
            raise TypeError(f"{kind}: expected an AbortTransactionSpec, got {spec!r}")
        tp = TopicPartition(*spec.partition)
        job = self._begin(kind, [tp], single_outcome, check_timeout(kind, timeout_ms), now)

        def to_leader(
            leader: int, items: list[tuple[TopicPartition, int]], again: Any, t: float
        ) -> None:
            marker = WritableTxnMarker(
                producer_id=spec.producer_id,
                producer_epoch=spec.producer_epoch,
                transaction_result=False,  # abort
                topics=[WritableTxnMarkerTopic(name=tp.topic, partition_indexes=[tp.partition])],
                coordinator_epoch=spec.coordinator_epoch,
            )

            def answer(
                response: m.WriteTxnMarkersResponse,
                handle: RequestHandle[m.WriteTxnMarkersResponse],
                t2: float,
            ) -> None:
                retry: list[tuple[TopicPartition, BaseException]] = []
                for result in response.markers:
                    for topic in result.topics:
                        for p in topic.partitions:
                            self._leader_outcome(
                                job,
                                TopicPartition(topic.name, p.partition_index),
                                p.error_code,
                                None,
                                retry,
                                leader,
                            )
                self._retry_items(job, retry, again, t2)

            self._send(
                job,
                [tp],
                m.WriteTxnMarkersRequest(markers=[marker]),
                answer,
                again,
                now=t,
                target=Node(leader),
            )

        self._to_leaders(job, [tp], to_leader, now)
        return self._started(job, now)


def _list_builder(
    kind: str,
    states: list[TransactionState],
    producer_ids: list[int],
    duration_ms: int | None,
    pattern: str | None,
) -> Callable[[int], m.ListTransactionsRequest]:
    """ListTransactions with its filters, at the version of the broker's connection."""

    def build(version: int) -> m.ListTransactionsRequest:
        request = m.ListTransactionsRequest(
            state_filters=[s.value for s in states], producer_id_filters=producer_ids
        )
        for wanted, need, what in (
            (duration_ms, _DURATION_VERSION, "duration_ms"),
            (pattern, _PATTERN_VERSION, "transactional_id_pattern"),
        ):
            if wanted is not None and version < need:
                raise NoCommonVersionError(
                    f"{kind}: {what} needs ListTransactions v{need}+; broker offers v{version}"
                )
        if duration_ms is not None:
            request.duration_filter = duration_ms
        if pattern is not None:
            request.transactional_id_pattern = pattern
        return request

    return build


def _states(what: str, states: object) -> list[TransactionState]:
    if isinstance(states, str) or not isinstance(states, Iterable):
        raise TypeError(f"{what}: states must be a collection of TransactionState, got {states!r}")
    out = [TransactionState.parse(s) for s in states]
    if TransactionState.UNKNOWN in out:
        raise ValueError(f"{what}: unknown transaction state in {list(states)}")
    return out
