//! Bytes in and out of Python without extra copies.
//!
//! [`Input`] borrows the bytes of any C-contiguous buffer (bytes take a
//! shortcut). Only a read-only buffer may be read with the GIL released, or
//! across calls that can run Python code: a writable one (a bytearray) is
//! copied first, so no Rust reference ever sees bytes change under it.
//!
//! [`Buffer`] hands a Rust vector to Python through the buffer protocol:
//! `memoryview(buf)` and `pyarrow.py_buffer(buf)` use the vector's memory
//! in place, typed as unsigned bytes, int32 or int64 (native byte order).

use std::ffi::{c_char, c_int, c_void};
use std::mem::MaybeUninit;

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

/// The bytes of a Python bytes-like object (kept exported until dropped).
pub struct Input {
    ptr: *const u8,
    len: usize,
    readonly: bool,
    view: Option<Box<ffi::Py_buffer>>,
    _owner: Py<PyAny>,
}

// Safety: the pointer stays valid while the owner is referenced and the
// buffer exported (until Drop); the view is released with the thread
// attached. Only read-only inputs are read by other threads (detach).
unsafe impl Send for Input {}
unsafe impl Sync for Input {}

impl Input {
    pub fn new(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let raw = obj.as_ptr();
        // Safety: type checks and accessors on a live object, with the GIL held.
        unsafe {
            if ffi::PyBytes_Check(raw) != 0 {
                return Ok(Input {
                    ptr: ffi::PyBytes_AsString(raw) as *const u8,
                    len: ffi::PyBytes_Size(raw) as usize,
                    readonly: true,
                    view: None,
                    _owner: obj.clone().unbind(),
                });
            }
            let mut view: Box<MaybeUninit<ffi::Py_buffer>> = Box::new(MaybeUninit::zeroed());
            if ffi::PyObject_GetBuffer(raw, view.as_mut_ptr(), ffi::PyBUF_SIMPLE) != 0 {
                return Err(PyErr::fetch(obj.py()));
            }
            // PyObject_GetBuffer filled it in.
            let view: Box<ffi::Py_buffer> = Box::from_raw(Box::into_raw(view) as *mut ffi::Py_buffer);
            Ok(Input {
                ptr: view.buf as *const u8,
                len: view.len.max(0) as usize,
                readonly: view.readonly != 0,
                view: Some(view),
                _owner: obj.clone().unbind(),
            })
        }
    }

    /// Whether the exporter promised the bytes cannot change.
    pub fn readonly(&self) -> bool {
        self.readonly
    }

    pub fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // Safety: the exporter keeps ptr..ptr+len valid until the buffer is released (Drop).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        if let Some(view) = self.view.as_mut() {
            // Safety: releases the buffer acquired in new(), once, attached.
            Python::attach(|_| unsafe { ffi::PyBuffer_Release(&mut **view) });
        }
    }
}

/// Inputs at least this large are decoded with the GIL released.
pub const DETACH_BYTES: usize = 64 * 1024;

/// Run `f` with the GIL released when `detach`, else in place.
pub fn maybe_detach<T, F>(py: Python<'_>, detach: bool, f: F) -> T
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    if detach {
        py.detach(f)
    } else {
        f()
    }
}

enum Storage {
    U8(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

/// A read-only, typed, one-dimensional buffer owned by Rust.
#[pyclass(frozen, module = "kafkacore.records._native", name = "Buffer")]
pub struct Buffer {
    storage: Storage,
    shape: [ffi::Py_ssize_t; 1],
    strides: [ffi::Py_ssize_t; 1],
}

impl Buffer {
    fn with(storage: Storage) -> Buffer {
        let (n, itemsize) = match &storage {
            Storage::U8(v) => (v.len(), 1),
            Storage::I32(v) => (v.len(), 4),
            Storage::I64(v) => (v.len(), 8),
        };
        Buffer { storage, shape: [n as ffi::Py_ssize_t], strides: [itemsize] }
    }
    pub fn bytes(v: Vec<u8>) -> Buffer {
        Buffer::with(Storage::U8(v))
    }
    pub fn int32(v: Vec<i32>) -> Buffer {
        Buffer::with(Storage::I32(v))
    }
    pub fn int64(v: Vec<i64>) -> Buffer {
        Buffer::with(Storage::I64(v))
    }
    fn raw(&self) -> (*const c_void, usize, &'static [u8]) {
        match &self.storage {
            Storage::U8(v) => (v.as_ptr() as *const c_void, v.len(), b"B\0"),
            Storage::I32(v) => (v.as_ptr() as *const c_void, v.len() * 4, b"i\0"),
            Storage::I64(v) => (v.as_ptr() as *const c_void, v.len() * 8, b"q\0"),
        }
    }
}

#[pymethods]
impl Buffer {
    /// Size in bytes.
    fn __len__(&self) -> usize {
        self.raw().1
    }

    /// Exports the vector read-only (`PyBUF_WRITABLE` is refused).
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("kafkacore.records._native.Buffer is read-only"));
        }
        let me = slf.get();
        let (ptr, nbytes, format) = me.raw();
        // Safety: `view` is the caller's Py_buffer to fill. The pointers
        // stored point into this frozen object (its vector, its shape and
        // strides arrays), which view.obj keeps alive until the release.
        unsafe {
            (*view).obj = slf.clone().into_any().into_ptr();
            (*view).buf = ptr as *mut c_void;
            (*view).len = nbytes as ffi::Py_ssize_t;
            (*view).readonly = 1;
            (*view).itemsize = me.strides[0];
            (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
                format.as_ptr() as *mut c_char
            } else {
                std::ptr::null_mut()
            };
            (*view).ndim = 1;
            (*view).shape = if flags & ffi::PyBUF_ND == ffi::PyBUF_ND {
                me.shape.as_ptr() as *mut ffi::Py_ssize_t
            } else {
                std::ptr::null_mut()
            };
            (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
                me.strides.as_ptr() as *mut ffi::Py_ssize_t
            } else {
                std::ptr::null_mut()
            };
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = std::ptr::null_mut();
        }
        Ok(())
    }
}
