"""The producer's completions: a finished batch resolves its records' tokens.

Theory of operation
-------------------
Every record handed to the producer core carries a token that comes back
exactly once in a :class:`~kafkacore.producer.BatchCompleted`.
:func:`fan_out` resolves the tokens of one batch: a
:class:`~kafkacore.transports._producer_future.RecordFuture` gets the event and its
index (two attribute stores), a :class:`ManyResult` (one ``send_many``) a
count per run of its records, an ``on_delivery`` callable
``(metadata, error)``. :func:`fail_token` fails a token that never reached
the core.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafkacore.producer import BatchCompleted, RecordMetadata

from ._producer_future import RecordFuture, failed_outcome

__all__ = ["ManyResult", "OnDelivery", "fail_token", "fan_out"]

_log = logging.getLogger("kafkacore.producer")

#: ``send(..., on_delivery=fn)``: ``fn(metadata, error)`` once the record is done.
OnDelivery = Callable[[RecordMetadata | None, BaseException | None], object]


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


def fan_out(event: BatchCompleted) -> None:
    """Resolve every token of one completed batch; see the module docstring.

    A :class:`RecordFuture` gets the event and its index (two attribute
    stores; its RecordMetadata is made when asked for), a
    :class:`ManyResult` a count per run of its records, an ``on_delivery``
    callable ``(metadata, error)``.
    """
    tokens = event.tokens
    first = tokens[0] if tokens else None
    if (
        type(first) is ManyResult
        and first is tokens[-1]
        # Another thread's send may have joined the batch between two chunks.
        and tokens.count(first) == len(tokens)
    ):
        first._add(event.partition, event.base_offset, len(tokens), event.error)
        return
    run_token: Any = None
    run_start = 0
    for i, token in enumerate(tokens):
        if type(token) is RecordFuture:
            if run_token is not None:
                _add_run(run_token, event, run_start, i)
                run_token = None
            token._index = i
            token._outcome = event
            if token._callbacks is not None:
                token._run_callbacks()
        elif type(token) is ManyResult:
            if token is not run_token:
                if run_token is not None:
                    _add_run(run_token, event, run_start, i)
                run_token, run_start = token, i
        else:
            if run_token is not None:
                _add_run(run_token, event, run_start, i)
                run_token = None
            if token is not None:
                _deliver(token, event, i)
    if run_token is not None:
        _add_run(run_token, event, run_start, len(tokens))


def _add_run(result: ManyResult, event: BatchCompleted, start: int, end: int) -> None:
    base = event.base_offset
    result._add(event.partition, base + start if base >= 0 else -1, end - start, event.error)


def _deliver(token: Any, event: BatchCompleted, i: int) -> None:
    """An ``on_delivery`` callback (or another idiom's one-shot with ``fill``)."""
    error = event.error
    md = None
    if error is None:
        base = event.base_offset
        lat = event.log_append_time
        md = RecordMetadata(
            event.topic,
            event.partition,
            base + i if base >= 0 else -1,
            lat if lat >= 0 else event.timestamps[i],
        )
    fill = getattr(token, "fill", None)
    try:
        if fill is not None:
            fill(md, error)
        else:
            token(md, error)
    except Exception:
        _log.exception("producer: the on_delivery callback %r raised", token)


def fail_token(token: Any, error: BaseException) -> None:
    """A record (or a ``send_many`` chunk) that never reached the core failed."""
    if type(token) is ManyResult:
        token._add(-1, -1, token.expected - token.count - token.failed, error)
    elif type(token) is RecordFuture:
        if token._outcome is None:
            token._outcome = failed_outcome(error)
            if token._callbacks is not None:
                token._run_callbacks()
    elif token is not None:
        _deliver(
            token,
            BatchCompleted(
                topic="",
                partition=-1,
                base_offset=-1,
                log_append_time=-1,
                tokens=[token],
                timestamps=[-1],
                error=error,
            ),
            0,
        )
