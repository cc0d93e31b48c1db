"""trio share consumer (KIP-932): the sans-IO share core in a trio nursery.

The surface is :class:`~kafkacore.transports._share_common.AsyncShareBase`;
this module binds it to trio: the consumer lives inside ``async with``,
``commit_async`` starts a commit and returns at once (the
acknowledgement-commit callback reports the outcome).
"""

from __future__ import annotations

from types import TracebackType

from kafkacore.errors import LocalProtocolError
from kafkacore.share import ShareConsumerCore

from ._common import Parts
from ._share_common import AsyncShareBase, ShareState
from ._trio_driver import TrioDriver

__all__ = ["TrioKafkaShareConsumer"]


class TrioKafkaShareConsumer(AsyncShareBase):
    """trio share consumer; options as ClientConfig + ShareConsumerConfig."""

    _NAME = "TrioKafkaShareConsumer"

    def _new_driver(self, parts: Parts) -> TrioDriver:
        self._trio = TrioDriver(self._NAME, parts)
        return self._trio

    async def __aenter__(self) -> TrioKafkaShareConsumer:
        if self._state is not ShareState.NEW:
            raise LocalProtocolError(
                f"{self._NAME}: cannot enter a share consumer that is {self._state.value}"
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

    def commit_async(self) -> None:
        """Start a commit and return at once (the callback hears of the outcome)."""
        self._call(self._commit_command())

    def _running(self, what: str) -> ShareConsumerCore:
        if self._state is not ShareState.RUNNING:
            hint = (
                f"use 'async with {self._NAME}(...)'"
                if self._state is ShareState.NEW
                else "make a new one"
            )
            raise LocalProtocolError(f"{self._NAME}.{what}: it is {self._state.value}; {hint}")
        assert self._core is not None
        return self._core
