//! Lines of a dump, read with bounded memory and time: a line longer than [`MAX_LINE`] is
//! skipped unread, blank lines are skipped in bulk, and [`GIVE_UP`] bytes without a record
//! end the reading (a dump may be hostile: `/dev/zero`, 200 MB of newlines). Shared by every
//! command that reads dumps.

use std::io::{BufRead, BufReader, Read};

/// Longest line read. A frame line carries its GPU samples; at about 150 bytes a sample this
/// is some 100,000 draws in one frame (`samples=draw`), far past what the writer's sample
/// queue keeps.
pub const MAX_LINE: usize = 16 << 20;

/// Bytes read since the last readable record after which reading stops.
pub const GIVE_UP: u64 = 256 << 20;

/// One line of the input, without its newline.
pub enum Line<'a> {
    Text(&'a [u8]),
    /// Longer than [`MAX_LINE`]: skipped, not kept.
    TooLong,
    /// [`GIVE_UP`] bytes without a record: stop.
    GiveUp,
}

pub struct Lines<R> {
    r: R,
    buf: Vec<u8>,
    /// Bytes read since the last record; reset by the caller.
    pub since_record: u64,
    /// Empty lines skipped before the current line (they still count in line numbers).
    blank: u64,
    /// [`GIVE_UP`], smaller in tests.
    give_up: u64,
}

impl<R: Read> Lines<BufReader<R>> {
    /// Lines of `input`, giving up after `give_up` bytes without a record ([`GIVE_UP`]).
    pub fn new(input: R, give_up: u64) -> Self {
        Lines {
            r: BufReader::with_capacity(1 << 16, input),
            buf: Vec::new(),
            since_record: 0,
            blank: 0,
            give_up,
        }
    }
}

impl<R: BufRead> Lines<R> {
    /// The next line, and how many empty lines came before it.
    pub fn next_line(&mut self) -> std::io::Result<Option<(u64, Line<'_>)>> {
        self.buf.clear();
        self.blank = 0;
        let mut too_long = false;
        let mut any = false;
        loop {
            let avail = match self.r.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                if !any {
                    return Ok(None);
                }
                break;
            }
            if !any {
                // Blank lines are skipped here in bulk: one call per line made 200 MB of
                // newlines take minutes in a debug build.
                let blank = avail.iter().take_while(|&&b| b == b'\n').count();
                if blank > 0 {
                    self.blank += blank as u64;
                    self.since_record += blank as u64;
                    self.r.consume(blank);
                    if self.since_record > self.give_up {
                        return Ok(Some((self.blank, Line::GiveUp)));
                    }
                    continue;
                }
            }
            any = true;
            let (chunk, used, end) = match memchr::memchr(b'\n', avail) {
                Some(i) => (&avail[..i], i + 1, true),
                None => (avail, avail.len(), false),
            };
            if !too_long {
                if self.buf.len() + chunk.len() > MAX_LINE {
                    too_long = true;
                    self.buf = Vec::new();
                } else {
                    self.buf.extend_from_slice(chunk);
                }
            }
            self.r.consume(used);
            self.since_record += used as u64;
            if end {
                break;
            }
            if self.since_record > self.give_up {
                return Ok(Some((self.blank, Line::GiveUp)));
            }
        }
        if self.since_record > self.give_up {
            return Ok(Some((self.blank, Line::GiveUp)));
        }
        let line = if too_long { Line::TooLong } else { Line::Text(&self.buf) };
        Ok(Some((self.blank, line)))
    }
}
