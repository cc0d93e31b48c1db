//! Zigzag varints of v2 records (NOTES.md c.1), read with the exact failure
//! modes of `kafkacore.records._varint.read_zigzag`, so both implementations
//! report the same error for the same bytes.

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The buffer ended inside the varint (Python's IndexError).
    Truncated,
    /// `max_bytes` bytes all had the continuation bit set.
    TooLong,
    /// The value does not fit 32 (max_bytes 5) or 64 (max_bytes 10) bits.
    OutOfRange,
}

impl VarintError {
    /// The reason text the pure-Python decoder gives for this failure.
    pub fn reason(self, max_bytes: usize) -> String {
        match self {
            VarintError::Truncated => "truncated varint".to_string(),
            VarintError::TooLong => format!("varint longer than {max_bytes} bytes"),
            VarintError::OutOfRange => {
                format!("varint value out of range for {max_bytes}-byte varint")
            }
        }
    }
}

/// Read a zigzag varint of at most `max_bytes` (5 for int32, 10 for int64)
/// bytes at `pos`; returns the value and the position after it.
#[inline(always)]
pub fn read_zigzag(buf: &[u8], pos: usize, max_bytes: usize) -> Result<(i64, usize), VarintError> {
    // One- and two-byte varints are nearly every varint of a real batch.
    if let Some(&b) = buf.get(pos) {
        if b < 0x80 {
            let z = b as u64;
            return Ok((((z >> 1) as i64) ^ -((z & 1) as i64), pos + 1));
        }
        if let Some(&c) = buf.get(pos + 1) {
            if c < 0x80 {
                let z = ((b & 0x7F) as u64) | ((c as u64) << 7);
                return Ok((((z >> 1) as i64) ^ -((z & 1) as i64), pos + 2));
            }
        }
    }
    read_zigzag_slow(buf, pos, max_bytes)
}

#[cold]
fn read_zigzag_slow(buf: &[u8], mut pos: usize, max_bytes: usize) -> Result<(i64, usize), VarintError> {
    // Up to 10 groups of 7 bits: 70 bits, so the sum is kept in a u128.
    let mut z: u128 = 0;
    let mut shift = 0u32;
    for _ in 0..max_bytes {
        let b = *buf.get(pos).ok_or(VarintError::Truncated)?;
        pos += 1;
        z |= ((b & 0x7F) as u128) << shift;
        if b < 0x80 {
            let bits = if max_bytes == 10 { 64 } else { 32 };
            if z >> bits != 0 {
                return Err(VarintError::OutOfRange);
            }
            let z = z as u64;
            return Ok((((z >> 1) as i64) ^ -((z & 1) as i64), pos));
        }
        shift += 7;
    }
    Err(VarintError::TooLong)
}

/// Append the zigzag varint encoding of `n` to `out`.
#[inline(always)]
pub fn write_zigzag(out: &mut Vec<u8>, n: i64) {
    let mut z = ((n << 1) ^ (n >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8 & 0x7F) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Length in bytes of the zigzag varint encoding of `n`.
#[inline(always)]
pub fn zigzag_len(n: i64) -> usize {
    let z = ((n << 1) ^ (n >> 63)) as u64;
    // Each byte carries 7 bits; zero still takes one byte.
    let bits = 64 - (z | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}
