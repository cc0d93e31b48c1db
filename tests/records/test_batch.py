"""Record batch v2: round trips, header fields, control batches, peers' bytes."""

from __future__ import annotations

import struct

import pytest
from aiokafka.record import default_records as aio_records  # type: ignore[import-untyped]
from hypothesis import given
from hypothesis import strategies as st
from kafka.record import default_records as kp_records  # type: ignore[import-untyped]

from kafkacore.errors import LocalProtocolError
from kafkacore.records import (
    BuilderState,
    Compression,
    ControlRecordType,
    Record,
    RecordBatch,
    RecordBatchBuilder,
    TimestampType,
    control_batch,
    estimate_record_size,
    iter_batches,
)
from kafkacore.records._varint import read_zigzag, zigzag_bytes

from .strategies import build, codecs, records


def _expected(
    recs: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]],
) -> list[Record]:
    return [Record(i, ts, k, v, tuple(h)) for i, (k, v, h, ts) in enumerate(recs)]


@given(recs=records, codec=codecs)
def test_round_trip_every_codec(recs, codec) -> None:  # type: ignore[no-untyped-def]
    data = build(recs, codec)
    batch = RecordBatch(data)
    assert batch.size_in_bytes == len(data)
    assert batch.crc_valid()
    assert batch.compression is codec
    assert batch.record_count == len(recs)
    assert batch.last_offset_delta == len(recs) - 1
    assert batch.base_timestamp == recs[0][3]
    assert batch.max_timestamp == max(r[3] for r in recs)
    want = _expected(recs)
    assert list(batch) == want
    assert batch.records() == want
    cols = batch.columns()
    assert list(cols.offsets) == [r.offset for r in want]
    assert list(cols.timestamps) == [r.timestamp for r in want]
    assert cols.keys == [r.key for r in want]
    assert cols.values == [r.value for r in want]
    assert cols.headers == [r.headers for r in want]


@given(recs=records, codec=codecs, split=st.integers(min_value=0, max_value=40))
def test_append_many_matches_append(recs, codec, split) -> None:  # type: ignore[no-untyped-def]
    one = build(recs, codec)
    many = RecordBatchBuilder(compression=codec)
    head, tail = recs[:split], recs[split:]
    for part in (head, tail):
        if part:
            many.append_many(
                [r[1] for r in part],
                [r[0] for r in part],
                timestamps=[r[3] for r in part],
                headers=[r[2] for r in part],
            )
    assert many.build() == one


def test_append_many_defaults_and_scalar_timestamp() -> None:
    builder = RecordBatchBuilder()
    assert builder.append_many([b"a", None, bytearray(b"c"), memoryview(b"dd")], timestamps=7) == 4
    got = RecordBatch(builder.build()).records()
    assert got == [
        Record(0, 7, None, b"a", ()),
        Record(1, 7, None, None, ()),
        Record(2, 7, None, b"c", ()),
        Record(3, 7, None, b"dd", ()),
    ]


def test_append_many_rejects_bad_columns_and_leaves_builder_intact() -> None:
    builder = RecordBatchBuilder()
    builder.append(b"first", timestamp=1)
    size = builder.size_in_bytes
    with pytest.raises(ValueError, match="keys for 2 values"):
        builder.append_many([b"a", b"b"], [b"k"], timestamps=1)
    with pytest.raises(TypeError, match="must be bytes"):
        builder.append_many([b"a", "text"], timestamps=1)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="timestamps must be ints"):
        builder.append_many([b"a", b"b"], timestamps=[1, 2.5])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="timestamps for 2 values"):
        builder.append_many([b"a", b"b"], timestamps=[1])
    with pytest.raises(TypeError, match="header key must be str"):
        builder.append_many([b"a"], timestamps=1, headers=[[(b"k", b"v")]])  # type: ignore[list-item]
    assert builder.size_in_bytes == size
    assert builder.record_count == 1
    assert RecordBatch(builder.build()).records() == [Record(0, 1, None, b"first", ())]


def test_builder_state_machine() -> None:
    assert RecordBatchBuilder().state is BuilderState.OPEN
    builder = RecordBatchBuilder()
    builder.append(b"v", timestamp=0)
    data = builder.build()
    assert builder.state is BuilderState.BUILT
    assert builder.build() is data
    assert not builder.has_room_for(None, b"x")
    with pytest.raises(LocalProtocolError, match="is built"):
        builder.append(b"more", timestamp=0)
    with pytest.raises(LocalProtocolError, match="is built"):
        builder.append_many([b"more"], timestamps=0)


def test_builder_rejects_bad_arguments() -> None:
    with pytest.raises(LocalProtocolError, match="transactional batch needs a producer_id"):
        RecordBatchBuilder(transactional=True)
    with pytest.raises(ValueError, match="batch_size"):
        RecordBatchBuilder(batch_size=0)
    builder = RecordBatchBuilder()
    with pytest.raises(TypeError, match="timestamp must be an int64"):
        builder.append(b"v", timestamp=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="timestamp must be an int64"):
        builder.append(b"v", timestamp=2**63)
    with pytest.raises(TypeError, match="record key must be bytes"):
        builder.append(b"v", "key", timestamp=0)  # type: ignore[arg-type]
    builder.append(b"v", timestamp=-(2**63))
    with pytest.raises(ValueError, match="too far from the batch base timestamp"):
        builder.append(b"v", timestamp=2**63 - 1)


def test_has_room_for_follows_batch_size() -> None:
    builder = RecordBatchBuilder(batch_size=200)
    assert builder.has_room_for(None, b"x" * 1000)  # the first record always fits
    builder.append(b"x" * 100, timestamp=0)
    assert builder.size_in_bytes == 61 + len(zigzag_bytes(107)) + 107
    assert not builder.has_room_for(None, b"x" * 100)
    assert not builder.has_room_for(None, b"x" * 24)
    assert builder.has_room_for(None, b"x" * 23, timestamp=0)  # 170 + 30 bytes
    assert not builder.has_room_for(None, b"x" * 23)  # worst-case timestamp delta
    assert estimate_record_size(-1, 10, [("h", b"v")]) >= len(zigzag_bytes(30)) + 30


def test_header_fields_and_producer_state() -> None:
    builder = RecordBatchBuilder(
        compression=Compression.ZSTD,
        producer_id=123456789,
        producer_epoch=7,
        base_sequence=2**31 - 2,
        transactional=True,
        base_offset=1000,
        partition_leader_epoch=9,
    )
    builder.append_many([b"a", b"b", b"c"], timestamps=[5, 3, 9])
    batch = RecordBatch(builder.build())
    assert (batch.base_offset, batch.last_offset, batch.next_offset) == (1000, 1002, 1003)
    assert batch.partition_leader_epoch == 9
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
        123456789,
        7,
        2**31 - 2,
    )
    assert batch.last_sequence == 0  # wraps at 2**31 - 1 to 0
    assert batch.is_transactional and not batch.is_control and not batch.has_delete_horizon
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert [r.offset for r in batch] == [1000, 1001, 1002]
    assert "zstd" in repr(batch) and "txn" in repr(batch)


def test_log_append_time_overrides_record_timestamps() -> None:
    builder = RecordBatchBuilder(log_append_time=99999)
    builder.append_many([b"a", b"b"], timestamps=[5, 6])
    batch = RecordBatch(builder.build())
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == 99999
    assert [r.timestamp for r in batch] == [99999, 99999]
    assert list(batch.columns().timestamps) == [99999, 99999]


def test_partition_leader_epoch_is_outside_the_crc() -> None:
    data = bytearray(build([(b"k", b"v", [], 1)]))
    struct.pack_into(">i", data, 12, 42)  # the broker rewrites it in place
    batch = RecordBatch(data)
    assert batch.partition_leader_epoch == 42
    assert batch.crc_valid()


def test_empty_batch_from_compaction_is_legal() -> None:
    data = RecordBatchBuilder(base_offset=50).build()
    batch = RecordBatch(data)
    assert batch.record_count == 0
    assert list(batch) == []
    assert len(batch.columns()) == 0
    assert batch.next_offset == 50


@pytest.mark.parametrize(
    ("kind", "commit"), [(ControlRecordType.COMMIT, True), (ControlRecordType.ABORT, False)]
)
def test_transaction_markers(kind: ControlRecordType, commit: bool) -> None:
    data = control_batch(
        kind, producer_id=77, producer_epoch=3, timestamp=1234, coordinator_epoch=5, base_offset=10
    )
    batch = RecordBatch(data)
    assert batch.is_control and batch.is_transactional
    assert batch.base_sequence == -1
    marker = batch.control_record()
    assert marker.type is kind
    assert marker.is_transaction_marker
    assert (marker.version, marker.coordinator_epoch, marker.offset, marker.timestamp) == (
        0,
        5,
        10,
        1234,
    )
    (record,) = list(batch)
    assert record.key == struct.pack(">hh", 0, 1 if commit else 0)
    assert record.value == struct.pack(">hi", 0, 5)


def test_unknown_control_types_are_kept_as_ints() -> None:
    data = control_batch(42, producer_id=1, producer_epoch=0, timestamp=0, value=b"whatever")
    marker = RecordBatch(data).control_record()
    assert marker.type == 42 and not isinstance(marker.type, ControlRecordType)
    assert marker.coordinator_epoch is None
    assert not marker.is_transaction_marker


def test_varint_vectors_from_notes() -> None:
    # NOTES.md c.1: zigzag examples.
    vectors = {0: "00", -1: "01", 1: "02", -2: "03", 63: "7e", -64: "7f", 64: "8001", 300: "d804"}
    for value, hexed in vectors.items():
        assert zigzag_bytes(value).hex() == hexed
        assert read_zigzag(bytes.fromhex(hexed), 0, 5) == (value, len(hexed) // 2)
    assert read_zigzag(zigzag_bytes(-(2**63)), 0, 10)[0] == -(2**63)
    with pytest.raises(ValueError, match="longer than 5"):
        read_zigzag(b"\x80\x80\x80\x80\x80\x01", 0, 5)
    with pytest.raises(ValueError, match="out of range"):
        read_zigzag(b"\xff\xff\xff\xff\x7f", 0, 5)
    with pytest.raises(ValueError, match="signed 64-bit"):
        zigzag_bytes(2**63)


# ---- byte-exact agreement with the peer clients' encoders ----------------


def _peer_build(builder_cls: type, codec: int) -> bytes:
    builder = builder_cls(
        magic=2,
        compression_type=codec,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=10**6,
    )
    builder.append(
        0,
        timestamp=1700000000000,
        key=b"key-0",
        value=b"v" * 100,
        headers=[("h1", b"x"), ("h2", None)],
    )
    builder.append(1, timestamp=1700000000005, key=None, value=b"w" * 300, headers=[])
    builder.append(2, timestamp=1699999999999, key=b"k", value=None, headers=[])
    return bytes(builder.build())


def _our_build(codec: Compression, partition_leader_epoch: int = -1) -> bytes:
    builder = RecordBatchBuilder(compression=codec, partition_leader_epoch=partition_leader_epoch)
    builder.append(
        b"v" * 100, b"key-0", timestamp=1700000000000, headers=[("h1", b"x"), ("h2", None)]
    )
    builder.append(b"w" * 300, None, timestamp=1700000000005)
    builder.append(None, b"k", timestamp=1699999999999)
    return builder.build()


def test_uncompressed_bytes_equal_kafka_python_and_aiokafka() -> None:
    assert _peer_build(aio_records.DefaultRecordBatchBuilder, 0) == _our_build(Compression.NONE)
    # kafka-python writes partitionLeaderEpoch 0 where the Java producer writes -1;
    # the field is outside the CRC and the broker overwrites it anyway.
    assert _peer_build(kp_records.DefaultRecordBatchBuilder, 0) == _our_build(
        Compression.NONE, partition_leader_epoch=0
    )


@pytest.mark.parametrize("codec", list(Compression))
def test_peers_read_our_batches_and_we_read_theirs(codec: Compression) -> None:
    AioBatch = aio_records.DefaultRecordBatch
    AioBuilder = aio_records.DefaultRecordBatchBuilder

    ours = _our_build(codec)
    theirs = [
        (r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers])
        for r in AioBatch(ours)
    ]
    mine = [
        (r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers])
        for r in RecordBatch(ours)
    ]
    assert theirs == mine
    peer = _peer_build(AioBuilder, int(codec))
    assert RecordBatch(peer).records() == RecordBatch(ours).records()


def test_rejected_append_leaves_no_trace() -> None:
    builder = RecordBatchBuilder()
    builder.append(b"a", timestamp=10)
    with pytest.raises(TypeError, match="header key must be str"):
        builder.append(b"b", timestamp=99, headers=[(b"k", b"v")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="record value must be bytes"):
        builder.append(42, timestamp=99)  # type: ignore[arg-type]
    batch = RecordBatch(builder.build())
    assert batch.max_timestamp == 10
    assert batch.records() == [Record(0, 10, None, b"a", ())]


def test_crc32c_agrees_with_an_independent_implementation() -> None:
    # The active one: the extension's crate, or the pure-Python table (KAFKACORE_PURE=1).
    import crc32c as package

    from kafkacore.records import crc32c

    assert crc32c(b"123456789") == 0xE3069283  # NOTES.md c.8 check value
    data = bytes(range(256)) * 100
    assert crc32c(data) == package.crc32c(data)
    assert crc32c(data[100:], crc32c(data[:100])) == package.crc32c(data)


def test_control_record_on_a_data_batch_is_caller_error() -> None:
    batch = RecordBatch(build([(None, b"v", [], 0)]))
    with pytest.raises(LocalProtocolError, match="check is_control first"):
        batch.control_record()


def test_signed_byte_memoryviews_are_read_as_bytes() -> None:
    data = build([(b"k", b"v" * 200, [("h", b"\xff")], 5)])
    view = memoryview(bytearray(data)).cast("b")  # signed char items
    (batch,) = iter_batches(view)
    assert batch.records() == [Record(0, 5, b"k", b"v" * 200, (("h", b"\xff"),))]


def test_the_active_path_is_the_one_the_environment_asks_for() -> None:
    # The suite runs these tests twice: compiled, then KAFKACORE_PURE=1 (tests/native).
    import os

    from kafkacore.records import _backend

    pure = os.environ.get("KAFKACORE_PURE", "").strip() not in ("", "0")
    assert ("python" if pure else "native") == _backend.IMPLEMENTATION
    assert RecordBatch._compiled is (not pure)


def test_a_negative_decompression_cap_is_caller_error() -> None:
    with pytest.raises(ValueError, match="max_decompressed_size must be >= 0"):
        RecordBatch(build([(None, b"v", [], 0)]), max_decompressed_size=-1)
