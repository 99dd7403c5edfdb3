//! `framescope gpu-sampler`: NVIDIA PM sampling for the apps that run beside it. It runs the
//! CUPTI session (which needs a CUDA context and holds the GPU's monitors for one client at a
//! time, device-wide anyway) so that no app process ever loads CUDA, and publishes the samples
//! into a private shared-memory ring that every framescope process of this user reads on its
//! collector thread (`collectors::nvidia::pm`). It runs until SIGINT or SIGTERM, then stops the
//! session and removes its ring.

use crate::usage::usage_error;
use framescope_collectors::nvidia::pm::dl::DlCupti;
use framescope_collectors::nvidia::pm::metrics::MetricSet;
use framescope_collectors::nvidia::pm::ring::{RingWriter, WriterState};
use framescope_collectors::nvidia::pm::sampler::{Phase, PmSampler, SamplerConfig};
use framescope_collectors::nvidia::pm::source::ring_key;
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
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Samples kept in the ring: a minute at 1 kHz, so a reader that stalls a while loses nothing.
const RING_SAMPLES: u64 = 1 << 16;

pub fn main(a: Args) -> i32 {
    let set = match MetricSet::parse(&a.metrics) {
        Ok(s) => s,
        Err(e) => return usage_error::<Args>("gpu-sampler", &format!("framescope gpu-sampler: {e}")),
    };
    let api = match DlCupti::load() {
        Ok(api) => api,
        Err(e) => {
            eprintln!("framescope gpu-sampler: {e}");
            return 1;
        }
    };
    let mut cfg = SamplerConfig::new(a.device, set);
    cfg.interval_ns = a.interval_us * 1000;
    let decode_every = Duration::from_nanos(cfg.decode_every_ns);
    let interval_ns = cfg.interval_ns;
    let mut sampler = PmSampler::new(&api, cfg);
    if let Err(e) = sampler.prepare() {
        eprintln!("framescope gpu-sampler: {e}");
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
            return 1;
        }
    };
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
    eprintln!(
        "framescope gpu-sampler: {} device {}, {} metrics every {} µs, ring {}",
        sampler.chip(),
        a.device,
        names.len(),
        a.interval_us,
        ring.path().display()
    );
    let mut last_phase = String::new();
    while !STOP.load(Ordering::Relaxed) {
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
    sampler.stop(monotonic_now_ns(), &mut ring);
    ring.set_state(&WriterState::Stopped, monotonic_now_ns());
    let path = ring.path().to_path_buf();
    drop(ring);
    let _ = std::fs::remove_file(&path);
    let failed = matches!(sampler.phase(), Phase::Failed(_));
    i32::from(failed)
}
