"""trio Kafka consumer: the sans-IO consumer core driven by tasks in its own nursery.

Theory of operation
-------------------
:class:`TrioKafkaConsumer` is used as ``async with TrioKafkaConsumer(...) as c``:
entering opens the trio driver's nursery
(:class:`~kafkacore.transports._trio_driver.TrioDriver`: the timer task and one task
per broker connection), as :class:`kafkacore.transports.trio.TrioKafkaClient` does.
The calls are the async consumer surface (:mod:`kafkacore.transports._consumer_async`).
Leaving the block commits (with auto-commit) and leaves the group, bounded,
then stops every task, which closes every socket. ``commit_async`` starts
a commit and returns at once (its outcome is not reported).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerClosedError, ConsumerCore, OffsetAndMetadata
from kafkacore.errors import LocalProtocolError

from ._common import Parts
from ._consumer_async import AsyncConsumerBase, ConsumerState
from ._trio_driver import TrioDriver

__all__ = ["ConsumerState", "TrioKafkaConsumer"]


class TrioKafkaConsumer(AsyncConsumerBase):
    """trio consumer; see the module docstring. Options as ClientConfig + ConsumerConfig."""

    _NAME = "TrioKafkaConsumer"

    def _new_driver(self, parts: Parts) -> TrioDriver:
        self._trio = TrioDriver(self._NAME, parts)
        return self._trio

    async def __aenter__(self) -> TrioKafkaConsumer:
        if self._state is not ConsumerState.NEW:
            raise LocalProtocolError(
                f"TrioKafkaConsumer: cannot enter a consumer that is {self._state.value}"
            )
        await self._trio.open()
        self._attach()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        await self.close()
        await self._trio.close()
        return False

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> None:
        """Start a commit and return at once (its outcome is not reported)."""
        self._call(self._commit_command(offsets, None))

    def _running(self, what: str) -> ConsumerCore:
        if self._state is not ConsumerState.RUNNING:
            hint = (
                "use 'async with TrioKafkaConsumer(...)'"
                if self._state is ConsumerState.NEW
                else "make a new one"
            )
            closed = self._state is ConsumerState.CLOSED
            error = ConsumerClosedError if closed else LocalProtocolError
            raise error(f"TrioKafkaConsumer.{what}: consumer is {self._state.value}; {hint}")
        assert self._core is not None
        return self._core
