//! The app threads' side of the X11 Present source: "frame F was presented to window W at
//! t". A fixed ring of atomics that any number of presenting threads write and the watcher
//! thread reads, so a present costs a few atomic operations: no lock, no allocation, no
//! system call.
//!
//! Each slot carries a sequence word written last (seqlock-like): the reader takes a slot
//! only when the word says the slot holds the note it expects, before and after reading the
//! fields. A writer that laps the reader (more than [`SLOTS`] presents between two reads of
//! the watcher, which reads every 10 ms or sooner: 25 600 fps) overwrites old notes; the reader
//! counts them lost and skips to the oldest note still there.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// Notes held: 2.5 s of presents at 100 fps between two reads would still fit.
pub const SLOTS: usize = 256;

/// One present, as the watcher reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Note {
    /// The X window presented to.
    pub window: u32,
    /// The session's frame index.
    pub frame: u64,
    /// When the present was called (`CLOCK_MONOTONIC` ns), before the real call.
    pub t_ns: u64,
}

struct Slot {
    /// 0: being written; `n + 1`: holds note number `n`.
    seq: AtomicU64,
    window: AtomicU32,
    frame: AtomicU64,
    t_ns: AtomicU64,
}

pub struct NoteRing {
    slots: [Slot; SLOTS],
    /// Notes written so far (the next note's number).
    head: AtomicU64,
}

impl Default for NoteRing {
    fn default() -> Self {
        NoteRing {
            slots: std::array::from_fn(|_| Slot {
                seq: AtomicU64::new(0),
                window: AtomicU32::new(0),
                frame: AtomicU64::new(0),
                t_ns: AtomicU64::new(0),
            }),
            head: AtomicU64::new(0),
        }
    }
}

/// What [`NoteRing::read`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    Note(Note),
    /// Nothing new (or the next note is still being written).
    Empty,
    /// The writers lapped the reader: this many notes were overwritten unread.
    Lost(u64),
}

impl NoteRing {
    /// From a presenting thread: never blocks, never allocates.
    pub fn push(&self, n: Note) {
        let i = self.head.fetch_add(1, Ordering::Relaxed);
        let s = &self.slots[(i % SLOTS as u64) as usize];
        s.seq.store(0, Ordering::Relaxed);
        // The fields below must not become visible before the slot reads as "being written".
        fence(Ordering::Release);
        s.window.store(n.window, Ordering::Relaxed);
        s.frame.store(n.frame, Ordering::Relaxed);
        s.t_ns.store(n.t_ns, Ordering::Relaxed);
        s.seq.store(i + 1, Ordering::Release);
    }

    /// Notes written so far.
    pub fn written(&self) -> u64 {
        self.head.load(Ordering::Relaxed)
    }

    /// Note number `*next`, advancing `*next` past it (or past the lost ones).
    pub fn read(&self, next: &mut u64) -> Read {
        let head = self.head.load(Ordering::Acquire);
        if *next >= head {
            return Read::Empty;
        }
        if head - *next > SLOTS as u64 {
            let lost = head - SLOTS as u64 - *next;
            *next = head - SLOTS as u64;
            return Read::Lost(lost);
        }
        let s = &self.slots[(*next % SLOTS as u64) as usize];
        let before = s.seq.load(Ordering::Acquire);
        let n = Note {
            window: s.window.load(Ordering::Relaxed),
            frame: s.frame.load(Ordering::Relaxed),
            t_ns: s.t_ns.load(Ordering::Relaxed),
        };
        fence(Ordering::Acquire);
        let after = s.seq.load(Ordering::Relaxed);
        if before == *next + 1 && after == before {
            *next += 1;
            return Read::Note(n);
        }
        if before > *next + 1 || after > *next + 1 {
            // Overwritten while we looked: a writer lapped us.
            let now = self.head.load(Ordering::Acquire);
            let to = now.saturating_sub(SLOTS as u64).max(*next + 1);
            let lost = to - *next;
            *next = to;
            return Read::Lost(lost);
        }
        // Claimed but not yet written: read it next time.
        Read::Empty
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(i: u64) -> Note {
        Note {
            window: 7,
            frame: i,
            t_ns: i * 10,
        }
    }

    #[test]
    fn notes_come_out_in_order_once() {
        let r = NoteRing::default();
        let mut next = 0;
        assert_eq!(r.read(&mut next), Read::Empty);
        for i in 0..3 {
            r.push(note(i));
        }
        for i in 0..3 {
            assert_eq!(r.read(&mut next), Read::Note(note(i)));
        }
        assert_eq!(r.read(&mut next), Read::Empty);
        assert_eq!(r.written(), 3);
    }

    #[test]
    fn a_lapped_reader_counts_the_lost_notes_and_keeps_the_newest() {
        let r = NoteRing::default();
        let mut next = 0;
        let total = SLOTS as u64 + 10;
        for i in 0..total {
            r.push(note(i));
        }
        assert_eq!(r.read(&mut next), Read::Lost(10));
        assert_eq!(r.read(&mut next), Read::Note(note(10)));
        let mut rest = 0;
        while let Read::Note(_) = r.read(&mut next) {
            rest += 1;
        }
        assert_eq!(rest, SLOTS as u64 - 1);
    }

    #[test]
    fn concurrent_writers_lose_nothing_the_reader_keeps_up_with() {
        let r = std::sync::Arc::new(NoteRing::default());
        let writers: Vec<_> = (0..2u32)
            .map(|w| {
                let r = r.clone();
                std::thread::spawn(move || {
                    for i in 0..100u64 {
                        r.push(Note {
                            window: w,
                            frame: i,
                            t_ns: i,
                        });
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let mut next = 0;
        let mut per_window = [Vec::new(), Vec::new()];
        while let Read::Note(n) = r.read(&mut next) {
            per_window[n.window as usize].push(n.frame);
        }
        for frames in per_window {
            assert_eq!(frames, (0..100).collect::<Vec<_>>(), "each writer's notes in its order");
        }
    }
}
