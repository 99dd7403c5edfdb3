//! `pm_probe SECONDS [SET]`: PM sampling through the real CUPTI binding for SECONDS (default
//! 3) with metric set SET (`graphics` by default): the chip, the validated set with units,
//! how many samples came and with what gaps, and each metric's mean. For checking the binding
//! on a GPU (tests/device/h100-pm-probe.sh); framescope's own sampler process is built on the
//! same calls.

use framescope_collectors::nvidia::pm::api::CuptiApi;
use framescope_collectors::nvidia::pm::attribute::PmSample;
use framescope_collectors::nvidia::pm::dl::DlCupti;
use framescope_collectors::nvidia::pm::metrics::MetricSet;
use framescope_collectors::nvidia::pm::ring::WriterState;
use framescope_collectors::nvidia::pm::sampler::{PmSampler, SampleSink, SamplerConfig};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Default)]
struct Collect {
    samples: Vec<(u64, u64, Vec<f64>)>,
    states: Vec<String>,
}

impl SampleSink for Collect {
    fn publish(&mut self, s: &PmSample, _: u64) {
        self.samples.push((s.start_ns, s.end_ns, s.values().to_vec()));
    }
    fn state(&mut self, state: &WriterState, _: u64) {
        self.states.push(format!("{state:?}"));
    }
    fn heartbeat(&mut self, _: u64) {}
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds: f64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let spec = args.get(1).map_or("graphics", String::as_str);
    let api = match DlCupti::load() {
        Ok(a) => a,
        Err(e) => {
            println!("pm_probe: {e}");
            std::process::exit(1);
        }
    };
    println!("pm_probe: CUPTI from {}", api.origin());
    let set = match MetricSet::parse(spec) {
        Ok(s) => s,
        Err(e) => {
            println!("pm_probe: {e}");
            std::process::exit(2);
        }
    };
    let cfg = SamplerConfig::new(0, set);
    let every = Duration::from_nanos(cfg.decode_every_ns);
    let api_ref: &dyn CuptiApi = &api;
    let mut sampler = PmSampler::new(api_ref, cfg);
    if let Err(e) = sampler.prepare() {
        println!("pm_probe: prepare: {e}");
        std::process::exit(3);
    }
    println!("pm_probe: chip {}", sampler.chip());
    if let Some(v) = sampler.set() {
        for m in &v.metrics {
            println!("pm_probe: metric {m:?}");
        }
    }
    let mut sink = Collect::default();
    let t0 = Instant::now();
    let mut steps = 0u64;
    let mut overflows = 0u64;
    while t0.elapsed().as_secs_f64() < seconds {
        let s = sampler.step(now_ns(), &mut sink);
        steps += 1;
        overflows += u64::from(s.overflowed);
        std::thread::sleep(every);
    }
    sampler.stop(now_ns(), &mut sink);
    println!(
        "pm_probe: phase {:?}, {steps} steps, {overflows} overflows",
        sampler.phase()
    );
    for s in &sink.states {
        println!("pm_probe: state {s}");
    }
    let n = sink.samples.len();
    println!("pm_probe: {n} samples in {seconds} s");
    if n == 0 {
        std::process::exit(4);
    }
    let gaps = sink.samples.windows(2).filter(|w| w[1].0 > w[0].1).count();
    let widths: Vec<u64> = sink.samples.iter().map(|s| s.1.saturating_sub(s.0)).collect();
    let (first, last) = (sink.samples[0].0, sink.samples[n - 1].1);
    println!(
        "pm_probe: gaps {gaps}, sample width min {} max {} ns, first {first} last {last} (now {})",
        widths.iter().min().unwrap_or(&0),
        widths.iter().max().unwrap_or(&0),
        now_ns()
    );
    if let Some(v) = sampler.set() {
        for (i, m) in v.metrics.iter().enumerate() {
            let vals: Vec<f64> = sink
                .samples
                .iter()
                .filter_map(|s| s.2.get(i).copied())
                .filter(|x| x.is_finite())
                .collect();
            let mean = vals.iter().sum::<f64>() / vals.len().max(1) as f64;
            println!("pm_probe: mean {:<70} {mean:.4} ({} finite)", m.name, vals.len());
        }
    }
}
