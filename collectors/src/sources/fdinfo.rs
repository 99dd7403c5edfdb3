//! `fdinfo`: this process's own GPU use from DRM fdinfo (`/proc/self/fdinfo/N` of its
//! `/dev/dri/*` fds, the kernel's drm-usage-stats keys). Vendor-neutral and needs no root.
//!
//! * `proc_gpu_busy_pct`: the busiest engine's busy time over the wall time between two
//!   reads, summed over this process's DRM clients. Engines report `drm-engine-<e>: <ns> ns`
//!   (divided by `drm-engine-capacity-<e>` where the driver has several engines behind one
//!   name) or, on Xe, `drm-cycles-<e>` over `drm-total-cycles-<e>`. Engine names differ by
//!   driver (`gfx` on amdgpu, `render` on i915); the maximum over engines needs no table.
//! * `proc_vram_bytes`: per client `drm-memory-vram` (amdgpu), else the resident then total
//!   size of `vram*`/`local*` regions; a driver with no such region (an iGPU, whose memory is
//!   system memory) gives the sum of its `drm-resident-*` regions.
//!
//! Several fds can share one client (`dup`, or the same file opened through Vulkan and GL
//! contexts that share a device): clients are counted once by `drm-client-id`.

use super::kernel_text::{clear, lines, parse_u64};
use crate::seam::{BoxFs, RealFs};
use crate::source::{CounterScope, CounterSource, ReadError, SourceCounter, StartError};
use framescope_core::counters::CounterWindow;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;

const FDINFO_DIR: &str = "/proc/self/fdinfo";
/// Engine names tracked; drivers have a handful (amdgpu has the most, about 8).
const MAX_ENGINES: usize = 16;
/// Games open their render node late and may open more than one, so the fd list is scanned
/// again this often.
pub const RESCAN_NS: u64 = 2_000_000_000;

const BUSY: usize = 0;
const VRAM: usize = 1;

/// One DRM client's cumulative counters at one read.
#[derive(Clone, Copy, Debug)]
struct Client {
    id: u64,
    /// Busy ns per engine slot (`None`: the client has no such key).
    ns: [Option<u64>; MAX_ENGINES],
    cycles: [Option<u64>; MAX_ENGINES],
    total_cycles: [Option<u64>; MAX_ENGINES],
    vram: Option<u64>,
}

impl Client {
    const EMPTY: Client = Client {
        id: 0,
        ns: [None; MAX_ENGINES],
        cycles: [None; MAX_ENGINES],
        total_cycles: [None; MAX_ENGINES],
        vram: None,
    };
}

pub struct FdinfoSource {
    fs: BoxFs,
    catalogue: Vec<SourceCounter>,
    /// fds whose fdinfo had DRM keys at the last scan.
    fds: Vec<u32>,
    last_scan_ns: Option<u64>,
    /// `start` just scanned: the first read takes that scan as made at its time.
    scanned_in_start: bool,
    engines: Vec<String>,
    capacity: [u32; MAX_ENGINES],
    cur: Vec<Client>,
    prev: Vec<Client>,
    prev_now: Option<u64>,
    buf: Vec<u8>,
    names: Vec<OsString>,
    path: String,
}

impl FdinfoSource {
    pub fn new() -> Self {
        Self::with_fs(Box::new(RealFs))
    }

    pub fn with_fs(fs: BoxFs) -> Self {
        FdinfoSource {
            fs,
            catalogue: vec![
                SourceCounter::new("proc_gpu_busy_pct", "%", CounterScope::Process),
                SourceCounter::new("proc_vram_bytes", "bytes", CounterScope::Process),
            ],
            fds: Vec::new(),
            last_scan_ns: None,
            scanned_in_start: false,
            engines: Vec::new(),
            capacity: [1; MAX_ENGINES],
            cur: Vec::new(),
            prev: Vec::new(),
            prev_now: None,
            buf: Vec::new(),
            names: Vec::new(),
            path: String::new(),
        }
    }

    /// Engine names seen so far, in slot order (for logs and tests).
    pub fn engines(&self) -> &[String] {
        &self.engines
    }

    /// The DRM fds found by the last scan.
    pub fn drm_fds(&self) -> &[u32] {
        &self.fds
    }

    /// Lists this process's fds and keeps those whose fdinfo has `drm-driver:`. An fd whose
    /// link points anywhere but `/dev/dri/` is skipped without reading its fdinfo; an fd
    /// whose link cannot be read (or a fixture without links) is judged by its fdinfo.
    fn scan(&mut self) {
        self.fds.clear();
        if self.fs.list_dir(Path::new(FDINFO_DIR), &mut self.names).is_err() {
            return;
        }
        for n in &self.names {
            let Some(fd) = n.to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            self.path.clear();
            let _ = write!(self.path, "/proc/self/fd/{fd}");
            if let Ok(t) = self.fs.read_link(Path::new(&self.path)) {
                if !t.starts_with("/dev/dri/") {
                    continue;
                }
            }
            self.path.clear();
            let _ = write!(self.path, "{FDINFO_DIR}/{fd}");
            if self.fs.read(Path::new(&self.path), &mut self.buf).is_ok()
                && lines(&self.buf).any(|l| l.starts_with(b"drm-driver:"))
            {
                self.fds.push(fd);
            }
        }
    }

    /// Reads every known fd into `self.cur`, one entry per client; false if some fd no
    /// longer is a DRM fd (closed, or its number reused), which calls for a scan.
    fn read_clients(&mut self) -> bool {
        self.cur.clear();
        let mut all_drm = true;
        for &fd in &self.fds {
            self.path.clear();
            let _ = write!(self.path, "{FDINFO_DIR}/{fd}");
            if self.fs.read(Path::new(&self.path), &mut self.buf).is_err() {
                all_drm = false;
                continue;
            }
            match parse_client(&self.buf, fd, &mut self.engines, &mut self.capacity) {
                Some(c) => {
                    if !self.cur.iter().any(|x| x.id == c.id) {
                        self.cur.push(c);
                    }
                }
                None => all_drm = false,
            }
        }
        all_drm
    }

    fn busy_pct(&self, wall_ns: u64) -> f64 {
        let mut best = f64::NAN;
        for e in 0..self.engines.len().min(MAX_ENGINES) {
            let (mut dns, mut have_ns) = (0u64, false);
            let (mut dcyc, mut dtot, mut have_cyc) = (0u64, 0u64, false);
            for c in &self.cur {
                let Some(p) = self.prev.iter().find(|p| p.id == c.id) else {
                    continue;
                };
                if let (Some(a), Some(b)) = (c.ns[e], p.ns[e]) {
                    if let Some(d) = a.checked_sub(b) {
                        dns = dns.saturating_add(d);
                        have_ns = true;
                    }
                }
                if let (Some(a), Some(b), Some(ta), Some(tb)) =
                    (c.cycles[e], p.cycles[e], c.total_cycles[e], p.total_cycles[e])
                {
                    if let (Some(d), Some(dt)) = (a.checked_sub(b), ta.checked_sub(tb)) {
                        dcyc = dcyc.saturating_add(d);
                        // Every client of one GPU sees the same GPU clock: not a sum.
                        dtot = dtot.max(dt);
                        have_cyc = true;
                    }
                }
            }
            let v = if have_ns && wall_ns > 0 {
                dns as f64 / wall_ns as f64 * 100.0 / f64::from(self.capacity[e].max(1))
            } else if have_cyc && dtot > 0 {
                dcyc as f64 / dtot as f64 * 100.0
            } else {
                continue;
            };
            best = if best.is_nan() { v } else { best.max(v) };
        }
        best
    }
}

impl Default for FdinfoSource {
    fn default() -> Self {
        Self::new()
    }
}

impl CounterSource for FdinfoSource {
    fn id(&self) -> &'static str {
        "fdinfo"
    }

    fn catalogue(&self) -> &[SourceCounter] {
        &self.catalogue
    }

    fn start(&mut self) -> Result<(), StartError> {
        self.prev.clear();
        self.prev_now = None;
        self.scan();
        self.scanned_in_start = true;
        if self.fds.is_empty() {
            return Err(StartError::Retry(format!(
                "no DRM fd with drm-usage-stats keys in {FDINFO_DIR} (yet: the app may open the GPU later)"
            )));
        }
        Ok(())
    }

    fn read(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
        if out.len() < self.catalogue.len() {
            return Err(ReadError::Lost("output shorter than the catalogue".into()));
        }
        clear(out);
        if std::mem::take(&mut self.scanned_in_start) {
            self.last_scan_ns = Some(now_ns);
        }
        let due = !matches!(self.last_scan_ns, Some(t) if now_ns.saturating_sub(t) < RESCAN_NS);
        if due || self.fds.is_empty() {
            self.scan();
            self.last_scan_ns = Some(now_ns);
        }
        if !self.read_clients() {
            self.scan();
            self.last_scan_ns = Some(now_ns);
            self.read_clients();
        }

        if !self.cur.is_empty() {
            let vram = self
                .cur
                .iter()
                .filter_map(|c| c.vram)
                .fold(None, |a: Option<u64>, v| Some(a.unwrap_or(0).saturating_add(v)));
            out[VRAM] = vram.map_or(f64::NAN, |v| v as f64);
        }
        let mut begin = now_ns;
        if let Some(p) = self.prev_now.filter(|&p| p < now_ns) {
            out[BUSY] = self.busy_pct(now_ns - p);
            if !out[BUSY].is_nan() {
                begin = p;
            }
        }
        std::mem::swap(&mut self.prev, &mut self.cur);
        self.prev_now = Some(now_ns);
        Ok(CounterWindow {
            begin_ns: begin,
            end_ns: now_ns,
        })
    }
}

/// Slot of engine `name`, added if new and there is room.
fn engine_slot(engines: &mut Vec<String>, name: &[u8]) -> Option<usize> {
    let name = std::str::from_utf8(name).ok()?;
    if let Some(i) = engines.iter().position(|e| e == name) {
        return Some(i);
    }
    if engines.len() >= MAX_ENGINES || name.is_empty() {
        return None;
    }
    engines.push(name.to_string());
    Some(engines.len() - 1)
}

/// `1234 KiB` in bytes; a bare number is bytes.
fn size_value(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    let (num, mul) = if let Some(n) = v.strip_suffix(b"KiB") {
        (n, 1u64 << 10)
    } else if let Some(n) = v.strip_suffix(b"MiB") {
        (n, 1 << 20)
    } else if let Some(n) = v.strip_suffix(b"GiB") {
        (n, 1 << 30)
    } else {
        (v, 1)
    };
    parse_u64(num)?.checked_mul(mul)
}

fn is_vram_region(r: &[u8]) -> bool {
    r.starts_with(b"vram") || r.starts_with(b"local")
}

/// One fd's fdinfo as a client; `None` if it has no `drm-driver:` (not a DRM fd any more).
/// An fd without `drm-client-id` (very old kernels) counts as its own client.
fn parse_client(buf: &[u8], fd: u32, engines: &mut Vec<String>, capacity: &mut [u32; MAX_ENGINES]) -> Option<Client> {
    let mut c = Client::EMPTY;
    c.id = u64::MAX - u64::from(fd);
    let mut drm = false;
    let (mut legacy, mut res_vram, mut tot_vram, mut res_any) = (None::<u64>, None::<u64>, None::<u64>, None::<u64>);
    let add = |slot: &mut Option<u64>, v: Option<u64>| {
        if let Some(v) = v {
            *slot = Some(slot.unwrap_or(0).saturating_add(v));
        }
    };
    for l in lines(buf) {
        let Some(colon) = l.iter().position(|&b| b == b':') else {
            continue;
        };
        let (k, v) = (&l[..colon], &l[colon + 1..]);
        let Some(k) = k.strip_prefix(b"drm-") else {
            continue;
        };
        if k == b"driver" {
            drm = true;
        } else if k == b"client-id" {
            if let Some(id) = parse_u64(v) {
                c.id = id;
            }
        } else if let Some(e) = k.strip_prefix(b"engine-capacity-") {
            if let (Some(i), Some(n)) = (engine_slot(engines, e), parse_u64(v)) {
                capacity[i] = u32::try_from(n).unwrap_or(1).max(1);
            }
        } else if let Some(e) = k.strip_prefix(b"engine-") {
            let ns = v.trim_ascii().strip_suffix(b"ns").and_then(parse_u64);
            if let (Some(i), Some(ns)) = (engine_slot(engines, e), ns) {
                c.ns[i] = Some(ns);
            }
        } else if let Some(e) = k.strip_prefix(b"total-cycles-") {
            if let (Some(i), Some(n)) = (engine_slot(engines, e), parse_u64(v)) {
                c.total_cycles[i] = Some(n);
            }
        } else if let Some(e) = k.strip_prefix(b"cycles-") {
            if let (Some(i), Some(n)) = (engine_slot(engines, e), parse_u64(v)) {
                c.cycles[i] = Some(n);
            }
        } else if k == b"memory-vram" {
            add(&mut legacy, size_value(v));
        } else if let Some(r) = k.strip_prefix(b"resident-") {
            let s = size_value(v);
            if is_vram_region(r) {
                add(&mut res_vram, s);
            }
            add(&mut res_any, s);
        } else if let Some(r) = k.strip_prefix(b"total-") {
            if is_vram_region(r) {
                add(&mut tot_vram, size_value(v));
            }
        }
    }
    if !drm {
        return None;
    }
    c.vram = legacy.or(res_vram).or(tot_vram).or(res_any);
    Some(c)
}
