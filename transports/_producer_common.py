"""What every producer does, whatever its I/O idiom: the producer's sans-IO surface.

Theory of operation
-------------------
A transport producer builds one :class:`~kafkacore.producer.ProducerCore`
(over a :class:`~kafkacore.client.KafkaClientCore` made from the same
options as the clients) and drives it with its transport's driver. The
three producers (blocking, asyncio, trio) differ in how a record reaches
the core (under the core lock in the caller's thread; a direct call on
the loop) and in how a caller waits; everything else is written here once, in
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
from typing import TYPE_CHECKING, Any, Protocol

from kafkacore.client import KafkaClientCore
from kafkacore.errors import KafkaTimeoutError
from kafkacore.producer import (
    BatchCompleted,
    BufferExhaustedError,
    BufferFreed,
    Operation,
    OperationCompleted,
    ProducerCore,
    prepare_record,
)
from kafkacore.producer.serde import Serializer, check_bytes
from kafkacore.serde import SerdeObject, as_serde

from ._common import Role, make_parts
from ._producer_fanout import ManyResult, OnDelivery, fail_token, fan_out
from ._producer_inputs import peer_options, to_columns
from ._router import Completion
from ._sockets import Address
from ._unclosed import WarnsUnclosed

if TYPE_CHECKING:
    # Types only: importing it runs the consumer package, which a producer
    # never needs (a transactional one gets the consumer's metadata from it).
    from kafkacore.consumer import ConsumerGroupMetadata
    from kafkacore.consumer.offset_args import OffsetsArg

__all__ = [
    "BlockingOperations",
    "ManyResult",
    "OnDelivery",
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


class ProducerSurface(WarnsUnclosed):
    """The I/O-free half of every producer; see the module docstring."""

    _NAME = "Producer"  # the public class name, for messages

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] | None = "localhost:9092",
        *,
        key_serializer: Serializer | Any | None = None,
        value_serializer: Serializer | Any | None = None,
        source_address: Address | None = None,
        ssl_server_hostname: str | None = None,
        rng: random.Random | None = None,
        **options: Any,
    ) -> None:
        """Options as ``ProducerConfig`` + ``ClientConfig`` (split by ``kafkacore.options``),
        plus kafka-python's and aiokafka's producer keywords (:func:`peer_options`)."""
        options, self._metrics_enabled = peer_options(self._NAME, options)
        self._records_sent = 0
        self._records_failed = 0
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
        self._key_serializer = as_serde(key_serializer, "key_serializer", self._NAME, "serialize")
        self._value_serializer = as_serde(
            value_serializer, "value_serializer", self._NAME, "serialize"
        )
        self._ops: dict[Operation[Any], Completion] = {}
        self._setup()

    def _setup(self) -> None:
        """Build the idiom's driver (and, when it starts at once, the core)."""
        raise NotImplementedError

    def _close_serializers(self) -> None:
        """Close serializer objects that have ``close()``, as kafka-python's close does."""
        for serde in (self._key_serializer, self._value_serializer):
            if isinstance(serde, SerdeObject) and serde.close is not None:
                serde.close()

    def _build_core(self, now: float) -> ProducerCore:
        parts = self._parts
        client = KafkaClientCore(parts.config, now=now, rng=parts.rng)
        return ProducerCore(self.config, now=now, rng=parts.rng, client=client)

    # -- records ----------------------------------------------------------------
    def _prepare(
        self, topic: str, value: Any, key: Any, headers: Iterable[tuple[str, Any]] | None
    ) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]:
        """``(key, value, headers)`` as the core takes them, serialized and checked."""
        if (
            type(value) is bytes
            and (key is None or type(key) is bytes)
            and not headers
            and self._value_serializer is None
            and self._key_serializer is None
        ):
            return key, value, None  # plain bytes and no headers: nothing to check
        rec = prepare_record(
            value,
            key,
            headers,
            key_serializer=self._key_serializer,
            value_serializer=self._value_serializer,
            owner=f"{self._NAME}.send",
            topic=topic,
        )
        return rec.key, rec.value, rec.headers

    def _columns(
        self, topic: str, records: Any, keys: Any = None, values: Any = None
    ) -> tuple[list[bytes | None], list[bytes | None] | None]:
        """``send_many`` input (see :func:`to_columns`) as serialized, checked columns."""
        owner = f"{self._NAME}.send_many"
        vals, ks = to_columns(records, keys, values, owner)
        vs, kser = self._value_serializer, self._key_serializer
        if isinstance(vs, SerdeObject):
            vals = [vs(topic, None, v) for v in vals]
        elif vs is not None:
            vals = [vs(v) for v in vals]
        if isinstance(kser, SerdeObject) and ks is not None:
            ks = [None if k is None else kser(topic, None, k) for k in ks]
        elif kser is not None and ks is not None:
            ks = [None if k is None else kser(k) for k in ks]
        if not set(map(type, vals)) <= {bytes, type(None)}:
            vals = [check_bytes(v, "value", owner) for v in vals]
        if ks is not None:
            if all(k is None for k in ks):
                ks = None
            elif not set(map(type, ks)) <= {bytes, type(None)}:
                ks = [check_bytes(k, "key", owner) for k in ks]
        return vals, ks

    def _timestamp(self, timestamp_ms: int | None, timestamp: int | None) -> int:
        """The record's timestamp: ``timestamp_ms`` or ``timestamp`` (ms); now if neither."""
        if timestamp_ms is not None and timestamp is not None and timestamp_ms != timestamp:
            raise TypeError(
                f"{self._NAME}.send: timestamp_ms={timestamp_ms} and timestamp={timestamp}; "
                "both are milliseconds, give one"
            )
        if timestamp_ms is not None:
            return timestamp_ms
        return now_ms() if timestamp is None else timestamp

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

    # -- queries (kafka-python / aiokafka names) ---------------------------------
    def _known_partitions(self, core: ProducerCore, topic: str, now: float) -> set[int] | None:
        """``topic``'s partition ids, or None after asking metadata for them."""
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"{self._NAME}.partitions_for: topic must be a non-empty str")
        client = core.client
        parts = client.cluster.partitions_for_topic(topic)
        if parts:
            return parts
        if topic not in client.topics:
            client.add_topic(topic, now=now)
        else:
            # Known to metadata without partitions (being auto-created, or not
            # there yet): ask again; the client's retry backoff spaces the asks.
            client.request_metadata_update(now=now)
        return None

    def _no_partitions(self, topic: str) -> KafkaTimeoutError:
        return KafkaTimeoutError(
            f"{self._NAME}.partitions_for: no metadata for topic {topic!r} within "
            f"max_block_ms={self.config.max_block_ms}; does it exist?"
        )

    @staticmethod
    def _connected(core: ProducerCore) -> bool:
        """kafka-python's ``bootstrap_connected()``: a bootstrap connection, or one to a
        broker the metadata named (kafkacore closes the bootstrap one after), is ready."""
        client = core.client
        if client.bootstrap_connected():
            return True
        return any(client.connected(b.node_id) for b in client.cluster.brokers())

    def _metrics_of(self, core: ProducerCore) -> dict[str, dict[str, float]]:
        """kafka-python's ``metrics()`` shape, ``{group: {name: value}}``: counters."""
        if not self._metrics_enabled:
            return {}
        m = core.client.metrics()
        return {
            "producer-metrics": {
                "record-send-total": self._records_sent,
                "record-error-total": self._records_failed,
                "request-total": m.requests_sent,
                "response-total": m.responses_received,
                "outgoing-byte-total": m.bytes_sent,
                "incoming-byte-total": m.bytes_received,
                "connection-creation-total": m.connections_opened,
                "connection-close-total": m.connections_closed,
                "buffer-total-bytes": self.config.buffer_memory,
                "buffer-available-bytes": core.buffer_available,
            }
        }

    # -- events -----------------------------------------------------------------
    def _on_event(self, event: object) -> None:
        if isinstance(event, BatchCompleted):
            fan_out(event)
            if event.error is None:
                self._records_sent += len(event.tokens)
            else:
                self._records_failed += len(event.tokens)
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


class BlockingOperations:
    """``flush`` and the transaction calls of a blocking producer, over its ``_operation``."""

    def _operation(self, what: str, timeout: float | None, *args: Any) -> None:
        raise NotImplementedError

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until each record is done."""
        self._operation("flush", timeout)

    def init_transactions(self, timeout: float | None = None) -> None:
        self._operation("init_transactions", timeout)

    def begin_transaction(self) -> None:
        self._operation("begin_transaction", None)

    def send_offsets_to_transaction(
        self,
        offsets: OffsetsArg,
        group_id: str | ConsumerGroupMetadata,
        timeout: float | None = None,
    ) -> None:
        self._operation("send_offsets_to_transaction", timeout, offsets, group_id)

    def commit_transaction(self, timeout: float | None = None) -> None:
        self._operation("commit_transaction", timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        self._operation("abort_transaction", timeout)
