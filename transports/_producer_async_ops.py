"""``flush`` and the transaction calls of the async producers, over their ``_operation``.

The async twin of :class:`~kafkacore.transports._producer_common.BlockingOperations`:
a base of :class:`~kafkacore.transports._producer_async.AsyncProducerBase`, each
call one awaited core :class:`~kafkacore.producer.Operation`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from kafkacore.producer import ProducerConfig

from ._async_driver import AsyncDriver

if TYPE_CHECKING:
    # Types only: importing it runs the consumer package, which a producer
    # never needs (a transactional one gets the consumer's metadata from it).
    from kafkacore.consumer import ConsumerGroupMetadata
    from kafkacore.consumer.offset_args import OffsetsArg

__all__ = ["AsyncOperations"]


class AsyncOperations:
    """The awaited operations of an async producer; see the module docstring."""

    # Set by the producer surface and AsyncProducerBase.
    config: ProducerConfig
    _driver: AsyncDriver
    #: start() got the producer id already: the user's init_transactions is a no-op.
    _txn_started: bool

    if TYPE_CHECKING:

        async def _operation(self, what: str, timeout: float | None, *args: Any) -> None: ...

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until each record is done."""
        await self._operation("flush", timeout)

    async def init_transactions(self, timeout: float | None = None) -> None:
        """Get the producer id (fencing older instances); done by start() already
        (as aiokafka does), then a no-op."""
        if self._txn_started:
            self._txn_started = False
            await self._driver.checkpoint()
            return
        await self._operation("init_transactions", timeout)

    async def _start_transactions(self) -> None:
        """After start: a transactional producer gets its producer id (aiokafka's start)."""
        if self.config.transactional_id is not None:
            await self._operation("init_transactions", self.config.max_block_ms / 1000)
            self._txn_started = True

    async def begin_transaction(self) -> None:
        await self._operation("begin_transaction", None)

    async def send_offsets_to_transaction(
        self,
        offsets: OffsetsArg,
        group_id: str | ConsumerGroupMetadata,
        timeout: float | None = None,
    ) -> None:
        await self._operation("send_offsets_to_transaction", timeout, offsets, group_id)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        await self._operation("commit_transaction", timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        await self._operation("abort_transaction", timeout)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """aiokafka: ``async with p.transaction():`` begins, commits (aborts on an error)."""
        await self.begin_transaction()
        try:
            yield
        except BaseException:
            await self.abort_transaction()
            raise
        await self.commit_transaction()
