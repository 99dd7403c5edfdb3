//! The counter board: the newest value of every counter the collector thread reads, published
//! for the frame session to copy into each frame record.
//!
//! One writer (framescope's collector thread), any number of readers (the app's threads at
//! frame close, the HUD). The board is a seqlock over plain atomics: a reader copies the
//! values and retries if a write overlapped, up to a bound, then keeps its previous copy; it
//! never waits and never allocates. Slot `i` of the board is entry `i` of the catalogue, which
//! the collector fixes once, after it has built its sources.

use crate::model::counter_values::{CounterDesc, Unavailable};
pub use crate::model::counter_values::{CounterWindow, MAX_COUNTERS, MAX_SOURCES};
use crate::runtime::sync::Mutex;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, OnceLock};
use std::time::Duration;

/// Bit pattern of "no value" in a slot (a NaN no computation produces).
const NONE_BITS: u64 = 0x7ff8_dead_0000_0000;

/// The counters of the board, fixed once: names, units, sources.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalogue {
    /// Slot `i` of the board and of every frame's [`crate::model::frame::CounterValues`].
    pub counters: Vec<CounterDesc>,
    /// Index into `sources` of each counter's source.
    pub source_of: Vec<u8>,
    /// Source ids (`system`, `nvml`, `gpm`, ...), in the order of their windows.
    pub sources: Vec<String>,
}

impl Catalogue {
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.counters.iter().position(|c| c.name == name)
    }
}

/// The GPU a device source picked, as the driver's library names it: how a GL dump, whose
/// driver may not say which PCI device renders, learns it (NVIDIA's GL has no
/// `GLX_MESA_query_renderer`; NVML matches its renderer string).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuIdentity {
    pub vendor_id: u32,
    pub device_id: u32,
    /// `domain:bus:device.function`, lower-case hex.
    pub pci_bus: String,
    /// The source that picked it (`nvml`).
    pub source: String,
}

/// What the collector publishes and the frame session reads.
pub struct CounterBoard {
    seq: AtomicU64,
    values: [AtomicU64; MAX_COUNTERS],
    windows: [[AtomicU64; 2]; MAX_SOURCES],
    catalogue: OnceLock<Catalogue>,
    unavailable: Mutex<Vec<Unavailable>>,
    started: AtomicBool,
    /// The newest frame end any session marked, and when (`CLOCK_MONOTONIC`).
    last_frame: AtomicU64,
    last_frame_ns: AtomicU64,
    started_lock: std::sync::Mutex<bool>,
    started_cv: Condvar,
    /// Builds the dump writer's attributor, where a source can attribute its counters to
    /// exact windows ([`crate::session::attribution`]).
    attributor: OnceLock<crate::session::attribution::AttributorFactory>,
    gpu: OnceLock<GpuIdentity>,
}

impl std::fmt::Debug for CounterBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CounterBoard")
            .field("catalogue", &self.catalogue.get())
            .field("started", &self.is_started())
            .finish_non_exhaustive()
    }
}

impl Default for CounterBoard {
    fn default() -> Self {
        CounterBoard {
            seq: AtomicU64::new(0),
            values: std::array::from_fn(|_| AtomicU64::new(NONE_BITS)),
            windows: std::array::from_fn(|_| [AtomicU64::new(0), AtomicU64::new(0)]),
            catalogue: OnceLock::new(),
            unavailable: Mutex::new(Vec::new()),
            started: AtomicBool::new(false),
            last_frame: AtomicU64::new(0),
            last_frame_ns: AtomicU64::new(0),
            started_lock: std::sync::Mutex::new(false),
            started_cv: Condvar::new(),
            attributor: OnceLock::new(),
            gpu: OnceLock::new(),
        }
    }
}

/// A consistent copy of the board, as a frame record carries it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CounterSnapshot {
    pub values: crate::model::counter_values::CounterValues,
    pub windows: [CounterWindow; MAX_SOURCES],
}

impl Default for CounterSnapshot {
    fn default() -> Self {
        CounterSnapshot {
            values: Default::default(),
            windows: [CounterWindow::default(); MAX_SOURCES],
        }
    }
}

impl CounterBoard {
    /// Fixes the catalogue (the first call wins; later calls are ignored and return false).
    /// Counters past [`MAX_COUNTERS`] and sources past [`MAX_SOURCES`] are the caller's to cut.
    pub fn set_catalogue(&self, c: Catalogue) -> bool {
        debug_assert!(c.counters.len() <= MAX_COUNTERS && c.sources.len() <= MAX_SOURCES);
        self.catalogue.set(c).is_ok()
    }

    pub fn catalogue(&self) -> Option<&Catalogue> {
        self.catalogue.get()
    }

    /// Registers how to build an attributor for this board's counters (the first call wins).
    pub fn set_attributor(&self, f: crate::session::attribution::AttributorFactory) {
        let _ = self.attributor.set(f);
    }

    /// A new attributor, for the dump writer's thread; `None` when no source attributes.
    pub fn attributor(&self) -> Option<Box<dyn crate::session::attribution::Attributor>> {
        self.attributor.get().and_then(|f| f())
    }

    /// Records the GPU a source picked (the first call wins).
    pub fn set_gpu(&self, g: GpuIdentity) {
        let _ = self.gpu.set(g);
    }

    pub fn gpu(&self) -> Option<&GpuIdentity> {
        self.gpu.get()
    }

    /// Records a source that cannot run (once per source id; a repeat replaces the reason).
    pub fn set_unavailable(&self, source: &str, reason: &str) {
        let mut u = self.unavailable.lock();
        match u.iter_mut().find(|x| x.source == source) {
            Some(x) => x.reason = reason.to_string(),
            None => u.push(Unavailable {
                source: source.to_string(),
                reason: reason.to_string(),
            }),
        }
    }

    /// A source that was unavailable started after all.
    pub fn clear_unavailable(&self, source: &str) {
        self.unavailable.lock().retain(|x| x.source != source);
    }

    pub fn unavailable(&self) -> Vec<Unavailable> {
        self.unavailable.lock().clone()
    }

    /// The collector has tried every source once: the catalogue and the first `unavailable`
    /// list are final for the header.
    pub fn mark_started(&self) {
        self.started.store(true, Ordering::Release);
        let mut g = self.started_lock.lock().unwrap_or_else(|e| e.into_inner());
        *g = true;
        self.started_cv.notify_all();
    }

    pub fn is_started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// Waits up to `limit` for [`Self::mark_started`]; for the dump writer's thread, never
    /// the app's.
    pub fn wait_started(&self, limit: Duration) -> bool {
        if self.is_started() {
            return true;
        }
        let g = self.started_lock.lock().unwrap_or_else(|e| e.into_inner());
        let (g, _) = self
            .started_cv
            .wait_timeout_while(g, limit, |s| !*s)
            .unwrap_or_else(|e| e.into_inner());
        *g
    }

    /// A frame ended: two stores, for the collector (which reads only while frames come).
    pub fn mark_frame(&self, frame: u64, t_ns: u64) {
        self.last_frame.store(frame, Ordering::Relaxed);
        self.last_frame_ns.store(t_ns, Ordering::Relaxed);
    }

    /// The newest frame mark: (frame, time); time 0 before the first.
    pub fn last_frame(&self) -> (u64, u64) {
        (
            self.last_frame.load(Ordering::Relaxed),
            self.last_frame_ns.load(Ordering::Relaxed),
        )
    }

    /// Publishes new values for `slots` (board slot, value; NaN = no value) and the window of
    /// `source`. Single writer: the collector thread.
    pub fn publish(&self, source: usize, window: CounterWindow, slots: impl Iterator<Item = (usize, f64)>) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        for (i, v) in slots {
            if let Some(a) = self.values.get(i) {
                let bits = if v.is_nan() { NONE_BITS } else { v.to_bits() };
                a.store(bits, Ordering::Relaxed);
            }
        }
        if let Some(w) = self.windows.get(source) {
            w[0].store(window.begin_ns, Ordering::Relaxed);
            w[1].store(window.end_ns, Ordering::Relaxed);
        }
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// Copies the board into `out` unless a write overlapped every attempt (then `out` keeps
    /// what it had, and false is returned). Never waits, never allocates.
    pub fn read_into(&self, out: &mut CounterSnapshot) -> bool {
        let n = self.catalogue.get().map_or(0, |c| c.counters.len()).min(MAX_COUNTERS);
        if n == 0 {
            return true;
        }
        let mut tmp = CounterSnapshot::default();
        // A write takes well under a microsecond and comes every `counter_interval_ms`: a few
        // tries always find a gap; a reader never waits longer than these.
        for _ in 0..16 {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            tmp.values.clear();
            for (i, a) in self.values[..n].iter().enumerate() {
                let bits = a.load(Ordering::Relaxed);
                if bits != NONE_BITS {
                    tmp.values.set(i, f64::from_bits(bits));
                }
            }
            for (w, a) in tmp.windows.iter_mut().zip(&self.windows) {
                w.begin_ns = a[0].load(Ordering::Relaxed);
                w.end_ns = a[1].load(Ordering::Relaxed);
            }
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == s1 {
                *out = tmp;
                return true;
            }
        }
        false
    }
}

/// A counter's name for people: its words, acronyms in capitals, the unit's suffix dropped
/// (the unit is shown with the value).
pub fn display_name(id: &str) -> String {
    const UNITS: &[&str] = &["pct", "bytes", "mhz", "c", "w", "j", "ns", "rpm", "hz"];
    const ACRONYMS: &[&str] = &[
        "gpu", "cpu", "vram", "ram", "pm", "sm", "eu", "dram", "pcie", "l2", "gpm", "fp32", "fp16", "fp64", "cs", "ps",
        "vs", "oa", "rss", "nvml", "amd", "gfx", "mem", "io",
    ];
    let mut words: Vec<&str> = id.split('_').filter(|w| !w.is_empty()).collect();
    if words.len() > 1 && words.last().is_some_and(|w| UNITS.contains(w)) {
        words.pop();
    }
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if ACRONYMS.contains(w) {
            out.push_str(&w.to_ascii_uppercase());
        } else if i == 0 {
            let mut c = w.chars();
            if let Some(f) = c.next() {
                out.push(f.to_ascii_uppercase());
                out.push_str(c.as_str());
            }
        } else {
            out.push_str(w);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(name: &str) -> CounterDesc {
        CounterDesc {
            name: name.into(),
            unit: "%".into(),
            source: "test".into(),
            scope: "device".into(),
        }
    }

    #[test]
    fn published_values_reach_a_snapshot_by_slot() {
        let b = CounterBoard::default();
        let mut s = CounterSnapshot::default();
        assert!(b.read_into(&mut s));
        assert!(s.values.is_empty(), "no catalogue, no values");
        b.set_catalogue(Catalogue {
            counters: vec![desc("a"), desc("b"), desc("c")],
            source_of: vec![0, 0, 1],
            sources: vec!["x".into(), "y".into()],
        });
        let w = CounterWindow { begin_ns: 5, end_ns: 9 };
        b.publish(0, w, [(0, 1.5), (1, f64::NAN)].into_iter());
        b.publish(1, w, [(2, -3.0)].into_iter());
        assert!(b.read_into(&mut s));
        assert_eq!(s.values.get(0), Some(1.5));
        assert_eq!(s.values.get(1), None);
        assert_eq!(s.values.get(2), Some(-3.0));
        assert_eq!(s.windows[0], w);
        assert!(!s.windows[2].is_set());
    }

    #[test]
    fn concurrent_reads_never_see_a_torn_write() {
        let b = std::sync::Arc::new(CounterBoard::default());
        b.set_catalogue(Catalogue {
            counters: (0..MAX_COUNTERS).map(|i| desc(&i.to_string())).collect(),
            source_of: vec![0; MAX_COUNTERS],
            sources: vec!["x".into()],
        });
        let w = b.clone();
        let writer = std::thread::spawn(move || {
            for k in 1..20_000u64 {
                let v = k as f64;
                w.publish(
                    0,
                    CounterWindow { begin_ns: k, end_ns: k },
                    (0..MAX_COUNTERS).map(|i| (i, v)),
                );
            }
        });
        let mut s = CounterSnapshot::default();
        let mut consistent = 0;
        while !writer.is_finished() {
            if b.read_into(&mut s) && !s.values.is_empty() {
                let first = s.values.get(0).unwrap();
                for i in 0..MAX_COUNTERS {
                    assert_eq!(s.values.get(i), Some(first), "slot {i} torn");
                }
                assert_eq!(s.windows[0].end_ns as f64, first);
                consistent += 1;
            }
        }
        writer.join().unwrap();
        assert!(b.read_into(&mut s));
        assert_eq!(s.values.get(MAX_COUNTERS - 1), Some(19_999.0));
        let _ = consistent;
    }

    #[test]
    fn unavailable_sources_are_listed_once_and_cleared() {
        let b = CounterBoard::default();
        b.set_unavailable("nvml", "libnvidia-ml.so.1 not found");
        b.set_unavailable("nvml", "still not found");
        b.set_unavailable("amdgpu", "no amdgpu device");
        assert_eq!(b.unavailable().len(), 2);
        assert_eq!(b.unavailable()[0].reason, "still not found");
        b.clear_unavailable("nvml");
        assert_eq!(b.unavailable().len(), 1);
        assert!(!b.wait_started(Duration::from_millis(1)));
        b.mark_started();
        assert!(b.wait_started(Duration::from_millis(1)));
    }
}
