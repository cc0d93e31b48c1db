"""What an async consumer's ``start`` waits for: its topics, then the group.

aiokafka's ``start`` returns once the consumer is in its group: right after
it, ``assignment()`` is the member's assignment and ``position()`` works, and
what fails the group (a ``session_timeout_ms`` the broker refuses,
InvalidSessionTimeoutError; authorization) is raised by ``start`` itself.
Before joining it waits for the subscribed topics to be in metadata (a
broker that creates topics on first use has then made them, and the first
assignment covers them); a topic still not there after ``request_timeout_ms``
is UnknownTopicOrPartitionError. kafkacore's own async consumers wait the
same way but settle for "reported missing" too (a topic created later is
picked up by a rebalance); :class:`~kafkacore.compat.aiokafka.AIOKafkaConsumer`
asks for aiokafka's rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacore.protocol.error_codes import UnknownTopicOrPartitionError

from ._consumer_steps import Wait

if TYPE_CHECKING:
    from ._consumer_async import AsyncConsumerBase

__all__ = ["await_group"]


async def await_group(consumer: AsyncConsumerBase, described: bool) -> None:
    """Wait for the subscribed topics (``described``: aiokafka's rule, see the
    module docstring), then until the member is stable, its listener called."""
    core, driver, router = consumer._core, consumer._driver, consumer._router
    if core is None or core.member is None:
        return
    topics = core.subscription()
    until = driver.clock() + consumer.client_config.request_timeout_ms / 1000

    def waiting() -> list[str]:
        cluster, missing = core.client.cluster, core.missing_topics()
        return sorted(
            t
            for t in topics
            if not cluster.partitions_for_topic(t) and (described or t not in missing)
        )

    while waiting():
        if driver.clock() >= until:
            if described:
                raise UnknownTopicOrPartitionError(
                    f"{consumer._NAME}.start: {waiting()} not in metadata within "
                    f"request_timeout_ms={consumer.client_config.request_timeout_ms}"
                )
            break
        await driver.wait_change(consumer._news_since(Wait(router.seq, 0.0)), until)
    while core.member is not None and not core.member.stable:
        error = consumer._call(lambda c, now: c.take_error())
        if error is not None:
            raise error
        await driver.wait_change(consumer._news_since(Wait(router.seq, 0.0)), driver.clock() + 1.0)
    await consumer._listener_calls.run()
