//! The Python classes the extension raises and builds, looked up once.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

use crate::fail::Fail;

pub struct Classes {
    pub decode_error: Py<PyType>,
    pub corrupt_error: Py<PyType>,
    pub local_error: Py<PyType>,
    pub record: Py<PyType>,
    /// Record is a tuple subclass with a tuple's layout (a NamedTuple, no
    /// __dict__ or extra slots): its instances can be allocated and filled
    /// like tuples.
    pub record_is_tuple: bool,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

pub fn classes(py: Python<'_>) -> PyResult<&'static Classes> {
    CLASSES.get_or_try_init(py, || {
        let errors = py.import("kafkacore.errors")?;
        let model = py.import("kafkacore.records.model")?;
        let record = model.getattr("Record")?.cast_into::<PyType>()?;
        let tp = record.as_type_ptr();
        // Safety: reads type slots of a live type object and of the tuple type.
        let record_is_tuple = unsafe {
            let tuple = std::ptr::addr_of_mut!(ffi::PyTuple_Type);
            ffi::PyType_IsSubtype(tp, tuple) != 0
                && (*tp).tp_basicsize == (*tuple).tp_basicsize
                && (*tp).tp_itemsize == (*tuple).tp_itemsize
                && (*tp).tp_dictoffset == 0
        };
        Ok(Classes {
            decode_error: errors.getattr("DecodeError")?.cast_into::<PyType>()?.unbind(),
            corrupt_error: model.getattr("CorruptRecordError")?.cast_into::<PyType>()?.unbind(),
            local_error: errors.getattr("LocalProtocolError")?.cast_into::<PyType>()?.unbind(),
            record: record.unbind(),
            record_is_tuple,
        })
    })
}

/// The DecodeError (or CorruptRecordError) for `fail`, naming `api`.
pub fn decode_error(py: Python<'_>, fail: Fail, api: &str) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let c = classes(py)?;
        let cls = if fail.corrupt { &c.corrupt_error } else { &c.decode_error };
        let kwargs = PyDict::new(py);
        kwargs.set_item("api", api)?;
        kwargs.set_item("field", &fail.field)?;
        kwargs.set_item("offset", fail.offset)?;
        Ok(PyErr::from_value(cls.bind(py).call((&fail.reason,), Some(&kwargs))?))
    };
    build().unwrap_or_else(|e| e)
}

/// A LocalProtocolError (caller misuse) with `message`.
pub fn local_error(py: Python<'_>, message: &str) -> PyErr {
    match classes(py) {
        Ok(c) => match c.local_error.bind(py).call1((message,)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(e) => e,
        },
        Err(e) => e,
    }
}
