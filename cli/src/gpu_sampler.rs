//! `framescope gpu-sampler`: NVIDIA PM sampling for the apps that run beside it. It runs the
//! CUPTI session (which needs a CUDA context and holds the GPU's monitors for one client at a
//! time, device-wide anyway) so that no app process ever loads CUDA, and publishes the samples
//! into a private shared-memory ring that every framescope process of this user reads on its
//! collector thread (`collectors::nvidia::pm`). It runs until SIGINT or SIGTERM, then stops the
//! session and removes its ring.

use crate::usage::usage_error;
use framescope_collectors::nvidia::pm::dl::DlCupti;
use framescope_collectors::nvidia::pm::metrics::MetricSet;
use framescope_collectors::nvidia::pm::ring::ring_key;
use framescope_collectors::nvidia::pm::ring::{RingWriter, WriterState};
use framescope_collectors::nvidia::pm::sampler::{Phase, PmSampler, SamplerConfig};
use framescope_core::clock::monotonic_now_ns;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub const ABOUT: &str = "Run NVIDIA CUPTI PM sampling for the apps that run beside it: hardware counters (graphics \
engine active, SM active, shader warps, DRAM bandwidth) read device-wide at 1 kHz and published into a private \
shared-memory ring that framescope's counter source in each app reads (HUD preset `pm`, dump counters `pm_*`). \
The app never loads CUDA. Needs libcupti.so.12 and the nvperf libraries (FRAMESCOPE_CUPTI_DIR, the CUDA toolkit's \
extras/CUPTI/lib64, the library path, or the nvidia-cuda-cupti-cu12 wheel), and root unless the nvidia module was \
loaded with NVreg_RestrictProfilingToAdminUsers=0. Stops at SIGINT or SIGTERM.";

pub const EXAMPLES: &str =
    "examples:\n  sudo framescope gpu-sampler &\n  framescope run --config hud_counters=pm -- vkcube";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// CUDA ordinal of the GPU to sample
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub device: usize,
    /// metric set: graphics, raster, or metric names joined by `,`
    #[arg(long, value_name = "SET", default_value = "graphics", value_parser = crate::usage::text())]
    pub metrics: String,
    /// sampling interval in microseconds
    #[arg(long, value_name = "US", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub interval_us: u64,
    /// how often the samples are decoded and published, in milliseconds: less often costs
    /// less CPU and delays the values (frames wait for them at most 1 s)
    #[arg(long, value_name = "MS", default_value_t = 100, value_parser = clap::value_parser!(u64).range(5..=500))]
    pub decode_ms: u64,
    /// stop when process PID is gone (`framescope run --pm` passes the app's)
    #[arg(long, value_name = "PID", value_parser = clap::value_parser!(u32).range(1..))]
    pub while_pid: Option<u32>,
    /// run in the background: fork, and return at once with status 0
    #[arg(long)]
    pub detach: bool,
    /// write one byte to this file descriptor once the ring is there (`framescope run --pm`
    /// waits for it), and close it
    #[arg(long, value_name = "FD", value_parser = clap::value_parser!(i32).range(3..1024))]
    pub ready_fd: Option<i32>,
}

/// Tells whoever waits on `fd` that the ring exists (`Some(byte)`) or that none will come
/// (`None`), and closes it.
fn signal_ready(fd: Option<i32>, ready: bool) {
    let Some(fd) = fd else { return };
    // SAFETY: `fd` was handed to this process for this one write; closing it is all that is
    // done with it afterwards.
    unsafe {
        if ready {
            let _ = libc::write(fd, b"r".as_ptr().cast(), 1);
        }
        libc::close(fd);
    }
}

/// Whether process `pid` still exists (signal 0 checks without sending anything).
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Samples kept in the ring: a minute at 1 kHz, so a reader that stalls a while loses nothing.
const RING_SAMPLES: u64 = 1 << 16;

/// One line at the end: where the sampler's CPU time went (docs/performance.md).
fn report_costs(c: &framescope_collectors::nvidia::pm::sampler::Costs) {
    if c.samples == 0 {
        return;
    }
    let us = |ns: u64, n: u64| ns as f64 / n.max(1) as f64 / 1000.0;
    eprintln!(
        "framescope gpu-sampler: {} samples in {} decodes; per sample: evaluate {:.1} µs, info {:.1} µs, \
         publish {:.2} µs; per decode: decode {:.1} µs, image initialise {:.1} µs; {} overlapping, {} after a \
         gap ({:.1} ms in gaps)",
        c.samples,
        c.decodes,
        us(c.evaluate_ns, c.samples),
        us(c.info_ns, c.samples),
        us(c.publish_ns, c.samples),
        us(c.decode_ns, c.decodes),
        us(c.initialize_ns, c.decodes),
        c.overlaps,
        c.gaps,
        c.gap_ns as f64 / 1e6,
    );
}

/// A sampler that cannot sample and runs for one app (`--while-pid`, as `framescope run --pm`
/// starts it) holds a ring with only its reason (state `Failed`) until that app ends, so the
/// app's header and frames say why they have no PM counters instead of "no sampler"; then it
/// removes the ring. A sampler of its own has no app to tell: its line on stderr is the news,
/// and a ring left after it would list empty PM counters in every later run.
fn hold_reason(device: usize, set: &MetricSet, why: &str, while_pid: Option<u32>, ready_fd: Option<i32>) {
    let Some(app) = while_pid else {
        signal_ready(ready_fd, false);
        return;
    };
    let names: Vec<&str> = set.metrics.iter().map(String::as_str).collect();
    let kinds = vec![framescope_collectors::nvidia::pm::metrics::MetricKind::Count; names.len()];
    // Without a ring (no private runtime directory) the line already printed is all there is.
    let ring = RingWriter::create(&ring_key(device), &names, &kinds, 1, 1_000_000).ok();
    if let Some(r) = &ring {
        r.set_state(&WriterState::Failed(why.to_string()), monotonic_now_ns());
    }
    signal_ready(ready_fd, false);
    let Some(ring) = ring else { return };
    install_stop_handlers();
    while !STOP.load(Ordering::Relaxed) && alive(app) {
        ring.heartbeat(monotonic_now_ns());
        std::thread::sleep(Duration::from_millis(100));
    }
    ring.remove();
}

fn install_stop_handlers() {
    // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe; installing a
    // handler has no other precondition.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_signal as extern "C" fn(libc::c_int) as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_signal as extern "C" fn(libc::c_int) as *const () as libc::sighandler_t,
        );
    }
}

pub fn main(a: Args) -> i32 {
    let set = match MetricSet::parse(&a.metrics) {
        Ok(s) => s,
        Err(e) => return usage_error::<Args>("gpu-sampler", &format!("framescope gpu-sampler: {e}")),
    };
    if a.detach {
        // SAFETY: called from the command's entry, before this process started any thread of
        // its own, so the child is a whole copy; the parent only returns.
        match unsafe { libc::fork() } {
            -1 => {
                eprintln!(
                    "framescope gpu-sampler: cannot fork: {}",
                    std::io::Error::last_os_error()
                );
                return 1;
            }
            0 => {
                // The child: its own session, so the terminal's signals for the app's process
                // group do not reach it; it stops with the app (`--while-pid`) or at SIGTERM.
                // SAFETY: setsid has no preconditions; failing leaves the child where it was.
                unsafe { libc::setsid() };
            }
            _ => return 0,
        }
    }
    let api = match DlCupti::load() {
        Ok(api) => api,
        Err(e) => {
            eprintln!("framescope gpu-sampler: {e}");
            hold_reason(a.device, &set, &e.to_string(), a.while_pid, a.ready_fd);
            return 1;
        }
    };
    let asked = set.clone();
    let mut cfg = SamplerConfig::new(a.device, set);
    cfg.interval_ns = a.interval_us * 1000;
    cfg.decode_every_ns = a.decode_ms * 1_000_000;
    let decode_every = Duration::from_nanos(cfg.decode_every_ns);
    let interval_ns = cfg.interval_ns;
    let mut sampler = PmSampler::new(&api, cfg);
    if let Err(e) = sampler.prepare() {
        eprintln!("framescope gpu-sampler: {e}");
        hold_reason(a.device, &asked, &e, a.while_pid, a.ready_fd);
        return 1;
    }
    let Some(set) = sampler.set() else {
        eprintln!("framescope gpu-sampler: no metric set after preparing");
        return 1;
    };
    let names: Vec<&str> = set.metrics.iter().map(|m| m.name.as_str()).collect();
    let kinds: Vec<_> = set.metrics.iter().map(|m| m.kind).collect();
    let key = ring_key(a.device);
    let mut ring = match RingWriter::create(&key, &names, &kinds, RING_SAMPLES, interval_ns) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("framescope gpu-sampler: cannot make its ring: {e}");
            signal_ready(a.ready_fd, false);
            return 1;
        }
    };
    signal_ready(a.ready_fd, true);
    install_stop_handlers();
    eprintln!(
        "framescope gpu-sampler: {} device {}, {} metrics every {} µs, ring {}",
        sampler.chip(),
        a.device,
        names.len(),
        a.interval_us,
        ring.path().display()
    );
    let mut last_phase = String::new();
    while !STOP.load(Ordering::Relaxed) && a.while_pid.is_none_or(alive) {
        sampler.step(monotonic_now_ns(), &mut ring);
        let phase = format!("{:?}", sampler.phase());
        if phase != last_phase {
            match sampler.phase() {
                Phase::Running => eprintln!("framescope gpu-sampler: sampling"),
                Phase::Waiting { reason, .. } => eprintln!("framescope gpu-sampler: waiting: {reason}"),
                Phase::Failed(why) => {
                    eprintln!("framescope gpu-sampler: {why}");
                    break;
                }
                Phase::Ready | Phase::Stopped => {}
            }
            last_phase = phase;
        }
        std::thread::sleep(decode_every);
    }
    report_costs(&sampler.costs());
    let failure = match sampler.phase() {
        Phase::Failed(why) => Some(why.clone()),
        _ => None,
    };
    sampler.stop(monotonic_now_ns(), &mut ring);
    if let Some(why) = failure {
        ring.set_state(&WriterState::Failed(why), monotonic_now_ns());
        // Held for the app it runs for, then removed like any other (see `hold_reason`).
        if let Some(app) = a.while_pid {
            while !STOP.load(Ordering::Relaxed) && alive(app) {
                ring.heartbeat(monotonic_now_ns());
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        ring.remove();
        return 1;
    }
    ring.set_state(&WriterState::Stopped, monotonic_now_ns());
    ring.remove();
    0
}
