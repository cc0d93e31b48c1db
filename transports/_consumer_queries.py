"""The consumer surface's lookups: position, the cluster's topic listing, offset queries.

:class:`ConsumerQueries` is a base of
:class:`~kafkacore.transports._consumer_common.ConsumerSurface` (not an object
it calls through, so a call keeps its frames): the waiting ones are
:class:`~kafkacore.transports._consumer_steps.Wait` steps, the others build
the core commands that ``committed``, ``end_offsets``, ``beginning_offsets``
and ``offsets_for_times`` start.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from kafkacore.client import AnyNode, TopicPartition
from kafkacore.client.core import DEFAULT_LANE
from kafkacore.client.response_errors import broker_error
from kafkacore.client.stack import Answer
from kafkacore.consumer import ConsumerConfig, ConsumerCore, OffsetAndMetadata, Operation
from kafkacore.errors import InvalidArgumentError, KafkaTimeoutError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode

from ._consumer_args import one_partition, partitions_one_by_one
from ._consumer_held import HeldRecords
from ._consumer_router import ConsumerRouter
from ._consumer_steps import Command, Listing, Steps, Wait

__all__ = ["ConsumerQueries"]

T = TypeVar("T")


class ConsumerQueries:
    """Lookups of the consumer surface; see the module docstring."""

    # Set or supplied by ConsumerSurface and the idiom.
    _NAME: str
    config: ConsumerConfig
    _router: ConsumerRouter
    _held: HeldRecords

    if TYPE_CHECKING:

        def _call(self, fn: Command[T]) -> T: ...
        def _clock(self) -> float: ...
        def _notify(self) -> None: ...
        def assignment(self) -> frozenset[TopicPartition]: ...
        def seek(self, partition: TopicPartition, offset: int) -> None: ...
        def _given_back(
            self, core: ConsumerCore, now: float, fn: Callable[..., T], *args: Any
        ) -> T: ...

    def _position_steps(self, partition: TopicPartition, timeout: float | None) -> Steps[int]:
        """The next offset to hand out, waiting until it is known (reset, committed)."""
        tp = TopicPartition(*partition)
        limit = self.config.default_api_timeout_ms / 1000 if timeout is None else timeout
        deadline = self._clock() + limit

        def probe(core: ConsumerCore, now: float) -> tuple[int | None, BaseException | None, bool]:
            self._held.sync(core, now)
            hopeless = core.hopeless_cause()
            return core.position(tp), hopeless or core.stall_cause(), hopeless is not None

        while True:
            mark = self._router.seq
            pos, cause, hopeless = self._call(probe)
            if pos is not None:
                return pos
            if hopeless:
                assert cause is not None
                raise cause  # no retry will help
            if self._clock() >= deadline:
                why = "" if cause is None else f"; last error: {type(cause).__name__}: {cause}"
                error = KafkaTimeoutError(
                    f"{self._NAME}.position: {tp} unknown after {limit} s{why}"
                )
                error.__cause__ = cause
                raise error
            yield Wait(mark, deadline)

    def _listing_steps(self, what: str, timeout: float | None) -> Steps[Listing]:
        """Every topic of the cluster, from one Metadata request (``topics()``)."""
        limit = self.config.default_api_timeout_ms / 1000 if timeout is None else timeout
        answers: list[tuple[Answer[m.MetadataResponse], int | None]] = []

        def issue(core: ConsumerCore, now: float) -> None:
            def done(answer: Answer[m.MetadataResponse], now: float) -> None:
                answers.append((answer, core.answered_by))  # who answered: the errors' node
                self._notify()

            request = m.MetadataRequest(topics=None, allow_auto_topic_creation=False)
            core.request(
                request,
                done,
                target=AnyNode(),
                now=now,
                lane=DEFAULT_LANE,
                timeout_ms=max(int(limit * 1000), 1),
            )

        self._call(issue)
        deadline = self._clock() + limit + 1.0  # the core fails it at limit; a backstop
        while not answers:
            if self._clock() >= deadline:
                raise KafkaTimeoutError(f"{self._NAME}.{what}: no metadata within {limit} s")
            yield Wait(-2, deadline, until=lambda: bool(answers))
        resp, node_id = answers[0]
        if isinstance(resp, BaseException):
            raise resp
        listing: Listing = {}
        for topic in resp.topics:
            if topic.error_code == ErrorCode.NONE and topic.name:
                parts = frozenset(p.partition_index for p in topic.partitions)
                listing[topic.name] = (parts, bool(topic.is_internal))
            elif topic.name and topic.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                error = broker_error(topic.error_code, f"topic {topic.name!r}", node_id=node_id)
                if error is not None:
                    raise error
        return listing

    def _committed_targets(self, partitions: tuple[TopicPartition, ...]) -> list[TopicPartition]:
        """``seek_to_committed``'s partitions: those named (each assigned) or every
        assigned one."""
        tps = partitions_one_by_one(partitions, "seek_to_committed")
        owned = self.assignment()
        if not tps and not owned:
            raise InvalidArgumentError("seek_to_committed: no partition is assigned")
        for tp in tps:
            if tp not in owned:
                raise InvalidArgumentError(
                    f"seek_to_committed: {tp.topic}-{tp.partition} is not assigned to this consumer"
                )
        return tps or sorted(owned)

    def _seek_committed(
        self, found: Mapping[TopicPartition, OffsetAndMetadata | None]
    ) -> dict[TopicPartition, int | None]:
        """Seek to each committed offset found; a partition without one keeps its
        position (its reset policy decides it)."""
        for tp, oam in found.items():
            if oam is not None:
                self.seek(tp, oam.offset)
        return {tp: None if oam is None else oam.offset for tp, oam in found.items()}

    def highwater(self, partition: TopicPartition) -> int | None:
        """The last high watermark a fetch of ``partition`` reported (None before
        the first one); kafka-python's, no request is sent."""
        tp = one_partition(partition, "highwater")
        return self._call(lambda core, now: core.partition_state(tp).high_watermark)

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """The last stable offset a fetch of ``partition`` reported (aiokafka's;
        None before the first one); no request is sent."""
        tp = one_partition(partition, "last_stable_offset")
        return self._call(lambda core, now: core.partition_state(tp).last_stable_offset)

    def bootstrap_connected(self) -> bool:
        """True while a connection to a bootstrap address is ready (kafka-python's)."""
        return self._call(lambda core, now: core.client.bootstrap_connected())

    def metrics(self, raw: bool = False) -> dict[str, dict[str, Any]]:
        """The client's counters, kafka-python's shape ``{group: {name: value}}``
        (``raw`` is accepted and changes nothing)."""
        counters = self._call(lambda core, now: core.client.metrics())
        values: dict[str, Any] = {}
        for name in type(counters).__dataclass_fields__:
            value = getattr(counters, name)
            if isinstance(value, int | float | str) and not isinstance(value, bool):
                values[name] = value
        values.pop("prefix", None)
        return {"consumer-metrics": values}

    def paused(self) -> frozenset[TopicPartition]:
        return self._call(lambda core, now: core.paused())

    def lag(self, partition: TopicPartition) -> int | None:
        tp = TopicPartition(*partition)

        def lag(core: ConsumerCore, now: float) -> int | None:
            self._held.sync(core, now)
            return core.lag(tp)

        return self._call(lag)

    def missing_topics(self) -> frozenset[str]:
        """Followed topics that metadata says do not exist (logged as a warning too)."""
        return self._call(lambda core, now: core.missing_topics())

    def run_on_loop(self, fn: Callable[[ConsumerCore], T]) -> T:
        """Run ``fn(core)`` on the loop (for queries in tests and tools)."""
        return self._call(lambda core, now: fn(core))

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """When a fetch last reported ``partition``'s high watermark and LSO, in ms
        since the epoch (aiokafka's; None before the first one)."""
        tp = one_partition(partition, "last_poll_timestamp")

        def at(core: ConsumerCore, now: float) -> int | None:
            fetched = core.partition_state(tp).fetched_at
            return None if fetched is None else int((time.time() - now + fetched) * 1000)

        return self._call(at)

    def _bootstrap_steps(self, timeout: float | None, refresh: bool) -> Steps[None]:
        """kafka-python 3's ``bootstrap``: until cluster metadata lists brokers (a
        fresh answer with ``refresh``); what no waiting fixes is raised at once."""
        deadline = None if timeout is None else self._clock() + timeout

        def probe(core: ConsumerCore, now: float) -> tuple[bool, BaseException | None]:
            if not core.client.cluster.brokers():
                core.client.request_metadata_update(now=now)
                return False, core.hopeless_cause()
            return True, None

        if refresh:
            asked = self._call(lambda core, now: core.client.request_metadata_update(now=now))
            while not asked.done:
                yield Wait(self._router.seq, float("inf") if deadline is None else deadline)
                if deadline is not None and self._clock() >= deadline:
                    break
        while True:
            mark = self._router.seq
            ready, hopeless = self._call(probe)
            if ready:
                return
            if hopeless is not None:
                raise hopeless
            if deadline is not None and self._clock() >= deadline:
                # A cluster never reached is said as such (issue 26), else a timeout.
                absent = self._call(lambda core, now: core.client.unreachable_from_the_start())
                raise absent or KafkaTimeoutError(
                    f"{self._NAME}.bootstrap: no cluster metadata within {timeout} s"
                )
            yield Wait(mark, float("inf") if deadline is None else deadline)

    def _topic_names(self, listing: Listing) -> set[str]:
        skip = self.config.exclude_internal_topics
        return {name for name, (_, internal) in listing.items() if not (internal and skip)}

    @staticmethod
    def _lookup_command(
        name: str, partitions: Iterable[TopicPartition], ms: int | None
    ) -> Command[Operation[Any]]:
        """``committed``, ``end_offsets`` or ``beginning_offsets`` of ``partitions``."""
        tps = [TopicPartition(*tp) for tp in partitions]
        return lambda core, now: getattr(core, name)(tps, now=now, timeout_ms=ms)

    @staticmethod
    def _times_command(
        timestamps: Mapping[TopicPartition, int], ms: int | None
    ) -> Command[Operation[Any]]:
        query = {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        return lambda core, now: core.offsets_for_times(query, now=now, timeout_ms=ms)
