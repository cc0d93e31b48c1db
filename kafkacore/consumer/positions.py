"""Subscription state: what the consumer follows and where each partition stands.

Theory of operation
-------------------
:class:`SubscriptionState` owns one :class:`PartitionState` per assigned
partition. Its ``state`` (:class:`FetchState`) changes only through
:meth:`SubscriptionState._move`, by a :class:`Trigger` looked up in
:data:`TRANSITIONS`; a trigger the table does not allow in the current
state is a bug in the consumer, and fails loudly::

    INITIALIZING --committed offset--> FETCHING
    INITIALIZING --none committed--> AWAIT_RESET --ListOffsets--> FETCHING
    FETCHING --leader epoch rose--> AWAIT_VALIDATION --OffsetForLeaderEpoch--> FETCHING
    FETCHING / AWAIT_VALIDATION --OFFSET_OUT_OF_RANGE--> AWAIT_RESET
    FETCHING / AWAIT_VALIDATION --log truncated (KIP-320)--> FETCHING at the
        divergence, or AWAIT_RESET when auto_offset_reset is "none"
    any --seek()--> FETCHING; --seek_to_beginning/end()--> AWAIT_RESET

plus a ``paused`` flag, and ``busy`` while a lookup for the partition is in
flight. A partition whose lookup failed waits ``retry_backoff_ms``
(``retry_at``, with a wake-up in the owner's deadlines).

Any change that moves a position away from fetched data (seek, pause,
revocation, truncation, a leader change) calls ``invalidate(tp)`` so the
owner drops what is buffered for it. What the user must act on (no offset
with ``auto_offset_reset="none"``, truncation) goes to :class:`PollErrors`;
a truncation the reset policy resolves is emitted as
:class:`~kafkacore.consumer.events.TruncationDetected`.

Records lent to a transport's iterator (``poll_records(lend=True)``) keep
the position they started from in ``lent_from`` until the transport says
how far the user got (issue 10, fault 7): commits and ``position`` use it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.events import (
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
    OutOfRangeError,
    TruncationDetected,
)
from kafkacore.consumer.poll_errors import PollErrors
from kafkacore.errors import InvalidArgumentError
from kafkacore.timers import Deadlines

__all__ = [
    "EARLIEST",
    "LATEST",
    "TRANSITIONS",
    "DueWork",
    "FetchState",
    "PartitionRetry",
    "PartitionState",
    "SubscriptionMode",
    "SubscriptionState",
    "Trigger",
    "no_position_error",
    "reset_timestamp",
]

#: ListOffsets timestamps that name the log's start and end (the reset targets).
EARLIEST = -2
LATEST = -1


def reset_timestamp(policy: str) -> int | None:
    """``auto_offset_reset`` as a ListOffsets timestamp; None for "none"."""
    return EARLIEST if policy == "earliest" else LATEST if policy == "latest" else None


class FetchState(enum.Enum):
    INITIALIZING = "initializing"
    AWAIT_RESET = "await_reset"
    AWAIT_VALIDATION = "await_validation"
    FETCHING = "fetching"


class Trigger(enum.Enum):
    """What moves a partition from one :class:`FetchState` to another."""

    COMMITTED_FOUND = "the group has a committed offset"
    NONE_COMMITTED = "the group has no committed offset"
    RESET = "ListOffsets answered the reset target"
    EPOCH_ROSE = "the leader epoch rose (KIP-320)"
    VALIDATED = "OffsetForLeaderEpoch confirmed the position"
    OUT_OF_RANGE = "the position is out of range"
    TRUNCATED = "the log was truncated; go on from the divergence"
    TRUNCATED_STOP = "the log was truncated and there is no reset policy"
    SEEK = "seek()"
    SEEK_TO = "seek_to_beginning()/seek_to_end()"


_I, _R, _V, _F = (
    FetchState.INITIALIZING,
    FetchState.AWAIT_RESET,
    FetchState.AWAIT_VALIDATION,
    FetchState.FETCHING,
)

#: (state, trigger) -> next state; anything else is not a legal move.
TRANSITIONS: Final[Mapping[tuple[FetchState, Trigger], FetchState]] = MappingProxyType(
    {
        (_I, Trigger.COMMITTED_FOUND): _F,
        (_I, Trigger.NONE_COMMITTED): _R,
        (_R, Trigger.RESET): _F,
        (_F, Trigger.EPOCH_ROSE): _V,
        (_V, Trigger.VALIDATED): _F,
        (_F, Trigger.OUT_OF_RANGE): _R,
        (_V, Trigger.OUT_OF_RANGE): _R,
        (_F, Trigger.TRUNCATED): _F,
        (_V, Trigger.TRUNCATED): _F,
        (_F, Trigger.TRUNCATED_STOP): _R,
        (_V, Trigger.TRUNCATED_STOP): _R,
        **{(state, Trigger.SEEK): _F for state in FetchState},
        **{(state, Trigger.SEEK_TO): _R for state in FetchState},
    }
)


@dataclass(slots=True)
class PartitionState:
    """Where one assigned partition stands; see the module docstring."""

    state: FetchState
    position: int | None = None
    #: Leader epoch of the last record consumed (KIP-320), None when unknown.
    position_epoch: int | None = None
    #: Leader epoch from metadata that the position was last checked against.
    leader_epoch: int | None = None
    paused: bool = False
    reset_to: int | None = None  # EARLIEST / LATEST when AWAIT_RESET; None: no policy
    busy: bool = False  # an OffsetFetch / ListOffsets / validation is in flight
    retry_at: float = 0.0
    high_watermark: int | None = None
    last_stable_offset: int | None = None
    log_start_offset: int | None = None
    #: When (the core's clock) a fetch answer last reported the marks above.
    fetched_at: float | None = None
    committed_position: int | None = None  # what a commit last stored
    #: (position, epoch) before records lent to an iterator that the user has
    #: not been handed yet; commits and queries use it. None: nothing lent.
    lent_from: tuple[int, int | None] | None = None

    @property
    def consumed(self) -> tuple[int | None, int | None]:
        """(offset, epoch) of the next record the user has not been handed."""
        if self.lent_from is not None:
            return self.lent_from
        return self.position, self.position_epoch


class SubscriptionMode(enum.Enum):
    NONE = "none"
    ASSIGNED = "assigned"
    SUBSCRIBED = "subscribed"


@dataclass(frozen=True, slots=True)
class PartitionRetry:
    """Deadline key: ``tp`` may be looked up again (its backoff is over)."""

    tp: TopicPartition


@dataclass(slots=True)
class DueWork:
    """Lookups the partitions are ready for now (see :meth:`SubscriptionState.due`)."""

    initialize: list[TopicPartition] = field(default_factory=list)
    reset: dict[TopicPartition, int] = field(default_factory=dict)
    validate: list[TopicPartition] = field(default_factory=list)


class SubscriptionState:
    """The followed topics and every assigned partition's state."""

    def __init__(
        self,
        *,
        auto_offset_reset: str,
        with_group: bool,
        retry_backoff_ms: int,
        deadlines: Deadlines[Hashable],
        errors: PollErrors,
        emit: Callable[[object], None],
        invalidate: Callable[[TopicPartition], None],
    ) -> None:
        self.parts: dict[TopicPartition, PartitionState] = {}
        self.mode = SubscriptionMode.NONE
        self.topics: frozenset[str] = frozenset()
        self._policy = auto_offset_reset
        self._with_group = with_group
        self._backoff = retry_backoff_ms / 1000
        self._deadlines = deadlines
        self._errors = errors
        self._emit = emit
        self._invalidate = invalidate
        #: Partitions whose position a lookup answered since the last
        #: :meth:`take_newly_known` (one PositionsKnown per step, not per partition).
        self._newly_known: set[TopicPartition] = set()

    # ------------------------------------------------------------- queries
    def require(self, tp: TopicPartition, what: str) -> PartitionState:
        """The state of an assigned ``tp``; a caller naming another is told so."""
        st = self.parts.get(TopicPartition(*tp))
        if st is None:
            raise InvalidArgumentError(
                f"{what}: {tp[0]}-{tp[1]} is not assigned to this consumer; "
                "assign() it or wait for the group to assign it"
            )
        return st

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset(self.parts)

    def paused(self) -> frozenset[TopicPartition]:
        return frozenset(tp for tp, st in self.parts.items() if st.paused)

    def position(self, tp: TopicPartition, what: str = "position") -> int | None:
        """The offset of the next record to hand out, None until it is known."""
        st = self.require(tp, what)
        return st.consumed[0] if st.state is FetchState.FETCHING else None

    def lag(self, tp: TopicPartition, *, read_committed: bool) -> int | None:
        """Records between the position and the end (the LSO with read_committed)."""
        st = self.require(tp, "lag")
        end = st.last_stable_offset if read_committed else st.high_watermark
        position = st.consumed[0]
        if end is None or end < 0 or position is None:
            return None
        return max(end - position, 0)

    def wanted_topics(self) -> set[str]:
        """The topics the consumer follows now (subscribed or assigned)."""
        if self.mode is SubscriptionMode.SUBSCRIBED:
            return set(self.topics)
        if self.mode is SubscriptionMode.ASSIGNED:
            return {tp.topic for tp in self.parts}
        return set()

    def current_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """What the user was handed: lent records not handed yet are left out."""
        out: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, st in self.parts.items():
            offset, epoch = st.consumed
            if st.state is FetchState.FETCHING and offset is not None:
                out[tp] = OffsetAndMetadata(offset, "", epoch)
        return out

    def awaiting_seek(self) -> list[TopicPartition]:
        """The partitions waiting for the user to seek (no reset policy), sorted."""
        return sorted(
            tp
            for tp, st in self.parts.items()
            if st.state is FetchState.AWAIT_RESET and st.reset_to is None
        )

    def fetchable(self) -> Iterator[tuple[TopicPartition, PartitionState]]:
        """Partitions that may be fetched: FETCHING, not paused, position known."""
        for tp, st in self.parts.items():
            if st.state is FetchState.FETCHING and not st.paused and st.position is not None:
                yield tp, st

    def due(self, now: float) -> DueWork:
        """The lookups partitions are ready for (not busy, backoff over).

        A partition to reset without a reset policy is reported once, as
        NoOffsetForPartitionError for the next poll; seek() clears it.
        """
        work = DueWork()
        for tp, st in self.parts.items():
            if st.busy or st.retry_at > now:
                continue
            if st.state is FetchState.INITIALIZING:
                work.initialize.append(tp)
            elif st.state is FetchState.AWAIT_RESET:
                if st.reset_to is None:
                    # Nothing to look up: every poll raises (no_position_error)
                    # until seek() clears it.
                    st.busy = True
                else:
                    work.reset[tp] = st.reset_to
            elif st.state is FetchState.AWAIT_VALIDATION:
                work.validate.append(tp)
        return work

    # ----------------------------------------------------- the partition set
    def add(self, tp: TopicPartition) -> None:
        """A new partition: its committed offset first (with a group), else a reset."""
        if tp in self.parts:
            return
        state = FetchState.INITIALIZING if self._with_group else FetchState.AWAIT_RESET
        self.parts[tp] = PartitionState(state=state, reset_to=reset_timestamp(self._policy))

    def remove(self, tp: TopicPartition) -> None:
        self._invalidate(tp)
        self._deadlines.cancel(PartitionRetry(tp))
        self.parts.pop(tp, None)

    def assign(self, tps: frozenset[TopicPartition]) -> None:
        """Follow exactly ``tps`` (manual assignment)."""
        self.mode = SubscriptionMode.ASSIGNED if tps else SubscriptionMode.NONE
        for tp in list(self.parts):
            if tp not in tps:
                self.remove(tp)
        for tp in tps:
            self.add(tp)

    def clear(self) -> None:
        """Follow nothing (unsubscribe)."""
        for tp in list(self.parts):
            self.remove(tp)
        self.mode = SubscriptionMode.NONE
        self.topics = frozenset()

    # --------------------------------------------------------- user moves
    def pause(self, tp: TopicPartition) -> None:
        self.require(tp, "pause").paused = True
        self._invalidate(tp)

    def resume(self, tp: TopicPartition) -> None:
        self.require(tp, "resume").paused = False

    def seek(self, tp: TopicPartition, offset: int) -> None:
        st = self.require(tp, "seek")
        self._invalidate(tp)
        self._move(tp, st, Trigger.SEEK)
        st.position = offset
        st.position_epoch = None
        st.lent_from = None
        st.busy = False

    def seek_to(self, tp: TopicPartition, where: int, what: str) -> None:
        st = self.require(tp, what)
        self._invalidate(tp)
        self._move(tp, st, Trigger.SEEK_TO)
        st.reset_to = where
        st.lent_from = None
        st.busy = False
        st.retry_at = 0.0
        self._deadlines.cancel(PartitionRetry(tp))

    def take_newly_known(self) -> frozenset[TopicPartition]:
        """The partitions a lookup positioned since the last call (still assigned)."""
        if not self._newly_known:
            return frozenset()
        known = frozenset(tp for tp in self._newly_known if tp in self.parts)
        self._newly_known.clear()
        return known

    # ------------------------------------------------------ lookup outcomes
    def begin_lookup(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self.parts[tp].busy = True

    def backoff(self, tp: TopicPartition, st: PartitionState, now: float) -> None:
        """A lookup for ``tp`` failed: try again after ``retry_backoff_ms``."""
        st.busy = False
        st.retry_at = now + self._backoff
        self._deadlines.set(PartitionRetry(tp), st.retry_at)

    def committed_found(
        self, tp: TopicPartition, oam: OffsetAndMetadata | None, leader_epoch: int | None
    ) -> None:
        """OffsetFetch answered for an INITIALIZING ``tp`` (``oam`` None: nothing committed)."""
        st = self.parts[tp]
        st.busy = False
        if oam is None:
            self._move(tp, st, Trigger.NONE_COMMITTED)
            return
        self._move(tp, st, Trigger.COMMITTED_FOUND)
        self._newly_known.add(tp)
        st.position = oam.offset
        st.position_epoch = oam.leader_epoch
        st.committed_position = oam.offset
        st.leader_epoch = leader_epoch

    def reset_done(
        self, tp: TopicPartition, offset: int, epoch: int, leader_epoch: int | None
    ) -> None:
        """ListOffsets answered the reset target of an AWAIT_RESET ``tp``."""
        st = self.parts[tp]
        st.busy = False
        self._move(tp, st, Trigger.RESET)
        self._newly_known.add(tp)
        st.position = offset
        st.position_epoch = epoch if epoch >= 0 else None
        st.leader_epoch = leader_epoch

    def leader_epoch_seen(self, tp: TopicPartition, epoch: int) -> None:
        """Metadata names ``epoch`` as the leader's: a rise means a new leader,
        whose log may be shorter, so the position is validated first (KIP-320)."""
        st = self.parts[tp]
        if st.state is FetchState.FETCHING and st.leader_epoch is not None:
            if epoch <= st.leader_epoch:
                return
            if st.position_epoch is None:
                st.leader_epoch = epoch  # nothing to validate against
                return
            self._move(tp, st, Trigger.EPOCH_ROSE)
            st.busy = False
            self._invalidate(tp)
        elif st.leader_epoch is None:
            st.leader_epoch = epoch

    def validated(
        self, tp: TopicPartition, leader_epoch: int, end_offset: int, end_epoch: int
    ) -> None:
        """OffsetForLeaderEpoch says the position's epoch ends at ``end_offset``
        on the leader of ``leader_epoch``: the position stands, was truncated,
        or (an epoch the leader does not know) is out of range."""
        st = self.parts[tp]
        st.busy = False
        st.leader_epoch = leader_epoch
        if end_offset < 0 or end_epoch < 0:
            self.out_of_range(tp)
        elif st.position is not None and end_offset < st.position:
            self.truncated(tp, end_offset, end_epoch)
        else:
            self._move(tp, st, Trigger.VALIDATED)

    def out_of_range(self, tp: TopicPartition) -> None:
        """The broker has no record at the position: reset by the policy, or
        report NoOffsetForPartitionError when there is none."""
        st = self.parts[tp]
        self._invalidate(tp)
        st.lent_from = None
        self._move(tp, st, Trigger.OUT_OF_RANGE)
        st.reset_to = reset_timestamp(self._policy)
        st.position_epoch = None
        # "none": every poll raises OutOfRangeError (no_position_error) until seek().
        st.busy = st.reset_to is None

    def truncated(self, tp: TopicPartition, end_offset: int, epoch: int) -> None:
        """The log diverged from ours at ``end_offset`` (KIP-320): go on from
        there (TruncationDetected), or stop with LogTruncationError when the
        reset policy is "none"."""
        st = self.parts[tp]
        old = st.position if st.position is not None else end_offset
        self._invalidate(tp)
        st.lent_from = None
        if self._policy == "none":
            self._move(tp, st, Trigger.TRUNCATED_STOP)
            st.reset_to = None
            st.busy = True  # reported here; seek() clears it
            self._errors.replace(
                LogTruncationError(
                    f"{tp}: the log was truncated to {end_offset} below position {old} "
                    "(KIP-320); seek() to where to go on",
                    {tp: end_offset},
                )
            )
            return
        self._move(tp, st, Trigger.TRUNCATED)
        st.position = end_offset
        st.position_epoch = epoch if epoch >= 0 else None
        self._emit(TruncationDetected(partition=tp, old_position=old, offset=end_offset))

    # --------------------------------------------------- handing records out
    def advance(self, tp: TopicPartition, next_offset: int, last_epoch: int | None) -> None:
        """Records up to ``next_offset`` were handed out (or skipped)."""
        st = self.parts[tp]
        st.position = next_offset
        if last_epoch is not None:
            st.position_epoch = last_epoch

    def lend(self, st: PartitionState) -> None:
        """Records of ``st`` go to an iterator: remember where they start."""
        if st.lent_from is None:
            assert st.position is not None  # only records at the position are handed out
            st.lent_from = (st.position, st.position_epoch)

    def all_handed_over(self) -> None:
        """Every record lent before has reached the user."""
        for st in self.parts.values():
            st.lent_from = None

    def note_consumed(self, progress: Mapping[TopicPartition, tuple[int, int | None]]) -> None:
        """The user was handed lent records up to ``{tp: (next offset, epoch)}``."""
        for tp, (offset, epoch) in progress.items():
            st = self.parts.get(TopicPartition(*tp))
            if st is None or st.lent_from is None or st.position is None:
                continue  # revoked, or the position jumped since (seek, reset)
            if offset >= st.position:
                st.lent_from = None
            elif offset > st.lent_from[0]:
                st.lent_from = (offset, epoch)

    def return_lent(self) -> None:
        """Lent records not handed over go back: positions move back to them."""
        for tp, st in self.parts.items():
            if st.lent_from is None:
                continue
            self._invalidate(tp)
            st.position, st.position_epoch = st.lent_from
            st.lent_from = None

    # ------------------------------------------------------------ internals
    def _move(self, tp: TopicPartition, st: PartitionState, trigger: Trigger) -> None:
        target = TRANSITIONS.get((st.state, trigger))
        if target is None:
            # Every caller checks the state first: reaching this is a bug here.
            raise AssertionError(
                f"{tp}: {trigger.value!r} is not a move from {st.state.value}; "
                "the consumer's partition state machine is broken"
            )
        st.state = target


def no_position_error(
    stuck: list[TopicPartition], parts: dict[TopicPartition, PartitionState]
) -> NoOffsetForPartitionError | None:
    """The error a poll raises while ``stuck`` partitions wait for a seek (None:
    none): OutOfRangeError when one lost its position out of range."""
    if not stuck:
        return None

    def why(tp: TopicPartition) -> str:
        st = parts.get(tp)
        if st is not None and st.position is not None:
            return f"{tp.topic}-{tp.partition} (position {st.position} is out of range)"
        return f"{tp.topic}-{tp.partition} (no committed offset)"

    lost = any(parts[tp].position is not None for tp in stuck if tp in parts)
    return (OutOfRangeError if lost else NoOffsetForPartitionError)(
        f"{', '.join(map(why, stuck))}: no position and auto_offset_reset is 'none'; "
        "seek() to a position"
    )
