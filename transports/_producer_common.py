"""What the three producer transports share: options, record checks, result fan-out.

Theory of operation
-------------------
A transport producer builds one :class:`~kafkacore.producer.ProducerCore`
(over a :class:`~kafkacore.client.KafkaClientCore` made from the same
options as the client transports) and drives it with the usual
:class:`~transports._bridge.Bridge`. Records cross into the core with a
*token*: the transport's own future for ``send``, a :class:`ManyResult`
for ``send_many``. When the core reports a batch,
:func:`fan_out` turns it into per-record
:class:`~kafkacore.producer.RecordMetadata` (or the error) and hands each
token to the transport's ``resolve``; many-record tokens just count.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kafkacore.client import KafkaClientCore
from kafkacore.producer import BatchCompleted, ProducerConfig, ProducerCore, RecordMetadata
from kafkacore.producer.config import split_options

from ._common import Parts, make_parts
from ._sockets import Address

__all__ = ["ManyResult", "ProducerParts", "fan_out", "make_producer_parts", "now_ms", "to_columns"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerParts:
    config: ProducerConfig
    parts: Parts

    def build_core(self, now: float) -> ProducerCore:
        client = KafkaClientCore(self.parts.config, now=now, rng=self.parts.rng)
        return ProducerCore(self.config, now=now, rng=self.parts.rng, client=client)


def make_producer_parts(
    owner: str,
    bootstrap_servers: str | Sequence[str] | None,
    *,
    source_address: Address | None,
    ssl_server_hostname: str | None,
    rng: random.Random | None,
    options: dict[str, Any],
) -> ProducerParts:
    config = split_options(owner, options)
    parts = make_parts(
        owner,
        bootstrap_servers,
        source_address=source_address,
        ssl_server_hostname=ssl_server_hostname,
        rng=rng,
        options=dict(config.client),
    )
    return ProducerParts(config=config, parts=parts)


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
