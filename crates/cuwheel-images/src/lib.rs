//! Decompressing the images nvcc compressed (`--compress-mode`), with hard
//! limits, and weighing images deflated.
//!
//! In: an image's stored payload (LZ4 block or Zstandard frame, padded to
//! 8 bytes), the size its entry header claims, and a sink for the
//! decompressed bytes. Out: an [`Inflated`]: how many bytes it really
//! holds, and what is wrong with it ([`ImageProblem`]), the decompressed
//! bytes having gone to the sink in chunks as they came.
//!
//! Nothing is allocated from a header: the output streams through a buffer
//! of [`CHUNK`] bytes (LZ4 keeps its 64 KiB history besides; Zstandard its
//! window, at most 2^[`ZSTD_WINDOW_LOG_MAX`] bytes, refused above); it stops
//! at [`MAX_IMAGE_BYTES`]; the claimed size is only compared with the real
//! one, once the image has been read to its end.

use std::io::Read;
use std::sync::Mutex;

use memmap2::MmapMut;

/// The most bytes one image may decompress to: 1 GiB (the largest cubins
/// of real extensions are tens of MiB). Reading stops there.
pub const MAX_IMAGE_BYTES: u64 = 1 << 30;
/// The largest Zstandard window accepted: 128 MiB, Zstandard's own default.
pub const ZSTD_WINDOW_LOG_MAX: u32 = 27;
/// Bytes handed to the sink at a time.
pub const CHUNK: usize = 1 << 20;
/// How far back an LZ4 match may reach.
const LZ4_HISTORY: usize = 1 << 16;
/// An LZ4 image at most this large, once its real size is known, is
/// decompressed whole by lz4_flex (several times faster than streaming); a
/// larger one streams through the decoder here. torch 2.9.1's largest image
/// is 28 MiB, and a third of its libtorch_cuda.so's 5.2 GB of images lie in
/// images over 8 MiB.
const LZ4_WHOLE_MAX: u64 = 32 << 20;
/// What all threads together may hold in whole-decoding LZ4 buffers, in
/// use or kept for reuse: an image that would pass it streams instead, so
/// memory stays bounded however many threads decompress.
const LZ4_WHOLE_BUDGET: usize = 64 << 20;

/// The whole-decoding buffers not in use, and what all buffers, in use or
/// not, hold together. Buffers are anonymous maps, reused: a fresh one per
/// image cost a page fault per 4 KiB (5 GB of images in torch 2.9.1), and
/// heap blocks of this size, once freed, stayed in malloc's arenas (the
/// RSS grew by twice the budget); a map dropped from the pool is unmapped.
struct WholePool {
    free: Vec<MmapMut>,
    held: usize,
}

static WHOLE_POOL: Mutex<WholePool> = Mutex::new(WholePool {
    free: Vec::new(),
    held: 0,
});

/// A whole-decoding buffer of at least the size asked for, counted against
/// [`LZ4_WHOLE_BUDGET`] until it goes back to the pool.
struct WholeBuffer {
    buffer: Option<MmapMut>,
    size: usize,
}

impl WholeBuffer {
    fn reserve(size: u64) -> Option<WholeBuffer> {
        let size = usize::try_from(size).ok().filter(|&s| s > 0)?;
        if size as u64 > LZ4_WHOLE_MAX {
            return None;
        }
        let mut pool = WHOLE_POOL.lock().unwrap_or_else(|e| e.into_inner());
        // The smallest free buffer that is large enough.
        let fit = (0..pool.free.len())
            .filter(|&i| pool.free[i].len() >= size)
            .min_by_key(|&i| pool.free[i].len());
        if let Some(i) = fit {
            let buffer = Some(pool.free.swap_remove(i));
            return Some(WholeBuffer { buffer, size });
        }
        // A new one: make room by dropping free buffers, smallest first.
        pool.free.sort_by_key(|map| map.len());
        while pool.held + size > LZ4_WHOLE_BUDGET && !pool.free.is_empty() {
            let dropped = pool.free.remove(0);
            pool.held -= dropped.len();
        }
        if pool.held + size > LZ4_WHOLE_BUDGET {
            return None;
        }
        let buffer = MmapMut::map_anon(size).ok()?;
        pool.held += size;
        Some(WholeBuffer {
            buffer: Some(buffer),
            size,
        })
    }

    /// Exactly the size asked for: a decoder that fills it wrote every byte.
    fn bytes(&mut self) -> &mut [u8] {
        let buffer = self.buffer.as_mut().expect("held until dropped");
        &mut buffer[..self.size]
    }
}

impl Drop for WholeBuffer {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take() {
            let mut pool = WHOLE_POOL.lock().unwrap_or_else(|e| e.into_inner());
            pool.free.push(buffer);
        }
    }
}

/// How an image's payload is compressed (`--compress-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Lz4,
    Zstd,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "uncompressed",
            Compression::Lz4 => "LZ4",
            Compression::Zstd => "Zstandard",
        }
    }
}

/// What is wrong with a compressed image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageProblem {
    /// It does not decompress: why, and after how many good bytes.
    Corrupt { after: u64, error: String },
    /// It decompresses to more than [`MAX_IMAGE_BYTES`]; reading stopped there.
    TooLarge,
    /// It decompresses whole, but not to the size its header claims.
    SizeMismatch { claimed: u64, real: u64 },
}

/// The outcome of decompressing one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inflated {
    /// The bytes handed to the sink.
    pub bytes: u64,
    pub problem: Option<ImageProblem>,
}

/// Decompresses `payload` (compressed as `compression`; `claimed` is the
/// size its header gives), handing the bytes to `sink` as they come, at
/// most [`MAX_IMAGE_BYTES`] of them.
pub fn inflate(
    compression: Compression,
    payload: &[u8],
    claimed: u64,
    sink: &mut dyn FnMut(&[u8]),
) -> Inflated {
    inflate_limited(compression, payload, claimed, MAX_IMAGE_BYTES, sink)
}

/// [`inflate`] of an LZ4 image whose entry header gives its block's length
/// (`block_len`, without nvcc's padding): a block up to [`LZ4_WHOLE_MAX`]
/// (within [`LZ4_WHOLE_BUDGET`]) that decodes from exactly those bytes to
/// exactly `claimed` is decoded whole at once, without first walking its
/// sequences for where it ends; anything else goes through [`inflate`],
/// which says what is wrong.
pub fn inflate_lz4(
    payload: &[u8],
    block_len: u64,
    claimed: u64,
    sink: &mut dyn FnMut(&[u8]),
) -> Inflated {
    let block = usize::try_from(block_len)
        .ok()
        .filter(|&len| len > 0 && len <= payload.len());
    if let Some(mut whole) = block.and_then(|len| lz4_whole(&payload[..len], claimed)) {
        sink(whole.bytes());
        return Inflated {
            bytes: claimed,
            problem: None,
        };
    }
    inflate(Compression::Lz4, payload, claimed, sink)
}

/// `block` decoded whole by lz4_flex, when a buffer of `size` bytes fits
/// the budget and the block decodes to exactly that many.
fn lz4_whole(block: &[u8], size: u64) -> Option<WholeBuffer> {
    let mut whole = WholeBuffer::reserve(size)?;
    let bytes = whole.bytes();
    let wanted = bytes.len();
    (lz4_flex::block::decompress_into(block, bytes).ok() == Some(wanted)).then_some(whole)
}

/// [`inflate`] with another limit than [`MAX_IMAGE_BYTES`].
pub fn inflate_limited(
    compression: Compression,
    payload: &[u8],
    claimed: u64,
    limit: u64,
    sink: &mut dyn FnMut(&[u8]),
) -> Inflated {
    let mut counted = Counted {
        bytes: 0,
        limit,
        sink,
    };
    let result = match compression {
        Compression::None => counted.put(payload),
        Compression::Lz4 => lz4(payload, &mut counted),
        Compression::Zstd => zstd_frame(payload, &mut counted),
    };
    let bytes = counted.bytes;
    let problem = match result {
        Err(Stop::TooLarge) => Some(ImageProblem::TooLarge),
        Err(Stop::Corrupt(error)) => Some(ImageProblem::Corrupt {
            after: bytes,
            error,
        }),
        Ok(()) if bytes != claimed => Some(ImageProblem::SizeMismatch {
            claimed,
            real: bytes,
        }),
        Ok(()) => None,
    };
    Inflated { bytes, problem }
}

/// Decompresses `payload` whole into memory, `None` unless it decompresses
/// to exactly `claimed` bytes, at most `limit`.
pub fn inflate_to_vec(
    compression: Compression,
    payload: &[u8],
    claimed: u64,
    limit: u64,
) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let inflated = inflate_limited(compression, payload, claimed, limit, &mut |chunk| {
        out.extend_from_slice(chunk)
    });
    inflated.problem.is_none().then_some(out)
}

enum Stop {
    TooLarge,
    Corrupt(String),
}

/// The sink, counting and holding to the limit.
struct Counted<'a> {
    bytes: u64,
    limit: u64,
    sink: &'a mut dyn FnMut(&[u8]),
}

impl Counted<'_> {
    fn put(&mut self, data: &[u8]) -> Result<(), Stop> {
        let room = self.limit - self.bytes;
        if data.len() as u64 > room {
            (self.sink)(&data[..room as usize]);
            self.bytes = self.limit;
            return Err(Stop::TooLarge);
        }
        (self.sink)(data);
        self.bytes += data.len() as u64;
        Ok(())
    }
}

/// One Zstandard frame, then the payload's padding.
fn zstd_frame(payload: &[u8], out: &mut Counted<'_>) -> Result<(), Stop> {
    let corrupt = |e: std::io::Error| Stop::Corrupt(format!("Zstandard: {e}"));
    let mut decoder = zstd::stream::read::Decoder::with_buffer(payload)
        .map_err(corrupt)?
        .single_frame();
    decoder
        .window_log_max(ZSTD_WINDOW_LOG_MAX)
        .map_err(corrupt)?;
    let mut buffer = vec![0u8; CHUNK];
    loop {
        match decoder.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => out.put(&buffer[..n])?,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(corrupt(e)),
        }
    }
}

/// An LZ4 block: whole by lz4_flex when its sequences say it is small
/// (the common case, and faster), else streaming.
fn lz4(input: &[u8], out: &mut Counted<'_>) -> Result<(), Stop> {
    if let Some(mut whole) =
        lz4_extent(input).and_then(|(end, size)| lz4_whole(&input[..end], size))
    {
        return out.put(whole.bytes());
    }
    lz4_block(input, out)
}

/// Where an LZ4 block ends in `input` (before its padding) and how many
/// bytes it decompresses to, from its sequences' lengths alone; `None`
/// when they do not add up (the streaming decoder then says where) or
/// when it decompresses to more than [`LZ4_WHOLE_MAX`] (it then streams).
fn lz4_extent(input: &[u8]) -> Option<(usize, u64)> {
    let mut i = 0;
    let mut size: u64 = 0;
    loop {
        let token = *input.get(i)?;
        i += 1;
        let literals = length(input, &mut i, usize::from(token >> 4))?;
        i = i.checked_add(literals).filter(|&end| end <= input.len())?;
        size += literals as u64;
        if input[i..].iter().all(|&b| b == 0) {
            return (size <= LZ4_WHOLE_MAX).then_some((i, size));
        }
        let offset = input.get(i..i + 2)?;
        let offset = u64::from(u16::from_le_bytes([offset[0], offset[1]]));
        if offset == 0 || offset > size {
            return None;
        }
        i += 2;
        let matched = length(input, &mut i, usize::from(token & 0x0f))?.checked_add(4)?;
        size = size.checked_add(matched as u64)?;
        if size > LZ4_WHOLE_MAX || i >= input.len() {
            return None;
        }
    }
}

/// An LZ4 block (the format without frame, as nvcc stores it), decoded as
/// it streams: only the last 64 KiB it produced are kept to copy matches
/// from. The block may be followed by zero bytes of padding.
fn lz4_block(input: &[u8], out: &mut Counted<'_>) -> Result<(), Stop> {
    let corrupt = |at: usize, what: &str| Stop::Corrupt(format!("LZ4: {what} at byte {at}"));
    // produced bytes; `window[emitted..]` is not handed to the sink yet
    let mut window: Vec<u8> = Vec::with_capacity(LZ4_HISTORY + CHUNK);
    let mut emitted = 0;
    let mut total: u64 = 0;
    let mut i = 0;
    if input.is_empty() {
        return Err(corrupt(0, "an empty block"));
    }
    loop {
        let token = input[i];
        i += 1;
        let literals = length(input, &mut i, usize::from(token >> 4))
            .ok_or_else(|| corrupt(i, "the input ends inside a literal length"))?;
        let end = i
            .checked_add(literals)
            .filter(|&end| end <= input.len())
            .ok_or_else(|| corrupt(i, "literals run past the end of the input"))?;
        let mut literal = &input[i..end];
        while !literal.is_empty() {
            let n = literal.len().min(CHUNK);
            window.extend_from_slice(&literal[..n]);
            literal = &literal[n..];
            total += n as u64;
            if window.len() >= LZ4_HISTORY + CHUNK {
                flush(&mut window, &mut emitted, out)?;
            }
        }
        i = end;
        // The last sequence has literals only; nvcc pads the block with zeros.
        if input[i..].iter().all(|&b| b == 0) {
            return flush(&mut window, &mut emitted, out);
        }
        let offset = input
            .get(i..i + 2)
            .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
            .ok_or_else(|| corrupt(i, "the input ends inside a match offset"))?;
        if offset == 0 || offset as u64 > total {
            return Err(corrupt(
                i,
                &format!("a match reaches back {offset} bytes, before the start of the output"),
            ));
        }
        i += 2;
        let mut remaining = length(input, &mut i, usize::from(token & 0x0f))
            .and_then(|n| n.checked_add(4))
            .ok_or_else(|| corrupt(i, "the input ends inside a match length"))?;
        let mut produced = 0usize;
        while remaining > 0 {
            // Copying from any multiple of the offset back, inside this
            // match's own output (or the offset's bytes before it), repeats
            // the same bytes: the distance doubles as the output grows.
            let reach = (produced + offset).min(window.len());
            let distance = offset * (reach / offset);
            let start = window.len() - distance;
            let n = remaining.min(distance).min(CHUNK);
            window.extend_from_within(start..start + n);
            remaining -= n;
            produced += n;
            total += n as u64;
            if window.len() >= LZ4_HISTORY + CHUNK {
                flush(&mut window, &mut emitted, out)?;
            }
        }
        if i >= input.len() {
            return Err(corrupt(i, "the block ends with a match, not literals"));
        }
    }
}

/// Hands `window[emitted..]` to `out`, keeping the last 64 KiB as history.
fn flush(window: &mut Vec<u8>, emitted: &mut usize, out: &mut Counted<'_>) -> Result<(), Stop> {
    let result = out.put(&window[*emitted..]);
    let cut = window.len().saturating_sub(LZ4_HISTORY);
    window.drain(..cut);
    *emitted = window.len();
    result
}

/// An LZ4 length: `nibble`, and when it is 15, the bytes that follow up to
/// one below 255, added. `None` when the input ends first or it overflows.
fn length(input: &[u8], i: &mut usize, nibble: usize) -> Option<usize> {
    let mut n = nibble;
    if nibble == 15 {
        loop {
            let b = *input.get(*i)?;
            *i += 1;
            n = n.checked_add(usize::from(b))?;
            if b != 255 {
                break;
            }
        }
    }
    Some(n)
}

/// What `data` weighs deflated at `level`, as the wheel writer deflates
/// members, streaming: the compressor's state and its output go by in
/// bounded memory.
pub fn deflated_size(data: &[u8], level: u8) -> u64 {
    use miniz_oxide::DataFormat;
    use miniz_oxide::deflate::core::{CompressorOxide, TDEFLFlush, compress_to_output};
    let mut compressor = CompressorOxide::default();
    compressor.set_format_and_level(DataFormat::Raw, level);
    let mut size = 0u64;
    let mut rest = data;
    loop {
        let flush = if rest.len() <= CHUNK {
            TDEFLFlush::Finish
        } else {
            TDEFLFlush::None
        };
        let take = rest.len().min(CHUNK);
        let (_, used) = compress_to_output(&mut compressor, &rest[..take], flush, |out| {
            size += out.len() as u64;
            true
        });
        rest = &rest[used..];
        if flush == TDEFLFlush::Finish && rest.is_empty() {
            return size;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_lz4_block_of_known_length_gives_what_the_walk_gives() {
        let data = b"sm_90 .file 1 x.cu ".repeat(300);
        let block = lz4_flex::block::compress(&data);
        let mut padded = block.clone();
        padded.resize(block.len().next_multiple_of(8) + 8, 0);
        let claimed = data.len() as u64;
        // the header's length, a wrong one (the walk then decides), none
        for block_len in [block.len() as u64, 3, 0, padded.len() as u64 + 1] {
            let mut out = Vec::new();
            let inflated = inflate_lz4(&padded, block_len, claimed, &mut |c| {
                out.extend_from_slice(c)
            });
            assert_eq!(
                (inflated.problem, out.len()),
                (None, data.len()),
                "{block_len}"
            );
            assert_eq!(out, data);
        }
        // a lying size is still found
        let inflated = inflate_lz4(&padded, block.len() as u64, 16, &mut |_| {});
        assert_eq!(
            inflated.problem,
            Some(ImageProblem::SizeMismatch {
                claimed: 16,
                real: claimed
            })
        );
    }

    fn collect(
        compression: Compression,
        payload: &[u8],
        claimed: u64,
        limit: u64,
    ) -> (Vec<u8>, Inflated) {
        let mut out = Vec::new();
        let inflated = inflate_limited(compression, payload, claimed, limit, &mut |c| {
            out.extend_from_slice(c)
        });
        (out, inflated)
    }

    fn padded(mut bytes: Vec<u8>) -> Vec<u8> {
        bytes.resize(bytes.len().next_multiple_of(8), 0);
        bytes
    }

    #[test]
    fn lz4_and_zstd_images_decompress_whole_and_padded() {
        let data: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let lz4 = padded(lz4_flex::block::compress(&data));
        let zstd = padded(zstd::bulk::compress(&data, 3).unwrap());
        for (compression, payload) in [(Compression::Lz4, lz4), (Compression::Zstd, zstd)] {
            let (out, inflated) =
                collect(compression, &payload, data.len() as u64, MAX_IMAGE_BYTES);
            assert_eq!(inflated.problem, None, "{compression:?}");
            assert!(out == data, "{compression:?}");
        }
    }

    #[test]
    fn small_lz4_images_take_the_whole_path_large_ones_stream() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 7) as u8).collect();
        let block = lz4_flex::block::compress(&data);
        assert_eq!(
            lz4_extent(&padded(block.clone())),
            Some((block.len(), data.len() as u64))
        );
        let big = vec![1u8; (LZ4_WHOLE_MAX + 1) as usize];
        assert_eq!(lz4_extent(&lz4_flex::block::compress(&big)), None);
        let (out, inflated) = collect(
            Compression::Lz4,
            &lz4_flex::block::compress(&big),
            big.len() as u64,
            MAX_IMAGE_BYTES,
        );
        assert_eq!(inflated.problem, None);
        assert!(out == big);
    }

    #[test]
    fn a_lying_header_is_a_size_mismatch_and_the_bytes_still_go_by() {
        let data = b"/nix/store/0123456789abcdfghijklmnpqrsvwxyz-x".repeat(1000);
        let payload = lz4_flex::block::compress(&data);
        let (out, inflated) = collect(Compression::Lz4, &payload, 16, MAX_IMAGE_BYTES);
        assert_eq!(
            inflated.problem,
            Some(ImageProblem::SizeMismatch {
                claimed: 16,
                real: data.len() as u64
            })
        );
        assert_eq!(out, data);
    }

    #[test]
    fn bombs_stop_at_the_limit_and_garbage_is_corrupt() {
        let zeros = vec![0u8; 4 << 20];
        for payload in [
            (Compression::Lz4, lz4_flex::block::compress(&zeros)),
            (Compression::Zstd, zstd::bulk::compress(&zeros, 19).unwrap()),
        ] {
            let (out, inflated) = collect(payload.0, &payload.1, 1 << 62, 1 << 20);
            assert_eq!(
                inflated.problem,
                Some(ImageProblem::TooLarge),
                "{:?}",
                payload.0
            );
            assert_eq!(out.len(), 1 << 20);
        }
        let (_, inflated) = collect(Compression::Zstd, b"random bytes, not a frame", 25, 1 << 20);
        assert!(
            matches!(&inflated.problem, Some(ImageProblem::Corrupt { after: 0, error }) if error.starts_with("Zstandard: ")),
            "{inflated:?}"
        );
        // a match reaching before the output's start
        let (_, inflated) = collect(Compression::Lz4, &[0x10, b'a', 5, 0, 0x50], 9, 1 << 20);
        assert!(
            matches!(&inflated.problem, Some(ImageProblem::Corrupt { error, .. }) if error.contains("reaches back 5 bytes")),
            "{inflated:?}"
        );
    }

    #[test]
    fn deflated_size_is_what_miniz_gives() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 13) as u8).collect();
        assert_eq!(
            deflated_size(&data, 6),
            miniz_oxide::deflate::compress_to_vec(&data, 6).len() as u64
        );
        assert_eq!(
            deflated_size(&[], 6),
            miniz_oxide::deflate::compress_to_vec(&[], 6).len() as u64
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn lz4_streaming_equals_lz4_flex(
            seed in proptest::collection::vec((any::<u8>(), 1usize..3000), 0..40),
            pad in 0usize..8,
        ) {
            let data: Vec<u8> = seed.iter().flat_map(|&(b, n)| std::iter::repeat_n(b, n % 7 + 1).chain((0..n).map(move |i| (i as u8).wrapping_mul(b)))).collect();
            let mut payload = lz4_flex::block::compress(&data);
            payload.extend(std::iter::repeat_n(0, pad));
            let (out, inflated) = collect(Compression::Lz4, &payload, data.len() as u64, MAX_IMAGE_BYTES);
            prop_assert_eq!(inflated.problem, None);
            prop_assert!(out == data);
        }

        #[test]
        fn lz4_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = collect(Compression::Lz4, &bytes, 100, 1 << 16);
        }
    }
}
