"""Record batches (magic 2), legacy message sets (magic 0/1) and their compression.

Reading::

    for batch in iter_batches(fetched_records):       # zero-copy slices
        if batch.is_control:
            marker = batch.control_record()            # COMMIT / ABORT
            continue
        for record in batch:                            # lazy, one at a time
            ...
        cols = batch.columns()                          # or all at once, columnar

Writing::

    builder = RecordBatchBuilder(compression=Compression.LZ4, producer_id=pid, ...)
    builder.append(b"value", b"key", timestamp=ts, headers=[("h", b"v")])
    builder.append_many(values, keys, timestamps=ts)
    data = builder.build()

Every decoding failure is a :class:`~kafkacore.errors.DecodeError`; checksum
mismatches are its subclass :class:`CorruptRecordError`. See docs/records.md.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkacore.records._crc import crc32c
    from kafkacore.records.batch import RECORD_BATCH_OVERHEAD, RecordBatch
    from kafkacore.records.builder import (
        BuilderState,
        RecordBatchBuilder,
        control_batch,
        estimate_record_size,
    )
    from kafkacore.records.compression import (
        DEFAULT_MAX_DECOMPRESSED_SIZE,
        Compression,
        compress,
        decompress,
    )
    from kafkacore.records.legacy import LegacyBatch
    from kafkacore.records.model import (
        ControlRecord,
        ControlRecordType,
        CorruptRecordError,
        Header,
        Record,
        RecordColumns,
        TimestampType,
    )
    from kafkacore.records.reader import iter_batches, trailing_partial_bytes

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "RECORD_BATCH_OVERHEAD",
    "BuilderState",
    "Compression",
    "ControlRecord",
    "ControlRecordType",
    "CorruptRecordError",
    "Header",
    "LegacyBatch",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "RecordColumns",
    "TimestampType",
    "compress",
    "control_batch",
    "crc32c",
    "decompress",
    "estimate_record_size",
    "iter_batches",
    "trailing_partial_bytes",
]

# Each name is imported from its module on first use (PEP 562): a producer
# loads the builder and the codecs, not the reader, the legacy formats or
# the Arrow buffers; a consumer the reverse.
_WHERE: dict[str, str] = {
    "crc32c": "_crc",
    **dict.fromkeys(("RECORD_BATCH_OVERHEAD", "RecordBatch"), "batch"),
    **dict.fromkeys(
        ("BuilderState", "RecordBatchBuilder", "control_batch", "estimate_record_size"), "builder"
    ),
    **dict.fromkeys(
        ("DEFAULT_MAX_DECOMPRESSED_SIZE", "Compression", "compress", "decompress"), "compression"
    ),
    "LegacyBatch": "legacy",
    **dict.fromkeys(
        (
            "ControlRecord",
            "ControlRecordType",
            "CorruptRecordError",
            "Header",
            "Record",
            "RecordColumns",
            "TimestampType",
        ),
        "model",
    ),
    **dict.fromkeys(("iter_batches", "trailing_partial_bytes"), "reader"),
}

if not TYPE_CHECKING:  # type checkers read the imports at the top

    def __getattr__(name: str) -> Any:
        where = _WHERE.get(name)
        if where is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"kafkacore.records.{where}"), name)
        globals()[name] = value  # later lookups skip this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_WHERE})
