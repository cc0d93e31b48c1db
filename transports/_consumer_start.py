"""What an async consumer's ``start`` waits for: its topics, then the group.

aiokafka's ``start`` returns once the consumer is in its group: right after
it, ``assignment()`` is the member's assignment and ``position()`` works, and
what fails the group (a ``session_timeout_ms`` the broker refuses,
InvalidSessionTimeoutError; authorization) is raised by ``start`` itself.
Before joining it waits for the subscribed topics to be in metadata (a
broker that creates topics on first use has then made them, and the first
assignment covers them); a topic still not there after ``request_timeout_ms``
is UnknownTopicOrPartitionError, and a cluster not reached by then is
NoBrokersAvailable. That is :class:`~kafkacore.compat.aiokafka.AIOKafkaConsumer`'s
rule (``strict``). kafkacore's own async consumers wait the same way while
the cluster answers, but settle for a topic "reported missing" (a topic
created later is picked up by a rebalance) and return at once when no
broker has answered yet, so that the first poll reports it within its own
timeout (issue 26).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacore.errors import KafkaTimeoutError
from kafkacore.protocol.error_codes import UnknownTopicOrPartitionError

from ._consumer_steps import Wait

if TYPE_CHECKING:
    from ._consumer_async import AsyncConsumerBase

__all__ = ["await_group"]


async def await_group(consumer: AsyncConsumerBase, strict: bool) -> None:
    """See the module docstring."""
    core, driver, router = consumer._core, consumer._driver, consumer._router
    # A group member, or a group-less subscription (which assigns itself every
    # partition once its topics are in metadata: waiting for them is enough).
    if core is None or (core.member is None and not core.subscription()):
        return
    topics = core.subscription()
    bound_ms = consumer.client_config.request_timeout_ms
    until = driver.clock() + bound_ms / 1000

    def waiting() -> list[str]:
        cluster, missing = core.client.cluster, core.missing_topics()
        return sorted(
            t
            for t in topics
            if not cluster.partitions_for_topic(t) and (strict or t not in missing)
        )

    while True:
        absent = core.client.unreachable_from_the_start()
        if absent is not None and not strict:
            return  # the first poll says so, at its own bound
        late = driver.clock() >= until
        if absent is not None and late:
            raise absent
        pending = waiting()
        if pending and late:
            if not strict:
                break
            raise UnknownTopicOrPartitionError(
                f"{consumer._NAME}.start: {pending} not in metadata within "
                f"request_timeout_ms={bound_ms}",
                node_id=core.client.cluster.topic_errors_from,
            )
        if not pending and absent is None:
            break
        await driver.wait_change(consumer._news_since(Wait(router.seq, 0.0)), until)
    if core.member is None:
        return
    # A join lasts at most the group's rebalance timeout (max_poll_interval_ms);
    # past that and a request timeout more, start says so rather than wait on.
    joined_by = driver.clock() + (consumer.config.max_poll_interval_ms + bound_ms) / 1000
    while core.member is not None and not core.member.stable:
        error = consumer._call(lambda c, now: c.take_error())
        if error is not None:
            raise error
        if driver.clock() >= joined_by:
            raise KafkaTimeoutError(
                f"{consumer._NAME}.start: not in group {consumer.config.group_id!r} within "
                f"max_poll_interval_ms + request_timeout_ms"
            )
        await driver.wait_change(consumer._news_since(Wait(router.seq, 0.0)), driver.clock() + 1.0)
    await consumer._listener_calls.run()
