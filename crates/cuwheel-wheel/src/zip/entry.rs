//! Streaming one member: its compressed bytes read from the file a buffer
//! at a time and inflated as the caller reads, checked against the central
//! directory as they go.
//!
//! In: the archive file and a checked [`ZipEntry`]. Out: its bytes through
//! [`Read`]; an `io::Error` wrapping a [`ZipError`] the moment they exceed
//! the declared size, or at the end when they fall short of it, when
//! compressed bytes follow the DEFLATE stream's end, or when the CRC-32
//! differs.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

use flate2::{Decompress, FlushDecompress, Status};

use super::{METHOD_DEFLATE, ZipEntry, ZipError};
use crate::terminal::terminal_safe;

/// The compressed bytes read per system call while a member streams.
const INPUT_BUFFER: usize = 256 << 10;

/// One member's bytes, inflated as they are read and checked against the
/// central directory: never more than the declared size, exactly that
/// size at the end, and its CRC-32.
pub struct EntryReader<'a> {
    file: &'a File,
    entry: &'a ZipEntry,
    /// Next compressed byte to read, relative to the data's start.
    read_pos: u64,
    input: Vec<u8>,
    input_start: usize,
    input_end: usize,
    /// zlib-rs, through flate2: faster than miniz_oxide (a quarter less
    /// CPU for torch's audit), and inflating bounds how fast a wheel can be
    /// audited.
    state: Option<Decompress>,
    produced: u64,
    crc: crc32fast::Hasher,
    /// The DEFLATE stream reported its end marker.
    stream_ended: bool,
    done: bool,
}

impl<'a> EntryReader<'a> {
    pub(super) fn new(file: &'a File, entry: &'a ZipEntry) -> EntryReader<'a> {
        let buffer = (entry.compressed_size as usize).clamp(1, INPUT_BUFFER);
        EntryReader {
            file,
            entry,
            read_pos: 0,
            input: vec![0; buffer],
            input_start: 0,
            input_end: 0,
            state: (entry.method == METHOD_DEFLATE).then(|| Decompress::new(false)),
            produced: 0,
            crc: crc32fast::Hasher::new(),
            stream_ended: false,
            done: false,
        }
    }

    fn fail(&self, error: ZipError) -> io::Error {
        io::Error::other(error)
    }

    /// Refills the input buffer when it is empty; false at the end of the data.
    fn refill(&mut self) -> io::Result<bool> {
        if self.input_start < self.input_end {
            return Ok(true);
        }
        let left = self.entry.compressed_size - self.read_pos;
        if left == 0 {
            return Ok(false);
        }
        let want = (left as usize).min(self.input.len());
        self.file.read_exact_at(
            &mut self.input[..want],
            self.entry.data_offset + self.read_pos,
        )?;
        self.read_pos += want as u64;
        self.input_start = 0;
        self.input_end = want;
        Ok(true)
    }

    fn finish(&mut self) -> io::Result<()> {
        self.done = true;
        if self.state.is_some() && !self.stream_ended {
            return Err(self.fail(ZipError::Inflate {
                member: terminal_safe(&self.entry.name).into_owned(),
                problem: "the stream is cut off before its end marker".to_string(),
            }));
        }
        if self.produced != self.entry.size {
            return Err(self.fail(ZipError::SizeMismatch {
                member: terminal_safe(&self.entry.name).into_owned(),
                declared: self.entry.size,
                actual: self.produced.to_string(),
            }));
        }
        let unread = (self.entry.compressed_size - self.read_pos) as usize
            + (self.input_end - self.input_start);
        if unread != 0 {
            return Err(self.fail(ZipError::Inflate {
                member: terminal_safe(&self.entry.name).into_owned(),
                problem: format!("{unread} compressed bytes follow the end of its DEFLATE stream"),
            }));
        }
        let crc = std::mem::take(&mut self.crc).finalize();
        if crc != self.entry.crc32 {
            return Err(self.fail(ZipError::Crc(terminal_safe(&self.entry.name).into_owned())));
        }
        Ok(())
    }

    /// Inflates into `buf`; 0 once the DEFLATE stream has ended.
    fn inflate_into(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let corrupt = |problem: String| ZipError::Inflate {
            member: terminal_safe(&self.entry.name).into_owned(),
            problem,
        };
        loop {
            let has_input = self.refill()?;
            let state = self.state.as_mut().expect("a DEFLATE member");
            let flush = if has_input {
                FlushDecompress::None
            } else {
                FlushDecompress::Finish
            };
            let (in_before, out_before) = (state.total_in(), state.total_out());
            let status =
                state.decompress(&self.input[self.input_start..self.input_end], buf, flush);
            let consumed = (state.total_in() - in_before) as usize;
            let written = (state.total_out() - out_before) as usize;
            self.input_start += consumed;
            match status {
                Ok(Status::StreamEnd) => {
                    self.stream_ended = true;
                    return Ok(written);
                }
                Ok(_) if written > 0 => return Ok(written),
                Ok(_) if consumed > 0 => continue,
                Ok(_) => {
                    self.done = true;
                    let problem = if has_input {
                        "the stream makes no progress".to_string()
                    } else {
                        "the stream is cut off before its end marker".to_string()
                    };
                    return Err(self.fail(corrupt(problem)));
                }
                Err(error) => {
                    self.done = true;
                    return Err(self.fail(corrupt(error.to_string())));
                }
            }
        }
    }
}

impl Read for EntryReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.stream_ended {
            self.finish()?;
            return Ok(0);
        }
        // Never produce more than declared: give the inflater at most the
        // rest of the declared size, plus one byte to notice a lie.
        let room = (self.entry.size - self.produced).saturating_add(1);
        let buf_len = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let buf = &mut buf[..buf_len];
        let written = if self.state.is_none() {
            if !self.refill()? {
                self.finish()?;
                return Ok(0);
            }
            let n = (self.input_end - self.input_start).min(buf.len());
            buf[..n].copy_from_slice(&self.input[self.input_start..self.input_start + n]);
            self.input_start += n;
            n
        } else {
            self.inflate_into(buf)?
        };
        if written == 0 {
            self.finish()?;
            return Ok(0);
        }
        self.produced += written as u64;
        if self.produced > self.entry.size {
            self.done = true;
            return Err(self.fail(ZipError::SizeMismatch {
                member: terminal_safe(&self.entry.name).into_owned(),
                declared: self.entry.size,
                actual: "more".to_string(),
            }));
        }
        self.crc.update(&buf[..written]);
        Ok(written)
    }
}
