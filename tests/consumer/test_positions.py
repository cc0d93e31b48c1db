"""SubscriptionState alone: the FetchState transition table, every move that
goes through it, pause/seek/reset policy, lending, and the work it hands out."""

from __future__ import annotations

import itertools

import pytest

from kafkacore.consumer.events import (
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
    OutOfRangeError,
    TruncationDetected,
)
from kafkacore.consumer.positions import (
    EARLIEST,
    LATEST,
    TRANSITIONS,
    FetchState,
    PartitionRetry,
    PartitionState,
    SubscriptionMode,
    Trigger,
    no_position_error,
    reset_timestamp,
)
from kafkacore.errors import LocalProtocolError
from kafkacore.protocol.error_codes import OffsetOutOfRangeError
from tests.consumer.units import T0, T1, U0, World, world

INIT, R, V, F = (
    FetchState.INITIALIZING,
    FetchState.AWAIT_RESET,
    FetchState.AWAIT_VALIDATION,
    FetchState.FETCHING,
)

#: The table as the module docstring draws it.
EXPECTED = {
    (INIT, Trigger.COMMITTED_FOUND): F,
    (INIT, Trigger.NONE_COMMITTED): R,
    (R, Trigger.RESET): F,
    (F, Trigger.EPOCH_ROSE): V,
    (V, Trigger.VALIDATED): F,
    (F, Trigger.OUT_OF_RANGE): R,
    (V, Trigger.OUT_OF_RANGE): R,
    (F, Trigger.TRUNCATED): F,
    (V, Trigger.TRUNCATED): F,
    (F, Trigger.TRUNCATED_STOP): R,
    (V, Trigger.TRUNCATED_STOP): R,
    **{(s, Trigger.SEEK): F for s in FetchState},
    **{(s, Trigger.SEEK_TO): R for s in FetchState},
}


def fetching(w: World, tp: object = T0, position: int = 5, epoch: int | None = 1) -> PartitionState:
    """``tp`` assigned and FETCHING at ``position``."""
    w.subs.assign(frozenset({T0, T1}))
    w.subs.committed_found(T0, OffsetAndMetadata(position, "", epoch), 3)
    return w.subs.parts[T0]


def test_the_table_is_the_documented_one() -> None:
    assert dict(TRANSITIONS) == EXPECTED


@pytest.mark.parametrize(("state", "trigger"), list(itertools.product(FetchState, Trigger)))
def test_every_move_follows_the_table_or_fails_loudly(state: FetchState, trigger: Trigger) -> None:
    w = world()
    st = PartitionState(state=state)
    target = EXPECTED.get((state, trigger))
    if target is None:
        with pytest.raises(AssertionError, match="not a move from"):
            w.subs._move(T0, st, trigger)
        assert st.state is state
    else:
        w.subs._move(T0, st, trigger)
        assert st.state is target


def test_reset_policy_names_list_offsets_timestamps() -> None:
    assert reset_timestamp("earliest") == EARLIEST == -2
    assert reset_timestamp("latest") == LATEST == -1
    assert reset_timestamp("none") is None


def test_new_partitions_start_from_the_group_or_the_reset_policy() -> None:
    w = world(with_group=True)
    w.subs.add(T0)
    assert w.subs.parts[T0].state is INIT and w.subs.parts[T0].reset_to == EARLIEST
    w.subs.parts[T0].position = 9
    w.subs.add(T0)  # already there: kept as it is
    assert w.subs.parts[T0].position == 9
    alone = world(with_group=False, auto_offset_reset="latest")
    alone.subs.add(T0)
    assert alone.subs.parts[T0].state is R and alone.subs.parts[T0].reset_to == LATEST


def test_assign_replaces_the_set_and_clear_forgets_everything() -> None:
    w = world()
    w.subs.assign(frozenset({T0, T1}))
    assert w.subs.mode is SubscriptionMode.ASSIGNED
    assert w.subs.wanted_topics() == {"t"}
    w.subs.backoff(T1, w.subs.parts[T1], 0.0)
    w.subs.assign(frozenset({T0, U0}))
    assert w.subs.assignment() == frozenset({T0, U0})
    assert T1 in w.dropped and PartitionRetry(T1) not in w.deadlines
    w.subs.assign(frozenset())
    assert w.subs.mode is SubscriptionMode.NONE and w.subs.wanted_topics() == set()
    w.subs.mode = SubscriptionMode.SUBSCRIBED
    w.subs.topics = frozenset({"t", "u"})
    assert w.subs.wanted_topics() == {"t", "u"}
    w.subs.clear()
    assert w.subs.mode is SubscriptionMode.NONE and w.subs.topics == frozenset()


def test_due_hands_out_each_kind_of_lookup_once() -> None:
    w = world(auto_offset_reset="none")
    w.subs.assign(frozenset({T0, T1, U0}))
    work = w.subs.due(0.0)
    assert sorted(work.initialize) == [T0, T1, U0] and not work.reset and not work.validate
    w.subs.begin_lookup([T0])
    w.subs.committed_found(T1, None, None)  # nothing committed, no policy: must seek
    st = w.subs.parts[U0]
    w.subs.backoff(U0, st, 0.0)
    assert w.deadlines.get(PartitionRetry(U0)) == pytest.approx(0.1)
    work = w.subs.due(0.05)
    assert work.initialize == [] and work.reset == {}
    assert w.subs.awaiting_seek() == [T1]  # every poll raises for it (no_position_error)
    error = no_position_error(w.subs.awaiting_seek(), w.subs.parts)
    assert isinstance(error, NoOffsetForPartitionError) and "no committed offset" in str(error)
    assert w.subs.due(0.05).initialize == []  # T1 is busy until seek()
    assert w.errors.pending is None
    assert w.subs.due(0.2).initialize == [U0]


def test_due_resets_and_validates() -> None:
    w = world()
    st = fetching(w)
    w.subs.committed_found(T1, None, None)
    w.subs.leader_epoch_seen(T0, 4)  # a new leader: validate first
    assert st.state is V and T0 in w.dropped
    work = w.subs.due(0.0)
    assert work.reset == {T1: EARLIEST} and work.validate == [T0]


def test_committed_offset_sets_the_position() -> None:
    w = world()
    st = fetching(w, position=7, epoch=2)
    assert (st.state, st.position, st.position_epoch) == (F, 7, 2)
    assert (st.committed_position, st.leader_epoch, st.busy) == (7, 3, False)


def test_reset_done_sets_the_position_and_epoch() -> None:
    w = world()
    w.subs.assign(frozenset({T0, T1}))
    w.subs.committed_found(T0, None, None)
    w.subs.committed_found(T1, None, None)
    w.subs.reset_done(T0, 40, 3, 5)
    w.subs.reset_done(T1, 0, -1, None)
    assert (w.subs.parts[T0].position, w.subs.parts[T0].position_epoch) == (40, 3)
    assert w.subs.parts[T0].leader_epoch == 5 and w.subs.parts[T0].state is F
    assert w.subs.parts[T1].position_epoch is None


def test_leader_epoch_seen() -> None:
    w = world()
    w.subs.assign(frozenset({T0}))
    w.subs.leader_epoch_seen(T0, 2)  # not fetching yet: just remembered
    assert w.subs.parts[T0].leader_epoch == 2
    st = fetching(w, epoch=None)
    w.subs.leader_epoch_seen(T0, 3)  # equal: nothing
    w.subs.leader_epoch_seen(T0, 1)  # lower: nothing
    assert st.state is F and st.leader_epoch == 3
    w.subs.leader_epoch_seen(T0, 4)  # no epoch to validate against: adopt it
    assert st.state is F and st.leader_epoch == 4
    st.position_epoch = 2
    st.busy = True
    w.subs.leader_epoch_seen(T0, 5)
    assert st.state is V and not st.busy and st.leader_epoch == 4


def test_validated_position_stands() -> None:
    w = world()
    st = fetching(w, position=10)
    w.subs.leader_epoch_seen(T0, 4)
    w.subs.validated(T0, 4, end_offset=12, end_epoch=1)
    assert st.state is F and st.position == 10 and st.leader_epoch == 4


def test_validated_below_the_position_is_a_truncation() -> None:
    w = world()
    st = fetching(w, position=10)
    w.subs.leader_epoch_seen(T0, 4)
    w.subs.validated(T0, 4, end_offset=7, end_epoch=1)
    assert st.state is F and st.position == 7 and st.position_epoch == 1
    assert w.events == [TruncationDetected(partition=T0, old_position=10, offset=7)]


def test_validated_with_an_unknown_epoch_is_out_of_range() -> None:
    w = world(auto_offset_reset="latest")
    st = fetching(w, position=10)
    w.subs.leader_epoch_seen(T0, 4)
    w.subs.validated(T0, 4, end_offset=-1, end_epoch=-1)
    assert st.state is R and st.reset_to == LATEST and st.leader_epoch == 4
    assert not st.busy and w.errors.pending is None


def test_out_of_range_without_a_policy_is_reported() -> None:
    w = world(auto_offset_reset="none")
    st = fetching(w, position=10)
    st.lent_from = (8, 1)
    w.subs.out_of_range(T0)
    assert st.state is R and st.reset_to is None and st.busy and st.lent_from is None
    error = no_position_error(w.subs.awaiting_seek(), w.subs.parts)
    assert isinstance(error, OutOfRangeError) and "position 10 is out of range" in str(error)
    assert isinstance(error, OffsetOutOfRangeError)  # Java's OffsetOutOfRangeException


def test_truncation_without_a_policy_replaces_the_waiting_error() -> None:
    w = world(auto_offset_reset="none")
    st = fetching(w, position=10)
    w.errors.note(RuntimeError("older"))
    w.subs.truncated(T0, 4, 0)
    assert st.state is R and st.busy and st.reset_to is None
    error = w.errors.take()
    assert isinstance(error, LogTruncationError) and error.divergent == {T0: 4}


def test_truncation_with_no_position_reports_the_end_as_old() -> None:
    w = world()
    st = fetching(w)
    st.position = None
    w.subs.truncated(T0, 4, -1)
    assert st.position == 4 and st.position_epoch is None
    assert w.events == [TruncationDetected(partition=T0, old_position=4, offset=4)]


def test_seek_and_seek_to_move_from_any_state() -> None:
    w = world()
    w.subs.assign(frozenset({T0, T1}))
    w.subs.begin_lookup([T0])
    w.subs.seek(T0, 3)
    st = w.subs.parts[T0]
    assert (st.state, st.position, st.position_epoch, st.busy) == (F, 3, None, False)
    w.subs.backoff(T0, st, 0.0)
    w.subs.seek_to(T0, LATEST, "seek_to_end")
    assert (st.state, st.reset_to, st.retry_at) == (R, LATEST, 0.0)
    assert PartitionRetry(T0) not in w.deadlines and w.dropped.count(T0) == 2
    with pytest.raises(LocalProtocolError, match="u-0 is not assigned"):
        w.subs.seek(U0, 1)
    with pytest.raises(LocalProtocolError, match="seek_to_beginning: u-0"):
        w.subs.seek_to(U0, EARLIEST, "seek_to_beginning")


def test_pause_resume_and_what_may_be_fetched() -> None:
    w = world()
    fetching(w)
    assert [tp for tp, _ in w.subs.fetchable()] == [T0]
    w.subs.pause(T0)
    assert w.subs.paused() == frozenset({T0}) and T0 in w.dropped
    assert list(w.subs.fetchable()) == []
    w.subs.resume(T0)
    assert w.subs.paused() == frozenset()
    with pytest.raises(LocalProtocolError, match="pause"):
        w.subs.pause(U0)


def test_position_and_lag() -> None:
    w = world()
    st = fetching(w, position=5)
    assert w.subs.position(T0) == 5 and w.subs.position(T1) is None
    assert w.subs.lag(T0, read_committed=False) is None  # no high watermark yet
    st.high_watermark, st.last_stable_offset = 9, 7
    assert w.subs.lag(T0, read_committed=False) == 4
    assert w.subs.lag(T0, read_committed=True) == 2
    st.high_watermark = 3
    assert w.subs.lag(T0, read_committed=False) == 0  # never negative
    st.last_stable_offset = -1
    assert w.subs.lag(T0, read_committed=True) is None
    with pytest.raises(LocalProtocolError, match="lag"):
        w.subs.lag(U0, read_committed=False)


def test_lending_keeps_commits_and_positions_at_what_the_user_got() -> None:
    w = world()
    st = fetching(w, position=5, epoch=1)
    w.subs.lend(st)
    w.subs.advance(T0, 9, 2)
    assert w.subs.position(T0) == 5
    assert w.subs.current_offsets() == {T0: OffsetAndMetadata(5, "", 1)}
    w.subs.lend(st)  # lent already: the start is kept
    assert st.lent_from == (5, 1)
    w.subs.note_consumed({T0: (7, 2)})
    assert st.lent_from == (7, 2) and w.subs.position(T0) == 7
    w.subs.note_consumed({T0: (6, 2), T1: (3, 0), U0: (1, 0)})  # backwards, unlent, unknown
    assert st.lent_from == (7, 2)
    w.subs.return_lent()
    assert (st.position, st.position_epoch, st.lent_from) == (7, 2, None)
    assert T0 in w.dropped
    w.subs.lend(st)
    w.subs.advance(T0, 8, None)
    w.subs.note_consumed({T0: (8, 2)})  # everything reached the user
    assert st.lent_from is None and st.position_epoch == 2
    w.subs.lend(st)
    w.subs.all_handed_over()
    assert st.lent_from is None
    w.subs.return_lent()  # nothing lent: nothing moves
    assert st.position == 8


def test_current_offsets_leave_out_partitions_without_a_position() -> None:
    w = world()
    fetching(w, position=5, epoch=None)
    assert w.subs.current_offsets() == {T0: OffsetAndMetadata(5, "", None)}
    assert not w.subs.awaiting_seek()


def test_due_leaves_fetching_partitions_alone_and_clear_drops_them() -> None:
    w = world()
    fetching(w)
    w.subs.committed_found(T1, OffsetAndMetadata(1), None)
    work = w.subs.due(0.0)
    assert (work.initialize, work.reset, work.validate) == ([], {}, [])
    w.subs.clear()
    assert w.subs.parts == {} and {T0, T1} <= set(w.dropped)


def test_a_known_epoch_outside_fetching_is_kept() -> None:
    w = world()
    w.subs.assign(frozenset({T0}))
    w.subs.leader_epoch_seen(T0, 2)
    w.subs.leader_epoch_seen(T0, 7)  # initializing: the lookup sets the epoch it uses
    assert w.subs.parts[T0].leader_epoch == 2
