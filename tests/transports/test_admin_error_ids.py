"""An admin refusal from the real broker keeps the code and the broker id, on every
transport (issue 13)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafkacore.protocol.error_codes import TopicAlreadyExistsError
from kafkacore.transports.selector import NewTopic

from .conftest import Flavor
from .test_admin_flow import open_admin

pytestmark = pytest.mark.anyio


async def test_creating_an_existing_topic_names_the_broker(
    flavor: Flavor, kafka_broker: Any
) -> None:
    topic = f"ids-{flavor.name}-{uuid.uuid4().hex[:8]}"
    (broker,) = [node.node_id for node in kafka_broker.nodes]
    async with open_admin(flavor, kafka_broker.bootstrap) as admin:
        await admin.call("create_topics", [NewTopic(topic, 1, 1)])
        again = await admin.call("create_topics", [NewTopic(topic, 1, 1)], timeout=20)
    error = again[topic].error
    assert isinstance(error, TopicAlreadyExistsError), error
    assert error.code == TopicAlreadyExistsError.code and error.node_id == broker
    assert f"topic {topic!r} (broker {broker})" in str(error)
