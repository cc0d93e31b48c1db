//! kafkacore.records._native: the compiled record path.
//!
//! Pure computation on bytes: no I/O, no clock, no threads of its own. The
//! pure-Python modules in kafkacore/records are the reference; every
//! function here behaves as its Python counterpart (tests/native holds the
//! differential properties). Large inputs are processed with the GIL
//! released. See docs/records.md for the Python-facing API.

mod codec;
mod decode;
mod encode;
mod errors;
mod fail;
mod murmur2;
mod objects;
mod pybytes;
mod varint;

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::decode_error;
use crate::pybytes::{maybe_detach, Input, DETACH_BYTES};

pub(crate) const API: &str = "RecordBatch v2";

/// CRC-32C (Castagnoli) of `data`, continuing from `value` (a previous result).
#[pyfunction(name = "crc32c")]
#[pyo3(signature = (data, value = 0))]
fn py_crc32c(py: Python<'_>, data: &Bound<'_, PyAny>, value: u32) -> PyResult<u32> {
    let input = Input::new(data)?;
    let bytes = input.as_slice();
    let detach = input.readonly() && bytes.len() >= DETACH_BYTES;
    Ok(maybe_detach(py, detach, || crc32c::crc32c_append(value, bytes)))
}

/// Kafka's murmur2 of `data` as a signed 32-bit int (Java `Utils.murmur2`).
#[pyfunction(name = "murmur2")]
fn py_murmur2(data: &Bound<'_, PyAny>) -> PyResult<i32> {
    let input = Input::new(data)?;
    Ok(murmur2::murmur2(input.as_slice()))
}

/// Read a zigzag varint of at most `max_bytes` bytes at `pos`: (value, new_pos).
/// IndexError past the end, ValueError when overlong or out of range.
#[pyfunction]
fn read_zigzag(data: &Bound<'_, PyAny>, pos: usize, max_bytes: usize) -> PyResult<(i64, usize)> {
    let input = Input::new(data)?;
    varint::read_zigzag(input.as_slice(), pos, max_bytes).map_err(|e| match e {
        varint::VarintError::Truncated => PyIndexError::new_err("index out of range"),
        other => PyValueError::new_err(other.reason(max_bytes)),
    })
}

/// Zigzag varint encoding of a signed 64-bit `n`.
#[pyfunction]
fn zigzag_bytes<'py>(py: Python<'py>, n: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let v: i64 = n.extract().map_err(|_| {
        PyValueError::new_err(format!("varint value {n} is outside the signed 64-bit range"))
    })?;
    let mut out = Vec::with_capacity(10);
    varint::write_zigzag(&mut out, v);
    Ok(PyBytes::new(py, &out))
}

/// The encoded headers of one record (count, then key/value pairs).
#[pyfunction]
fn encode_headers<'py>(py: Python<'py>, headers: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    encode::encode_headers(headers, &mut out)?;
    Ok(PyBytes::new(py, &out))
}

/// Compress a records section in the framing the Java producer writes.
#[pyfunction]
#[pyo3(signature = (codec, data, level = None))]
fn compress<'py>(
    py: Python<'py>,
    codec: u8,
    data: &Bound<'py, PyAny>,
    level: Option<i32>,
) -> PyResult<Bound<'py, PyBytes>> {
    let input = Input::new(data)?;
    let bytes = input.as_slice();
    let detach = input.readonly() && bytes.len() >= DETACH_BYTES;
    let out = maybe_detach(py, detach, || codec::compress(codec, bytes, level)).map_err(PyValueError::new_err)?;
    Ok(PyBytes::new(py, &out))
}

/// Decompress a records section into at most `max_size` bytes; DecodeError naming `api` otherwise.
#[pyfunction]
fn decompress<'py>(
    py: Python<'py>,
    codec: u8,
    data: &Bound<'py, PyAny>,
    max_size: usize,
    magic: u8,
    api: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let input = Input::new(data)?;
    let copy: Vec<u8>;
    let bytes = if input.readonly() {
        input.as_slice()
    } else {
        copy = input.as_slice().to_vec();
        &copy
    };
    let out = maybe_detach(py, bytes.len() >= DETACH_BYTES / 4, || {
        codec::decompress(codec, bytes, max_size, magic)
    })
    .map_err(|f| decode_error(py, f, api))?;
    Ok(PyBytes::new(py, &out))
}

fn decode<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    mode: Mode,
    check_crc: bool,
    max_size: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let input = Input::new(batch)?;
    // A writable buffer could change while Python code runs: decode a snapshot.
    let copy: Option<Vec<u8>> = (!input.readonly()).then(|| input.as_slice().to_vec());
    let bytes = copy.as_deref().unwrap_or_else(|| input.as_slice());
    let detach = bytes.len() >= DETACH_BYTES;
    if let Mode::Arrow = mode {
        let parts = maybe_detach(py, detach, || {
            let (section, recs) = decode::decode_batch(bytes, check_crc, max_size).map_err(Ok)?;
            objects::arrow_parts(section.bytes(), recs).map_err(Err)
        });
        return match parts {
            Ok(parts) => objects::arrow(py, parts),
            Err(Ok(fail)) => Err(decode_error(py, fail, API)),
            Err(Err(msg)) => Err(objects::arrow_overflow(msg)),
        };
    }
    if let Mode::Iterator = mode {
        // CRC and decompression now (GIL released when large); records one by one.
        let (h, section, offset_base) = maybe_detach(py, detach, || decode::prepare(bytes, check_crc, max_size))
            .map_err(|f| decode_error(py, f, API))?;
        // The iterator keeps the bytes its records point into.
        let source = match section {
            decode::Section::Owned(v) => objects::Source::Owned(v, 0),
            decode::Section::Borrowed(_) => match copy {
                Some(v) => objects::Source::Owned(v, decode::OVERHEAD),
                None => objects::Source::Input(input, decode::OVERHEAD),
            },
        };
        return Ok(Bound::new(py, objects::RecordIterator::new(py, source, h, offset_base)?)?.into_any());
    }
    let (section, recs) = maybe_detach(py, detach, || decode::decode_batch(bytes, check_crc, max_size))
        .map_err(|f| decode_error(py, f, API))?;
    match mode {
        Mode::Records => objects::records(py, section.bytes(), &recs),
        _ => objects::columns(py, section.bytes(), &recs),
    }
}

enum Mode {
    Records,
    Iterator,
    Columns,
    Arrow,
}

/// The records of one v2 batch (its exact bytes) as a list of Record tuples,
/// after the CRC check and decompression. Raises DecodeError /
/// CorruptRecordError as the pure path does.
#[pyfunction]
fn decode_records<'py>(py: Python<'py>, batch: &Bound<'py, PyAny>, check_crc: bool, max_size: usize) -> PyResult<Bound<'py, PyAny>> {
    decode(py, batch, Mode::Records, check_crc, max_size)
}

/// An iterator over the records of one v2 batch, each Record built when it is
/// asked for; the whole batch is checked (and a DecodeError raised) first.
#[pyfunction]
fn iter_records<'py>(py: Python<'py>, batch: &Bound<'py, PyAny>, check_crc: bool, max_size: usize) -> PyResult<Bound<'py, PyAny>> {
    decode(py, batch, Mode::Iterator, check_crc, max_size)
}

/// (offsets, timestamps, keys, values, headers or None): the int64 columns as
/// bytes in native order, keys and values as lists of bytes or None.
#[pyfunction]
fn decode_columns<'py>(py: Python<'py>, batch: &Bound<'py, PyAny>, check_crc: bool, max_size: usize) -> PyResult<Bound<'py, PyAny>> {
    decode(py, batch, Mode::Columns, check_crc, max_size)
}

/// (offsets, timestamps, keys, values, headers) as Buffer objects: offsets
/// and timestamps int64; a binary column is (offsets int32, data, validity
/// bitmap or None, null count); headers None or (list offsets int32, key
/// column, value column).
#[pyfunction]
fn decode_arrow<'py>(py: Python<'py>, batch: &Bound<'py, PyAny>, check_crc: bool, max_size: usize) -> PyResult<Bound<'py, PyAny>> {
    decode(py, batch, Mode::Arrow, check_crc, max_size)
}

#[pymodule(gil_used = true)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(py_crc32c, m)?)?;
    m.add_function(wrap_pyfunction!(py_murmur2, m)?)?;
    m.add_function(wrap_pyfunction!(read_zigzag, m)?)?;
    m.add_function(wrap_pyfunction!(zigzag_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(encode_headers, m)?)?;
    m.add_function(wrap_pyfunction!(compress, m)?)?;
    m.add_function(wrap_pyfunction!(decompress, m)?)?;
    m.add_function(wrap_pyfunction!(decode_records, m)?)?;
    m.add_function(wrap_pyfunction!(iter_records, m)?)?;
    m.add_function(wrap_pyfunction!(decode_columns, m)?)?;
    m.add_function(wrap_pyfunction!(decode_arrow, m)?)?;
    m.add_class::<encode::Encoder>()?;
    m.add_class::<pybytes::Buffer>()?;
    m.add_class::<objects::RecordIterator>()?;
    Ok(())
}
