"""The producer surface shared by the asyncio and trio producers.

Theory of operation
-------------------
Everything runs on the event loop's single thread, so user calls reach the
:class:`~kafkacore.producer.ProducerCore` directly: ``send`` checks and
serializes the record, calls ``core.append`` with a fresh *slot* (the
framework's awaitable: an asyncio future, a trio event box) as the token,
and schedules one ``Bridge.pump`` for the next loop iteration, so that a
burst of sends becomes one drain of the core's outputs. The bridge hands
``BatchCompleted`` events to :func:`~transports._producer_common.fan_out`,
which fills the slots.

When the core refuses an append (``buffer_memory`` full) the call waits for
the core's ``BufferFreed``, at most ``max_block_ms``, then raises
:class:`~kafkacore.producer.BufferExhaustedError`. ``flush`` and the
transaction calls await the :class:`~kafkacore.producer.Operation`
the core returns. Subclasses supply the framework: slots, scheduling,
bounded waits, and how the I/O backend is started and stopped.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from kafkacore.client import TopicPartition
from kafkacore.consumer import ConsumerGroupMetadata
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.producer import (
    BatchCompleted,
    BufferExhaustedError,
    BufferFreed,
    BufferFull,
    Operation,
    OperationCompleted,
    ProducerClosedError,
    ProducerConfig,
    ProducerCore,
    RecordMetadata,
    prepare_record,
)
from kafkacore.producer.serde import Serializer, check_bytes

from ._bridge import Bridge
from ._producer_common import (
    ManyResult,
    ProducerParts,
    fan_out,
    make_producer_parts,
    now_ms,
    to_columns,
)
from ._sockets import Address

__all__ = ["AsyncProducerBase", "Slot"]

# Sends between two turns given to the event loop.
_YIELD_EVERY = 64


class Slot(Protocol):
    """A one-shot awaitable outcome owned by the framework."""

    def done(self) -> bool: ...

    def fill(self, value: Any, error: BaseException | None) -> None: ...


class AsyncProducerBase:
    """Framework-independent half of the async producers; see the module docstring."""

    _owner = "AsyncProducer"

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] | None = "localhost:9092",
        *,
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
        source_address: Address | None = None,
        ssl_server_hostname: str | None = None,
        rng: random.Random | None = None,
        **options: Any,
    ) -> None:
        self._parts: ProducerParts = make_producer_parts(
            self._owner,
            bootstrap_servers,
            source_address=source_address,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        self._ssl_server_hostname = ssl_server_hostname
        self.config: ProducerConfig = self._parts.config
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._core: ProducerCore | None = None
        self._bridge: Bridge | None = None
        self._pump_due = False
        self._room: Slot | None = None
        self._ops: dict[Operation[Any], Slot] = {}
        self._closed = False
        self._sends = 0

    # -- framework hooks ------------------------------------------------------
    def _new_slot(self) -> Slot:
        raise NotImplementedError

    def _call_soon(self, fn: Callable[[], None]) -> None:
        raise NotImplementedError

    async def _wait(self, slot: Slot, timeout: float | None, what: str) -> Any:
        """Await ``slot``; KafkaTimeoutError naming ``what`` after ``timeout`` s."""
        raise NotImplementedError

    def _clock(self) -> float:
        raise NotImplementedError

    async def _yield(self) -> None:
        """Give the event loop one turn."""
        raise NotImplementedError

    # -- wiring ---------------------------------------------------------------
    def _attach(self, core: ProducerCore, bridge: Bridge) -> None:
        self._core, self._bridge = core, bridge

    def _running(self, what: str) -> tuple[ProducerCore, Bridge]:
        if self._closed:
            raise ProducerClosedError(f"{self._owner}.{what}: closed; make a new producer")
        if self._core is None or self._bridge is None:
            raise LocalProtocolError(
                f"{self._owner}.{what}: not started; use 'async with {self._owner}(...)'"
                " or await start()"
            )
        return self._core, self._bridge

    def _schedule_pump(self) -> None:
        if not self._pump_due:
            self._pump_due = True
            self._call_soon(self._pump)

    def _pump(self) -> None:
        self._pump_due = False
        if self._bridge is not None and not self._closed:
            self._bridge.pump()

    def _on_event(self, event: object) -> None:
        if isinstance(event, BatchCompleted):
            fan_out(event, _fill)
        elif isinstance(event, BufferFreed):
            room, self._room = self._room, None
            if room is not None:
                room.fill(None, None)
        elif isinstance(event, OperationCompleted):
            slot = self._ops.pop(event.handle, None)
            if slot is not None:
                slot.fill(None, event.error)

    async def _append(self, what: str, fn: Callable[[ProducerCore, float], None]) -> None:
        """Run ``fn(core, now)``; on BufferFull wait for room (max_block_ms) and retry."""
        core, _ = self._running(what)
        deadline = self._clock() + self.config.max_block_ms / 1000
        while True:
            try:
                fn(core, self._clock())
            except BufferFull:
                self._schedule_pump()
                remaining = deadline - self._clock()
                if remaining <= 0:
                    raise self._exhausted(what) from None
                if self._room is None:
                    self._room = self._new_slot()
                try:
                    await self._wait(self._room, remaining, what)
                except KafkaTimeoutError:
                    raise self._exhausted(what) from None
                core, _ = self._running(what)
                continue
            self._schedule_pump()
            return

    def _exhausted(self, what: str) -> BufferExhaustedError:
        return BufferExhaustedError(
            f"{self._owner}.{what}: buffer_memory={self.config.buffer_memory} stayed full for "
            f"max_block_ms={self.config.max_block_ms}; the brokers take records slower than "
            "they are sent"
        )

    # -- sending --------------------------------------------------------------
    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Iterable[tuple[str, Any]] | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> Any:
        """Queue one record; returns an awaitable resolving to its RecordMetadata.

        Awaiting ``send`` itself only waits for buffer room (back-pressure).
        """
        if (
            type(value) is bytes
            and (key is None or type(key) is bytes)
            and not headers
            and self._value_serializer is None
        ):
            k: bytes | None = key
            v: bytes | None = value
            h: list[tuple[str, bytes | None]] | None = None  # fast path: nothing to check
        else:
            rec = prepare_record(
                value,
                key,
                headers,
                key_serializer=self._key_serializer,
                value_serializer=self._value_serializer,
                owner=f"{self._owner}.send",
            )
            k, v, h = rec.key, rec.value, rec.headers
        slot = self._new_slot()
        ts = now_ms() if timestamp is None else timestamp
        core = self._core
        if core is not None and not self._closed:
            try:  # fast path: room in the buffer
                core.append(
                    topic, v, k, h, partition=partition, timestamp=ts, token=slot, now=self._clock()
                )
            except BufferFull:
                pass
            else:
                if not self._pump_due:
                    self._pump_due = True
                    self._call_soon(self._pump)
                self._sends += 1
                if self._sends >= _YIELD_EVERY:
                    # Let the loop write batches: a sender that never blocks
                    # must not keep the producer's own I/O waiting.
                    self._sends = 0
                    await self._yield()
                return slot

        def append(core: ProducerCore, now: float) -> None:
            core.append(topic, v, k, h, partition=partition, timestamp=ts, token=slot, now=now)

        await self._append("send", append)
        return slot

    async def send_and_wait(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Iterable[tuple[str, Any]] | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> RecordMetadata:
        """Send one record and wait for its RecordMetadata."""
        slot = await self.send(topic, value, key, headers, partition, timestamp)
        result: RecordMetadata = await self._wait(slot, None, "send_and_wait")
        return result

    async def send_many(
        self,
        topic: str,
        records: Any,
        *,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> ManyResult:
        """Send ``(key, value)`` pairs or a ``(keys, values)`` column pair; wait for all.

        Raises the first delivery error, if any; else returns a ManyResult.
        """
        values, keys = to_columns(records, f"{self._owner}.send_many")
        values, keys = self._serialize_columns(values, keys)
        slot = self._new_slot()
        if not values:
            return ManyResult(topic, 0, lambda r: None)
        result = ManyResult(
            topic, len(values), lambda r: slot.fill(r, r.error) if not slot.done() else None
        )
        ts = now_ms() if timestamp is None else timestamp
        step = 4096
        for start in range(0, len(values), step):
            vals = values[start : start + step]
            ks = None if keys is None else keys[start : start + step]

            def append(core: ProducerCore, now: float, vals: Any = vals, ks: Any = ks) -> None:
                core.append_many(
                    topic, vals, ks, partition=partition, timestamp=ts, token=result, now=now
                )

            await self._append("send_many", append)
        done: ManyResult = await self._wait(slot, None, "send_many")
        return done

    def _serialize_columns(
        self, values: list[Any], keys: list[Any] | None
    ) -> tuple[list[bytes | None], list[bytes | None] | None]:
        owner = f"{self._owner}.send_many"
        vs, ks = self._value_serializer, self._key_serializer
        if vs is not None:
            values = [vs(v) for v in values]
        if ks is not None and keys is not None:
            keys = [None if k is None else ks(k) for k in keys]
        if not set(map(type, values)) <= {bytes, type(None)}:
            values = [check_bytes(v, "value", owner) for v in values]
        if keys is not None:
            if all(k is None for k in keys):
                keys = None
            elif not set(map(type, keys)) <= {bytes, type(None)}:
                keys = [check_bytes(k, "key", owner) for k in keys]
        return values, keys

    # -- operations -------------------------------------------------------------
    async def _operation(
        self,
        what: str,
        start: Callable[[ProducerCore, float], Operation[Any] | None],
        timeout: float | None,
    ) -> None:
        core, bridge = self._running(what)
        box: list[Operation[Any] | None] = []
        bridge.command(lambda now: box.append(start(core, now)))
        handle = box[0]
        if handle is None:
            return
        if handle.done:
            if handle.error is not None:
                raise handle.error
            return
        slot = self._new_slot()
        self._ops[handle] = slot
        await self._wait(slot, timeout, what)

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until each record is done."""
        await self._operation("flush", lambda c, now: c.flush(now=now), timeout)

    async def init_transactions(self, timeout: float | None = None) -> None:
        await self._operation(
            "init_transactions", lambda c, now: c.init_transactions(now=now), timeout
        )

    async def begin_transaction(self) -> None:
        await self._operation(
            "begin_transaction", lambda c, now: c.begin_transaction(now=now), None
        )

    async def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int],
        group_id: str | ConsumerGroupMetadata,
        timeout: float | None = None,
    ) -> None:
        await self._operation(
            "send_offsets_to_transaction",
            lambda c, now: c.send_offsets_to_transaction(offsets, group_id, now=now),
            timeout,
        )

    async def commit_transaction(self, timeout: float | None = None) -> None:
        await self._operation(
            "commit_transaction", lambda c, now: c.commit_transaction(now=now), timeout
        )

    async def abort_transaction(self, timeout: float | None = None) -> None:
        await self._operation(
            "abort_transaction", lambda c, now: c.abort_transaction(now=now), timeout
        )

    def run_on_loop(self, fn: Callable[[ProducerCore], Any]) -> Any:
        """Call ``fn(core)`` and pump afterwards (queries, tests)."""
        core, bridge = self._running("run_on_loop")
        box: list[Any] = []
        bridge.command(lambda now: box.append(fn(core)))
        return box[0]

    # -- closing ----------------------------------------------------------------
    async def _flush_then_stop(self, timeout: float | None) -> None:
        if self._closed or self._core is None:
            self._closed = True
            return
        # On timeout, what is left fails with ProducerClosedError below.
        with contextlib.suppress(KafkaTimeoutError):
            await self.flush(timeout)
        self._stop_core()

    def _stop_core(self) -> None:
        if self._closed:
            return
        self._closed = True
        core, bridge = self._core, self._bridge
        if core is not None and bridge is not None:
            bridge.command(lambda now: core.close(now=now))
        error = ProducerClosedError(f"{self._owner} closed")
        ops, self._ops = self._ops, {}
        for slot in ops.values():
            slot.fill(None, error)
        room, self._room = self._room, None
        if room is not None:
            room.fill(None, error)


def _fill(token: Any, value: Any, error: BaseException | None) -> None:
    if not token.done():
        token.fill(value, error)
