//! Record batch v2 decoding (NOTES.md c.2), without Python objects.
//!
//! One strict pass walks the records and checks every field; the first
//! fault is described exactly as `diagnose` in `kafkacore/records/_diagnose.py`
//! describes it (same reason, field and byte offset), so the compiled and
//! the pure-Python path raise the same DecodeError for the same bytes.
//! Order of checks, as in Python: CRC, decompression, record count against
//! the decompressed size, each record's structure in order, int64 overflow
//! of absolute offsets and timestamps, bytes left after the last record.

use crate::codec;
use crate::fail::Fail;
use crate::varint::read_zigzag;

pub const OVERHEAD: usize = 61;
const CRC_START: usize = 21;
const MIN_RECORD_SIZE: i64 = 7;
const ATTR_COMPRESSION: i16 = 0x07;
const ATTR_TIMESTAMP_TYPE: i16 = 0x08;

/// The header fields decoding needs.
#[derive(Debug, Clone, Copy)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub crc: u32,
    pub attributes: i16,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub record_count: i32,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

impl BatchHeader {
    /// Read the fixed header; RecordBatch's constructor has already checked it.
    pub fn read(buf: &[u8]) -> Result<BatchHeader, Fail> {
        if buf.len() < OVERHEAD {
            return Err(Fail::new(
                format!("need {OVERHEAD} header bytes, have {}", buf.len()),
                "header",
                Some(0),
            ));
        }
        Ok(BatchHeader {
            base_offset: be_i64(buf, 0),
            crc: u32::from_be_bytes(buf[17..21].try_into().expect("4 bytes")),
            attributes: i16::from_be_bytes([buf[21], buf[22]]),
            base_timestamp: be_i64(buf, 27),
            max_timestamp: be_i64(buf, 35),
            record_count: be_i32(buf, 57),
        })
    }

    pub fn codec(&self) -> u8 {
        (self.attributes & ATTR_COMPRESSION) as u8
    }

    /// LogAppendTime batches give every record the batch's max timestamp.
    pub fn fixed_timestamp(&self) -> Option<i64> {
        (self.attributes & ATTR_TIMESTAMP_TYPE != 0).then_some(self.max_timestamp)
    }
}

/// The records section: borrowed from the batch, or inflated into our own buffer.
pub enum Section<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl Section<'_> {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Section::Borrowed(b) => b,
            Section::Owned(v) => v,
        }
    }
}

/// CRC check and decompression of a batch's records section.
pub fn records_section<'a>(
    buf: &'a [u8],
    h: &BatchHeader,
    check_crc: bool,
    max_size: usize,
) -> Result<Section<'a>, Fail> {
    if check_crc {
        let actual = crc32c::crc32c(&buf[CRC_START..]);
        if actual != h.crc {
            return Err(Fail {
                reason: format!(
                    "CRC-32C is {actual:#010x}, header says {:#010x}; the batch is corrupt, fetch it again",
                    h.crc
                ),
                field: "crc".into(),
                offset: Some(17),
                corrupt: true,
            });
        }
    }
    let body = &buf[OVERHEAD..];
    let codec = h.codec();
    if codec == codec::NONE {
        return Ok(Section::Borrowed(body));
    }
    let data = codec::decompress(codec, body, max_size, 2)?;
    if (h.record_count as i64) * MIN_RECORD_SIZE > data.len() as i64 {
        return Err(Fail::new(
            format!(
                "record count {} cannot fit in {} decompressed bytes",
                h.record_count,
                data.len()
            ),
            "recordsCount",
            Some(57),
        ));
    }
    Ok(Section::Owned(data))
}

/// Where a field sits in the records section: `len` -1 is null.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub start: usize,
    pub len: i64,
}

impl Span {
    const NULL: Span = Span { start: 0, len: -1 };
    #[inline(always)]
    pub fn is_null(&self) -> bool {
        self.len < 0
    }
    #[inline(always)]
    pub fn slice<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        &buf[self.start..self.start + self.len.max(0) as usize]
    }
}

#[derive(Debug, Clone, Copy)]
pub struct HeaderSpan {
    pub key: Span,
    pub value: Span,
}

/// Every record of a batch, checked, with absolute offsets and timestamps.
pub struct Records {
    pub offsets: Vec<i64>,
    pub timestamps: Vec<i64>,
    pub keys: Vec<Span>,
    pub values: Vec<Span>,
    /// Per record: (first index into `header_spans`, how many).
    pub header_ranges: Vec<(usize, usize)>,
    pub header_spans: Vec<HeaderSpan>,
}

impl Records {
    pub fn len(&self) -> usize {
        self.offsets.len()
    }
    /// Whether any record has a header (a record with none has the range (_, 0)).
    pub fn has_headers(&self) -> bool {
        !self.header_spans.is_empty()
    }
}

#[derive(Clone, Copy)]
enum Field {
    Length,
    TimestampDelta,
    OffsetDelta,
    KeyLength,
    Key,
    ValueLength,
    Value,
    HeaderCount,
    HeaderKeyLength(i64),
    HeaderKey(i64),
    HeaderValueLength(i64),
    HeaderValue(i64),
}

impl Field {
    fn name(self) -> String {
        match self {
            Field::Length => "length".into(),
            Field::TimestampDelta => "timestampDelta".into(),
            Field::OffsetDelta => "offsetDelta".into(),
            Field::KeyLength => "keyLength".into(),
            Field::Key => "key".into(),
            Field::ValueLength => "valueLength".into(),
            Field::Value => "value".into(),
            Field::HeaderCount => "headerCount".into(),
            Field::HeaderKeyLength(h) => format!("headers[{h}].keyLength"),
            Field::HeaderKey(h) => format!("headers[{h}].key"),
            Field::HeaderValueLength(h) => format!("headers[{h}].valueLength"),
            Field::HeaderValue(h) => format!("headers[{h}].value"),
        }
    }
}

/// A fault inside one record: field, position in the section, reason.
struct RecFail(Field, usize, String);

#[inline(always)]
fn varint(buf: &[u8], field: Field, pos: usize, max_bytes: usize) -> Result<(i64, usize), RecFail> {
    read_zigzag(buf, pos, max_bytes).map_err(|e| RecFail(field, pos, e.reason(max_bytes)))
}

#[inline(always)]
fn nbytes(field: Field, pos: usize, n: i64, limit: usize) -> Result<usize, RecFail> {
    if n < -1 {
        return Err(RecFail(field, pos, format!("length {n} is negative")));
    }
    if n > 0 && pos as i64 + n > limit as i64 {
        return Err(RecFail(field, pos, format!("length {n} runs past the record end")));
    }
    Ok(pos + n.max(0) as usize)
}

/// One record's fields, relative to the batch.
pub struct Parsed {
    pub offset_delta: i64,
    pub ts_delta: i64,
    pub key: Span,
    pub value: Span,
}

/// Check one record starting at `start`; returns it and where the next one
/// starts. On failure, decode_records gives the error to report.
#[inline(always)]
pub fn record_at(
    buf: &[u8],
    start: usize,
    index: usize,
    count: usize,
    headers: &mut Vec<HeaderSpan>,
) -> Option<(Parsed, usize)> {
    record(buf, start, index, count, headers).ok()
}

/// The absolute offset and timestamp of a record, None when either leaves int64.
#[inline(always)]
pub fn absolute(h: &BatchHeader, rec: &Parsed) -> Option<(i64, i64)> {
    let offset = h.base_offset.checked_add(rec.offset_delta)?;
    let ts = match h.fixed_timestamp() {
        Some(t) => t,
        None => h.base_timestamp.checked_add(rec.ts_delta)?,
    };
    Some((offset, ts))
}

#[inline(always)]
fn record(
    buf: &[u8],
    start: usize,
    index: usize,
    count: usize,
    headers: &mut Vec<HeaderSpan>,
) -> Result<(Parsed, usize), RecFail> {
    if start >= buf.len() {
        return Err(RecFail(
            Field::Length,
            start,
            format!("record count {count} but the records section ends after {index} records"),
        ));
    }
    let (length, mut pos) = varint(buf, Field::Length, start, 5)?;
    let end = pos as i64 + length;
    if length < MIN_RECORD_SIZE - 1 || end > buf.len() as i64 {
        return Err(RecFail(
            Field::Length,
            start,
            format!("record length {length} does not fit the {} bytes left", buf.len() - pos),
        ));
    }
    let end = end as usize;
    pos += 1; // attributes: unused
    let (ts_delta, p) = varint(buf, Field::TimestampDelta, pos, 10)?;
    let (offset_delta, p) = varint(buf, Field::OffsetDelta, p, 5)?;
    let (n, p) = varint(buf, Field::KeyLength, p, 5)?;
    let key = if n == -1 { Span::NULL } else { Span { start: p, len: n } };
    pos = nbytes(Field::Key, p, n, end)?;
    let (n, p) = varint(buf, Field::ValueLength, pos, 5)?;
    let value = if n == -1 { Span::NULL } else { Span { start: p, len: n } };
    pos = nbytes(Field::Value, p, n, end)?;
    let (hcount, p) = varint(buf, Field::HeaderCount, pos, 5)?;
    if hcount < 0 || hcount * 2 > end as i64 - p as i64 {
        return Err(RecFail(
            Field::HeaderCount,
            pos,
            format!("header count {hcount} does not fit the record"),
        ));
    }
    pos = p;
    for h in 0..hcount {
        let (n, p) = varint(buf, Field::HeaderKeyLength(h), pos, 5)?;
        if n < 0 {
            return Err(RecFail(Field::HeaderKeyLength(h), pos, "header key must not be null".into()));
        }
        pos = nbytes(Field::HeaderKey(h), p, n, end)?;
        if std::str::from_utf8(&buf[p..pos]).is_err() {
            return Err(RecFail(Field::HeaderKey(h), p, "header key is not valid UTF-8".into()));
        }
        let hkey = Span { start: p, len: n };
        let (n, p) = varint(buf, Field::HeaderValueLength(h), pos, 5)?;
        let hvalue = if n == -1 { Span::NULL } else { Span { start: p, len: n } };
        pos = nbytes(Field::HeaderValue(h), p, n, end)?;
        headers.push(HeaderSpan { key: hkey, value: hvalue });
    }
    if pos != end {
        return Err(RecFail(
            Field::Length,
            start,
            format!(
                "record length is {length} but its fields end {} bytes later",
                pos as i64 - end as i64
            ),
        ));
    }
    Ok((Parsed { offset_delta, ts_delta, key, value }, end))
}

fn error(reason: String, field: String, pos: usize, offset_base: Option<usize>) -> Fail {
    match offset_base {
        None => Fail::new(format!("{reason} (at byte {pos} of the decompressed records)"), field, None),
        Some(base) => Fail::new(reason, field, Some(base + pos)),
    }
}

/// Decode every record of a records section.
///
/// `offset_base` is where the section starts in the batch (61) when it is
/// not compressed: errors then name a byte offset in the batch.
pub fn decode_records(
    buf: &[u8],
    h: &BatchHeader,
    offset_base: Option<usize>,
) -> Result<Records, Fail> {
    let count = h.record_count.max(0) as usize;
    // The caller checked count * 7 <= len(buf): these are bounded by the input.
    let mut offsets = Vec::with_capacity(count);
    let mut timestamps = Vec::with_capacity(count);
    let mut keys = Vec::with_capacity(count);
    let mut values = Vec::with_capacity(count);
    let mut header_ranges: Vec<(usize, usize)> = Vec::with_capacity(count);
    let mut header_spans: Vec<HeaderSpan> = Vec::new();
    let mut overflow = false;
    let mut pos = 0usize;
    for index in 0..count {
        let before = header_spans.len();
        match record(buf, pos, index, count, &mut header_spans) {
            Ok((rec, end)) => {
                // Overflow is reported only once every record is known to be well formed.
                let (offset, ts) = absolute(h, &rec).unwrap_or_else(|| {
                    overflow = true;
                    (0, 0)
                });
                offsets.push(offset);
                timestamps.push(ts);
                keys.push(rec.key);
                values.push(rec.value);
                header_ranges.push((before, header_spans.len() - before));
                pos = end;
            }
            Err(RecFail(field, at, reason)) => {
                let field = format!("records[{index}].{}", field.name());
                return Err(error(reason, field, at, offset_base));
            }
        }
    }
    if overflow {
        return Err(error(
            "timestamp or offset overflows int64".into(),
            "timestampDelta".into(),
            0,
            offset_base,
        ));
    }
    if pos != buf.len() {
        return Err(error(
            format!("{} bytes left after the last of {count} records", buf.len() - pos),
            "recordsCount".into(),
            pos,
            offset_base,
        ));
    }
    Ok(Records { offsets, timestamps, keys, values, header_ranges, header_spans })
}

/// CRC check and decompression of a whole batch (its exact bytes): the
/// header, the records section and its offset in the batch when not compressed.
pub fn prepare(buf: &[u8], check_crc: bool, max_size: usize) -> Result<(BatchHeader, Section<'_>, Option<usize>), Fail> {
    let h = BatchHeader::read(buf)?;
    let section = records_section(buf, &h, check_crc, max_size)?;
    let offset_base = (h.codec() == codec::NONE).then_some(OVERHEAD);
    Ok((h, section, offset_base))
}

/// Decode a whole batch (its exact bytes): CRC, decompression, records.
pub fn decode_batch(buf: &[u8], check_crc: bool, max_size: usize) -> Result<(Section<'_>, Records), Fail> {
    let h = BatchHeader::read(buf)?;
    let section = records_section(buf, &h, check_crc, max_size)?;
    let offset_base = (h.codec() == codec::NONE).then_some(OVERHEAD);
    let records = decode_records(section.bytes(), &h, offset_base)?;
    Ok((section, records))
}

// ---------------------------------------------------------------------------
// Arrow layout
// ---------------------------------------------------------------------------

/// A nullable binary column in Arrow's layout: int32 offsets (length + 1),
/// the values back to back, and a validity bitmap (bit i of byte i/8, least
/// significant first) when some value is null.
pub struct BinaryColumn {
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
    pub validity: Option<Vec<u8>>,
    pub null_count: usize,
}

/// Too much data for Arrow's int32 offsets.
pub struct OffsetOverflow;

pub fn binary_column<'s>(
    buf: &[u8],
    spans: impl ExactSizeIterator<Item = &'s Span> + Clone,
) -> Result<BinaryColumn, OffsetOverflow> {
    let n = spans.len();
    let total: usize = spans.clone().map(|s| s.len.max(0) as usize).sum();
    if total > i32::MAX as usize {
        return Err(OffsetOverflow);
    }
    let mut offsets = Vec::with_capacity(n + 1);
    let mut data = Vec::with_capacity(total);
    let mut validity: Option<Vec<u8>> = None;
    let mut null_count = 0usize;
    offsets.push(0i32);
    for (i, s) in spans.enumerate() {
        if s.is_null() {
            let bits = validity.get_or_insert_with(|| {
                // Every value before the first null was valid.
                let mut v = vec![0xFFu8; n.div_ceil(8)];
                if n % 8 != 0 {
                    let last = v.len() - 1;
                    v[last] = (1u8 << (n % 8)) - 1;
                }
                v
            });
            bits[i / 8] &= !(1u8 << (i % 8));
            null_count += 1;
        } else {
            data.extend_from_slice(s.slice(buf));
        }
        offsets.push(data.len() as i32);
    }
    Ok(BinaryColumn { offsets, data, validity, null_count })
}
