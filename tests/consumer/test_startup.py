"""A new consumer's first Metadata request carries the topics it subscribed to.

The consumer's client core does not step until the consumer's first step
(issue 12): a subscription made right after construction rides on the
bootstrap Metadata request instead of waiting for its answer and then the
metadata backoff (``retry_backoff_ms``) before the group can be joined.
"""

from __future__ import annotations

import random
from typing import Any

from kafkacore.client.config import ClientConfig
from kafkacore.consumer import ConsumerConfig, ConsumerCore
from kafkacore.protocol import framing
from tests.client.fakebroker import Pump, Topic, make_cluster, parse_request
from tests.consumer.fake import FakeKafka


def _metadata_topics(pump: Pump) -> list[list[str]]:
    asked: list[list[str]] = []
    readers: dict[int, framing.FrameReader] = {}
    for conn, data in pump.writes:
        reader = readers.setdefault(conn, framing.FrameReader(max_frame_size=1 << 30))
        for frame in reader.feed(data):
            api_key, _v, _corr, _cid, body = parse_request(frame)
            if api_key == 3:
                asked.append(sorted(t.name for t in body.topics or []))
    return asked


def _consumer(**consumer: Any) -> tuple[ConsumerCore, Pump]:
    cluster, fakes = make_cluster(1, [Topic("t", 2)])
    cluster.api_ranges[1] = (4, 12)
    FakeKafka().install(fakes)
    core = ConsumerCore(
        ClientConfig(bootstrap_servers="127.0.0.1:9092"),
        ConsumerConfig(**consumer),
        now=0.0,
        rng=random.Random(0),
    )
    return core, Pump(core, fakes)  # type: ignore[arg-type]


def test_a_subscription_right_after_construction_is_in_the_first_metadata_request() -> None:
    core, pump = _consumer(group_id="g")
    assert pump.core.pull_actions() == []  # nothing happens before the first step
    assert core.next_deadline() == 0.0  # ... which is due at once
    core.subscribe(["t"], now=pump.now)
    pump.run(until=lambda: core.client.cluster.update_count > 0)
    assert _metadata_topics(pump)[0] == ["t"]
    pump.run(until=lambda: bool(core.assignment()))
    assert pump.now < 0.1  # joined without waiting out a metadata backoff


def test_without_a_command_the_first_step_still_comes_through_the_timer() -> None:
    core, pump = _consumer()
    pump.run(until=lambda: core.client.cluster.update_count > 0)
    assert _metadata_topics(pump)[0] == []
