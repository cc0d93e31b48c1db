//! Batch codecs: gzip, snappy (raw and xerial framing), lz4 frame and zstd.
//!
//! Mirrors `kafkacore/records/compression.py`: the same framings are written
//! and accepted, and every decompressor is bounded. Output grows
//! geometrically and never past `max_size + 1` bytes, so a decompression
//! bomb fails with "inflates beyond max_size" after at most that much
//! memory; nothing is allocated from a size a stream merely claims.
//! Failures carry the reason texts of the Python module, so both
//! implementations raise the same DecodeError for the same stream (the
//! detail in parentheses after "corrupt <codec> stream" is the library's
//! own wording and may differ).

use std::cell::RefCell;
use std::ffi::CStr;

use flate2::{Compress, Compression as GzLevel, Decompress, FlushCompress, FlushDecompress, Status};
use lz4_sys::{
    BlockChecksum, BlockMode, BlockSize, ContentChecksum, FrameType, LZ4FCompressionContext,
    LZ4FDecompressionContext, LZ4FFrameInfo, LZ4FPreferences, LZ4F_VERSION,
};

use crate::fail::Fail;

pub const NONE: u8 = 0;
pub const GZIP: u8 = 1;
pub const SNAPPY: u8 = 2;
pub const LZ4: u8 = 3;
pub const ZSTD: u8 = 4;

const XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
/// snappy-java's block size, which Kafka keeps.
const XERIAL_BLOCK: usize = 32 * 1024;
const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4D, 0x18];
/// Java's default lz4 level, which KIP-390 maps to the fast compressor.
const LZ4_JAVA_DEFAULT: i32 = 9;
const ZSTD_DEFAULT_LEVEL: i32 = 3;

fn too_big(name: &str, max_size: usize) -> Fail {
    Fail::records(format!(
        "{name} stream inflates beyond max_size={max_size} bytes; \
         raise max_decompressed_size if this batch is legitimate"
    ))
}

fn corrupt(name: &str, detail: impl std::fmt::Display) -> Fail {
    Fail::records(format!("corrupt {name} stream ({detail})"))
}

/// Output that grows geometrically up to `max_size + 1` bytes (one byte
/// past the cap is how "too big" is seen) and no further.
struct Bounded {
    out: Vec<u8>,
    limit: usize,
}

impl Bounded {
    fn new(max_size: usize, hint: usize) -> Self {
        let limit = max_size.saturating_add(1);
        let first = hint.clamp(4096, 1 << 20).min(limit);
        Bounded { out: Vec::with_capacity(first), limit }
    }

    /// Make sure there is spare capacity; false when the cap is reached.
    fn grow(&mut self) -> bool {
        let len = self.out.len();
        if len >= self.limit {
            return false;
        }
        if self.out.capacity() == len {
            self.out.reserve_exact(len.max(4096).min(self.limit - len));
        }
        true
    }

    fn spare(&self) -> usize {
        self.out.capacity() - self.out.len()
    }
}

// ---------------------------------------------------------------------------
// Decompression
// ---------------------------------------------------------------------------

/// Decompress one records section; `magic` selects the KAFKA-3160 lz4 quirk (magic 0).
pub fn decompress(codec: u8, data: &[u8], max_size: usize, magic: u8) -> Result<Vec<u8>, Fail> {
    match codec {
        GZIP => gunzip(data, max_size),
        SNAPPY => unsnappy(data, max_size),
        LZ4 => unlz4(data, max_size, magic),
        ZSTD => unzstd(data, max_size),
        _ => Err(Fail::new(format!("unknown compression codec {codec}"), "attributes", None)),
    }
}

fn gunzip(data: &[u8], max_size: usize) -> Result<Vec<u8>, Fail> {
    // Concatenated members are read one after another, as GZIPInputStream does.
    let mut buf = Bounded::new(max_size, data.len().saturating_mul(4));
    let mut pos = 0usize;
    loop {
        let mut d = Decompress::new_gzip(15);
        loop {
            if !buf.grow() {
                return Err(too_big("gzip", max_size));
            }
            let spare = buf.spare();
            let before_in = d.total_in();
            let before_out = buf.out.len();
            // decompress_vec writes into the spare capacity only.
            let status = d
                .decompress_vec(&data[pos..], &mut buf.out, FlushDecompress::None)
                .map_err(|e| corrupt("gzip", e))?;
            pos += (d.total_in() - before_in) as usize;
            let produced = buf.out.len() - before_out;
            if buf.out.len() > max_size {
                return Err(too_big("gzip", max_size));
            }
            if status == Status::StreamEnd {
                break;
            }
            if produced < spare && (pos >= data.len() || d.total_in() == before_in) {
                // Room to write, yet nothing more comes: the member is cut short.
                return Err(Fail::records("truncated gzip stream"));
            }
        }
        if pos >= data.len() {
            return Ok(buf.out);
        }
    }
}

fn read_snappy_preamble(view: &[u8]) -> Result<u64, Fail> {
    let mut claimed: u64 = 0;
    let mut shift = 0u32;
    for i in 0..5 {
        let b = *view.get(i).ok_or_else(|| Fail::records("truncated snappy length preamble"))?;
        claimed |= ((b & 0x7F) as u64) << shift;
        if b < 0x80 {
            return Ok(claimed);
        }
        shift += 7;
    }
    Err(Fail::records("snappy length preamble longer than 5 bytes"))
}

fn raw_snappy(view: &[u8], budget: usize, max_size: usize, out: &mut Vec<u8>) -> Result<(), Fail> {
    // The raw format starts with the uncompressed length: check it against
    // the budget before anything is allocated for it.
    let claimed = read_snappy_preamble(view)?;
    if claimed > budget as u64 {
        return Err(too_big("snappy", max_size));
    }
    let start = out.len();
    out.resize(start + claimed as usize, 0);
    let n = snap::raw::Decoder::new()
        .decompress(view, &mut out[start..])
        .map_err(|e| corrupt("snappy", e))?;
    if n as u64 != claimed {
        return Err(Fail::records("snappy block shorter than its preamble"));
    }
    Ok(())
}

fn unsnappy(data: &[u8], max_size: usize) -> Result<Vec<u8>, Fail> {
    let mut out = Vec::new();
    if data.len() < 8 || &data[..8] != XERIAL_MAGIC {
        raw_snappy(data, max_size, max_size, &mut out)?;
        return Ok(out);
    }
    if data.len() < 16 {
        return Err(Fail::new("truncated xerial snappy header", "records", Some(0)));
    }
    let mut pos = 16usize;
    let end = data.len();
    while pos < end {
        if pos + 4 > end {
            return Err(Fail::new("truncated xerial snappy block length", "records", Some(pos)));
        }
        let n = i32::from_be_bytes([data[pos], data[pos + 1], data[pos + 2], data[pos + 3]]);
        pos += 4;
        if n < 0 || pos + n as usize > end {
            return Err(Fail::new(
                format!("xerial snappy block length {n} exceeds stream"),
                "records",
                Some(pos - 4),
            ));
        }
        let n = n as usize;
        let budget = max_size - out.len();
        raw_snappy(&data[pos..pos + n], budget, max_size, &mut out)?;
        pos += n;
    }
    Ok(out)
}

/// xxHash32 (seed 0) of a short input: only an lz4 frame descriptor is hashed here.
fn xxh32_short(data: &[u8]) -> u32 {
    const P1: u32 = 2_654_435_761;
    const P2: u32 = 2_246_822_519;
    const P3: u32 = 3_266_489_917;
    const P4: u32 = 668_265_263;
    const P5: u32 = 374_761_393;
    debug_assert!(data.len() < 16);
    let mut h = P5.wrapping_add(data.len() as u32);
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        let k = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        h = h.wrapping_add(k.wrapping_mul(P3));
        h = h.rotate_left(17).wrapping_mul(P4);
    }
    for &b in words.remainder() {
        h = h.wrapping_add((b as u32).wrapping_mul(P5));
        h = h.rotate_left(11).wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^= h >> 16;
    h
}

/// KAFKA-3160 / KIP-57: magic-0 lz4 messages carry a header checksum computed
/// over the wrong bytes; put the right one in, which is what ignoring it amounts to.
fn fix_lz4_header_checksum(frame: &[u8]) -> Result<Vec<u8>, Fail> {
    if frame.len() < 7 || frame[..4] != LZ4_MAGIC {
        return Err(Fail::new("not an lz4 frame (bad magic)", "records", Some(0)));
    }
    let flg = frame[4];
    let end = 6 + if flg & 0x08 != 0 { 8 } else { 0 } + if flg & 0x01 != 0 { 4 } else { 0 };
    if frame.len() <= end {
        return Err(Fail::new("truncated lz4 frame descriptor", "records", Some(4)));
    }
    let mut fixed = frame.to_vec();
    fixed[end] = ((xxh32_short(&frame[4..end]) >> 8) & 0xFF) as u8;
    Ok(fixed)
}

fn lz4_error_name(code: usize) -> String {
    // Safety: LZ4F_getErrorName returns a static NUL-terminated string for any code.
    unsafe { CStr::from_ptr(lz4_sys::LZ4F_getErrorName(code)) }
        .to_string_lossy()
        .into_owned()
}

/// A decompression context per thread (contexts are not shared between
/// threads, and creating one per batch would cost more than small batches).
struct Lz4Dctx(LZ4FDecompressionContext);

impl Lz4Dctx {
    fn create() -> Option<Self> {
        let mut ctx = LZ4FDecompressionContext(std::ptr::null_mut());
        // Safety: plain constructor; the context is freed in Drop.
        let code = unsafe { lz4_sys::LZ4F_createDecompressionContext(&mut ctx, LZ4F_VERSION) };
        // Safety: LZ4F_isError only inspects the code.
        if unsafe { lz4_sys::LZ4F_isError(code) } != 0 || ctx.0.is_null() {
            return None;
        }
        Some(Lz4Dctx(ctx))
    }
}

impl Drop for Lz4Dctx {
    fn drop(&mut self) {
        // Safety: the context came from LZ4F_createDecompressionContext and is freed once.
        unsafe {
            lz4_sys::LZ4F_freeDecompressionContext(self.0);
        }
    }
}

thread_local! {
    static LZ4_DCTX: RefCell<Option<Lz4Dctx>> = const { RefCell::new(None) };
    static ZSTD_DCTX: RefCell<Option<zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
    static ZSTD_CCTX: RefCell<Option<zstd_safe::CCtx<'static>>> = const { RefCell::new(None) };
}

fn unlz4(data: &[u8], max_size: usize, magic: u8) -> Result<Vec<u8>, Fail> {
    let fixed;
    let data = if magic == 0 {
        fixed = fix_lz4_header_checksum(data)?;
        &fixed[..]
    } else {
        data
    };
    let ctx = LZ4_DCTX
        .with(|cell| cell.borrow_mut().take())
        .or_else(Lz4Dctx::create)
        .ok_or_else(|| Fail::records("lz4 decompression context could not be created"))?;
    // Safety: a context is reset before each use (it may hold a failed frame's state).
    unsafe { lz4_sys::LZ4F_resetDecompressionContext(ctx.0) };
    let result = unlz4_frames(&ctx, data, max_size);
    if result.is_err() {
        // Safety: as above; an errored context must be reset before reuse.
        unsafe { lz4_sys::LZ4F_resetDecompressionContext(ctx.0) };
    }
    LZ4_DCTX.with(|cell| *cell.borrow_mut() = Some(ctx));
    result
}

fn unlz4_frames(ctx: &Lz4Dctx, data: &[u8], max_size: usize) -> Result<Vec<u8>, Fail> {
    let mut buf = Bounded::new(max_size, data.len().saturating_mul(4));
    let mut pos = 0usize;
    loop {
        // One frame (concatenated frames are read one after another).
        loop {
            if !buf.grow() {
                return Err(too_big("lz4", max_size));
            }
            let spare = buf.spare();
            let mut dst_size = spare;
            let mut src_size = data.len() - pos;
            let len = buf.out.len();
            // Safety: dst points at `spare` bytes of the Vec's spare capacity
            // (within its allocation), src at the unread input; LZ4F writes at
            // most *dst_size bytes and reads at most *src_size bytes, and
            // reports both back.
            let code = unsafe {
                lz4_sys::LZ4F_decompress(
                    ctx.0,
                    buf.out.as_mut_ptr().add(len),
                    &mut dst_size,
                    data.as_ptr().add(pos),
                    &mut src_size,
                    std::ptr::null(),
                )
            };
            // Safety: LZ4F_isError only inspects the code.
            if unsafe { lz4_sys::LZ4F_isError(code) } != 0 {
                return Err(corrupt("lz4", lz4_error_name(code)));
            }
            // Safety: LZ4F wrote dst_size (<= spare) initialized bytes after len.
            unsafe { buf.out.set_len(len + dst_size) };
            pos += src_size;
            if buf.out.len() > max_size {
                return Err(too_big("lz4", max_size));
            }
            if code == 0 {
                break; // frame complete
            }
            if pos >= data.len() && dst_size < spare {
                return Err(Fail::records("truncated lz4 frame"));
            }
            if dst_size == 0 && src_size == 0 {
                return Err(corrupt("lz4", "the decoder made no progress"));
            }
        }
        if pos >= data.len() {
            return Ok(buf.out);
        }
    }
}

fn unzstd(data: &[u8], max_size: usize) -> Result<Vec<u8>, Fail> {
    if data.is_empty() {
        return Err(Fail::records("empty zstd stream"));
    }
    let mut dctx = ZSTD_DCTX
        .with(|cell| cell.borrow_mut().take())
        .unwrap_or_else(zstd_safe::DCtx::create);
    let _ = dctx.reset(zstd_safe::ResetDirective::SessionOnly);
    let result = unzstd_frames(&mut dctx, data, max_size);
    let _ = dctx.reset(zstd_safe::ResetDirective::SessionOnly);
    ZSTD_DCTX.with(|cell| *cell.borrow_mut() = Some(dctx));
    result
}

fn unzstd_frames(
    dctx: &mut zstd_safe::DCtx<'static>,
    data: &[u8],
    max_size: usize,
) -> Result<Vec<u8>, Fail> {
    let mut buf = Bounded::new(max_size, data.len().saturating_mul(4));
    let mut pos = 0usize;
    while pos < data.len() {
        loop {
            if !buf.grow() {
                return Err(too_big("zstd", max_size));
            }
            let spare = buf.spare();
            let len = buf.out.len();
            let mut input = zstd_safe::InBuffer::around(&data[pos..]);
            let mut output = zstd_safe::OutBuffer::around_pos(&mut buf.out, len);
            let hint = dctx
                .decompress_stream(&mut output, &mut input)
                .map_err(|code| corrupt("zstd", zstd_safe::get_error_name(code)))?;
            let produced = output.pos() - len;
            let input_used = input.pos();
            pos += input_used;
            if buf.out.len() > max_size {
                return Err(too_big("zstd", max_size));
            }
            if hint == 0 {
                break; // frame complete; what follows is the next frame
            }
            if pos >= data.len() && produced < spare {
                return Err(Fail::records("truncated zstd frame"));
            }
            if produced == 0 && input_used == 0 {
                return Err(corrupt("zstd", "the decoder made no progress"));
            }
        }
    }
    Ok(buf.out)
}

// ---------------------------------------------------------------------------
// Compression (the framings the Java producer writes)
// ---------------------------------------------------------------------------

/// Compress a records section; `level` None means the Java client's default.
pub fn compress(codec: u8, data: &[u8], level: Option<i32>) -> Result<Vec<u8>, String> {
    match codec {
        NONE => Ok(data.to_vec()),
        GZIP => gzip(data, level),
        SNAPPY => Ok(xerial(data)),
        LZ4 => lz4(data, level),
        ZSTD => zstd(data, level),
        _ => Err(format!("compress: unknown codec {codec}")),
    }
}

fn gzip(data: &[u8], level: Option<i32>) -> Result<Vec<u8>, String> {
    let level = match level {
        None | Some(-1) => GzLevel::default(),
        Some(l @ 0..=9) => GzLevel::new(l as u32),
        Some(l) => return Err(format!("gzip level {l} is out of range (0-9, or -1)")),
    };
    let mut c = Compress::new_gzip(level, 15);
    let mut out = Vec::with_capacity(data.len() / 2 + 64);
    loop {
        let before = c.total_in() as usize;
        if out.capacity() == out.len() {
            out.reserve(out.len().max(4096));
        }
        let status = c
            .compress_vec(&data[before..], &mut out, FlushCompress::Finish)
            .map_err(|e| format!("gzip compression failed: {e}"))?;
        if status == Status::StreamEnd {
            return Ok(out);
        }
    }
}

fn xerial(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + data.len() / 2 + 64);
    out.extend_from_slice(XERIAL_MAGIC);
    out.extend_from_slice(&1i32.to_be_bytes()); // version
    out.extend_from_slice(&1i32.to_be_bytes()); // minimum compatible version
    let mut enc = snap::raw::Encoder::new();
    for block in data.chunks(XERIAL_BLOCK) {
        let start = out.len();
        out.extend_from_slice(&[0, 0, 0, 0]);
        let bound = snap::raw::max_compress_len(block.len());
        out.resize(start + 4 + bound, 0);
        // A block of at most 32 KiB never exceeds snappy's input limit.
        let n = enc.compress(block, &mut out[start + 4..]).unwrap_or(0);
        out.truncate(start + 4 + n);
        out[start..start + 4].copy_from_slice(&(n as i32).to_be_bytes());
    }
    out
}

fn lz4(data: &[u8], level: Option<i32>) -> Result<Vec<u8>, String> {
    // Java (KIP-390) maps its default level 9 to the fast compressor and any
    // other level to HC; liblz4 levels below 3 are the fast one.
    let level = match level {
        None | Some(LZ4_JAVA_DEFAULT) => 0,
        Some(l) if l >= 0 => l as u32,
        Some(l) => return Err(format!("lz4 level {l} is out of range (0-17)")),
    };
    let prefs = LZ4FPreferences {
        frame_info: LZ4FFrameInfo {
            block_size_id: BlockSize::Max64KB,
            block_mode: BlockMode::Independent,
            content_checksum_flag: ContentChecksum::NoChecksum,
            frame_type: FrameType::Frame,
            content_size: 0,
            dict_id: 0,
            block_checksum_flag: BlockChecksum::NoBlockChecksum,
        },
        compression_level: level,
        auto_flush: 0,
        favor_dec_speed: 0,
        reserved: [0; 3],
    };
    let mut ctx = LZ4FCompressionContext(std::ptr::null_mut());
    // Safety: plain constructor; freed below on every path.
    let code = unsafe { lz4_sys::LZ4F_createCompressionContext(&mut ctx, LZ4F_VERSION) };
    // Safety: LZ4F_isError only inspects the code.
    if unsafe { lz4_sys::LZ4F_isError(code) } != 0 {
        return Err(format!("lz4 context: {}", lz4_error_name(code)));
    }
    let result = lz4_with(ctx, data, &prefs);
    // Safety: the context is freed exactly once.
    unsafe { lz4_sys::LZ4F_freeCompressionContext(ctx) };
    result
}

fn lz4_with(ctx: LZ4FCompressionContext, data: &[u8], prefs: &LZ4FPreferences) -> Result<Vec<u8>, String> {
    const HEADER_MAX: usize = 19;
    // Safety: LZ4F_compressBound only reads the preferences.
    let bound = unsafe { lz4_sys::LZ4F_compressBound(data.len(), prefs) };
    let cap = HEADER_MAX + bound + 8;
    let mut out: Vec<u8> = Vec::with_capacity(cap);
    let check = |code: usize| -> Result<usize, String> {
        // Safety: LZ4F_isError only inspects the code.
        if unsafe { lz4_sys::LZ4F_isError(code) } != 0 {
            Err(format!("lz4 compression failed: {}", lz4_error_name(code)))
        } else {
            Ok(code)
        }
    };
    // Safety: every call writes into the Vec's spare capacity and is told how
    // much of it there is; the lengths returned are the bytes written.
    unsafe {
        let mut len = check(lz4_sys::LZ4F_compressBegin(ctx, out.as_mut_ptr(), cap, prefs))?;
        len += check(lz4_sys::LZ4F_compressUpdate(
            ctx,
            out.as_mut_ptr().add(len),
            cap - len,
            data.as_ptr(),
            data.len(),
            std::ptr::null(),
        ))?;
        len += check(lz4_sys::LZ4F_compressEnd(
            ctx,
            out.as_mut_ptr().add(len),
            cap - len,
            std::ptr::null(),
        ))?;
        out.set_len(len);
    }
    Ok(out)
}

fn zstd(data: &[u8], level: Option<i32>) -> Result<Vec<u8>, String> {
    let level = level.unwrap_or(ZSTD_DEFAULT_LEVEL);
    let mut cctx = ZSTD_CCTX
        .with(|cell| cell.borrow_mut().take())
        .unwrap_or_else(zstd_safe::CCtx::create);
    let mut out: Vec<u8> = Vec::with_capacity(zstd_safe::compress_bound(data.len()));
    let result = cctx
        .compress(&mut out, data, level)
        .map(|_| out)
        .map_err(|code| format!("zstd compression failed: {}", zstd_safe::get_error_name(code)));
    ZSTD_CCTX.with(|cell| *cell.borrow_mut() = Some(cctx));
    result
}
