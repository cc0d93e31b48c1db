"""TopicView and PatternListing alone: topic facts from metadata and from a
full listing, what is asked for when metadata lacks it, and the listing's
timer for pattern subscriptions."""

from __future__ import annotations

import re
import uuid
from collections.abc import Hashable
from typing import Any

from kafkacore.client.routing import AnyNode
from kafkacore.consumer.topics import LISTING, PatternListing, TopicView
from kafkacore.errors import KafkaConnectionError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages.metadata_response import (
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kafkacore.timers import Deadlines
from tests.consumer.units import T0, T1, U0, FakeClient, RecordingSend, metadata

UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_leaders_epochs_and_ids_come_from_metadata() -> None:
    client = FakeClient(metadata({"t": 2, "u": 1}, leaders={T1: 1, U0: -1}, epochs={T0: 4}))
    view = TopicView(client)
    assert view.cluster is client.cluster
    assert (view.leader(T0), view.leader(T1), view.leader(U0)) == (0, 1, None)
    assert view.leader_epoch(T0) == 4
    assert view.by_leader({T0: 1, T1: 2, U0: 3}) == {0: {T0: 1}, 1: {T1: 2}, None: {U0: 3}}
    assert view.topic_id("t") == uuid.UUID(int=1)
    assert view.topic_name(uuid.UUID(int=2)) == "u"
    assert view.topic_id("nope") is None and view.topic_id_or_zero("nope") == uuid.UUID(int=0)
    assert view.topic_name(uuid.UUID(int=77)) is None


def test_a_listing_fills_in_what_metadata_does_not_track() -> None:
    view = TopicView(FakeClient(metadata({"t": 2})))
    view.listing = {"x": (uuid.UUID(int=9), 3, False)}
    assert view.topic_id("x") == uuid.UUID(int=9)
    assert view.topic_name(uuid.UUID(int=9)) == "x"
    assert view.topic_name(uuid.UUID(int=8)) is None


def test_track_asks_only_for_new_topics_and_refresh_asks_for_metadata() -> None:
    client = FakeClient(metadata({"t": 2}))
    view = TopicView(client)
    view.track({"t"}, 0.0)
    view.track({"t", "u"}, 0.0)
    assert client.topics == frozenset({"t", "u"})
    before = client.topics
    view.track({"u"}, 0.0)
    assert client.topics is before  # nothing new: not set again
    view.refresh(0.0)
    assert client.refreshes == 1
    assert view.unknown_tracked()  # "u" is tracked but metadata has not described it


def test_ids_ready_waits_for_metadata_but_not_for_topics_that_fail() -> None:
    client = FakeClient(metadata({"t": 2}, errors={"gone": UNKNOWN}))
    view = TopicView(client)
    assert view.ids_ready({"t", "gone"}, 0.0)
    assert not view.ids_ready({"t", "later"}, 0.0)
    assert "later" in client.topics


def test_partition_counts_for_a_group_leader() -> None:
    client = FakeClient(metadata({"t": 2}, errors={"gone": UNKNOWN}))
    view = TopicView(client)
    view.listing = {"listed": (uuid.UUID(int=5), 4, False)}
    assert view.partition_counts(frozenset({"t", "gone", "listed"}), 0.0) == {
        "t": 2,
        "gone": 0,
        "listed": 4,
    }
    assert view.partition_counts(frozenset({"t", "new"}), 0.0) is None
    assert "new" in client.topics


def test_problems_name_what_metadata_says_is_wrong() -> None:
    view = TopicView(FakeClient(metadata({"t": 2}, errors={"gone": UNKNOWN})))
    assert view.problems({"t"}) == ""
    assert view.problems({"gone", "t"}).startswith(" (metadata: gone: ")


def listing(*topics: tuple[str, int, bool], code: int = 0) -> Any:
    return m.MetadataResponse(
        topics=[
            MetadataResponseTopic(
                name=name,
                error_code=code,
                topic_id=uuid.UUID(int=i + 10),
                is_internal=internal,
                partitions=[MetadataResponsePartition(partition_index=p) for p in range(n)],
            )
            for i, (name, n, internal) in enumerate(topics)
        ]
    )


def lister(
    *, exclude_internal: bool = True
) -> tuple[PatternListing, TopicView, RecordingSend, Deadlines[Hashable], list[Any]]:
    client = FakeClient(metadata({"t": 2}))
    view = TopicView(client)
    send = RecordingSend()
    deadlines: Deadlines[Hashable] = Deadlines()
    matched: list[Any] = []
    pl = PatternListing(
        view,
        send=send,
        deadlines=deadlines,
        exclude_internal=exclude_internal,
        metadata_max_age_ms=5000,
        retry_backoff_ms=100,
        on_matched=lambda names, now: matched.append((names, now)),
    )
    return pl, view, send, deadlines, matched


def test_a_pattern_lists_every_topic_and_matches_names() -> None:
    pl, view, send, deadlines, matched = lister()
    pl.follow(re.compile(r"orders-.*"), 1.0)
    assert deadlines.get(LISTING) == 1.0
    assert not pl.maybe_list(0.5)  # not due yet
    assert pl.maybe_list(1.0) and pl.in_flight and LISTING not in deadlines
    sent = send.pop()
    assert sent.target == AnyNode() and sent.request.topics is None
    assert not sent.request.allow_auto_topic_creation
    sent.answer(listing(("orders-a", 2, False), ("orders-b", 1, False), ("other", 1, False)), 2.0)
    assert matched == [(frozenset({"orders-a", "orders-b"}), 2.0)]
    assert set(view.listing) == {"orders-a", "orders-b", "other"}
    assert {"orders-a", "orders-b"} <= view._client.topics  # type: ignore[attr-defined]
    assert deadlines.get(LISTING) == 7.0  # again after metadata_max_age_ms


def test_internal_topics_and_failed_entries_are_left_out() -> None:
    pl, view, send, _, matched = lister()
    pl.follow(re.compile(r".*"), 0.0)
    pl.on_due(0.0)
    resp = listing(("__consumer_offsets", 50, True), ("a", 1, False))
    resp.topics.append(MetadataResponseTopic(name="bad", error_code=UNKNOWN))
    send.pop().answer(resp, 0.0)
    assert matched == [(frozenset({"a"}), 0.0)]
    assert "bad" not in view.listing
    pl2, _, send2, _, matched2 = lister(exclude_internal=False)
    pl2.follow(re.compile(r"__.*"), 0.0)
    pl2.on_due(0.0)
    send2.pop().answer(listing(("__consumer_offsets", 50, True)), 0.0)
    assert matched2 == [(frozenset({"__consumer_offsets"}), 0.0)]


def test_nothing_matched_is_reported_too() -> None:
    pl, _, send, _, matched = lister()
    pl.follow(re.compile(r"zzz"), 0.0)
    pl.on_due(0.0)
    send.pop().answer(listing(("a", 1, False)), 0.0)
    assert matched == [(frozenset(), 0.0)]


def test_a_failed_listing_is_tried_again_after_the_backoff() -> None:
    pl, _, send, deadlines, matched = lister()
    pl.follow(re.compile(r".*"), 0.0)
    pl.on_due(0.0)
    assert not pl.on_due(0.0), "listed twice while one listing was in flight"
    send.pop().fail(KafkaConnectionError("x"), 3.0)
    assert deadlines.get(LISTING) == 3.1 and not matched and not pl.in_flight


def test_an_answer_after_the_pattern_was_dropped_changes_nothing() -> None:
    pl, view, send, deadlines, matched = lister()
    pl.follow(re.compile(r".*"), 0.0)
    pl.on_due(0.0)
    pl.follow(None, 0.5)
    send.pop().answer(listing(("a", 1, False)), 1.0)
    assert not matched and LISTING not in deadlines and view.listing == {}
