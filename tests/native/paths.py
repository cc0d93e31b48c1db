"""The two record paths side by side, and how to compare what they do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkacore.errors import DecodeError
from kafkacore.records import RecordBatch
from kafkacore.records import _native as native
from kafkacore.records.builder import NativeRecordBatchBuilder, PyRecordBatchBuilder

__all__ = [
    "NativeBatch",
    "NativeRecordBatchBuilder",
    "PureBatch",
    "PyRecordBatchBuilder",
    "native",
    "outcome",
    "same_error",
]


class PureBatch(RecordBatch):
    """RecordBatch decoded by the pure-Python loops."""

    __slots__ = ()
    _compiled = False


class NativeBatch(RecordBatch):
    """RecordBatch decoded by the compiled extension."""

    __slots__ = ()
    _compiled = True


def _describe(exc: BaseException) -> tuple[Any, ...]:
    if isinstance(exc, DecodeError):
        return (type(exc), exc.api, exc.field, exc.offset, exc.reason)
    return (type(exc), str(exc))


def outcome(fn: Callable[[], Any]) -> tuple[Any, ...]:
    """("ok", value) or ("error", description) of ``fn()``."""
    try:
        return ("ok", fn())
    except Exception as exc:
        return ("error", _describe(exc))


def iterate(batch: RecordBatch) -> tuple[list[Any], tuple[Any, ...] | None]:
    """The records an iterator yields before it stops, and the error it stops with."""
    got: list[Any] = []
    try:
        for record in batch:
            got.append(record)
    except Exception as exc:
        return got, _describe(exc)
    return got, None


def _library_detail_stripped(description: tuple[Any, ...]) -> tuple[Any, ...]:
    # "corrupt <codec> stream (<the library's words>)": the words are zlib's,
    # zlib-rs's, liblz4's... and differ between the two paths; the rest must not.
    if len(description) == 5 and isinstance(description[4], str):
        reason = description[4]
        if reason.startswith("corrupt ") and " stream (" in reason:
            return (*description[:4], reason.split(" (", 1)[0])
    return description


def same_error(a: tuple[Any, ...] | None, b: tuple[Any, ...] | None) -> bool:
    """Equal, once a codec library's own wording is set aside."""
    if a is None or b is None:
        return a is b
    return _library_detail_stripped(a) == _library_detail_stripped(b)


__all__ += ["iterate"]
