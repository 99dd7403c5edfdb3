//! Reads the `nvml` and `gpm` sources over the real `libnvidia-ml.so.1`, for checking the
//! binding on an NVIDIA machine:
//!
//! ```text
//! cargo run -p framescope-collectors --example nvml_probe
//! ```
//!
//! Lists the devices NVML sees, starts both sources with no GPU hint, reads them 10 times
//! 120 ms apart (GPM needs ≥ 100 ms between samples) and prints every counter with the time
//! each read took. Exit status 1 if the library or a source is unavailable.

use framescope_collectors::nvidia::api::NvmlApi;
use framescope_collectors::nvidia::{self, dl::DlNvml};
use framescope_collectors::{CounterSource, GpuHint, ReadError};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable `timespec`; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

fn list_devices(api: &dyn NvmlApi) {
    if let Err(e) = api.init() {
        println!("nvmlInit_v2: {e}");
        return;
    }
    match api.device_count() {
        Ok(n) => {
            for i in 0..n {
                match api.device_by_index(i) {
                    Ok(d) => println!("device {i}: {:?} {:?} {:?}", api.name(d), api.uuid(d), api.pci_info(d)),
                    Err(e) => println!("device {i}: {e}"),
                }
            }
        }
        Err(e) => println!("nvmlDeviceGetCount_v2: {e}"),
    }
    let _ = api.shutdown();
}

fn main() {
    let api: Arc<dyn NvmlApi> = match DlNvml::load() {
        Ok(a) => Arc::new(a),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    list_devices(&*api);
    let (mut n, mut g) = nvidia::sources_with(api, &GpuHint::Unknown);
    let mut failed = false;
    let mut sources: Vec<Box<dyn CounterSource>> = Vec::new();
    let t = Instant::now();
    match n.start() {
        Ok(()) => {
            println!("nvml: started in {:?} on {:?}", t.elapsed(), n.device());
            if let Some(note) = n.note() {
                println!("nvml: note: {note}");
            }
            sources.push(Box::new(n));
        }
        Err(e) => {
            println!("nvml: unavailable: {}", e.reason());
            failed = true;
        }
    }
    let t = Instant::now();
    match g.start() {
        Ok(()) => {
            println!("gpm: started in {:?}", t.elapsed());
            sources.push(Box::new(g));
        }
        Err(e) => {
            println!("gpm: unavailable: {}", e.reason());
            failed = true;
        }
    }
    for k in 0..10 {
        let now = monotonic_ns();
        for s in sources.iter_mut() {
            let mut out = vec![f64::NAN; s.catalogue().len()];
            let t = Instant::now();
            let r = s.read(now, &mut out);
            let took = t.elapsed();
            match r {
                Ok(w) => {
                    println!(
                        "read {k} {} ({took:?}, window {:.1} ms):",
                        s.id(),
                        w.end_ns.saturating_sub(w.begin_ns) as f64 / 1e6
                    );
                    for (c, v) in s.catalogue().iter().zip(&out) {
                        println!("  {:<24} {:>16.3} {}", c.name, v, c.unit);
                    }
                }
                Err(ReadError::NotYet) => println!("read {k} {} ({took:?}): not yet", s.id()),
                Err(ReadError::Lost(why)) => {
                    println!("read {k} {} ({took:?}): lost: {why}", s.id());
                    failed = true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(120));
    }
    if failed {
        std::process::exit(1);
    }
}
