//! Decoded records as Python objects: Record tuples, columns, or Arrow buffers.
//!
//! Runs with the GIL held, after the bytes were checked (decode.rs): every
//! span here is known to lie inside the records section.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::exceptions::{PyOverflowError, PyRuntimeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple, PyType};

use crate::decode::{absolute, binary_column, decode_records, record_at, BatchHeader, BinaryColumn, HeaderSpan, Records, Span};
use crate::errors::decode_error;
use crate::fail::Fail;
use crate::API;
use crate::errors::classes;
use crate::pybytes::{Buffer, Input};

#[inline(always)]
fn bytes_or_none<'py>(py: Python<'py>, buf: &[u8], s: Span) -> PyResult<Bound<'py, PyAny>> {
    if s.is_null() {
        return Ok(py.None().into_bound(py));
    }
    let b = s.slice(buf);
    // Safety: copies b (in bounds, checked by decode.rs) into a new bytes object.
    unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyBytes_FromStringAndSize(b.as_ptr() as *const std::ffi::c_char, b.len() as ffi::Py_ssize_t),
        )
    }
}

#[inline(always)]
fn int<'py>(py: Python<'py>, v: i64) -> PyResult<Bound<'py, PyAny>> {
    // Safety: plain constructor.
    unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyLong_FromLongLong(v)) }
}

/// A record's headers as a tuple of (str, bytes | None) pairs.
#[inline(always)]
fn headers<'py>(py: Python<'py>, buf: &[u8], spans: &[HeaderSpan], empty: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
    if spans.is_empty() {
        return Ok(empty.clone().into_any());
    }
    header_tuple(py, buf, spans)
}

#[inline(never)]
fn header_tuple<'py>(py: Python<'py>, buf: &[u8], spans: &[HeaderSpan]) -> PyResult<Bound<'py, PyAny>> {
    let mut pairs = Vec::with_capacity(spans.len());
    for h in spans {
        let key = h.key.slice(buf);
        // Safety: the key was checked to be UTF-8; PyUnicode decodes it again.
        let key = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyUnicode_FromStringAndSize(key.as_ptr() as *const std::ffi::c_char, key.len() as ffi::Py_ssize_t),
            )?
        };
        let value = bytes_or_none(py, buf, h.value)?;
        pairs.push(PyTuple::new(py, [key, value])?);
    }
    Ok(PyTuple::new(py, pairs)?.into_any())
}

/// Builds Record tuples one at a time (model.Record, or any callable as a fallback).
pub struct RecordMaker {
    record_type: Py<PyType>,
    tuple_layout: bool,
    empty: Py<PyTuple>,
}

impl RecordMaker {
    pub fn new(py: Python<'_>) -> PyResult<Self> {
        let c = classes(py)?;
        Ok(RecordMaker {
            record_type: c.record.clone_ref(py),
            tuple_layout: c.record_is_tuple,
            empty: PyTuple::empty(py).unbind(),
        })
    }

    /// One record; `last_ts` lets records of one millisecond share one int.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn make<'py>(
        &self,
        py: Python<'py>,
        buf: &[u8],
        offset: i64,
        t: i64,
        key: Span,
        value: Span,
        header_spans: &[HeaderSpan],
        last_ts: &mut Option<(i64, Py<PyAny>)>,
        reuse: Option<&Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let offset = int(py, offset)?;
        let ts = match last_ts {
            Some((v, obj)) if *v == t => obj.bind(py).clone(),
            _ => {
                let obj = int(py, t)?;
                *last_ts = Some((t, obj.clone().unbind()));
                obj
            }
        };
        let key = bytes_or_none(py, buf, key)?;
        let value = bytes_or_none(py, buf, value)?;
        let plain = header_spans.is_empty();
        let hdrs = headers(py, buf, header_spans, self.empty.bind(py))?;
        if !self.tuple_layout {
            return self.record_type.bind(py).call1((offset, ts, key, value, hdrs));
        }
        let items = [offset.into_ptr(), ts.into_ptr(), key.into_ptr(), value.into_ptr(), hdrs.into_ptr()];
        // Safety: `reuse` is a Record this iterator made and nobody else
        // holds (refcount 1: only the iterator's own reference), so refilling
        // it in place is unobservable, as CPython's zip(), enumerate() and
        // dict iterators do with their result tuples. The new items exist
        // already, so no allocation (and no collection) can see a half-filled
        // record; the old items are released afterwards.
        if let Some(obj) = reuse {
            let raw = obj.as_ptr();
            unsafe {
                if ffi::Py_REFCNT(raw) == 1 {
                    let mut old = [std::ptr::null_mut(); 5];
                    for (k, item) in items.iter().enumerate() {
                        old[k] = ffi::PyTuple_GET_ITEM(raw, k as ffi::Py_ssize_t);
                        ffi::PyTuple_SET_ITEM(raw, k as ffi::Py_ssize_t, *item);
                    }
                    let tracked = ffi::PyObject_GC_IsTracked(raw) != 0;
                    if plain && tracked {
                        ffi::PyObject_GC_UnTrack(raw as *mut std::ffi::c_void);
                    } else if !plain && !tracked {
                        ffi::PyObject_GC_Track(raw as *mut std::ffi::c_void);
                    }
                    for item in old {
                        ffi::Py_DECREF(item);
                    }
                    return Ok(obj.bind(py).clone());
                }
            }
        }
        let tp = self.record_type.bind(py).as_type_ptr();
        // Safety: Record has a tuple's layout (checked in errors.rs): a
        // 5-item variable-size GC object of that type is a Record tuple once
        // its 5 slots are set, which happens right away (the items exist
        // already, so nothing can fail in between), each stealing its
        // reference, as tuple.__new__ does. It is born untracked.
        unsafe {
            let raw = ffi::PyObject_GC_NewVar::<ffi::PyObject>(tp, 5);
            if raw.is_null() {
                for item in items {
                    ffi::Py_DECREF(item);
                }
                return Err(PyErr::fetch(py));
            }
            for (k, item) in items.into_iter().enumerate() {
                ffi::PyTuple_SET_ITEM(raw, k as ffi::Py_ssize_t, item);
            }
            if !plain {
                // Ints, bytes, None and the empty tuple cannot take part in a
                // reference cycle (CPython stops tracking such tuples too);
                // header tuples are tracked as usual.
                ffi::PyObject_GC_Track(raw as *mut std::ffi::c_void);
            }
            Ok(Bound::from_owned_ptr(py, raw))
        }
    }
}

/// A list of model.Record tuples.
pub fn records<'py>(py: Python<'py>, buf: &[u8], recs: &Records) -> PyResult<Bound<'py, PyAny>> {
    let maker = RecordMaker::new(py)?;
    let n = recs.len();
    // Safety: a new list of n NULL slots; each is filled exactly once below
    // (a list with NULL slots is safe to free if we return early).
    let list = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyList_New(n as ffi::Py_ssize_t))? };
    let mut last_ts = None;
    for i in 0..n {
        let (first, nh) = recs.header_ranges[i];
        let record = maker.make(
            py,
            buf,
            recs.offsets[i],
            recs.timestamps[i],
            recs.keys[i],
            recs.values[i],
            &recs.header_spans[first..first + nh],
            &mut last_ts,
            None,
        )?;
        // Safety: i < n; steals the reference into the empty slot.
        unsafe { ffi::PyList_SET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t, record.into_ptr()) };
    }
    Ok(list)
}

/// Where an iterator's records section lives.
pub enum Source {
    /// The caller's read-only buffer (an uncompressed batch), from `start`.
    Input(Input, usize),
    /// Our own bytes: inflated, or a snapshot of a writable buffer, from `start`.
    Owned(Vec<u8>, usize),
}

impl Source {
    fn section(&self) -> &[u8] {
        match self {
            Source::Input(input, start) => &input.as_slice()[*start..],
            Source::Owned(v, start) => &v[*start..],
        }
    }
}

/// Iterates a batch, decoding each record when it is asked for, as the
/// pure-Python iterator does: records before a fault are yielded, then the
/// fault is raised, described as a whole-batch decode describes it.
///
/// Frozen, with its state in an UnsafeCell: a mutable pyclass pays an
/// atomic compare-and-swap per `__next__` for its borrow flag, a tenth of
/// the cost of a record. Soundness: the state is touched only by
/// `__next__`, with the thread attached to the interpreter; this module
/// runs with the GIL (it does not declare free-threading support), so one
/// thread at a time; and the `busy` flag refuses a re-entrant `__next__`
/// (Python code run by a garbage collection inside the first one).
#[pyclass(frozen, module = "kafkacore.records._native", name = "RecordIterator")]
pub struct RecordIterator {
    state: UnsafeCell<IterState>,
    busy: AtomicBool,
}

// Safety: see above; every access to `state` holds the GIL and the busy flag.
unsafe impl Sync for RecordIterator {}

struct IterState {
    source: Source,
    header: BatchHeader,
    offset_base: Option<usize>,
    maker: RecordMaker,
    count: usize,
    index: usize,
    pos: usize,
    header_spans: Vec<HeaderSpan>,
    last_ts: Option<(i64, Py<PyAny>)>,
    /// The last two records returned: by the time a loop asks for the next
    /// one, its variable has let go of the one before the last, which can
    /// then be refilled instead of freed and allocated again.
    recent: [Option<Py<PyAny>>; 2],
    turn: usize,
}

impl RecordIterator {
    pub fn new(py: Python<'_>, source: Source, header: BatchHeader, offset_base: Option<usize>) -> PyResult<Self> {
        Ok(RecordIterator {
            state: UnsafeCell::new(IterState {
                source,
                header,
                offset_base,
                maker: RecordMaker::new(py)?,
                count: header.record_count.max(0) as usize,
                index: 0,
                pos: 0,
                header_spans: Vec::new(),
                last_ts: None,
                recent: [None, None],
                turn: 0,
            }),
            busy: AtomicBool::new(false),
        })
    }
}

impl IterState {
    /// The error a whole-batch decode reports (the first fault, in its order of checks).
    fn fault(&mut self, py: Python<'_>) -> PyErr {
        self.index = self.count + 1; // done: the iterator stays exhausted
        let fail = match decode_records(self.source.section(), &self.header, self.offset_base) {
            Err(fail) => fail,
            Ok(_) => Fail::new("records could not be decoded", "records", None),
        };
        decode_error(py, fail, API)
    }

    fn next<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let buf = self.source.section();
        if self.index >= self.count {
            if self.index == self.count && self.pos != buf.len() {
                return Err(self.fault(py)); // bytes left over
            }
            return Ok(None);
        }
        self.header_spans.clear();
        let Some((rec, end)) = record_at(buf, self.pos, self.index, self.count, &mut self.header_spans) else {
            return Err(self.fault(py));
        };
        let Some((offset, ts)) = absolute(&self.header, &rec) else {
            return Err(self.fault(py));
        };
        let slot = self.turn;
        let record = self.maker.make(
            py,
            buf,
            offset,
            ts,
            rec.key,
            rec.value,
            &self.header_spans,
            &mut self.last_ts,
            self.recent[slot].as_ref(),
        )?;
        if self.recent[slot].as_ref().map(|r| r.as_ptr()) != Some(record.as_ptr()) {
            self.recent[slot] = Some(record.clone().unbind());
        }
        self.turn = slot ^ 1;
        self.pos = end;
        self.index += 1;
        Ok(Some(record))
    }
}

#[pymethods]
impl RecordIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        // A plain load and store: the GIL orders them (see the type's docs).
        if self.busy.load(Ordering::Relaxed) {
            return Err(PyRuntimeError::new_err("RecordIterator.__next__ re-entered"));
        }
        self.busy.store(true, Ordering::Relaxed);
        // Safety: the busy flag makes this the only live reference to the state.
        let result = unsafe { (*self.state.get()).next(py) };
        self.busy.store(false, Ordering::Relaxed);
        result
    }

    fn __length_hint__(&self) -> usize {
        if self.busy.load(Ordering::Relaxed) {
            return 0;
        }
        // Safety: read-only, not inside __next__ (busy is false).
        let state = unsafe { &*self.state.get() };
        state.count.saturating_sub(state.index)
    }
}

fn int64_bytes<'py>(py: Python<'py>, v: &[i64]) -> Bound<'py, PyBytes> {
    // Safety: an i64 slice viewed as its bytes (native order), same lifetime.
    let raw = unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 8) };
    PyBytes::new(py, raw)
}

fn bytes_list<'py>(py: Python<'py>, buf: &[u8], spans: &[Span]) -> PyResult<Bound<'py, PyAny>> {
    // Safety: as in records(): n slots, each filled once.
    let list = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyList_New(spans.len() as ffi::Py_ssize_t))? };
    for (i, s) in spans.iter().enumerate() {
        let item = bytes_or_none(py, buf, *s)?;
        // Safety: i < len; steals the reference.
        unsafe { ffi::PyList_SET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t, item.into_ptr()) };
    }
    Ok(list)
}

/// (offsets int64 bytes, timestamps int64 bytes, keys, values, headers or None).
pub fn columns<'py>(py: Python<'py>, buf: &[u8], recs: &Records) -> PyResult<Bound<'py, PyAny>> {
    let headers_col = if recs.has_headers() {
        let empty = PyTuple::empty(py);
        let mut all = Vec::with_capacity(recs.len());
        for i in 0..recs.len() {
            let (first, n) = recs.header_ranges[i];
            all.push(headers(py, buf, &recs.header_spans[first..first + n], &empty)?);
        }
        PyList::new(py, all)?.into_any()
    } else {
        py.None().into_bound(py)
    };
    let items: [Bound<'py, PyAny>; 5] = [
        int64_bytes(py, &recs.offsets).into_any(),
        int64_bytes(py, &recs.timestamps).into_any(),
        bytes_list(py, buf, &recs.keys)?,
        bytes_list(py, buf, &recs.values)?,
        headers_col,
    ];
    Ok(PyTuple::new(py, items)?.into_any())
}

/// The Arrow-ready buffers of a batch, built without the GIL.
pub struct ArrowParts {
    pub offsets: Vec<i64>,
    pub timestamps: Vec<i64>,
    pub keys: BinaryColumn,
    pub values: BinaryColumn,
    /// (list offsets, header keys, header values) when some record has headers.
    pub headers: Option<(Vec<i32>, BinaryColumn, BinaryColumn)>,
}

pub fn arrow_parts(buf: &[u8], recs: Records) -> Result<ArrowParts, &'static str> {
    const TOO_BIG: &str = "the batch holds more than 2 GiB of keys, values or headers: \
                           Arrow's int32 offsets cannot address it; use columns()";
    let keys = binary_column(buf, recs.keys.iter()).map_err(|_| TOO_BIG)?;
    let values = binary_column(buf, recs.values.iter()).map_err(|_| TOO_BIG)?;
    let headers = if recs.has_headers() {
        let mut list = Vec::with_capacity(recs.len() + 1);
        list.push(0i32);
        for &(first, n) in &recs.header_ranges {
            list.push((first + n) as i32);
        }
        let hkeys = binary_column(buf, recs.header_spans.iter().map(|h| &h.key)).map_err(|_| TOO_BIG)?;
        let hvalues = binary_column(buf, recs.header_spans.iter().map(|h| &h.value)).map_err(|_| TOO_BIG)?;
        Some((list, hkeys, hvalues))
    } else {
        None
    };
    Ok(ArrowParts { offsets: recs.offsets, timestamps: recs.timestamps, keys, values, headers })
}

fn column<'py>(py: Python<'py>, col: BinaryColumn) -> PyResult<Bound<'py, PyAny>> {
    let validity = match col.validity {
        Some(v) => Py::new(py, Buffer::bytes(v))?.into_bound(py).into_any(),
        None => py.None().into_bound(py),
    };
    let items: [Bound<'py, PyAny>; 4] = [
        Py::new(py, Buffer::int32(col.offsets))?.into_bound(py).into_any(),
        Py::new(py, Buffer::bytes(col.data))?.into_bound(py).into_any(),
        validity,
        col.null_count.into_pyobject(py)?.into_any(),
    ];
    Ok(PyTuple::new(py, items)?.into_any())
}

/// (offsets, timestamps, keys, values, headers): Buffer objects; a column is
/// (offsets int32, data, validity or None, null count); headers are None or
/// (list offsets int32, key column, value column).
pub fn arrow<'py>(py: Python<'py>, parts: ArrowParts) -> PyResult<Bound<'py, PyAny>> {
    let headers = match parts.headers {
        Some((list, hkeys, hvalues)) => {
            let items: [Bound<'py, PyAny>; 3] = [
                Py::new(py, Buffer::int32(list))?.into_bound(py).into_any(),
                column(py, hkeys)?,
                column(py, hvalues)?,
            ];
            PyTuple::new(py, items)?.into_any()
        }
        None => py.None().into_bound(py),
    };
    let items: [Bound<'py, PyAny>; 5] = [
        Py::new(py, Buffer::int64(parts.offsets))?.into_bound(py).into_any(),
        Py::new(py, Buffer::int64(parts.timestamps))?.into_bound(py).into_any(),
        column(py, parts.keys)?,
        column(py, parts.values)?,
        headers,
    ];
    Ok(PyTuple::new(py, items)?.into_any())
}

pub fn arrow_overflow(msg: &str) -> PyErr {
    PyOverflowError::new_err(msg.to_string())
}
