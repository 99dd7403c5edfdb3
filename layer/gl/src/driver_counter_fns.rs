//! The entry points of `GL_AMD_performance_monitor` (radeonsi, freedreno, nouveau) and
//! `GL_INTEL_performance_query` (iris), with safe wrappers; loaded only when the context
//! lists the extension and `driver_counters=1`. Values, types and layouts are those of the two
//! extension specifications.

use crate::loader::gl_table;
use std::ffi::{c_char, c_void};

#[cfg(test)]
pub const GL_UNSIGNED_INT: u32 = 0x1405;
pub const GL_FLOAT: u32 = 0x1406;
pub const COUNTER_TYPE_AMD: u32 = 0x8BC0;
pub const UNSIGNED_INT64_AMD: u32 = 0x8BC2;
pub const PERCENTAGE_AMD: u32 = 0x8BC3;
pub const PERFMON_RESULT_AVAILABLE_AMD: u32 = 0x8BC4;
pub const PERFMON_RESULT_SIZE_AMD: u32 = 0x8BC5;
pub const PERFMON_RESULT_AMD: u32 = 0x8BC6;

pub const PERFQUERY_DONOT_FLUSH_INTEL: u32 = 0x83F9;
#[cfg(test)]
pub const PERFQUERY_COUNTER_EVENT_INTEL: u32 = 0x94F0;
pub const PERFQUERY_COUNTER_DURATION_NORM_INTEL: u32 = 0x94F1;
pub const PERFQUERY_COUNTER_DURATION_RAW_INTEL: u32 = 0x94F2;
pub const PERFQUERY_COUNTER_THROUGHPUT_INTEL: u32 = 0x94F3;
pub const PERFQUERY_COUNTER_TIMESTAMP_INTEL: u32 = 0x94F5;
#[cfg(test)]
pub const PERFQUERY_COUNTER_DATA_UINT32_INTEL: u32 = 0x94F8;
pub const PERFQUERY_COUNTER_DATA_UINT64_INTEL: u32 = 0x94F9;
pub const PERFQUERY_COUNTER_DATA_FLOAT_INTEL: u32 = 0x94FA;
pub const PERFQUERY_COUNTER_DATA_DOUBLE_INTEL: u32 = 0x94FB;

type E = u32; // GLenum
type I = i32; // GLint, GLsizei
type U = u32; // GLuint

gl_table! {
    /// The two extensions' entry points (`None` where the context gave no address).
    pub struct DriverCounterFns {
        get_groups = c"glGetPerfMonitorGroupsAMD": fn(*mut I, I, *mut U);
        get_counters = c"glGetPerfMonitorCountersAMD": fn(U, *mut I, *mut I, I, *mut U);
        get_counter_string = c"glGetPerfMonitorCounterStringAMD": fn(U, U, I, *mut I, *mut c_char);
        get_counter_info = c"glGetPerfMonitorCounterInfoAMD": fn(U, U, E, *mut c_void);
        gen_monitors = c"glGenPerfMonitorsAMD": fn(I, *mut U);
        delete_monitors = c"glDeletePerfMonitorsAMD": fn(I, *mut U);
        select_counters = c"glSelectPerfMonitorCountersAMD": fn(U, u8, U, I, *mut U);
        begin_monitor = c"glBeginPerfMonitorAMD": fn(U);
        end_monitor = c"glEndPerfMonitorAMD": fn(U);
        get_counter_data = c"glGetPerfMonitorCounterDataAMD": fn(U, E, I, *mut U, *mut I);
        first_query_id = c"glGetFirstPerfQueryIdINTEL": fn(*mut U);
        next_query_id = c"glGetNextPerfQueryIdINTEL": fn(U, *mut U);
        query_info = c"glGetPerfQueryInfoINTEL": fn(U, U, *mut c_char, *mut U, *mut U, *mut U, *mut U);
        counter_info = c"glGetPerfCounterInfoINTEL": fn(U, U, U, *mut c_char, U, *mut c_char, *mut U, *mut U, *mut U, *mut U, *mut u64);
        create_query = c"glCreatePerfQueryINTEL": fn(U, *mut U);
        delete_query = c"glDeletePerfQueryINTEL": fn(U);
        begin_query = c"glBeginPerfQueryINTEL": fn(U);
        end_query = c"glEndPerfQueryINTEL": fn(U);
        query_data = c"glGetPerfQueryDataINTEL": fn(U, U, I, *mut c_void, *mut U);
    }
}

/// Longest name read from the driver.
const NAME: usize = 256;

fn text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// An AMD counter: its name and `COUNTER_TYPE_AMD`.
pub struct AmdCounter {
    pub id: u32,
    pub name: String,
    pub ty: u32,
}

/// An AMD group: its counters and how many may be active at once.
pub struct AmdGroup {
    pub id: u32,
    pub max_active: usize,
    pub counters: Vec<AmdCounter>,
}

/// An Intel counter: name, where its value is in the query's data, its data and counter type.
pub struct IntelCounter {
    pub name: String,
    pub offset: usize,
    pub data_type: u32,
    pub counter_type: u32,
}

/// An Intel query (a metric set): its data size and counters.
pub struct IntelQuery {
    pub id: u32,
    pub data_size: usize,
    pub counters: Vec<IntelCounter>,
}

/// Most groups, counters per group and queries read: a driver's lists are bounded here.
const MAX_LIST: usize = 1024;

impl DriverCounterFns {
    pub fn has_amd(&self) -> bool {
        self.get_groups.is_some()
            && self.get_counters.is_some()
            && self.get_counter_string.is_some()
            && self.get_counter_info.is_some()
            && self.gen_monitors.is_some()
            && self.delete_monitors.is_some()
            && self.select_counters.is_some()
            && self.begin_monitor.is_some()
            && self.end_monitor.is_some()
            && self.get_counter_data.is_some()
    }

    pub fn has_intel(&self) -> bool {
        self.first_query_id.is_some()
            && self.next_query_id.is_some()
            && self.query_info.is_some()
            && self.counter_info.is_some()
            && self.create_query.is_some()
            && self.delete_query.is_some()
            && self.begin_query.is_some()
            && self.end_query.is_some()
            && self.query_data.is_some()
    }

    /// Every AMD group with its counters (initialisation, context current).
    pub fn amd_groups(&self) -> Vec<AmdGroup> {
        let (Some(gg), Some(gc), Some(gs), Some(gi)) = (
            self.get_groups,
            self.get_counters,
            self.get_counter_string,
            self.get_counter_info,
        ) else {
            return Vec::new();
        };
        let mut n = 0i32;
        // SAFETY: the spec's two-call idiom: the count with a zero-sized array first.
        unsafe { gg(&mut n, 0, std::ptr::null_mut()) };
        let mut ids = vec![0u32; (n.max(0) as usize).min(MAX_LIST)];
        // SAFETY: `ids` holds ids.len() entries.
        unsafe { gg(&mut n, ids.len() as i32, ids.as_mut_ptr()) };
        ids.truncate(n.max(0) as usize);
        let mut out = Vec::new();
        for g in ids {
            let (mut count, mut max_active) = (0i32, 0i32);
            // SAFETY: as above, count and the most active counters first.
            unsafe { gc(g, &mut count, &mut max_active, 0, std::ptr::null_mut()) };
            let mut cs = vec![0u32; (count.max(0) as usize).min(MAX_LIST)];
            // SAFETY: `cs` holds cs.len() entries.
            unsafe { gc(g, &mut count, &mut max_active, cs.len() as i32, cs.as_mut_ptr()) };
            cs.truncate(count.max(0) as usize);
            let counters = cs
                .into_iter()
                .map(|c| {
                    let mut buf = [0 as c_char; NAME];
                    let mut len = 0i32;
                    let mut ty = 0u32;
                    // SAFETY: a buffer of NAME bytes; COUNTER_TYPE_AMD writes one enum.
                    unsafe {
                        gs(g, c, NAME as i32, &mut len, buf.as_mut_ptr());
                        gi(g, c, COUNTER_TYPE_AMD, (&mut ty as *mut u32).cast());
                    }
                    AmdCounter {
                        id: c,
                        name: text(&buf),
                        ty,
                    }
                })
                .collect();
            out.push(AmdGroup {
                id: g,
                max_active: max_active.max(0) as usize,
                counters,
            });
        }
        out
    }

    /// Every Intel query with its counters (initialisation, context current).
    pub fn intel_queries(&self) -> Vec<IntelQuery> {
        let (Some(first), Some(next), Some(qi), Some(ci)) = (
            self.first_query_id,
            self.next_query_id,
            self.query_info,
            self.counter_info,
        ) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut id = 0u32;
        // SAFETY: writes one id (0 when there is none).
        unsafe { first(&mut id) };
        while id != 0 && out.len() < MAX_LIST {
            let mut name = [0 as c_char; NAME];
            let (mut size, mut counters, mut instances, mut caps) = (0u32, 0u32, 0u32, 0u32);
            // SAFETY: a buffer of NAME bytes and four outputs.
            unsafe {
                qi(
                    id,
                    NAME as u32,
                    name.as_mut_ptr(),
                    &mut size,
                    &mut counters,
                    &mut instances,
                    &mut caps,
                )
            };
            let list = (1..=counters.min(MAX_LIST as u32))
                .map(|c| {
                    let mut cname = [0 as c_char; NAME];
                    let mut desc = [0 as c_char; NAME];
                    let (mut offset, mut dsize, mut ctype, mut dtype) = (0u32, 0u32, 0u32, 0u32);
                    let mut max = 0u64;
                    // SAFETY: two buffers of NAME bytes and five outputs; counter ids are 1-based.
                    unsafe {
                        ci(
                            id,
                            c,
                            NAME as u32,
                            cname.as_mut_ptr(),
                            NAME as u32,
                            desc.as_mut_ptr(),
                            &mut offset,
                            &mut dsize,
                            &mut ctype,
                            &mut dtype,
                            &mut max,
                        )
                    };
                    IntelCounter {
                        name: text(&cname),
                        offset: offset as usize,
                        data_type: dtype,
                        counter_type: ctype,
                    }
                })
                .collect();
            out.push(IntelQuery {
                id,
                data_size: size as usize,
                counters: list,
            });
            let mut n = 0u32;
            // SAFETY: writes one id (0 after the last).
            unsafe { next(id, &mut n) };
            id = n;
        }
        out
    }

    /// A new AMD monitor with `counters` of `group` selected; 0 when none was made.
    pub fn amd_monitor(&self, group: u32, counters: &[u32]) -> u32 {
        let (Some(gen), Some(sel)) = (self.gen_monitors, self.select_counters) else {
            return 0;
        };
        let mut m = 0u32;
        let mut list = counters.to_vec();
        // SAFETY: one monitor name into `m`; then a list of list.len() counters of the group.
        unsafe {
            gen(1, &mut m);
            if m != 0 {
                sel(m, 1, group, list.len() as i32, list.as_mut_ptr());
            }
        }
        m
    }

    /// A new Intel query object of query `id`; 0 when none was made.
    pub fn intel_query(&self, id: u32) -> u32 {
        let Some(create) = self.create_query else { return 0 };
        let mut h = 0u32;
        // SAFETY: writes one handle.
        unsafe { create(id, &mut h) };
        h
    }

    pub fn begin(&self, amd: bool, h: u32) {
        let f = if amd { self.begin_monitor } else { self.begin_query };
        if let Some(f) = f {
            // SAFETY: our own monitor/query object, not active.
            unsafe { f(h) };
        }
    }

    pub fn end(&self, amd: bool, h: u32) {
        let f = if amd { self.end_monitor } else { self.end_query };
        if let Some(f) = f {
            // SAFETY: our own active monitor/query object.
            unsafe { f(h) };
        }
    }

    /// An AMD monitor's result words (group, counter, value...), without waiting: `None` while
    /// not available. `out` keeps its allocation across calls.
    pub fn amd_result(&self, m: u32, out: &mut Vec<u32>) -> Option<()> {
        let f = self.get_counter_data?;
        let mut avail = 0u32;
        let mut written = 0i32;
        // SAFETY: one word for the availability, one for the size.
        unsafe { f(m, PERFMON_RESULT_AVAILABLE_AMD, 4, &mut avail, &mut written) };
        if avail == 0 {
            return None;
        }
        let mut size = 0u32;
        // SAFETY: as above.
        unsafe { f(m, PERFMON_RESULT_SIZE_AMD, 4, &mut size, &mut written) };
        let words = (size as usize / 4).min(1 << 16);
        out.clear();
        out.resize(words, 0);
        // SAFETY: a buffer of `words` words, its size in bytes given.
        unsafe {
            f(
                m,
                PERFMON_RESULT_AMD,
                (words * 4) as i32,
                out.as_mut_ptr(),
                &mut written,
            )
        };
        out.truncate((written.max(0) as usize / 4).min(words));
        Some(())
    }

    /// An Intel query's data, without flushing or waiting: `None` while not ready (the driver
    /// writes no bytes then).
    pub fn intel_result(&self, h: u32, out: &mut [u8]) -> Option<()> {
        let f = self.query_data?;
        let mut written = 0u32;
        // SAFETY: a buffer of out.len() bytes.
        unsafe {
            f(
                h,
                PERFQUERY_DONOT_FLUSH_INTEL,
                out.len() as i32,
                out.as_mut_ptr().cast(),
                &mut written,
            )
        };
        (written > 0).then_some(())
    }

    pub fn delete(&self, amd: bool, h: u32) {
        if amd {
            if let Some(f) = self.delete_monitors {
                let mut m = h;
                // SAFETY: one monitor of ours.
                unsafe { f(1, &mut m) };
            }
        } else if let Some(f) = self.delete_query {
            // SAFETY: a query object of ours.
            unsafe { f(h) };
        }
    }
}
