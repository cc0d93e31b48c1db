"""Compression codecs of record batches: gzip, snappy, lz4 and zstd.

Theory of operation
-------------------
A compressed batch carries its records section as one compressed stream; the
codec id sits in bits 0-2 of the batch attributes. :func:`compress` writes the
framing the Java producer writes and :func:`decompress` reads every framing a
real producer is known to write:

* gzip: RFC 1952 stream(s) via :mod:`zlib` (not :mod:`gzip`, which imports
  ``time``). Concatenated members are read, as ``GZIPInputStream`` does.
* snappy: the Java client always writes snappy-java's "xerial" stream
  (16-byte header, then ``[int32 BE length][raw snappy block]`` chunks).
  Readers must also accept one raw snappy block without that header, which
  snappy-java falls back to and some non-Java producers write.
* lz4: the LZ4 *frame* format with independent 64 KiB blocks (Java's reader
  refuses linked blocks). KAFKA-3160 / KIP-57: magic-0 messages were written
  with a header checksum computed over the wrong bytes, so for magic 0 the
  checksum byte is recomputed before decoding, which is what ignoring it in
  Java amounts to.
* zstd: standard zstd frame(s); concatenated frames are read.

Every decompressor is BOUNDED: it never produces more than ``max_size``
bytes (plus a small, fixed overshoot inside the native library) and raises
:class:`~kafkacore.errors.DecodeError` instead, so a zip bomb cannot make the
client allocate without limit. Truncated or corrupt streams raise
:class:`~kafkacore.errors.DecodeError` too; nothing else escapes.

Two implementations (:mod:`kafkacore.records._backend` picks one at
import): the compiled extension (flate2 over zlib-rs, snap, liblz4, libzstd,
with the same framings, bounds and error texts, the GIL released for large
inputs) and the functions below, the reference, which call the native
codec packages (zlib, cramjam, lz4, zstandard) and parse only framing in
Python. :func:`compress` and :func:`decompress` dispatch; ``compress_py``
and ``decompress_py`` are always the pure ones.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum
from typing import TYPE_CHECKING, Final

from kafkacore.errors import DecodeError, LocalProtocolError
from kafkacore.records import _backend

# The codec packages (cramjam, lz4, zstandard: some 4 MiB of RSS together)
# serve only the pure functions below, so each is imported where one runs:
# on the compiled path a process never loads them.
if TYPE_CHECKING:
    import zstandard

if _backend.NATIVE:
    from kafkacore.records import _native

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "Compression",
    "check_level",
    "compress",
    "compress_py",
    "decompress",
    "decompress_py",
]

#: Default cap on the decompressed size of one batch's records (64 MiB):
#: larger than any batch the default ``max.message.bytes`` lets a broker keep
#: at realistic ratios, far below what a hostile stream could ask for.
DEFAULT_MAX_DECOMPRESSED_SIZE: Final = 64 * 1024 * 1024


class Compression(IntEnum):
    """Codec ids of the batch attributes (bits 0-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
# Header: magic, int32 version 1, int32 minimum compatible version 1.
_XERIAL_HEADER: Final = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
# snappy-java's default block size; Kafka keeps it.
_XERIAL_BLOCK: Final = 32 * 1024
_INT32_BE: Final = struct.Struct(">i")

_LZ4_MAGIC: Final = b"\x04\x22\x4d\x18"
_LZ4_JAVA_DEFAULT: Final = 9

# zstd contexts are costly to create (~20 us) and not safe for concurrent use.
# Pools hand each caller its own: list.pop/append are atomic, so two cores in
# two threads never share a context, and no lock (no threading) is needed.
_POOL_SIZE: Final = 4
_ZSTD_COMPRESSORS: Final[dict[int, list[zstandard.ZstdCompressor]]] = {}
_ZSTD_DECOMPRESSORS: Final[list[zstandard.ZstdDecompressor]] = []

# Largest ratio a zstd stream can reach (a 3-byte RLE block header plus one
# byte expand to a 128 KiB block): input is fed in chunks small enough that
# one chunk cannot overshoot the remaining budget by more than a block or so.
_ZSTD_WORST_RATIO_SHIFT: Final = 15
_ZSTD_MIN_CHUNK: Final = 256


# Levels each codec accepts (None is always the Java client's default).
# gzip: zlib's; lz4: Java's 1-17 (liblz4 caps HC at 12) and 0 for the fast
# compressor; zstd: libzstd's, negative levels included.
_LEVELS: Final = {
    Compression.GZIP: range(-1, 10),
    Compression.LZ4: range(18),
    Compression.ZSTD: range(-(1 << 17), 23),
}


def check_level(codec: Compression, level: int | None) -> None:
    """Raise ValueError unless ``level`` is None or a level ``codec`` accepts."""
    if level is None:
        return
    if type(level) is not int:
        raise TypeError(f"compression level must be an int or None, not {type(level).__name__}")
    allowed = _LEVELS.get(codec)
    if allowed is not None and level not in allowed:
        raise ValueError(
            f"compression level {level} is out of range for {codec.name.lower()}"
            f" ({allowed.start}..{allowed.stop - 1}, or None for the default)"
        )


def compress(
    codec: Compression, data: bytes | bytearray | memoryview, *, level: int | None = None
) -> bytes:
    """Compress ``data`` with ``codec`` in the framing the Java producer writes.

    ``level`` is the codec's level (None: the Java client's default, which for
    lz4 is the fast compressor).
    """
    if type(codec) is not Compression:
        raise LocalProtocolError(f"compress: unknown codec {codec!r}; use a Compression member")
    check_level(codec, level)
    if _backend.NATIVE:
        return _native.compress(codec.value, data, level)
    return compress_py(codec, data, level=level)


def compress_py(
    codec: Compression, data: bytes | bytearray | memoryview, *, level: int | None = None
) -> bytes:
    """:func:`compress` in pure Python over the codec packages (the reference)."""
    if codec is Compression.NONE:
        return bytes(data)
    if codec is Compression.GZIP:
        c = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec is Compression.SNAPPY:
        return _xerial_compress(data)
    if codec is Compression.LZ4:
        import lz4.frame  # type: ignore[import-untyped]  # lz4 ships no type information

        out: bytes = lz4.frame.compress(
            data,
            # Java (KIP-390) maps its default level 9 to lz4's fast compressor and
            # any other level to the HC compressor; python-lz4 level 0 is the fast one.
            compression_level=0 if level is None or level == _LZ4_JAVA_DEFAULT else level,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
        return out
    if codec is Compression.ZSTD:
        import zstandard

        lvl = 3 if level is None else level
        pool = _ZSTD_COMPRESSORS.setdefault(lvl, [])
        try:
            cctx = pool.pop()
        except IndexError:
            cctx = zstandard.ZstdCompressor(level=lvl)
        try:
            out_z: bytes = cctx.compress(data)
        finally:
            if len(pool) < _POOL_SIZE:
                pool.append(cctx)
        return out_z
    raise LocalProtocolError(f"compress: unknown codec {codec!r}; use a Compression member")


def _xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    import cramjam

    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    pack = _INT32_BE.pack
    compress_raw = cramjam.snappy.compress_raw
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(compress_raw(view[start : start + _XERIAL_BLOCK]))
        parts.append(pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def decompress(
    codec: int,
    data: bytes | bytearray | memoryview,
    *,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    magic: int = 2,
    api: str = "RecordBatch v2",
) -> bytes:
    """Decompress one compressed records section, producing at most ``max_size`` bytes.

    ``magic`` selects format quirks (KAFKA-3160 for lz4 with magic 0);
    ``api`` names the enclosing structure in errors.
    """
    if max_size < 0:
        raise ValueError(f"decompress: max_size must be >= 0, got {max_size}")
    if _backend.NATIVE and 0 <= codec < 256 and 0 <= magic < 256:
        return _native.decompress(codec, data, max_size, magic, api)
    return decompress_py(codec, data, max_size=max_size, magic=magic, api=api)


def decompress_py(
    codec: int,
    data: bytes | bytearray | memoryview,
    *,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    magic: int = 2,
    api: str = "RecordBatch v2",
) -> bytes:
    """:func:`decompress` in pure Python over the codec packages (the reference)."""
    field = "records"
    try:
        if codec == Compression.GZIP:
            return _gunzip(data, max_size, api)
        if codec == Compression.SNAPPY:
            return _unsnappy(data, max_size, api)
        if codec == Compression.LZ4:
            return _unlz4(data, max_size, magic, api)
        if codec == Compression.ZSTD:
            return _unzstd(data, max_size, api)
    except (DecodeError, MemoryError):
        # MemoryError is the machine's state, not the stream's: the caps above keep
        # a hostile stream from causing it, so it must not pass for corruption.
        raise
    except Exception as exc:  # native libraries raise their own types; only DecodeError may escape
        name = _NAMES.get(codec, str(codec))
        raise DecodeError(f"corrupt {name} stream ({exc})", api=api, field=field) from exc
    raise DecodeError(f"unknown compression codec {codec}", api=api, field="attributes")


_NAMES: Final = {c.value: c.name.lower() for c in Compression}


def _too_big(name: str, max_size: int, api: str) -> DecodeError:
    return DecodeError(
        f"{name} stream inflates beyond max_size={max_size} bytes; "
        "raise max_decompressed_size if this batch is legitimate",
        api=api,
        field="records",
    )


def _gunzip(data: bytes | bytearray | memoryview, max_size: int, api: str) -> bytes:
    out: list[bytes] = []
    total = 0
    rest: bytes | bytearray | memoryview = data
    while True:
        d = zlib.decompressobj(31)
        chunk = d.decompress(rest, max_size - total + 1)
        total += len(chunk)
        out.append(chunk)
        if total > max_size or d.unconsumed_tail:
            raise _too_big("gzip", max_size, api)
        if not d.eof:
            raise DecodeError("truncated gzip stream", api=api, field="records")
        rest = d.unused_data
        if not rest:
            return b"".join(out)


def _unsnappy(data: bytes | bytearray | memoryview, max_size: int, api: str) -> bytes:
    view = memoryview(data)
    if bytes(view[:8]) != _XERIAL_MAGIC:
        return _raw_snappy(view, max_size, max_size, api)
    if len(view) < 16:
        raise DecodeError("truncated xerial snappy header", api=api, field="records", offset=0)
    out: list[bytes] = []
    total = 0
    pos = 16
    end = len(view)
    while pos < end:
        if pos + 4 > end:
            raise DecodeError(
                "truncated xerial snappy block length", api=api, field="records", offset=pos
            )
        (n,) = _INT32_BE.unpack_from(view, pos)
        pos += 4
        if n < 0 or pos + n > end:
            raise DecodeError(
                f"xerial snappy block length {n} exceeds stream",
                api=api,
                field="records",
                offset=pos - 4,
            )
        block = _raw_snappy(view[pos : pos + n], max_size - total, max_size, api)
        total += len(block)
        out.append(block)
        pos += n
    return b"".join(out)


def _raw_snappy(view: memoryview, budget: int, max_size: int, api: str) -> bytes:
    # The raw format starts with the uncompressed length as an unsigned varint:
    # check it against the budget before letting the native code allocate.
    claimed = 0
    shift = 0
    for i in range(5):
        if i >= len(view):
            raise DecodeError("truncated snappy length preamble", api=api, field="records")
        b = view[i]
        claimed |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    else:
        raise DecodeError("snappy length preamble longer than 5 bytes", api=api, field="records")
    if claimed > budget:
        raise _too_big("snappy", max_size, api)
    import cramjam

    out = bytes(cramjam.snappy.decompress_raw(view))
    if len(out) != claimed:
        raise DecodeError("snappy block shorter than its preamble", api=api, field="records")
    return out


def _lz4_bound(frame: bytes | bytearray | memoryview) -> int:
    """Upper bound of a single lz4 frame's output from its block headers, or -1.

    -1 means "cannot tell cheaply" (not exactly one well-formed frame), and the
    caller falls back to the incremental decompressor.
    """
    end = len(frame)
    if end < 7 or frame[:4] != _LZ4_MAGIC:
        return -1
    flg = frame[4]
    block_max = _LZ4_BLOCK_MAX.get((frame[5] >> 4) & 0x07, 0)
    if not block_max:
        return -1
    pos = 7 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    # The one-shot decoder allocates the declared content size up front: only
    # trust a declaration the block walk below can vouch for.
    declared = int.from_bytes(frame[6:14], "little") if flg & 0x08 else 0
    block_checksum = 4 if flg & 0x10 else 0
    blocks = 0
    while pos + 4 <= end:
        size = int.from_bytes(frame[pos : pos + 4], "little")
        pos += 4
        if size == 0:  # end mark
            pos += 4 if flg & 0x04 else 0
            bound = blocks * block_max
            return bound if pos == end and declared <= bound else -1
        pos += (size & 0x7FFFFFFF) + block_checksum
        blocks += 1
    return -1


# Block maximum sizes by the BD byte's bits 4-6 (LZ4 frame format).
_LZ4_BLOCK_MAX: Final = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}


def _unlz4(data: bytes | bytearray | memoryview, max_size: int, magic: int, api: str) -> bytes:
    import lz4.frame

    rest: bytes | bytearray | memoryview = data
    if magic == 0:
        rest = _fix_lz4_header_checksum(bytes(data), api)
    # Fast path: one frame whose blocks cannot add up to more than max_size
    # (the Java producer writes exactly that) goes through the one-shot call,
    # which is much quicker than the incremental decompressor.
    bound = _lz4_bound(rest)
    if 0 <= bound <= max_size:
        fast: bytes = lz4.frame.decompress(rest)
        return fast
    out: list[bytes] = []
    total = 0
    while True:
        d = lz4.frame.LZ4FrameDecompressor()
        chunk = d.decompress(rest, max_length=max_size - total + 1)
        total += len(chunk)
        out.append(chunk)
        if total > max_size:
            raise _too_big("lz4", max_size, api)
        if not d.eof:
            raise DecodeError("truncated lz4 frame", api=api, field="records")
        rest = d.unused_data or b""
        if not rest:
            return b"".join(out)


def _fix_lz4_header_checksum(frame: bytes, api: str) -> bytes:
    """Replace the KAFKA-3160 header checksum of a magic-0 frame with the correct one."""
    if len(frame) < 7 or frame[:4] != _LZ4_MAGIC:
        raise DecodeError("not an lz4 frame (bad magic)", api=api, field="records", offset=0)
    flg = frame[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(frame) <= end:
        raise DecodeError("truncated lz4 frame descriptor", api=api, field="records", offset=4)
    hc = (_xxh32_short(frame[4:end]) >> 8) & 0xFF
    return frame[:end] + bytes((hc,)) + frame[end + 1 :]


_P1: Final = 2654435761
_P2: Final = 2246822519
_P3: Final = 3266489917
_P4: Final = 668265263
_P5: Final = 374761393
_M32: Final = 0xFFFFFFFF


def _xxh32_short(data: bytes) -> int:
    """xxHash32 (seed 0) of fewer than 16 bytes: only a frame descriptor is ever hashed here."""
    assert len(data) < 16
    h = (_P5 + len(data)) & _M32
    i = 0
    while i + 4 <= len(data):
        h = (h + int.from_bytes(data[i : i + 4], "little") * _P3) & _M32
        h = (((h << 17) | (h >> 15)) & _M32) * _P4 & _M32
        i += 4
    while i < len(data):
        h = (h + data[i] * _P5) & _M32
        h = (((h << 11) | (h >> 21)) & _M32) * _P1 & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _unzstd(data: bytes | bytearray | memoryview, max_size: int, api: str) -> bytes:
    view = memoryview(data)
    if len(view) == 0:
        raise DecodeError("empty zstd stream", api=api, field="records")
    try:
        dctx = _ZSTD_DECOMPRESSORS.pop()
    except IndexError:
        import zstandard

        dctx = zstandard.ZstdDecompressor()
    try:
        return _unzstd_frames(dctx, view, max_size, api)
    finally:
        if len(_ZSTD_DECOMPRESSORS) < _POOL_SIZE:
            _ZSTD_DECOMPRESSORS.append(dctx)


def _unzstd_frames(
    dctx: zstandard.ZstdDecompressor, view: memoryview, max_size: int, api: str
) -> bytes:
    out: list[bytes] = []
    total = 0
    pos = 0
    end = len(view)
    while pos < end:
        d = dctx.decompressobj()
        while not d.eof:
            if pos >= end:
                raise DecodeError("truncated zstd frame", api=api, field="records")
            budget = max_size - total
            step = max(_ZSTD_MIN_CHUNK, budget >> _ZSTD_WORST_RATIO_SHIFT)
            fed = view[pos : pos + step]
            chunk = d.decompress(fed)
            total += len(chunk)
            if total > max_size:
                raise _too_big("zstd", max_size, api)
            out.append(chunk)
            pos += len(fed)
        # Whatever the frame did not consume belongs to the next frame.
        pos -= len(d.unused_data)
    return b"".join(out)
