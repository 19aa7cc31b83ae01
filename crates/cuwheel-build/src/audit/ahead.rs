//! A large ELF member's compressed fat-binary images, decompressed and
//! scanned while the member still inflates, on time the other threads
//! leave idle.
//!
//! In: as the member streams to its temporary file, where its bytes hold
//! the fat-binary magic and how many bytes are written. Out, once it is
//! whole: the [`CompressedImage`] of every compressed image done so far,
//! by payload offset, with the entry it was read from. The scan then takes
//! an image from here only when the ELF parse finds an identical entry at
//! that offset, and does every other one itself, so the report is the same
//! with or without this module; it only moves work earlier.
//!
//! Why: a member such as torch's `libtorch_cuda.so` (1 GB, one DEFLATE
//! stream) is the audit's critical path. Its images could only be read
//! once its section headers, at its end, were, so their decompression
//! followed the inflate. A container can be read as soon as its bytes are
//! written: its header gives its length. The worker runs at the idle
//! scheduling class (`SCHED_IDLE`), so it never slows the inflate it
//! overlaps; whatever it has not done when the member is whole is done by
//! the scan as before, and the worker stops at its next image.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};

use super::fatbin::{self, CONTAINER_HEADER_SIZE, Compression, ImageEntry};
use super::scan::MAX_CONTAINER_HITS;
use super::scan::{CompressedImage, check_image};

/// The largest container read ahead (it is read whole); a larger one is
/// left to the scan.
pub const AHEAD_MAX_CONTAINER: u64 = 16 << 20;

/// What the worker has done, until the scan takes it.
#[derive(Default)]
struct Done {
    images: HashMap<u64, (ImageEntry, CompressedImage)>,
    /// The scan took the images: the worker stops.
    taken: bool,
}

/// The streaming side: told of the member's progress, it hands the
/// worker each container once its last byte is written.
pub struct Ahead {
    file: File,
    jobs: Sender<(u64, u64)>,
    done: Arc<Mutex<Done>>,
    /// The first magic hit not looked at yet.
    next_hit: usize,
    /// Containers whose header was read, by where they end.
    waiting: BinaryHeap<Reverse<(u64, u64)>>,
}

impl Ahead {
    /// Starts the worker, which reads the member's bytes from `file` (the
    /// temporary file they are written to); `None` when the file cannot be
    /// opened twice or the thread cannot start (the scan then does it all).
    pub fn start(file: &File) -> Option<Ahead> {
        let (reader, file) = (file.try_clone().ok()?, file.try_clone().ok()?);
        let (jobs, queue) = channel::<(u64, u64)>();
        let done = Arc::new(Mutex::new(Done::default()));
        let shared = Arc::clone(&done);
        std::thread::Builder::new()
            .name("audit-ahead".into())
            .spawn(move || {
                idle_priority();
                let mut buffer = Vec::new();
                while let Ok((at, len)) = queue.recv() {
                    if !container(&reader, at, len, &mut buffer, &shared) {
                        break;
                    }
                }
            })
            .ok()?;
        Some(Ahead {
            file,
            jobs,
            done,
            next_hit: 0,
            waiting: BinaryHeap::new(),
        })
    }

    /// The member's first `written` bytes are in the file, and `hits` are
    /// where its bytes so far hold the magic.
    pub fn advance(&mut self, hits: &[u64], written: u64) {
        while let Some(&at) = hits.get(self.next_hit) {
            if at.saturating_add(CONTAINER_HEADER_SIZE as u64) > written {
                break;
            }
            self.next_hit += 1;
            let mut header = [0u8; CONTAINER_HEADER_SIZE];
            if self.file.read_exact_at(&mut header, at).is_err() {
                continue;
            }
            match fatbin::container_len(&header) {
                Some(len) if len <= AHEAD_MAX_CONTAINER => {
                    self.waiting.push(Reverse((at + len, at)));
                }
                _ => {}
            }
        }
        while let Some(&Reverse((end, at))) = self.waiting.peek() {
            if end > written {
                break;
            }
            self.waiting.pop();
            if self.jobs.send((at, end - at)).is_err() {
                return;
            }
        }
    }

    /// What the worker has done; it stops at its next image.
    pub fn take(self) -> Taken {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        done.taken = true;
        Taken(std::mem::take(&mut done.images))
    }
}

impl Drop for Ahead {
    /// A member that failed to stream is dropped unfinished: the worker
    /// stops at its next image instead of going through what is queued.
    fn drop(&mut self) {
        self.done.lock().unwrap_or_else(|e| e.into_inner()).taken = true;
    }
}

/// The images done ahead, by payload offset.
#[derive(Default)]
pub struct Taken(HashMap<u64, (ImageEntry, CompressedImage)>);

impl Taken {
    /// The image done ahead for exactly `entry`, if any.
    pub fn get(&self, entry: &ImageEntry) -> Option<&CompressedImage> {
        self.0
            .get(&entry.payload_offset)
            .filter(|(done, _)| done == entry)
            .map(|(_, image)| image)
    }
}

/// Decompresses and scans the compressed images of the container at `at`,
/// `len` bytes long; false once the scan has taken the results.
fn container(file: &File, at: u64, len: u64, buffer: &mut Vec<u8>, done: &Mutex<Done>) -> bool {
    if done.lock().unwrap_or_else(|e| e.into_inner()).taken {
        return false;
    }
    buffer.resize(len as usize, 0);
    if file.read_exact_at(buffer, at).is_err() {
        return true;
    }
    let Ok(entries) = fatbin::entries(&buffer[..], 0, len) else {
        return true;
    };
    for mut entry in entries {
        if entry.compression == Compression::None {
            continue;
        }
        let (start, end) = (
            entry.payload_offset,
            entry.payload_offset + entry.payload_len,
        );
        let payload = buffer
            .get(start as usize..end as usize)
            .map(Cow::Borrowed)
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        let image = check_image(&entry, payload);
        entry.payload_offset += at;
        let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
        if done.taken {
            return false;
        }
        done.images.insert(entry.payload_offset, (entry, image));
    }
    true
}

/// Where the fat-binary magic lies in a member's bytes, found as they
/// stream: a match may straddle two chunks.
pub struct MagicHits {
    finder: memchr::memmem::Finder<'static>,
    /// Bytes fed so far.
    pub seen: u64,
    /// The last bytes fed (at most the magic's length less one), and how
    /// many there are.
    tail: [u8; 3],
    tail_len: usize,
    pub hits: Vec<u64>,
    pub overflow: bool,
}

impl Default for MagicHits {
    fn default() -> MagicHits {
        MagicHits {
            finder: memchr::memmem::Finder::new(&fatbin::MAGIC_BYTES),
            seen: 0,
            tail: [0; 3],
            tail_len: 0,
            hits: Vec::new(),
            overflow: false,
        }
    }
}

impl MagicHits {
    pub fn feed(&mut self, new: &[u8]) {
        // The seam: the tail and the chunk's first bytes; only matches that
        // start in the tail (the others are found in `new`).
        let mut seam = [0u8; 6];
        let head = new.len().min(3);
        seam[..self.tail_len].copy_from_slice(&self.tail[..self.tail_len]);
        seam[self.tail_len..self.tail_len + head].copy_from_slice(&new[..head]);
        let start = self.seen - self.tail_len as u64;
        let (seen, tail_len) = (self.seen, self.tail_len);
        let MagicHits {
            finder,
            hits,
            overflow,
            ..
        } = self;
        let mut hit = |at: u64| {
            if hits.len() < MAX_CONTAINER_HITS {
                hits.push(at);
            } else {
                *overflow = true;
            }
        };
        for i in finder
            .find_iter(&seam[..tail_len + head])
            .filter(|&i| i < tail_len)
        {
            hit(start + i as u64);
        }
        for i in finder.find_iter(new) {
            hit(seen + i as u64);
        }
        // The new tail: the last three bytes of the old tail and `new`.
        let mut joined = [0u8; 6];
        let kept = if new.len() >= 3 {
            joined[..3].copy_from_slice(&new[new.len() - 3..]);
            3
        } else {
            joined[..self.tail_len].copy_from_slice(&self.tail[..self.tail_len]);
            joined[self.tail_len..self.tail_len + new.len()].copy_from_slice(new);
            self.tail_len + new.len()
        };
        let from = kept.saturating_sub(3);
        self.tail_len = kept - from;
        self.tail[..self.tail_len].copy_from_slice(&joined[from..kept]);
        self.seen += new.len() as u64;
    }
}

/// Puts this thread in the idle scheduling class: it runs only on a CPU
/// no other thread wants. Best effort: on failure it runs as any thread.
fn idle_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_magic_is_found_across_chunk_seams() {
        let mut bytes = [7u8; 40];
        for at in [0, 5, 17, 36] {
            bytes[at..at + 4].copy_from_slice(&fatbin::MAGIC_BYTES);
        }
        for chunk in 1..=bytes.len() {
            let mut hits = MagicHits::default();
            for piece in bytes.chunks(chunk) {
                hits.feed(piece);
            }
            assert_eq!(hits.hits, [0, 5, 17, 36], "chunks of {chunk}");
        }
    }

    #[test]
    fn containers_are_done_once_their_last_byte_is_written() {
        use std::io::Write;
        let (lz4, zstd, plain) = (0x2011, 0x8011, 0x11);
        let a = fatbin::tests::container(&[(2, 90, lz4, 40), (2, 80, plain, 16)]);
        let b = fatbin::tests::container(&[(2, 100, zstd, 24)]);
        let mut bytes = vec![7u8; 100];
        let at_a = bytes.len() as u64;
        bytes.extend(&a);
        bytes.extend([7u8; 50]);
        let at_b = bytes.len() as u64;
        bytes.extend(&b);

        let mut file = tempfile::tempfile().unwrap();
        let mut ahead = Ahead::start(&file).unwrap();
        let mut hits = MagicHits::default();
        let (head, last) = bytes.split_at(bytes.len() - 1);
        for chunk in head.chunks(7) {
            file.write_all(chunk).unwrap();
            hits.feed(chunk);
            ahead.advance(&hits.hits, hits.seen);
        }
        // b's header is read, but b is not whole: it waits
        assert_eq!(hits.hits, [at_a, at_b]);
        assert_eq!(ahead.waiting.len(), 1);
        file.write_all(last).unwrap();
        hits.feed(last);
        ahead.advance(&hits.hits, hits.seen);
        assert!(ahead.waiting.is_empty());

        // the worker runs only on an idle CPU: wait for its two images
        let start = std::time::Instant::now();
        while ahead.done.lock().unwrap().images.len() < 2 {
            assert!(start.elapsed().as_secs() < 120, "the worker did nothing");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let taken = ahead.take();
        let mut entries = fatbin::entries(&bytes[..], at_a, a.len() as u64).unwrap();
        entries.extend(fatbin::entries(&bytes[..], at_b, b.len() as u64).unwrap());
        assert_eq!(entries.len(), 3);
        for entry in &entries {
            let got = taken.get(entry);
            if entry.compression == Compression::None {
                assert!(got.is_none());
                continue;
            }
            let (start, len) = (entry.payload_offset as usize, entry.payload_len as usize);
            let want = check_image(entry, Ok(Cow::Borrowed(&bytes[start..start + len])));
            assert_eq!(format!("{:?}", got.unwrap()), format!("{want:?}"));
        }
        // an entry that differs from the one done ahead is done by the scan
        let mut other = entries[0].clone();
        other.uncompressed_size += 1;
        assert!(taken.get(&other).is_none());
    }
}
