//! `system`: machine CPU load and clocks, RAM, and this process's CPU time and RSS, from
//! `/proc/stat`, `/proc/meminfo`, `/proc/self/{stat,statm}` and cpufreq (or `/proc/cpuinfo`).
//!
//! Load and process CPU % are deltas between two reads: the first read has none (NaN), and
//! the window of a later read is the interval since the previous one.

use super::kernel_text::{clear, lines, parse_f64, parse_u64, read_u64};
use crate::seam::{BoxFs, RealFs};
use crate::source::{CounterScope, CounterSource, ReadError, SourceCounter, StartError};
use framescope_core::counters::CounterWindow;
use std::path::{Path, PathBuf};

/// Per-core counters are kept for the first 16 CPUs of `/proc/stat` only: each core costs
/// two catalogue slots, and the board holds 96 counters for every source together. The
/// total `cpu_load_pct` still covers every CPU.
pub const MAX_CORES: usize = 16;

const CPU_LOAD: usize = 0;
const RAM_USED: usize = 1;
const RAM_TOTAL: usize = 2;
const PROC_CPU_PCT: usize = 3;
const PROC_RSS: usize = 4;
const PROC_CPU_NS: usize = 5;
/// Index of `cpu{first}_load_pct`; each core has `load`, then `mhz`.
const FIRST_CORE: usize = 6;

const STAT: &str = "/proc/stat";
const MEMINFO: &str = "/proc/meminfo";
const SELF_STAT: &str = "/proc/self/stat";
const SELF_STATM: &str = "/proc/self/statm";
const CPUINFO: &str = "/proc/cpuinfo";

/// Machine constants the counters scale by; tests pass their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemParams {
    /// Bytes per page (`/proc/self/statm` counts pages).
    pub page_size: u64,
    /// Clock ticks per second (`/proc/*/stat` CPU times are in ticks).
    pub clk_tck: u64,
}

impl SystemParams {
    /// This machine's values from `sysconf`, with the usual Linux defaults if it fails.
    pub fn of_this_machine() -> Self {
        // SAFETY: sysconf takes an integer name and touches no caller memory; an unknown name
        // returns -1, handled below.
        let (page, tck) = unsafe { (libc::sysconf(libc::_SC_PAGESIZE), libc::sysconf(libc::_SC_CLK_TCK)) };
        SystemParams {
            page_size: u64::try_from(page).ok().filter(|&v| v > 0).unwrap_or(4096),
            clk_tck: u64::try_from(tck).ok().filter(|&v| v > 0).unwrap_or(100),
        }
    }
}

/// Busy and total ticks of one `cpu` line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CpuTicks {
    busy: u64,
    total: u64,
}

impl CpuTicks {
    /// Load in % since `prev`; NaN when no tick passed or the counters went backwards
    /// (a CPU that went offline and came back restarts its counts).
    fn load_since(self, prev: Option<CpuTicks>) -> f64 {
        let Some(p) = prev else { return f64::NAN };
        match (self.total.checked_sub(p.total), self.busy.checked_sub(p.busy)) {
            (Some(dt), Some(db)) if dt > 0 && db <= dt => db as f64 / dt as f64 * 100.0,
            _ => f64::NAN,
        }
    }
}

/// Where per-core clocks come from, decided once at construction.
#[derive(Debug)]
enum MhzFrom {
    /// `cpufreq/scaling_cur_freq` (kHz) of each core, in core order.
    Cpufreq(Vec<PathBuf>),
    /// `cpu MHz` lines of `/proc/cpuinfo` (x86 without cpufreq, such as most VMs).
    Cpuinfo,
    None,
}

pub struct SystemSource {
    fs: BoxFs,
    params: SystemParams,
    catalogue: Vec<SourceCounter>,
    /// Kernel CPU numbers with per-core counters, in `/proc/stat` order.
    cores: Vec<u32>,
    mhz: MhzFrom,
    buf: Vec<u8>,
    prev_total: Option<CpuTicks>,
    prev_cores: Vec<Option<CpuTicks>>,
    cur_cores: Vec<Option<CpuTicks>>,
    prev_proc_ns: Option<u64>,
    prev_now: Option<u64>,
    /// Construction read a `/proc/stat` with a `cpu` line.
    stat_read_at_build: bool,
}

impl SystemSource {
    /// The machine's own `/proc`.
    pub fn new() -> Self {
        Self::with_fs(Box::new(RealFs), SystemParams::of_this_machine())
    }

    /// Scans `/proc/stat` for the cores (and cpufreq for their clocks) through `fs`; the
    /// catalogue is fixed from what it finds. This reads `/proc/stat` once (a scripted `fs`
    /// sees one read before the first `read`), and the first `start` relies on it.
    pub fn with_fs(mut fs: BoxFs, params: SystemParams) -> Self {
        let mut buf = Vec::new();
        let mut cores = Vec::new();
        let mut stat_ok = false;
        if fs.read(Path::new(STAT), &mut buf).is_ok() {
            stat_ok = lines(&buf).any(|l| l.starts_with(b"cpu "));
            for l in lines(&buf) {
                if let Some(n) = core_number(l) {
                    if cores.len() < MAX_CORES {
                        cores.push(n);
                    }
                }
            }
        }
        let mhz = match cores.first() {
            Some(&c0) if fs.read(&cpufreq_path(c0), &mut buf).is_ok() => {
                MhzFrom::Cpufreq(cores.iter().map(|&c| cpufreq_path(c)).collect())
            }
            Some(_)
                if fs.read(Path::new(CPUINFO), &mut buf).is_ok() && lines(&buf).any(|l| l.starts_with(b"cpu MHz")) =>
            {
                MhzFrom::Cpuinfo
            }
            _ => MhzFrom::None,
        };
        let mut catalogue = vec![
            SourceCounter::new("cpu_load_pct", "%", CounterScope::System),
            SourceCounter::new("ram_used_bytes", "bytes", CounterScope::System),
            SourceCounter::new("ram_total_bytes", "bytes", CounterScope::System),
            SourceCounter::new("proc_cpu_pct", "%", CounterScope::Process),
            SourceCounter::new("proc_rss_bytes", "bytes", CounterScope::Process),
            SourceCounter::new("proc_cpu_time_ns", "ns", CounterScope::Process),
        ];
        for &c in &cores {
            catalogue.push(SourceCounter::new(
                format!("cpu{c}_load_pct"),
                "%",
                CounterScope::System,
            ));
            catalogue.push(SourceCounter::new(format!("cpu{c}_mhz"), "MHz", CounterScope::System));
        }
        let n = cores.len();
        SystemSource {
            fs,
            params,
            catalogue,
            cores,
            mhz,
            buf,
            prev_total: None,
            prev_cores: vec![None; n],
            cur_cores: vec![None; n],
            prev_proc_ns: None,
            prev_now: None,
            stat_read_at_build: stat_ok,
        }
    }

    /// Parses `/proc/stat` (already in `self.buf`) into `out`; false if it has no `cpu` line.
    fn read_stat(&mut self, out: &mut [f64]) -> bool {
        let mut total = None;
        self.cur_cores.iter_mut().for_each(|c| *c = None);
        for l in lines(&self.buf) {
            if let Some(rest) = l.strip_prefix(b"cpu ") {
                total = parse_ticks(rest);
            } else if let Some(n) = core_number(l) {
                if let Some(i) = self.cores.iter().position(|&c| c == n) {
                    let rest = l.splitn(2, |&c| c == b' ').nth(1).unwrap_or_default();
                    self.cur_cores[i] = parse_ticks(rest);
                }
            }
        }
        out[CPU_LOAD] = total.map_or(f64::NAN, |t| t.load_since(self.prev_total));
        for (i, (cur, prev)) in self.cur_cores.iter().zip(&self.prev_cores).enumerate() {
            out[FIRST_CORE + 2 * i] = cur.map_or(f64::NAN, |t| t.load_since(*prev));
        }
        self.prev_total = total;
        std::mem::swap(&mut self.prev_cores, &mut self.cur_cores);
        total.is_some()
    }

    fn read_mhz(&mut self, out: &mut [f64]) {
        match &self.mhz {
            MhzFrom::Cpufreq(paths) => {
                for (i, p) in paths.iter().enumerate() {
                    out[FIRST_CORE + 2 * i + 1] =
                        read_u64(&mut *self.fs, p, &mut self.buf).map_or(f64::NAN, |khz| khz as f64 / 1000.0);
                }
            }
            MhzFrom::Cpuinfo => {
                if self.fs.read(Path::new(CPUINFO), &mut self.buf).is_err() {
                    return;
                }
                let mut cpu = None;
                for l in lines(&self.buf) {
                    let Some((k, v)) = split_colon(l) else { continue };
                    if k == b"processor" {
                        cpu = parse_u64(v).and_then(|n| u32::try_from(n).ok());
                    } else if k == b"cpu MHz" {
                        let idx = cpu.and_then(|n| self.cores.iter().position(|&c| c == n));
                        if let Some(i) = idx {
                            out[FIRST_CORE + 2 * i + 1] = parse_f64(v).unwrap_or(f64::NAN);
                        }
                    }
                }
            }
            MhzFrom::None => {}
        }
    }

    fn read_meminfo(&mut self, out: &mut [f64]) -> bool {
        if self.fs.read(Path::new(MEMINFO), &mut self.buf).is_err() {
            return false;
        }
        let (mut total, mut avail) = (None, None);
        for l in lines(&self.buf) {
            let Some((k, v)) = split_colon(l) else { continue };
            match k {
                b"MemTotal" => total = kb_value(v),
                b"MemAvailable" => avail = kb_value(v),
                _ => {}
            }
            if total.is_some() && avail.is_some() {
                break;
            }
        }
        out[RAM_TOTAL] = total.map_or(f64::NAN, |t| t as f64);
        out[RAM_USED] = match (total, avail) {
            (Some(t), Some(a)) => t.saturating_sub(a) as f64,
            _ => f64::NAN,
        };
        total.is_some()
    }

    fn read_self(&mut self, now_ns: u64, out: &mut [f64]) -> bool {
        let mut ok = false;
        let cpu_ns = match self.fs.read(Path::new(SELF_STAT), &mut self.buf) {
            Ok(()) => self_cpu_ticks(&self.buf)
                .map(|t| (u128::from(t) * 1_000_000_000 / u128::from(self.params.clk_tck.max(1))) as u64),
            Err(_) => None,
        };
        out[PROC_CPU_NS] = cpu_ns.map_or(f64::NAN, |v| v as f64);
        out[PROC_CPU_PCT] = match (cpu_ns, self.prev_proc_ns, self.prev_now) {
            (Some(c), Some(pc), Some(pn)) if now_ns > pn && c >= pc => (c - pc) as f64 / (now_ns - pn) as f64 * 100.0,
            _ => f64::NAN,
        };
        self.prev_proc_ns = cpu_ns;
        ok |= cpu_ns.is_some();

        if self.fs.read(Path::new(SELF_STATM), &mut self.buf).is_ok() {
            let resident = self.buf.split(|c| c.is_ascii_whitespace()).nth(1).and_then(parse_u64);
            out[PROC_RSS] = resident.map_or(f64::NAN, |p| p.saturating_mul(self.params.page_size) as f64);
            ok |= resident.is_some();
        }
        ok
    }
}

impl Default for SystemSource {
    fn default() -> Self {
        Self::new()
    }
}

impl CounterSource for SystemSource {
    fn id(&self) -> &'static str {
        "system"
    }

    fn catalogue(&self) -> &[SourceCounter] {
        &self.catalogue
    }

    fn start(&mut self) -> Result<(), StartError> {
        // Construction just read /proc/stat; a first start need not read it again.
        if std::mem::take(&mut self.stat_read_at_build) {
            return Ok(());
        }
        match self.fs.read(Path::new(STAT), &mut self.buf) {
            Ok(()) if lines(&self.buf).any(|l| l.starts_with(b"cpu ")) => Ok(()),
            Ok(()) => Err(StartError::Unavailable(format!("{STAT} has no `cpu` line"))),
            Err(e) => Err(StartError::Unavailable(format!("cannot read {STAT}: {e}"))),
        }
    }

    fn read(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
        if out.len() < self.catalogue.len() {
            return Err(ReadError::Lost(format!(
                "output has {} slots for {} counters",
                out.len(),
                self.catalogue.len()
            )));
        }
        clear(out);
        let stat_ok = self.fs.read(Path::new(STAT), &mut self.buf).is_ok() && self.read_stat(out);
        if !stat_ok {
            self.prev_total = None;
            self.prev_cores.iter_mut().for_each(|c| *c = None);
        }
        self.read_mhz(out);
        let mem_ok = self.read_meminfo(out);
        let self_ok = self.read_self(now_ns, out);
        if !(stat_ok || mem_ok || self_ok) {
            return Err(ReadError::Lost(format!("cannot read {STAT}, {MEMINFO} or {SELF_STAT}")));
        }
        let begin = self.prev_now.filter(|&p| p <= now_ns).unwrap_or(now_ns);
        self.prev_now = Some(now_ns);
        Ok(CounterWindow {
            begin_ns: begin,
            end_ns: now_ns,
        })
    }
}

fn cpufreq_path(cpu: u32) -> PathBuf {
    PathBuf::from(format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq"))
}

/// `N` of a `cpuN ...` line of `/proc/stat`.
fn core_number(line: &[u8]) -> Option<u32> {
    let rest = line.strip_prefix(b"cpu")?;
    let end = rest.iter().position(|&c| c == b' ')?;
    let n = parse_u64(&rest[..end])?;
    u32::try_from(n).ok()
}

/// Busy and total ticks from the numbers after `cpu`/`cpuN`: user nice system idle iowait
/// irq softirq steal (guest time is already inside user and nice, so it is not added again).
fn parse_ticks(rest: &[u8]) -> Option<CpuTicks> {
    let mut f = [0u64; 8];
    let mut n = 0;
    for w in rest.split(|c| c.is_ascii_whitespace()).filter(|w| !w.is_empty()) {
        if n == f.len() {
            break;
        }
        f[n] = parse_u64(w)?;
        n += 1;
    }
    // user nice system idle are there on every kernel; the rest came later.
    if n < 4 {
        return None;
    }
    let total = f.iter().try_fold(0u64, |a, &v| a.checked_add(v))?;
    let idle = f[3].checked_add(f[4])?;
    Some(CpuTicks {
        busy: total - idle,
        total,
    })
}

/// utime + stime of `/proc/self/stat`. Fields are counted after the last `)`, since the
/// command name in parentheses may itself hold spaces and parentheses.
fn self_cpu_ticks(buf: &[u8]) -> Option<u64> {
    let close = buf.iter().rposition(|&c| c == b')')?;
    let mut f = buf[close + 1..]
        .split(|c| c.is_ascii_whitespace())
        .filter(|w| !w.is_empty());
    // After `)`: state is field 3 of proc(5); utime and stime are fields 14 and 15.
    let utime = parse_u64(f.nth(11)?)?;
    let stime = parse_u64(f.next()?)?;
    utime.checked_add(stime)
}

/// `key: value` with the key trimmed.
fn split_colon(l: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = l.iter().position(|&c| c == b':')?;
    Some((l[..i].trim_ascii(), &l[i + 1..]))
}

/// `16384 kB` in bytes.
fn kb_value(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    let num = v.strip_suffix(b"kB").unwrap_or(v);
    parse_u64(num)?.checked_mul(1024)
}
