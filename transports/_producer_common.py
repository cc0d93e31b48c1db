"""What every producer does, whatever its I/O idiom: the producer's sans-IO surface.

Theory of operation
-------------------
A transport producer builds one :class:`~kafkacore.producer.ProducerCore`
(over a :class:`~kafkacore.client.KafkaClientCore` made from the same
options as the clients) and drives it with its transport's driver. The
three producers (blocking, asyncio, trio) differ in how a record reaches
the core (a hand-off queue to the loop thread; a direct call on the loop)
and in how a caller waits; everything else is written here once, in
:class:`ProducerSurface`:

- checking and serializing records (:meth:`ProducerSurface._prepare`,
  :meth:`ProducerSurface._columns`, :meth:`ProducerSurface._chunks`);
- routing the core's events: a completed batch resolves its records'
  *tokens* (:func:`fan_out`: the idiom's future for ``send``, a
  :class:`ManyResult` for ``send_many``; many-record tokens just count),
  ``BufferFreed`` tells the idiom there is room again, and an
  ``OperationCompleted`` resolves the waiter of ``flush`` or of a
  transaction call (:meth:`ProducerSurface._expect`);
- the operations themselves (:meth:`ProducerSurface._operation_command`)
  and the error a full buffer ends in.
"""

from __future__ import annotations

import enum
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

from kafkacore.client import KafkaClientCore
from kafkacore.producer import (
    BatchCompleted,
    BufferExhaustedError,
    BufferFreed,
    Operation,
    OperationCompleted,
    ProducerCore,
    RecordMetadata,
    prepare_record,
)
from kafkacore.producer.serde import Serializer, check_bytes

from ._common import Role, make_parts
from ._router import Completion
from ._sockets import Address

__all__ = [
    "ManyResult",
    "ProducerState",
    "ProducerSurface",
    "Token",
    "fail_token",
    "fan_out",
    "now_ms",
    "to_columns",
]

#: Records per ``append_many``: each fits buffer_memory and moves on quickly.
CHUNK = 4096


class ProducerState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


class Token(Protocol):
    """The idiom's one-shot for one record's outcome (a future, an awaitable)."""

    def done(self) -> bool: ...

    def fill(self, value: Any, error: BaseException | None) -> None:
        """Resolve once; does nothing when done already (e.g. cancelled by the user)."""
        ...


def now_ms() -> int:
    """Record timestamp default: wall-clock milliseconds (CreateTime)."""
    return time.time_ns() // 1_000_000


class ManyResult:
    """Outcome of one ``send_many``: how many records landed where, or the first error.

    ``ranges`` holds ``(partition, base_offset, count)`` per batch, in the
    order the batches completed (``base_offset`` -1 when unknown, acks=0).
    """

    __slots__ = ("_on_done", "count", "error", "expected", "failed", "ranges", "topic")

    def __init__(self, topic: str, expected: int, on_done: Callable[[ManyResult], None]) -> None:
        self.topic = topic
        self.expected = expected
        self.count = 0
        self.failed = 0
        self.error: BaseException | None = None
        self.ranges: list[tuple[int, int, int]] = []
        self._on_done = on_done

    @property
    def done(self) -> bool:
        return self.count + self.failed >= self.expected

    def _add(self, partition: int, base: int, n: int, error: BaseException | None) -> None:
        if error is not None:
            self.failed += n
            if self.error is None:
                self.error = error
        else:
            self.count += n
            self.ranges.append((partition, base, n))
        if self.done:
            self._on_done(self)

    def __repr__(self) -> str:
        return (
            f"<ManyResult {self.topic} {self.count}/{self.expected} delivered"
            f"{', error: ' + repr(self.error) if self.error else ''}>"
        )


def fan_out(
    event: BatchCompleted, resolve: Callable[[Any, Any, BaseException | None], None]
) -> None:
    """Resolve every token of one completed batch; see the module docstring."""
    tokens = event.tokens
    error = event.error
    topic = event.topic
    partition = event.partition
    base = event.base_offset
    if tokens and type(tokens[0]) is ManyResult and tokens[0] is tokens[-1]:
        tokens[0]._add(partition, base, len(tokens), error)
        return
    lat = event.log_append_time
    timestamps = event.timestamps
    run_token: Any = None
    run_start = 0
    for i, token in enumerate(tokens):
        if type(token) is ManyResult:
            if token is not run_token:
                if run_token is not None:
                    run_token._add(
                        partition, base + run_start if base >= 0 else -1, i - run_start, error
                    )
                run_token, run_start = token, i
            continue
        if run_token is not None:
            run_token._add(partition, base + run_start if base >= 0 else -1, i - run_start, error)
            run_token = None
        if token is None:
            continue
        if error is not None:
            resolve(token, None, error)
        else:
            resolve(
                token,
                RecordMetadata(
                    topic,
                    partition,
                    base + i if base >= 0 else -1,
                    lat if lat >= 0 else timestamps[i],
                ),
                None,
            )
    if run_token is not None:
        n = len(tokens) - run_start
        run_token._add(partition, base + run_start if base >= 0 else -1, n, error)


def to_columns(records: Any, owner: str) -> tuple[list[bytes | None], list[bytes | None] | None]:
    """``send_many`` input: ``(key, value)`` pairs, or a ``(keys, values)`` column pair.

    Columns are recognised as a 2-tuple of lists/tuples of equal length
    whose items are not pairs; keys may be None for "all keys null".
    """
    if (
        isinstance(records, tuple)
        and len(records) == 2
        and (records[0] is None or isinstance(records[0], list | tuple))
        and isinstance(records[1], list | tuple)
        and not (records[1] and isinstance(records[1][0], tuple))
    ):
        keys, values = records
        if keys is not None and len(keys) != len(values):
            raise ValueError(f"{owner}: {len(keys)} keys for {len(values)} values")
        return list(values), None if keys is None else list(keys)
    keys_out: list[bytes | None] = []
    values_out: list[bytes | None] = []
    try:
        for key, value in records:
            keys_out.append(key)
            values_out.append(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"{owner}: records must be (key, value) pairs or a (keys, values) column pair"
        ) from None
    return values_out, keys_out


class ProducerSurface:
    """The I/O-free half of every producer; see the module docstring."""

    _NAME = "Producer"  # the public class name, for messages

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
        """Options as ``ProducerConfig`` + ``ClientConfig`` (split by ``kafkacore.options``)."""
        self._parts = make_parts(
            self._NAME,
            bootstrap_servers,
            role=Role.PRODUCER,
            source_address=source_address,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        self.config = self._parts.producer
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._ops: dict[Operation[Any], Completion] = {}
        self._setup()

    def _setup(self) -> None:
        """Build the idiom's driver (and, when it starts at once, the core)."""
        raise NotImplementedError

    def _build_core(self, now: float) -> ProducerCore:
        parts = self._parts
        client = KafkaClientCore(parts.config, now=now, rng=parts.rng)
        return ProducerCore(self.config, now=now, rng=parts.rng, client=client)

    # -- records ----------------------------------------------------------------
    def _prepare(
        self, value: Any, key: Any, headers: Iterable[tuple[str, Any]] | None
    ) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]:
        """``(key, value, headers)`` as the core takes them, serialized and checked."""
        if (
            type(value) is bytes
            and (key is None or type(key) is bytes)
            and not headers
            and self._value_serializer is None
        ):
            return key, value, None  # plain bytes and no headers: nothing to check
        rec = prepare_record(
            value,
            key,
            headers,
            key_serializer=self._key_serializer,
            value_serializer=self._value_serializer,
            owner=f"{self._NAME}.send",
        )
        return rec.key, rec.value, rec.headers

    def _columns(self, records: Any) -> tuple[list[bytes | None], list[bytes | None] | None]:
        """``send_many`` input as serialized, checked ``(values, keys)`` columns."""
        owner = f"{self._NAME}.send_many"
        values, keys = to_columns(records, owner)
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

    @staticmethod
    def _chunks(
        values: list[bytes | None], keys: list[bytes | None] | None
    ) -> Iterator[tuple[list[bytes | None], list[bytes | None] | None]]:
        """Bounded slices for ``append_many``."""
        for start in range(0, len(values), CHUNK):
            yield (
                values[start : start + CHUNK],
                None if keys is None else keys[start : start + CHUNK],
            )

    def _exhausted(self, what: str) -> BufferExhaustedError:
        return BufferExhaustedError(
            f"{self._NAME}.{what}: buffer_memory={self.config.buffer_memory} stayed full for "
            f"max_block_ms={self.config.max_block_ms}; the brokers take records slower than "
            "they are sent"
        )

    # -- events -----------------------------------------------------------------
    def _on_event(self, event: object) -> None:
        if isinstance(event, BatchCompleted):
            fan_out(event, _fill)
        elif isinstance(event, BufferFreed):
            self._room_freed()
        elif isinstance(event, OperationCompleted):
            done = self._ops.pop(event.handle, None)
            if done is not None:
                done(None, event.error)

    def _room_freed(self) -> None:
        """On the loop: the core has buffer room again."""
        raise NotImplementedError

    # -- operations -------------------------------------------------------------
    @staticmethod
    def _operation_command(
        what: str, *args: Any
    ) -> Callable[[ProducerCore, float], Operation[Any] | None]:
        """``flush`` or a transaction call of the core, by name."""
        return lambda core, now: getattr(core, what)(*args, now=now)

    def _expect(self, handle: Operation[Any] | None, done: Completion) -> None:
        """``done`` gets the outcome of ``handle`` (None: a call that finished at once)."""
        if handle is None:
            done(None, None)
        elif handle.done:
            done(None, handle.error)
        else:
            self._ops[handle] = done

    def _fail_ops(self, error: BaseException) -> None:
        ops, self._ops = self._ops, {}
        for done in ops.values():
            done(None, error)


def _fill(token: Any, value: Any, error: BaseException | None) -> None:
    # Every Delivery's fill() already ignores a token that is done (cancelled
    # by the user): checking here too took a second lock per record.
    token.fill(value, error)


def fail_token(token: Any, error: BaseException) -> None:
    """A record (or a ``send_many`` chunk) that never reached the core failed."""
    if isinstance(token, ManyResult):
        token._add(-1, -1, token.expected - token.count - token.failed, error)
    else:
        _fill(token, None, error)
