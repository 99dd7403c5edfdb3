//! What every export format implements, and the text rules they share.

use super::records::{Frame, Header, Mark, Series};
use std::io;

/// One output format. Called with the header first (an empty one when the dump has none),
/// then every frame in order, then `finish`.
pub trait Sink {
    fn header(&mut self, h: &Header) -> io::Result<()>;
    fn frame(&mut self, f: &Frame) -> io::Result<()>;
    /// A `mark` record (`framescope ctl PID mark LABEL`); the CSV layouts have no place for it.
    fn mark(&mut self, _m: &Mark) -> io::Result<()> {
        Ok(())
    }
    /// A `series` record (a counter source's raw samples); only the trace format has a place
    /// for them.
    fn series(&mut self, _s: &Series) -> io::Result<()> {
        Ok(())
    }
    /// Flushes; returns notes for the user about what could not be exported.
    fn finish(&mut self) -> io::Result<Vec<String>>;
}

/// Text from the dump for a CSV cell: separators, quotes and control characters would
/// break the row, so they become spaces (neither MangoHud nor PresentMon quotes its cells).
pub fn cell(s: &str) -> String {
    s.chars()
        .take(crate::text::MAX_SHOWN)
        .map(|c| if c == ',' || c == '"' || c.is_control() { ' ' } else { c })
        .collect()
}
