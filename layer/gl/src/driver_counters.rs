//! Driver counters on GL (`driver_counters=1`): `GL_AMD_performance_monitor` (radeonsi,
//! freedreno, nouveau) or `GL_INTEL_performance_query` (iris), one monitor per frame from
//! swap to swap, read frames later without waiting, and rotated across frames as the Vulkan
//! layer rotates its query groups: the context's counters are cut into sets that one monitor
//! can count at once (an AMD group's counters up to its most active ones, an Intel query's
//! counters up to [`MAX_GROUP`]), and frame `f` carries set `f mod sets`.
//!
//! A frame's values go to the dump as one sample of scope `cmdbuf` (GL has no command buffers:
//! the frame's one command stream) carrying `driver_counters`, registered with the assembler
//! like the frame's timestamps, so the frame waits for them (a bounded number of polls).

use crate::driver_counter_fns::*;
use crate::gl::{GlFns, GlInfo};
use crate::winsys::{gl_proc, WinSys};
use framescope_core::driver_values::{DriverGroup, DriverValues, MAX_GROUP};
use framescope_core::sample::{LabelPath, SampleRecord, Scope};
use framescope_core::session::FrameSession;

pub const AMD: &str = "GL_AMD_performance_monitor";
pub const INTEL: &str = "GL_INTEL_performance_query";

/// The context's monitors (`driver_counters=1`, context current), or why there are none.
pub fn create(ws: WinSys, gl: &GlFns, info: &GlInfo, by_group: bool) -> Result<Monitors, String> {
    let (amd, intel) = (gl.has_extension(info, AMD), gl.has_extension(info, INTEL));
    if !amd && !intel {
        return Err(format!("the context has neither {AMD} nor {INTEL}"));
    }
    // GLX hands out an address for any gl* name: only the listed extension's are loaded.
    let fns = DriverCounterFns::load_with(&mut |name| {
        let b = name.to_bytes();
        if (b.ends_with(b"AMD") && amd) || (b.ends_with(b"INTEL") && intel) {
            gl_proc(ws, name)
        } else {
            0
        }
    });
    let sets = sets_of(&fns);
    let n = sets.len();
    Monitors::new(fns, sets, by_group)
        .ok_or_else(|| "the driver lists no counters".to_string())
        .inspect(|_| framescope_core::log::debug(format_args!("driver counters: {n} sets rotated across frames")))
}

/// What a read segment means for the frame session: its values as a sample of the frame (of
/// scope `label` inside a top-level debug group, `cmdbuf` otherwise), and after the frame's
/// last segment the frame's wait for them is over.
pub fn emit(session: &mut FrameSession, s: Segment) {
    if let Some(v) = s.values {
        let in_group = !s.label.ids().is_empty();
        session.push_sample(SampleRecord {
            frame: s.frame,
            scope: if in_group { Scope::Label } else { Scope::CmdBuf },
            label: s.label,
            driver: Some(v),
            ..SampleRecord::default()
        });
    }
    if s.last {
        session.assembler().on_submission_retired(s.frame, None);
    }
}

/// Monitor runs in flight per context: frames times their top-level debug groups.
pub const RING: usize = 64;
/// Sets rotated at most: a driver listing thousands of counters is cut short here.
const MAX_SETS: usize = 64;
/// Polls a result may be waited for before its frame goes without it.
const MAX_WAITS: u32 = 64;

/// One set: what one monitor counts, and how to read its values.
pub struct MonitorSet {
    amd: bool,
    /// AMD group, or Intel query id.
    id: u32,
    /// AMD counter ids, in `desc.names` order.
    counters: Vec<u32>,
    /// AMD: `COUNTER_TYPE_AMD` per counter; Intel: data type per counter.
    types: Vec<u32>,
    /// Intel: each counter's offset in the query's data, and the data's size.
    offsets: Vec<usize>,
    data_size: usize,
    pub desc: DriverGroup,
}

fn amd_unit(ty: u32) -> (&'static str, &'static str) {
    match ty {
        UNSIGNED_INT64_AMD => ("generic", "uint64"),
        PERCENTAGE_AMD => ("percentage", "float32"),
        GL_FLOAT => ("generic", "float32"),
        // GL_UNSIGNED_INT, and any type the spec may add later read as one word.
        _ => ("generic", "uint32"),
    }
}

fn intel_unit(counter_type: u32, data_type: u32) -> (&'static str, &'static str) {
    let unit = match counter_type {
        PERFQUERY_COUNTER_DURATION_NORM_INTEL => "percentage",
        PERFQUERY_COUNTER_DURATION_RAW_INTEL | PERFQUERY_COUNTER_TIMESTAMP_INTEL => "nanoseconds",
        PERFQUERY_COUNTER_THROUGHPUT_INTEL => "bytes_per_second",
        _ => "generic",
    };
    let storage = match data_type {
        PERFQUERY_COUNTER_DATA_UINT64_INTEL => "uint64",
        PERFQUERY_COUNTER_DATA_FLOAT_INTEL => "float32",
        PERFQUERY_COUNTER_DATA_DOUBLE_INTEL => "float64",
        // UINT32 and BOOL32.
        _ => "uint32",
    };
    (unit, storage)
}

fn group(names: Vec<String>, units: Vec<(&'static str, &'static str)>) -> DriverGroup {
    DriverGroup {
        family: 0,
        scope: "frame",
        meanings: vec![None; names.len()],
        names,
        units: units.iter().map(|u| u.0).collect(),
        storages: units.iter().map(|u| u.1).collect(),
    }
}

/// The context's sets, AMD's monitors where both extensions are there.
pub fn sets_of(fns: &DriverCounterFns) -> Vec<MonitorSet> {
    let mut out = Vec::new();
    if fns.has_amd() {
        for g in fns.amd_groups() {
            let per = g.max_active.clamp(1, MAX_GROUP);
            for chunk in g.counters.chunks(per) {
                out.push(MonitorSet {
                    amd: true,
                    id: g.id,
                    counters: chunk.iter().map(|c| c.id).collect(),
                    types: chunk.iter().map(|c| c.ty).collect(),
                    offsets: Vec::new(),
                    data_size: 0,
                    desc: group(
                        chunk.iter().map(|c| c.name.clone()).collect(),
                        chunk.iter().map(|c| amd_unit(c.ty)).collect(),
                    ),
                });
            }
        }
    } else if fns.has_intel() {
        for q in fns.intel_queries() {
            for chunk in q.counters.chunks(MAX_GROUP) {
                out.push(MonitorSet {
                    amd: false,
                    id: q.id,
                    counters: Vec::new(),
                    types: chunk.iter().map(|c| c.data_type).collect(),
                    offsets: chunk.iter().map(|c| c.offset).collect(),
                    data_size: q.data_size.min(1 << 20),
                    desc: group(
                        chunk.iter().map(|c| c.name.clone()).collect(),
                        chunk.iter().map(|c| intel_unit(c.counter_type, c.data_type)).collect(),
                    ),
                });
            }
        }
    }
    out.truncate(MAX_SETS);
    out
}

/// Values of an AMD result (`(group, counter, value)` entries; a value is two words for
/// `UNSIGNED_INT64_AMD`, one otherwise) in the set's counter order; false when the words do
/// not parse (a counter the set does not have: its size is unknown).
fn parse_amd(set: &MonitorSet, words: &[u32], out: &mut [f64]) -> bool {
    let mut i = 0;
    // An entry is at least group, counter and one value word.
    while i + 2 < words.len() {
        let (g, c) = (words[i], words[i + 1]);
        let Some(k) = set.counters.iter().position(|&x| x == c).filter(|_| g == set.id) else {
            return false;
        };
        let ty = set.types[k];
        let v = match ty {
            UNSIGNED_INT64_AMD => {
                let (Some(&lo), Some(&hi)) = (words.get(i + 2), words.get(i + 3)) else {
                    return false;
                };
                i += 4;
                (u64::from(hi) << 32 | u64::from(lo)) as f64
            }
            PERCENTAGE_AMD | GL_FLOAT => {
                i += 3;
                f64::from(f32::from_bits(words[i - 1]))
            }
            _ => {
                i += 3;
                f64::from(words[i - 1])
            }
        };
        if let Some(o) = out.get_mut(k) {
            *o = v;
        }
    }
    true
}

/// Values of an Intel query's data in the set's counter order.
fn parse_intel(set: &MonitorSet, data: &[u8], out: &mut [f64]) {
    for (k, (&off, &ty)) in set.offsets.iter().zip(&set.types).enumerate() {
        let at = |n: usize| data.get(off..off + n);
        let v = match ty {
            PERFQUERY_COUNTER_DATA_UINT64_INTEL => at(8).map(|b| u64::from_le_bytes(b.try_into().unwrap()) as f64),
            PERFQUERY_COUNTER_DATA_FLOAT_INTEL => at(4).map(|b| f64::from(f32::from_le_bytes(b.try_into().unwrap()))),
            PERFQUERY_COUNTER_DATA_DOUBLE_INTEL => at(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())),
            _ => at(4).map(|b| f64::from(u32::from_le_bytes(b.try_into().unwrap()))),
        };
        if let (Some(o), Some(v)) = (out.get_mut(k), v) {
            *o = v;
        }
    }
}

/// Where a segment's monitor is.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum State {
    #[default]
    Free,
    /// Counting (the open segment).
    Open,
    /// Ended, in the open frame.
    Ended,
    /// Ended, its frame registered with the assembler: to be read.
    Registered,
}

/// One monitor run: a frame, or the part of one inside (or between) top-level debug groups.
#[derive(Clone, Copy, Default)]
struct Slot {
    state: State,
    set: usize,
    handle: u32,
    frame: u64,
    /// The top-level debug group it counted (empty: between groups, or several).
    label: LabelPath,
    /// The frame's last segment: reading it ends the frame's wait.
    last: bool,
    /// A segment of the frame could not begin: the frame's segments do not cover it, so none
    /// gives values.
    partial: bool,
    waits: u32,
}

/// What a read segment gives: its frame, its debug group, its values (`None`: not read), and
/// whether it was the frame's last.
pub struct Segment {
    pub frame: u64,
    pub label: LabelPath,
    pub values: Option<DriverValues>,
    pub last: bool,
}

/// One context's monitors.
pub struct Monitors {
    fns: DriverCounterFns,
    sets: Vec<MonitorSet>,
    /// Monitor objects per (slot, set), made on first use (0: not yet).
    handles: Vec<u32>,
    ring: Vec<Slot>,
    head: usize,
    len: usize,
    /// The open segment, and the open frame's first.
    open: Option<usize>,
    frame_first: Option<usize>,
    /// The open frame's set, and whether a segment of it could not begin.
    frame_set: usize,
    frame_partial: bool,
    turn: u64,
    /// Split at top-level debug groups (`samples` at `renderpass` or finer).
    by_group: bool,
    /// The app's debug-group depth as seen through the hooks.
    depth: u32,
    /// Destroyed with its context: hooks still pointing here do nothing.
    alive: bool,
    words: Vec<u32>,
    bytes: Vec<u8>,
}

impl Monitors {
    pub fn new(fns: DriverCounterFns, sets: Vec<MonitorSet>, by_group: bool) -> Option<Monitors> {
        if sets.is_empty() {
            return None;
        }
        let data = sets.iter().map(|s| s.data_size).max().unwrap_or(0);
        Some(Monitors {
            handles: vec![0; RING * sets.len()],
            fns,
            sets,
            ring: vec![Slot::default(); RING],
            head: 0,
            len: 0,
            open: None,
            frame_first: None,
            frame_set: 0,
            frame_partial: false,
            turn: 0,
            by_group,
            depth: 0,
            alive: true,
            words: Vec::new(),
            bytes: vec![0; data],
        })
    }

    /// The sets, for the dump header.
    pub fn groups(&self) -> Vec<DriverGroup> {
        self.sets.iter().map(|s| s.desc.clone()).collect()
    }

    fn handle(&mut self, slot: usize, set: usize) -> u32 {
        let i = slot * self.sets.len() + set;
        if self.handles[i] == 0 {
            let s = &self.sets[set];
            self.handles[i] = if s.amd {
                self.fns.amd_monitor(s.id, &s.counters)
            } else {
                self.fns.intel_query(s.id)
            };
        }
        self.handles[i]
    }

    /// Begins a segment of the open frame counting `label`; false when the ring is full or no
    /// monitor could be made.
    fn begin_segment(&mut self, label: LabelPath) -> bool {
        if self.len == RING {
            return false;
        }
        let slot = (self.head + self.len) % RING;
        let set = self.frame_set;
        let h = self.handle(slot, set);
        if h == 0 {
            return false;
        }
        self.fns.begin(self.sets[set].amd, h);
        self.ring[slot] = Slot {
            state: State::Open,
            set,
            handle: h,
            frame: 0,
            label,
            last: false,
            partial: false,
            waits: 0,
        };
        self.len += 1;
        self.open = Some(slot);
        self.frame_first.get_or_insert(slot);
        true
    }

    fn end_segment(&mut self) {
        let Some(slot) = self.open.take() else { return };
        let s = self.ring[slot];
        self.fns.end(self.sets[s.set].amd, s.handle);
        self.ring[slot].state = State::Ended;
    }

    /// Starts the frame's monitor (after a swap, context current); none while the ring is full.
    pub fn begin_frame(&mut self) {
        if !self.alive || self.open.is_some() || self.frame_first.is_some() {
            return;
        }
        self.frame_set = (self.turn % self.sets.len() as u64) as usize;
        self.turn += 1;
        self.begin_segment(LabelPath::default());
    }

    /// The app pushed a debug group named `name` (context current): at the top level the open
    /// segment ends and one for the group begins.
    pub fn pushed_group(&mut self, name: &[u8]) {
        self.depth += 1;
        if self.depth == 1 {
            let mut label = LabelPath::default();
            label.push(framescope_core::labels::intern(name));
            self.split(label);
        }
    }

    /// The app is popping a debug group: leaving the top level, the group's segment ends.
    pub fn popping_group(&mut self) {
        if self.depth == 1 {
            self.split(LabelPath::default());
        }
        self.depth = self.depth.saturating_sub(1);
    }

    /// Ends the open segment and begins one counting `label`. Where no further segment fits,
    /// the open one goes on counting and no longer names one group.
    fn split(&mut self, label: LabelPath) {
        if !self.alive || !self.by_group {
            return;
        }
        let Some(slot) = self.open else { return };
        if self.len == RING {
            self.ring[slot].label = LabelPath::default();
            return;
        }
        self.end_segment();
        if !self.begin_segment(label) {
            // No monitor now: the rest of the frame goes uncounted, so its values would be
            // short; none of its segments gives any.
            self.frame_partial = true;
        }
    }

    /// Ends the frame's monitor before the swap; `submit` registers the frame with the
    /// assembler (its index comes back) when any segment of it ran.
    pub fn end_frame(&mut self, submit: impl FnOnce() -> u64) {
        self.end_segment();
        let Some(first) = self.frame_first.take() else { return };
        let frame = submit();
        let mut i = first;
        let mut last = first;
        let partial = std::mem::take(&mut self.frame_partial);
        while self.ring[i].state == State::Ended {
            self.ring[i].state = State::Registered;
            self.ring[i].frame = frame;
            self.ring[i].partial = partial;
            last = i;
            i = (i + 1) % RING;
            if i == first {
                break;
            }
        }
        self.ring[last].last = true;
    }

    /// Reads finished segments, oldest first, never waiting; each goes to `emit` (values
    /// `None` for one given up on after a bounded number of polls).
    pub fn read_available(&mut self, mut emit: impl FnMut(Segment)) {
        let mut values = [f64::NAN; MAX_GROUP];
        while self.len > 0 && self.ring[self.head].state == State::Registered {
            let s = self.ring[self.head];
            let set = &self.sets[s.set];
            values.fill(f64::NAN);
            let got = if set.amd {
                self.fns
                    .amd_result(s.handle, &mut self.words)
                    .map(|()| parse_amd(set, &self.words, &mut values))
            } else {
                self.fns.intel_result(s.handle, &mut self.bytes).map(|()| {
                    parse_intel(set, &self.bytes, &mut values);
                    true
                })
            };
            let values = match got {
                Some(ok) => {
                    (ok && !s.partial).then(|| DriverValues::new(s.set as u8, false, &values[..set.desc.names.len()]))
                }
                None if s.waits < MAX_WAITS => {
                    self.ring[self.head].waits += 1;
                    return;
                }
                None => None,
            };
            emit(Segment {
                frame: s.frame,
                label: s.label,
                values,
                last: s.last,
            });
            self.ring[self.head].state = State::Free;
            self.head = (self.head + 1) % RING;
            self.len -= 1;
        }
    }

    /// The context is being destroyed: `current` says GL may be called (then the open monitor
    /// ends and the objects are deleted); frames still waiting are released through `emit`.
    pub fn destroy(&mut self, current: bool, mut emit: impl FnMut(Segment)) {
        if current {
            self.end_segment();
            self.read_available(&mut emit);
            for (i, h) in self.handles.iter_mut().enumerate() {
                if *h != 0 {
                    self.fns.delete(self.sets[i % self.sets.len()].amd, *h);
                    *h = 0;
                }
            }
        }
        self.alive = false;
        self.open = None;
        self.frame_first = None;
        while self.len > 0 {
            let s = self.ring[self.head];
            if s.state == State::Registered {
                emit(Segment {
                    frame: s.frame,
                    label: s.label,
                    values: None,
                    last: s.last,
                });
            }
            self.ring[self.head].state = State::Free;
            self.head = (self.head + 1) % RING;
            self.len -= 1;
        }
    }
}

// ---- the thread's current context ----------------------------------------------------------

/// A context's monitors, shared by its frame state and the debug-group hooks of the thread it
/// is current on.
pub type Shared = std::sync::Arc<framescope_core::sync::Mutex<Monitors>>;

thread_local! {
    static CURRENT: std::cell::RefCell<Option<Shared>> = const { std::cell::RefCell::new(None) };
}

/// Points this thread's debug-group hooks at the monitors of the context made current.
pub fn set_current(m: Option<&Shared>) {
    let _ = CURRENT.try_with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            let same = match (c.as_ref(), m) {
                (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            };
            if !same {
                *c = m.cloned();
            }
        }
    });
}

/// Runs `f` on the current context's monitors; never waits for their lock.
fn with_current(f: impl FnOnce(&mut Monitors)) {
    let _ = CURRENT.try_with(|c| {
        if let Ok(c) = c.try_borrow() {
            if let Some(mut m) = c.as_ref().and_then(|m| m.try_lock()) {
                f(&mut m);
            }
        }
    });
}

/// After the app's push of a debug group named `message`.
pub fn pushed_group(message: &[u8]) {
    with_current(|m| m.pushed_group(message));
}

/// Before the app's pop of a debug group.
pub fn popping_group() {
    with_current(Monitors::popping_group);
}

#[cfg(test)]
mod tests {
    //! A fake function table: extern "C" functions over a thread-local driver, handed to
    //! `DriverCounterFns::load_with` by name as the real GetProcAddress would.
    use super::*;
    use std::cell::RefCell;
    use std::ffi::{c_char, c_void, CStr};

    /// An AMD group: id, most active counters, counters as (id, name, type).
    type Group = (u32, i32, Vec<(u32, &'static str, u32)>);
    /// An Intel query: id, counters as (name, counter type, data type), data packed in order.
    type Query = (u32, Vec<(&'static str, u32, u32)>);
    /// A monitor or query object: (amd, group or query, selected counters, ended as the n-th
    /// end, active).
    type Object = (bool, u32, Vec<u32>, Option<u32>, bool);

    #[derive(Default)]
    struct Fake {
        groups: Vec<Group>,
        queries: Vec<Query>,
        objects: Vec<Object>,
        ends: u32,
        /// Results are ready for objects ended at most this many ends ago... up to this end.
        ready_upto: u32,
        /// Calls that would be GL errors in a real driver (begin of an active object...).
        errors: u32,
    }

    thread_local! {
        static F: RefCell<Fake> = RefCell::new(Fake::default());
    }

    fn with<R>(f: impl FnOnce(&mut Fake) -> R) -> R {
        F.with(|x| f(&mut x.borrow_mut()))
    }

    fn put_name(name: &str, size: usize, out: *mut c_char) {
        let n = name.len().min(size - 1);
        // SAFETY: the caller's buffer holds `size` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(name.as_ptr().cast(), out, n);
            *out.add(n) = 0;
        }
    }

    /// The value a counter reads at the n-th end: distinct per counter and end, with a high
    /// word for 64-bit counters so both halves are checked.
    fn value(n: u32, counter: u32, ty: u32) -> (u64, f32) {
        let wide = ty == UNSIGNED_INT64_AMD || ty == PERFQUERY_COUNTER_DATA_UINT64_INTEL;
        let int = if wide {
            u64::from(n) << 32 | u64::from(counter * 10)
        } else {
            u64::from(n * 100 + counter)
        };
        (int, n as f32 + counter as f32 / 4.0)
    }

    unsafe extern "C" fn get_groups(n: *mut i32, size: i32, out: *mut u32) {
        with(|f| {
            // SAFETY: the caller's outputs.
            unsafe { *n = f.groups.len() as i32 };
            for (i, g) in f.groups.iter().enumerate().take(size.max(0) as usize) {
                // SAFETY: `out` holds `size` entries.
                unsafe { *out.add(i) = g.0 };
            }
        })
    }
    unsafe extern "C" fn get_counters(g: u32, n: *mut i32, max: *mut i32, size: i32, out: *mut u32) {
        with(|f| {
            let grp = f.groups.iter().find(|x| x.0 == g).unwrap();
            // SAFETY: the caller's outputs.
            unsafe {
                *n = grp.2.len() as i32;
                *max = grp.1;
            }
            for (i, c) in grp.2.iter().enumerate().take(size.max(0) as usize) {
                // SAFETY: `out` holds `size` entries.
                unsafe { *out.add(i) = c.0 };
            }
        })
    }
    unsafe extern "C" fn get_counter_string(g: u32, c: u32, size: i32, _len: *mut i32, out: *mut c_char) {
        with(|f| {
            let grp = f.groups.iter().find(|x| x.0 == g).unwrap();
            put_name(grp.2.iter().find(|x| x.0 == c).unwrap().1, size as usize, out);
        })
    }
    unsafe extern "C" fn get_counter_info(g: u32, c: u32, pname: u32, data: *mut c_void) {
        assert_eq!(pname, COUNTER_TYPE_AMD);
        with(|f| {
            let grp = f.groups.iter().find(|x| x.0 == g).unwrap();
            // SAFETY: COUNTER_TYPE_AMD writes one enum.
            unsafe { *(data as *mut u32) = grp.2.iter().find(|x| x.0 == c).unwrap().2 };
        })
    }
    unsafe extern "C" fn gen_monitors(n: i32, out: *mut u32) {
        assert_eq!(n, 1);
        with(|f| {
            f.objects.push((true, 0, Vec::new(), None, false));
            // SAFETY: one name.
            unsafe { *out = f.objects.len() as u32 };
        })
    }
    unsafe extern "C" fn delete_monitors(n: i32, m: *mut u32) {
        assert_eq!(n, 1);
        // SAFETY: one name.
        let m = unsafe { *m };
        with(|f| f.objects[m as usize - 1].4 = false);
    }
    unsafe extern "C" fn select_counters(m: u32, enable: u8, g: u32, n: i32, list: *mut u32) {
        assert_eq!(enable, 1);
        // SAFETY: `n` counters.
        let l = unsafe { std::slice::from_raw_parts(list, n as usize) }.to_vec();
        with(|f| {
            let o = &mut f.objects[m as usize - 1];
            o.1 = g;
            o.2 = l;
        })
    }
    unsafe extern "C" fn begin(h: u32) {
        with(|f| {
            let o = &mut f.objects[h as usize - 1];
            if o.4 {
                f.errors += 1;
            }
            o.4 = true;
            o.3 = None;
        })
    }
    unsafe extern "C" fn end(h: u32) {
        with(|f| {
            f.ends += 1;
            let n = f.ends;
            let o = &mut f.objects[h as usize - 1];
            if !o.4 {
                f.errors += 1;
            }
            o.4 = false;
            o.3 = Some(n);
        })
    }
    fn ready(f: &Fake, h: u32) -> Option<u32> {
        f.objects[h as usize - 1].3.filter(|&n| n <= f.ready_upto)
    }
    unsafe extern "C" fn get_counter_data(m: u32, pname: u32, size: i32, data: *mut u32, written: *mut i32) {
        with(|f| {
            let mut words = Vec::new();
            if let Some(n) = ready(f, m) {
                let o = &f.objects[m as usize - 1];
                let grp = f.groups.iter().find(|x| x.0 == o.1).unwrap();
                for &c in &o.2 {
                    let ty = grp.2.iter().find(|x| x.0 == c).unwrap().2;
                    words.extend([o.1, c]);
                    let (int, float) = value(n, c, ty);
                    match ty {
                        UNSIGNED_INT64_AMD => words.extend([int as u32, (int >> 32) as u32]),
                        PERCENTAGE_AMD => words.push(float.to_bits()),
                        _ => words.push(int as u32),
                    }
                }
            }
            let put = |v: &[u32]| {
                let n = v.len().min(size as usize / 4);
                // SAFETY: the caller's buffer holds `size` bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(v.as_ptr(), data, n);
                    *written = (n * 4) as i32;
                }
            };
            match pname {
                PERFMON_RESULT_AVAILABLE_AMD => put(&[u32::from(ready(f, m).is_some())]),
                PERFMON_RESULT_SIZE_AMD => put(&[(words.len() * 4) as u32]),
                PERFMON_RESULT_AMD => put(&words),
                _ => panic!("pname {pname:#x}"),
            }
        })
    }
    unsafe extern "C" fn first_query_id(out: *mut u32) {
        // SAFETY: one id.
        with(|f| unsafe { *out = f.queries.first().map_or(0, |q| q.0) })
    }
    unsafe extern "C" fn next_query_id(id: u32, out: *mut u32) {
        with(|f| {
            let i = f.queries.iter().position(|q| q.0 == id).unwrap();
            // SAFETY: one id.
            unsafe { *out = f.queries.get(i + 1).map_or(0, |q| q.0) };
        })
    }
    fn intel_size(dt: u32) -> usize {
        if dt == PERFQUERY_COUNTER_DATA_UINT64_INTEL || dt == PERFQUERY_COUNTER_DATA_DOUBLE_INTEL {
            8
        } else {
            4
        }
    }
    unsafe extern "C" fn query_info(
        id: u32,
        len: u32,
        name: *mut c_char,
        size: *mut u32,
        n: *mut u32,
        _inst: *mut u32,
        _caps: *mut u32,
    ) {
        with(|f| {
            let q = f.queries.iter().find(|q| q.0 == id).unwrap();
            put_name("RenderBasic", len as usize, name);
            // SAFETY: the caller's outputs.
            unsafe {
                *size = q.1.iter().map(|c| intel_size(c.2)).sum::<usize>() as u32;
                *n = q.1.len() as u32;
            }
        })
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn counter_info(
        id: u32,
        c: u32,
        len: u32,
        name: *mut c_char,
        _dlen: u32,
        _desc: *mut c_char,
        offset: *mut u32,
        size: *mut u32,
        ctype: *mut u32,
        dtype: *mut u32,
        _max: *mut u64,
    ) {
        with(|f| {
            let q = f.queries.iter().find(|q| q.0 == id).unwrap();
            let k = c as usize - 1;
            let at: usize = q.1[..k].iter().map(|x| intel_size(x.2)).sum();
            put_name(q.1[k].0, len as usize, name);
            // SAFETY: the caller's outputs.
            unsafe {
                *offset = at as u32;
                *size = intel_size(q.1[k].2) as u32;
                *ctype = q.1[k].1;
                *dtype = q.1[k].2;
            }
        })
    }
    unsafe extern "C" fn create_query(id: u32, out: *mut u32) {
        with(|f| {
            f.objects.push((false, id, Vec::new(), None, false));
            // SAFETY: one handle.
            unsafe { *out = f.objects.len() as u32 };
        })
    }
    unsafe extern "C" fn delete_query(h: u32) {
        with(|f| f.objects[h as usize - 1].4 = false);
    }
    unsafe extern "C" fn query_data(h: u32, flags: u32, size: i32, data: *mut c_void, written: *mut u32) {
        assert_eq!(flags, PERFQUERY_DONOT_FLUSH_INTEL, "never a flush or a wait");
        with(|f| {
            let Some(n) = ready(f, h) else {
                // SAFETY: the caller's output.
                unsafe { *written = 0 };
                return;
            };
            let q = f.queries.iter().find(|q| q.0 == f.objects[h as usize - 1].1).unwrap();
            let mut bytes = Vec::new();
            for (k, c) in q.1.iter().enumerate() {
                let (int, float) = value(n, k as u32 + 1, c.2);
                match c.2 {
                    PERFQUERY_COUNTER_DATA_UINT64_INTEL => bytes.extend(int.to_le_bytes()),
                    PERFQUERY_COUNTER_DATA_FLOAT_INTEL => bytes.extend(float.to_le_bytes()),
                    _ => bytes.extend((int as u32).to_le_bytes()),
                }
            }
            assert!(bytes.len() <= size as usize);
            // SAFETY: the caller's buffer holds `size` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), data.cast(), bytes.len());
                *written = bytes.len() as u32;
            }
        })
    }

    fn lookup(amd: bool) -> impl FnMut(&CStr) -> usize {
        move |name: &CStr| -> usize {
            let n = name.to_bytes();
            let f: usize = match n {
                b"glGetPerfMonitorGroupsAMD" => get_groups as *const () as usize,
                b"glGetPerfMonitorCountersAMD" => get_counters as *const () as usize,
                b"glGetPerfMonitorCounterStringAMD" => get_counter_string as *const () as usize,
                b"glGetPerfMonitorCounterInfoAMD" => get_counter_info as *const () as usize,
                b"glGenPerfMonitorsAMD" => gen_monitors as *const () as usize,
                b"glDeletePerfMonitorsAMD" => delete_monitors as *const () as usize,
                b"glSelectPerfMonitorCountersAMD" => select_counters as *const () as usize,
                b"glBeginPerfMonitorAMD" => begin as *const () as usize,
                b"glEndPerfMonitorAMD" => end as *const () as usize,
                b"glGetPerfMonitorCounterDataAMD" => get_counter_data as *const () as usize,
                b"glGetFirstPerfQueryIdINTEL" => first_query_id as *const () as usize,
                b"glGetNextPerfQueryIdINTEL" => next_query_id as *const () as usize,
                b"glGetPerfQueryInfoINTEL" => query_info as *const () as usize,
                b"glGetPerfCounterInfoINTEL" => counter_info as *const () as usize,
                b"glCreatePerfQueryINTEL" => create_query as *const () as usize,
                b"glDeletePerfQueryINTEL" => delete_query as *const () as usize,
                b"glBeginPerfQueryINTEL" => begin as *const () as usize,
                b"glEndPerfQueryINTEL" => end as *const () as usize,
                b"glGetPerfQueryDataINTEL" => query_data as *const () as usize,
                _ => 0,
            };
            let is_amd = n.ends_with(b"AMD");
            if is_amd == amd {
                f
            } else {
                0
            }
        }
    }

    /// Runs `frames` frames: each begins, ends, makes the results of everything ended up to
    /// `ready_lag` ends ago ready, and reads; returns what was emitted.
    fn run(m: &mut Monitors, frames: u64, ready_lag: u32) -> Vec<(u64, Option<DriverValues>)> {
        let mut got = Vec::new();
        for f in 0..frames {
            m.begin_frame();
            m.end_frame(|| f);
            with(|x| x.ready_upto = x.ends.saturating_sub(ready_lag));
            m.read_available(|s| {
                assert!(s.last, "one segment a frame without debug groups");
                got.push((s.frame, s.values));
            });
        }
        got
    }

    #[test]
    fn amd_groups_become_sets_of_their_most_active_counters_and_rotate() {
        with(|f| {
            *f = Fake::default();
            f.groups = vec![
                (
                    7,
                    2,
                    vec![
                        (1, "GUI active", UNSIGNED_INT64_AMD),
                        (2, "Waves", GL_UNSIGNED_INT),
                        (3, "Busy", PERCENTAGE_AMD),
                    ],
                ),
                (9, 4, vec![(5, "Hits", GL_UNSIGNED_INT)]),
            ];
        });
        let fns = DriverCounterFns::load_with(&mut lookup(true));
        assert!(fns.has_amd() && !fns.has_intel());
        let sets = sets_of(&fns);
        let names: Vec<Vec<String>> = sets.iter().map(|s| s.desc.names.clone()).collect();
        assert_eq!(names, [vec!["GUI active", "Waves"], vec!["Busy"], vec!["Hits"]]);
        assert_eq!(sets[0].desc.storages, ["uint64", "uint32"]);
        assert_eq!(
            (sets[1].desc.units[0], sets[1].desc.storages[0]),
            ("percentage", "float32")
        );
        assert_eq!(sets[2].desc.scope, "frame");
        let mut m = Monitors::new(fns, sets, false).unwrap();
        // Results two frames late: nothing is waited for, everything arrives in order.
        let got = run(&mut m, 9, 2);
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), (0..7).collect::<Vec<_>>());
        for (frame, v) in &got {
            let v = v.expect("read");
            let n = *frame as u32 + 1; // the frame's end was the n-th
            assert_eq!(usize::from(v.group), *frame as usize % 3, "frame {frame}");
            match v.group {
                0 => assert_eq!(v.values(), [((u64::from(n) << 32) | 10) as f64, f64::from(n * 100 + 2)]),
                1 => assert_eq!(v.values(), [f64::from(n as f32 + 0.75)]),
                _ => assert_eq!(v.values(), [f64::from(n * 100 + 5)]),
            }
        }
        assert_eq!(
            with(|f| f.errors),
            0,
            "no begin of an active monitor, no end of an idle one"
        );
        // One monitor object per (slot, set) in use, made once.
        assert_eq!(with(|f| f.objects.len()), 9);
        m.destroy(true, |_| {});
        assert!(with(|f| f.objects.iter().all(|o| !o.4)));
    }

    #[test]
    fn a_result_that_never_arrives_releases_its_frame_after_a_bounded_wait() {
        with(|f| {
            *f = Fake::default();
            f.groups = vec![(1, 1, vec![(1, "Cycles", GL_UNSIGNED_INT)])];
        });
        let fns = DriverCounterFns::load_with(&mut lookup(true));
        let sets = sets_of(&fns);
        let mut m = Monitors::new(fns, sets, false).unwrap();
        let mut got = Vec::new();
        m.begin_frame();
        m.end_frame(|| 42);
        for _ in 0..MAX_WAITS {
            m.read_available(|s| got.push((s.frame, s.values)));
        }
        assert!(got.is_empty(), "waited, never blocked");
        m.read_available(|s| got.push((s.frame, s.values)));
        assert_eq!(got, [(42, None)]);
    }

    #[test]
    fn intel_queries_are_cut_into_sets_and_read_from_their_offsets_without_flushing() {
        let counters: Vec<(&'static str, u32, u32)> = (0..10)
            .map(|k| {
                let dt = match k {
                    0 => PERFQUERY_COUNTER_DATA_UINT64_INTEL,
                    1 => PERFQUERY_COUNTER_DATA_FLOAT_INTEL,
                    _ => PERFQUERY_COUNTER_DATA_UINT32_INTEL,
                };
                let ct = if k == 1 {
                    PERFQUERY_COUNTER_DURATION_NORM_INTEL
                } else {
                    PERFQUERY_COUNTER_EVENT_INTEL
                };
                (
                    [
                        "GPU Time Elapsed",
                        "GPU Busy",
                        "C2",
                        "C3",
                        "C4",
                        "C5",
                        "C6",
                        "C7",
                        "C8",
                        "C9",
                    ][k],
                    ct,
                    dt,
                )
            })
            .collect();
        with(|f| {
            *f = Fake::default();
            f.queries = vec![(3, counters)];
        });
        let fns = DriverCounterFns::load_with(&mut lookup(false));
        assert!(fns.has_intel() && !fns.has_amd());
        let sets = sets_of(&fns);
        assert_eq!(sets.len(), 2, "10 counters: 8 and 2");
        assert_eq!(sets[0].desc.names[1], "GPU Busy");
        assert_eq!(sets[0].desc.units[1], "percentage");
        assert_eq!(sets[1].desc.names, ["C8", "C9"]);
        let mut m = Monitors::new(fns, sets, false).unwrap();
        let got = run(&mut m, 4, 0);
        assert_eq!(got.len(), 4);
        let (_, first) = got[0];
        let v = first.unwrap();
        assert_eq!(v.group, 0);
        assert_eq!(v.values()[0], ((1u64 << 32) | 10) as f64);
        assert_eq!(v.values()[1], f64::from(1.0f32 + 0.5));
        assert_eq!(v.values()[2], 103.0);
        let v = got[1].1.unwrap();
        assert_eq!((v.group, v.values()), (1, &[209.0, 210.0][..]));
        assert_eq!(with(|f| f.errors), 0);
    }

    #[test]
    fn top_level_debug_groups_get_segments_of_their_own_that_add_up_to_the_frame() {
        with(|f| {
            *f = Fake::default();
            f.groups = vec![(1, 1, vec![(1, "Cycles", GL_UNSIGNED_INT)])];
        });
        let fns = DriverCounterFns::load_with(&mut lookup(true));
        let sets = sets_of(&fns);
        let mut m = Monitors::new(fns, sets, true).unwrap();
        m.begin_frame();
        m.pushed_group(b"Shadows");
        m.popping_group();
        m.pushed_group(b"Main");
        m.pushed_group(b"Inner"); // nested: no segment of its own
        m.popping_group();
        m.popping_group();
        m.end_frame(|| 5);
        with(|f| f.ready_upto = f.ends);
        let mut got = Vec::new();
        m.read_available(|s| got.push(s));
        let names: Vec<String> = got
            .iter()
            .map(|s| framescope_core::labels::path_string(s.label.ids()))
            .collect();
        assert_eq!(names, ["", "Shadows", "", "Main", ""]);
        assert_eq!(
            got.iter().map(|s| s.last).collect::<Vec<_>>(),
            [false, false, false, false, true]
        );
        assert!(got.iter().all(|s| s.frame == 5));
        // The n-th end reads n * 100 + 1: five segments in order.
        let v: Vec<f64> = got.iter().map(|s| s.values.unwrap().values()[0]).collect();
        assert_eq!(v, [101.0, 201.0, 301.0, 401.0, 501.0]);
        assert_eq!(with(|f| f.errors), 0);
        // More top-level groups than the ring holds: the last segment counts on, unnamed, and
        // the frame is still covered whole.
        m.begin_frame();
        for _ in 0..RING {
            m.pushed_group(b"G");
            m.popping_group();
        }
        m.end_frame(|| 6);
        with(|f| f.ready_upto = f.ends);
        let mut got = Vec::new();
        m.read_available(|s| got.push(s));
        assert_eq!(got.len(), RING);
        assert!(got.iter().all(|s| s.values.is_some()));
        assert!(got.last().unwrap().last && got.last().unwrap().label.ids().is_empty());
        assert_eq!(with(|f| f.errors), 0);
    }
}
