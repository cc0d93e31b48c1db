//! Kafka's murmur2 (Java `Utils.murmur2`): the keyed partitioner's hash.

const SEED: u32 = 0x9747_B28C;
const M: u32 = 0x5BD1_E995;
const R: u32 = 24;

/// murmur2 of `data` as Java computes it, returned as a signed 32-bit int.
pub fn murmur2(data: &[u8]) -> i32 {
    // Java's int arithmetic wraps: every operation here is a wrapping one.
    let mut h: u32 = SEED ^ (data.len() as u32);
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        // The Java switch falls through: byte 2, then 1, then 0, then one multiply.
        if tail.len() >= 3 {
            h ^= (tail[2] as u32) << 16;
        }
        if tail.len() >= 2 {
            h ^= (tail[1] as u32) << 8;
        }
        h ^= tail[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}
