//! A decoding failure, described in the terms of `kafkacore.errors.DecodeError`.

/// Raised in Python as `DecodeError(reason, api=..., field=field, offset=offset)`,
/// or as its subclass `CorruptRecordError` when `corrupt` (a checksum mismatch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail {
    pub reason: String,
    pub field: String,
    pub offset: Option<usize>,
    pub corrupt: bool,
}

impl Fail {
    pub fn new(reason: impl Into<String>, field: impl Into<String>, offset: Option<usize>) -> Self {
        Fail { reason: reason.into(), field: field.into(), offset, corrupt: false }
    }

    /// A failure inside a compressed stream: field "records", no byte offset.
    pub fn records(reason: impl Into<String>) -> Self {
        Fail::new(reason, "records", None)
    }
}
