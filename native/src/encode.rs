//! Record batch v2 encoding: the producer's per-record append and build().
//!
//! Mirrors `PyRecordBatchBuilder` in `kafkacore/records/builder.py` check for
//! check (same exception types and messages, in the same order: nothing is
//! written before everything that can reject a record has run) and byte for
//! byte (an uncompressed batch is identical).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::codec;
use crate::decode::OVERHEAD;
use crate::errors::local_error;
use crate::pybytes::{maybe_detach, Input, DETACH_BYTES};
use crate::varint::{write_zigzag, zigzag_len};

const ATTR_TIMESTAMP_TYPE: i16 = 0x08;
const ATTR_TRANSACTIONAL: i16 = 0x10;
const ATTR_CONTROL: i16 = 0x20;
const INT32_MAX: i64 = i32::MAX as i64;
const TABLE_LIMIT: i128 = 8192;

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// A key, value or header value: null, borrowed from an immutable bytes
/// object, or copied (bytearray and memoryview are snapshotted when checked,
/// as the Python builder's `tobytes()` does).
enum Data<'a> {
    Null,
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl Data<'_> {
    fn bytes(&self) -> Option<&[u8]> {
        match self {
            Data::Null => None,
            Data::Borrowed(b) => Some(b),
            Data::Owned(v) => Some(v),
        }
    }
}

fn data<'a>(obj: Option<&'a Bound<'_, PyAny>>, what: &str) -> PyResult<Data<'a>> {
    let Some(obj) = obj else { return Ok(Data::Null) };
    if obj.is_none() {
        return Ok(Data::Null);
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Data::Borrowed(b.as_bytes()));
    }
    let raw = obj.as_ptr();
    // Safety: type checks on a live object.
    let bytes_like = unsafe { ffi::PyByteArray_Check(raw) != 0 || ffi::PyMemoryView_Check(raw) != 0 };
    if !bytes_like {
        return Err(PyTypeError::new_err(format!(
            "record {what} must be bytes, bytearray, memoryview or None, not {}",
            type_name(obj)
        )));
    }
    match Input::new(obj) {
        Ok(input) => Ok(Data::Owned(input.as_slice().to_vec())),
        // Not C-contiguous: let memoryview.cast raise what the Python builder raises.
        Err(_) => {
            let py = obj.py();
            let view = py.import("builtins")?.getattr("memoryview")?.call1((obj,))?;
            let copy = view.call_method1("cast", ("B",))?.call_method0("tobytes")?;
            Ok(Data::Owned(copy.cast_into::<PyBytes>()?.as_bytes().to_vec()))
        }
    }
}

/// `a, b = item`, with Python's messages when item is not a pair.
fn unpack2<'py>(item: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    if let Ok(t) = item.cast_exact::<PyTuple>() {
        if t.len() == 2 {
            return Ok((t.get_item(0)?, t.get_item(1)?));
        }
    }
    let iter = match item.try_iter() {
        Ok(it) => it,
        Err(e) if e.is_instance_of::<PyTypeError>(item.py()) => {
            return Err(PyTypeError::new_err(format!(
                "cannot unpack non-iterable {} object",
                type_name(item)
            )))
        }
        Err(e) => return Err(e),
    };
    let mut got = Vec::with_capacity(2);
    for x in iter {
        got.push(x?);
        if got.len() > 2 {
            return Err(PyValueError::new_err("too many values to unpack (expected 2)"));
        }
    }
    if got.len() < 2 {
        return Err(PyValueError::new_err(format!(
            "not enough values to unpack (expected 2, got {})",
            got.len()
        )));
    }
    let b = got.pop().expect("two items");
    let a = got.pop().expect("two items");
    Ok((a, b))
}

/// Encode a record's headers (count, then key/value pairs) onto `out`.
pub fn encode_headers(headers: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    let mut parts: Vec<u8> = Vec::new();
    let mut count: i64 = 0;
    for item in headers.try_iter()? {
        let item = item?;
        let (hkey, hvalue) = unpack2(&item)?;
        let Ok(hkey) = hkey.cast::<PyString>() else {
            return Err(PyTypeError::new_err(format!(
                "record header key must be str, not {}",
                type_name(&hkey)
            )));
        };
        let kb = hkey.to_str()?; // UnicodeEncodeError for lone surrogates, as str.encode
        write_zigzag(&mut parts, kb.len() as i64);
        parts.extend_from_slice(kb.as_bytes());
        match data(Some(&hvalue), "header value")?.bytes() {
            None => parts.push(1), // zigzag(-1): null
            Some(v) => {
                write_zigzag(&mut parts, v.len() as i64);
                parts.extend_from_slice(v);
            }
        }
        count += 1;
    }
    if count == 0 {
        out.push(0);
    } else {
        write_zigzag(out, count);
        out.extend_from_slice(&parts);
    }
    Ok(())
}

/// The compiled core of `RecordBatchBuilder` (Python subclass: NativeRecordBatchBuilder).
#[pyclass(subclass, module = "kafkacore.records._native", name = "RecordBatchEncoder")]
pub struct Encoder {
    codec: u8,
    level: Option<i32>,
    batch_size: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    base_offset: i64,
    partition_leader_epoch: i32,
    log_append_time: Option<i64>,
    attributes: i16,
    buf: Vec<u8>,
    count: i64,
    base_ts: i64,
    max_ts: i64,
    built: Option<Py<PyBytes>>,
}

impl Encoder {
    /// Append one record's bytes (its checks all passed).
    #[inline(always)]
    fn write_record(&mut self, ts_delta: i64, index: i64, key: Option<&[u8]>, value: Option<&[u8]>, headers: &[u8]) {
        let field = |d: Option<&[u8]>| d.map_or(1, |b| zigzag_len(b.len() as i64) + b.len());
        let body = 1 + zigzag_len(ts_delta) + zigzag_len(index) + field(key) + field(value) + headers.len();
        let buf = &mut self.buf;
        buf.reserve(body + 5);
        write_zigzag(buf, body as i64);
        buf.push(0); // attributes: unused
        write_zigzag(buf, ts_delta);
        write_zigzag(buf, index);
        for d in [key, value] {
            match d {
                None => buf.push(1),
                Some(b) => {
                    write_zigzag(buf, b.len() as i64);
                    buf.extend_from_slice(b);
                }
            }
        }
        buf.extend_from_slice(headers);
    }

    fn check_open(&self, py: Python<'_>) -> PyResult<()> {
        if self.built.is_some() {
            return Err(local_error(py, "RecordBatchBuilder is built; start a new builder for more records"));
        }
        Ok(())
    }
}

fn timestamp_error(ts: &Bound<'_, PyAny>) -> PyErr {
    let shown = ts.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!("record timestamp must be an int64 (ms since the epoch), got {shown}"))
}

#[pymethods]
impl Encoder {
    #[new]
    #[pyo3(signature = (codec, level, batch_size, producer_id, producer_epoch, base_sequence, transactional, base_offset, partition_leader_epoch, log_append_time))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        codec: u8,
        level: Option<i32>,
        batch_size: i64,
        producer_id: i64,
        producer_epoch: i16,
        base_sequence: i32,
        transactional: bool,
        base_offset: i64,
        partition_leader_epoch: i32,
        log_append_time: Option<i64>,
    ) -> Self {
        // Arguments were checked by the Python subclass (builder.py), shared with the pure builder.
        let mut attributes = codec as i16;
        if transactional {
            attributes |= ATTR_TRANSACTIONAL;
        }
        if log_append_time.is_some() {
            attributes |= ATTR_TIMESTAMP_TYPE;
        }
        Encoder {
            codec,
            level,
            batch_size,
            producer_id,
            producer_epoch,
            base_sequence,
            base_offset,
            partition_leader_epoch,
            log_append_time,
            attributes,
            buf: Vec::new(),
            count: 0,
            base_ts: -1,
            max_ts: -1,
            built: None,
        }
    }

    #[getter]
    fn record_count(&self) -> i64 {
        self.count
    }

    /// Uncompressed size of the batch so far, header included.
    #[getter]
    fn size_in_bytes(&self) -> usize {
        OVERHEAD + self.buf.len()
    }

    #[getter]
    fn _base_ts(&self) -> i64 {
        self.base_ts
    }

    #[getter]
    fn _max_ts(&self) -> i64 {
        self.max_ts
    }

    #[getter]
    fn _batch_size(&self) -> i64 {
        self.batch_size
    }

    #[getter]
    fn _codec(&self) -> u8 {
        self.codec
    }

    #[getter]
    fn _is_built(&self) -> bool {
        self.built.is_some()
    }

    /// Mark the batch as a control batch (control_batch() only).
    fn _mark_control(&mut self) {
        self.attributes |= ATTR_CONTROL;
    }

    /// Append one record; returns its offset delta within the batch.
    #[pyo3(signature = (value, key=None, *, timestamp, headers=None))]
    fn append(
        &mut self,
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
        key: Option<&Bound<'_, PyAny>>,
        timestamp: &Bound<'_, PyAny>,
        headers: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<i64> {
        self.check_open(py)?;
        // Safety: exact type check on a live object.
        if unsafe { ffi::PyLong_CheckExact(timestamp.as_ptr()) } == 0 {
            return Err(timestamp_error(timestamp));
        }
        let ts: i64 = timestamp.extract().map_err(|_| timestamp_error(timestamp))?;
        let key = data(key, "key")?;
        let value = data(Some(value), "value")?;
        let mut hb: Vec<u8> = Vec::new();
        match headers {
            Some(h) if h.is_truthy()? => encode_headers(h, &mut hb)?,
            _ => hb.push(0),
        }
        let index = self.count;
        let ts_delta = if index > 0 {
            let d = ts as i128 - self.base_ts as i128;
            if !(0..TABLE_LIMIT).contains(&d) && i64::try_from(d).is_err() {
                return Err(PyValueError::new_err(format!(
                    "record timestamp {ts} is too far from the batch base timestamp {}",
                    self.base_ts
                )));
            }
            if index >= INT32_MAX {
                return Err(local_error(py, "RecordBatchBuilder is full (2**31 - 1 records); start a new batch"));
            }
            if ts > self.max_ts {
                self.max_ts = ts;
            }
            d as i64
        } else {
            self.base_ts = ts;
            self.max_ts = ts;
            0
        };
        self.write_record(ts_delta, index, key.bytes(), value.bytes(), &hb);
        self.count = index + 1;
        Ok(index)
    }

    /// append_many's loop: columns already checked and normalized by Python
    /// (bytes or None, int timestamps within range, encoded headers).
    /// All or nothing: on failure the builder is left as it was.
    fn _extend(
        &mut self,
        values: &Bound<'_, PyList>,
        keys: &Bound<'_, PyList>,
        timestamps: &Bound<'_, PyList>,
        headers: &Bound<'_, PyList>,
        base_ts: i64,
        max_ts: i64,
    ) -> PyResult<()> {
        let n = values.len();
        if keys.len() != n || timestamps.len() != n || headers.len() != n {
            return Err(PyValueError::new_err("_extend: columns of different lengths"));
        }
        let saved = (self.buf.len(), self.count);
        let result = (|| -> PyResult<()> {
            for i in 0..n {
                let v = values.get_item(i)?;
                let k = keys.get_item(i)?;
                let t: i64 = timestamps.get_item(i)?.extract()?;
                let h = headers.get_item(i)?;
                let h = h.cast::<PyBytes>()?;
                let vb = if v.is_none() { None } else { Some(v.cast::<PyBytes>()?.as_bytes()) };
                let kb = if k.is_none() { None } else { Some(k.cast::<PyBytes>()?.as_bytes()) };
                let d = t.checked_sub(base_ts).ok_or_else(|| {
                    PyValueError::new_err("append_many: timestamps too far apart for one batch")
                })?;
                let index = self.count;
                self.write_record(d, index, kb, vb, h.as_bytes());
                self.count = index + 1;
            }
            Ok(())
        })();
        match result {
            Ok(()) => {
                self.base_ts = base_ts;
                self.max_ts = max_ts;
                Ok(())
            }
            Err(e) => {
                self.buf.truncate(saved.0);
                self.count = saved.1;
                Err(e)
            }
        }
    }

    /// append_many's fast path: lists of bytes or None and int timestamps
    /// (one int or a list), no headers. Checks everything first and encodes
    /// only when every record is acceptable; returns False (the builder
    /// untouched) otherwise, and the Python path then raises its precise error.
    fn _append_columns(
        &mut self,
        values: &Bound<'_, PyAny>,
        keys: &Bound<'_, PyAny>,
        timestamps: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        if self.built.is_some() {
            return Ok(false);
        }
        let Ok(values) = values.cast_exact::<PyList>() else { return Ok(false) };
        let n = values.len();
        let keys = if keys.is_none() {
            None
        } else {
            match keys.cast_exact::<PyList>() {
                Ok(k) if k.len() == n => Some(k),
                _ => return Ok(false),
            }
        };
        // Safety: exact type check on a live object.
        let single_ts = unsafe { ffi::PyLong_CheckExact(timestamps.as_ptr()) } != 0;
        let ts_list = if single_ts {
            None
        } else {
            match timestamps.cast_exact::<PyList>() {
                Ok(t) if t.len() == n => Some(t),
                _ => return Ok(false),
            }
        };
        if n == 0 || self.count + n as i64 > INT32_MAX {
            return Ok(false);
        }
        // Pass 1: types, sizes and the timestamp range; nothing here runs Python code.
        let single: Option<i64> = if single_ts { timestamps.extract().ok() } else { None };
        if single_ts && single.is_none() {
            return Ok(false);
        }
        let (mut lo, mut hi, mut first) = (i64::MAX, i64::MIN, 0i64);
        let mut payload = 0usize;
        for i in 0..n {
            for col in [Some(values), keys].into_iter().flatten() {
                // Safety: i < len of a list no Python code can change meanwhile.
                let item = unsafe { ffi::PyList_GET_ITEM(col.as_ptr(), i as ffi::Py_ssize_t) };
                // Safety: type checks on a borrowed live item.
                unsafe {
                    if ffi::PyBytes_CheckExact(item) != 0 {
                        payload += ffi::Py_SIZE(item) as usize;
                    } else if item != ffi::Py_None() {
                        return Ok(false);
                    }
                }
            }
            let t = match (single, ts_list) {
                (Some(t), _) => t,
                (None, Some(list)) => {
                    // Safety: as above.
                    let item = unsafe { ffi::PyList_GET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t) };
                    // Safety: exact int check, then a conversion that cannot run Python code.
                    unsafe {
                        if ffi::PyLong_CheckExact(item) == 0 {
                            return Ok(false);
                        }
                        let mut overflow = 0;
                        let v = ffi::PyLong_AsLongLongAndOverflow(item, &mut overflow);
                        if overflow != 0 || (v == -1 && !ffi::PyErr_Occurred().is_null()) {
                            ffi::PyErr_Clear();
                            return Ok(false);
                        }
                        v
                    }
                }
                (None, None) => return Ok(false),
            };
            if i == 0 {
                first = t;
            }
            lo = lo.min(t);
            hi = hi.max(t);
        }
        let base = if self.count > 0 { self.base_ts } else { first };
        let max_ts = if self.count > 0 { self.max_ts.max(hi) } else { hi };
        if (lo as i128 - base as i128) < i64::MIN as i128 || (hi as i128 - base as i128) > i64::MAX as i128 {
            return Ok(false);
        }
        // Pass 2: encode (cannot fail).
        self.buf.reserve(payload + n * 24);
        for i in 0..n {
            // Safety: the items were checked in pass 1 and the lists cannot have changed.
            let (v, k, t) = unsafe {
                let bytes_at = |col: &Bound<'_, PyList>| -> Option<&[u8]> {
                    let item = ffi::PyList_GET_ITEM(col.as_ptr(), i as ffi::Py_ssize_t);
                    if item == ffi::Py_None() {
                        None
                    } else {
                        let p = ffi::PyBytes_AS_STRING(item) as *const u8;
                        Some(std::slice::from_raw_parts(p, ffi::Py_SIZE(item) as usize))
                    }
                };
                let t = match (single, ts_list) {
                    (Some(t), _) => t,
                    (None, Some(list)) => {
                        ffi::PyLong_AsLongLong(ffi::PyList_GET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t))
                    }
                    (None, None) => unreachable!("checked in pass 1"),
                };
                (bytes_at(values), keys.and_then(bytes_at), t)
            };
            let index = self.count;
            self.write_record(t - base, index, k, v, &[0]);
            self.count = index + 1;
        }
        self.max_ts = max_ts;
        self.base_ts = base;
        Ok(true)
    }

    /// Finish the batch: compress, write the header and the CRC-32C. Idempotent.
    fn build(&mut self, py: Python<'_>) -> PyResult<Py<PyBytes>> {
        if let Some(b) = &self.built {
            return Ok(b.clone_ref(py));
        }
        let compressed: Vec<u8>;
        let body: &[u8] = if self.codec == codec::NONE {
            &self.buf
        } else {
            let (c, level, raw) = (self.codec, self.level, &self.buf);
            compressed = maybe_detach(py, raw.len() >= DETACH_BYTES, || codec::compress(c, raw, level))
                .map_err(PyValueError::new_err)?;
            &compressed
        };
        let total = OVERHEAD + body.len();
        let max_ts = self.log_append_time.unwrap_or(self.max_ts);
        // Safety: a new bytes object of `total` uninitialized bytes, every one
        // of which is written below before it is handed out.
        let out = unsafe {
            let obj = Bound::from_owned_ptr_or_err(
                py,
                ffi::PyBytes_FromStringAndSize(std::ptr::null(), total as ffi::Py_ssize_t),
            )?;
            let o = std::slice::from_raw_parts_mut(ffi::PyBytes_AsString(obj.as_ptr()) as *mut u8, total);
            o[0..8].copy_from_slice(&self.base_offset.to_be_bytes());
            o[8..12].copy_from_slice(&((total - 12) as i32).to_be_bytes());
            o[12..16].copy_from_slice(&self.partition_leader_epoch.to_be_bytes());
            o[16] = 2;
            o[21..23].copy_from_slice(&self.attributes.to_be_bytes());
            o[23..27].copy_from_slice(&((self.count - 1) as i32).to_be_bytes());
            o[27..35].copy_from_slice(&self.base_ts.to_be_bytes());
            o[35..43].copy_from_slice(&max_ts.to_be_bytes());
            o[43..51].copy_from_slice(&self.producer_id.to_be_bytes());
            o[51..53].copy_from_slice(&self.producer_epoch.to_be_bytes());
            o[53..57].copy_from_slice(&self.base_sequence.to_be_bytes());
            o[57..61].copy_from_slice(&(self.count as i32).to_be_bytes());
            o[OVERHEAD..].copy_from_slice(body);
            let crc = crc32c::crc32c(&o[21..]);
            o[17..21].copy_from_slice(&crc.to_be_bytes());
            obj.cast_into::<PyBytes>()?
        };
        let out = out.unbind();
        self.built = Some(out.clone_ref(py));
        self.buf = Vec::new();
        Ok(out)
    }
}
