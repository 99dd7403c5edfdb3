//! The `nvml` and `gpm` sources against the scripted fake NVML: device choice, every counter's
//! value and unit, energy deltas, unsupported calls, lost GPUs, and GPM's 100 ms windows.

use framescope_collectors::nvidia::api::{MemoryInfo, NvmlError, ProcessMemory, ProcessUtilSample, Utilization};
use framescope_collectors::nvidia::fake::{Call, FakeDevice, FakeNvml};
use framescope_collectors::nvidia::{self, GpmSource, NvmlSource};
use framescope_collectors::{CounterSource, GpuHint, ReadError, StartError};
use framescope_core::counters::CounterWindow;
use std::sync::Arc;
use std::time::Duration;

const MS: u64 = 1_000_000;
const T0: u64 = 5_000 * MS;
const PID: u32 = 4242;

fn h100(bus: u32) -> FakeDevice {
    FakeDevice::new("NVIDIA H100 80GB HBM3", 0, bus, 0)
}

fn fake(devices: Vec<FakeDevice>) -> Arc<FakeNvml> {
    let f = Arc::new(FakeNvml::new(devices));
    f.set_now_ns(T0);
    f
}

fn nvml(f: &Arc<FakeNvml>, hint: GpuHint) -> NvmlSource {
    NvmlSource::new(f.clone(), hint)
        .with_pid(PID)
        .with_slow_interval(Duration::ZERO)
}

fn gpm(f: &Arc<FakeNvml>) -> GpmSource {
    GpmSource::new(f.clone(), GpuHint::Unknown)
}

/// Reads `src` at `t` with the fake's clock at `t` too.
fn read(src: &mut dyn CounterSource, f: &FakeNvml, t: u64) -> (Result<CounterWindow, ReadError>, Vec<f64>) {
    f.set_now_ns(t);
    let mut out = vec![-1.0; src.catalogue().len()];
    let r = src.read(t, &mut out);
    (r, out)
}

fn value(src: &dyn CounterSource, out: &[f64], name: &str) -> f64 {
    let i = src
        .catalogue()
        .iter()
        .position(|c| c.name == name)
        .unwrap_or_else(|| panic!("no {name}"));
    out[i]
}

fn set_all(f: &FakeNvml, index: usize, util: u32) {
    f.update(index, |v| {
        v.utilization = Utilization { gpu: util, memory: 41 };
        v.graphics_clock_mhz = 1755;
        v.sm_clock_mhz = 1980;
        v.mem_clock_mhz = 2619;
        v.power_mw = 312_500;
        v.energy_mj = 9_000_000;
        v.temperature_c = 47;
        v.memory = MemoryInfo {
            used: 3 << 30,
            total: 80 << 30,
        };
        v.event_reasons = 0x4;
    });
}

// ---- device choice ----------------------------------------------------------------------------

#[test]
fn a_pci_hint_picks_the_device_at_that_address() {
    let f = fake(vec![h100(0x17), h100(0x65)]);
    set_all(&f, 0, 10);
    set_all(&f, 1, 90);
    let mut s = nvml(
        &f,
        GpuHint::Pci {
            domain: 0,
            bus: 0x65,
            device: 0,
            function: 0,
        },
    );
    s.start().unwrap();
    assert_eq!(s.device().unwrap().index, 1);
    assert_eq!(s.note(), None, "a PCI match is no guess");
    let (r, out) = read(&mut s, &f, T0);
    r.unwrap();
    assert_eq!(value(&s, &out, "gpu_util_pct"), 90.0);
    assert_eq!(f.calls(0, Call::Utilization), 0, "the other GPU is not read");
}

#[test]
fn a_pci_hint_naming_another_vendors_gpu_makes_the_sources_unavailable() {
    let f = fake(vec![h100(0x65)]);
    let hint = GpuHint::Pci {
        domain: 0,
        bus: 0,
        device: 2,
        function: 0,
    };
    let (mut n, mut g) = nvidia::sources_with(f.clone(), &hint);
    for e in [n.start().unwrap_err(), g.start().unwrap_err()] {
        let StartError::Unavailable(r) = e else { panic!("{e:?}") };
        assert!(
            r.contains("0000:00:02.0") && r.contains("none of the 1 NVIDIA GPU"),
            "{r}"
        );
    }
    assert_eq!(f.open_inits(), 0, "a source that did not start holds no NVML init");
}

#[test]
fn a_gl_renderer_string_picks_the_device_whose_nvml_name_it_starts_with() {
    let f = fake(vec![
        FakeDevice::new("NVIDIA GeForce RTX 4090", 0, 1, 0),
        h100(2),
        FakeDevice::new("NVIDIA GeForce RTX 4090 D", 0, 3, 0),
    ]);
    let mut s = nvml(&f, GpuHint::Name("NVIDIA H100 80GB HBM3/PCIe/SSE2".into()));
    s.start().unwrap();
    assert_eq!(s.device().unwrap().index, 1);
    assert_eq!(s.note(), None);

    // "…4090" is a prefix of "…4090 D": the exact name wins.
    let mut s = nvml(&f, GpuHint::Name("NVIDIA GeForce RTX 4090 D/PCIe/SSE2".into()));
    s.start().unwrap();
    assert_eq!(s.device().unwrap().index, 2);

    // Pre-2021 NVML names had no "NVIDIA " in front.
    let f = fake(vec![FakeDevice::new("GeForce GTX 1080", 0, 1, 0), h100(2)]);
    let mut s = nvml(&f, GpuHint::Name("NVIDIA GeForce GTX 1080/PCIe/SSE2".into()));
    s.start().unwrap();
    assert_eq!(s.device().unwrap().index, 0);

    let mut s = nvml(&f, GpuHint::Name("Mesa Intel(R) UHD Graphics 630 (CFL GT2)".into()));
    let e = s.start().unwrap_err();
    assert!(
        matches!(&e, StartError::Unavailable(r) if r.contains("not an NVIDIA GPU")),
        "{e:?}"
    );
}

#[test]
fn the_picked_gpu_names_its_pci_ids_for_a_gl_dump() {
    let mut second = FakeDevice::new("NVIDIA GeForce RTX 4090", 0, 0x41, 0);
    second.pci.ids = 0x2684_10de;
    let f = fake(vec![h100(0x18), second]);
    let mut s = nvml(&f, GpuHint::Name("NVIDIA GeForce RTX 4090/PCIe/SSE2".into()));
    assert_eq!(s.gpu(), None, "nothing is picked before start");
    s.start().unwrap();
    let g = s.gpu().expect("a picked GPU with ids");
    assert_eq!((g.vendor_id, g.device_id), (0x10de, 0x2684));
    assert_eq!(g.pci_bus, "0000:41:00.0");
    assert_eq!(g.source, "nvml");

    // A driver that gives no ids (NVML too old for pciDeviceId) names none.
    let mut bare = h100(0x18);
    bare.pci.ids = 0;
    let f = fake(vec![bare]);
    let mut s = nvml(&f, GpuHint::Unknown);
    s.start().unwrap();
    assert_eq!(s.gpu(), None);
}

#[test]
fn several_gpus_without_a_settling_hint_read_index_0_and_say_so() {
    let f = fake(vec![h100(0x17), h100(0x65)]);
    let mut s = nvml(&f, GpuHint::Unknown);
    s.start().unwrap();
    assert_eq!(s.device().unwrap().index, 0);
    let note = s.note().expect("a guess has a note");
    assert!(note.contains("2 NVIDIA GPUs") && note.contains("index 0"), "{note}");
    assert!(note.contains("0000:17:00"), "{note}");

    // Same name on both: GL cannot tell them apart either.
    let mut s = nvml(&f, GpuHint::Name("NVIDIA H100 80GB HBM3/PCIe/SSE2".into()));
    s.start().unwrap();
    assert_eq!(s.device().unwrap().index, 0);
    assert!(s.note().unwrap().contains("2 NVIDIA GPUs are named"), "{:?}", s.note());

    let g = {
        let mut g = gpm(&f);
        g.start().unwrap();
        g
    };
    assert_eq!(
        g.note(),
        Some(note),
        "both sources read the same device and say the same"
    );

    let one = fake(vec![h100(0x17)]);
    let mut s = nvml(&one, GpuHint::Unknown);
    s.start().unwrap();
    assert_eq!(s.note(), None, "the only GPU is no guess");
}

#[test]
fn no_gpu_or_no_driver_is_unavailable_and_a_passing_failure_is_retried() {
    let f = fake(vec![]);
    let e = nvml(&f, GpuHint::Unknown).start().unwrap_err();
    assert_eq!(e, StartError::Unavailable("NVML lists no NVIDIA GPU".into()));

    let f = fake(vec![h100(1)]);
    f.fail_global(Call::Init, NvmlError::DriverNotLoaded);
    let e = nvml(&f, GpuHint::Unknown).start().unwrap_err();
    assert!(
        matches!(&e, StartError::Unavailable(r) if r.contains("DRIVER_NOT_LOADED") && r.contains("not loaded")),
        "{e:?}"
    );
    f.clear_failures();
    f.fail_global(Call::Init, NvmlError::Timeout);
    let mut s = nvml(&f, GpuHint::Unknown);
    assert!(matches!(s.start().unwrap_err(), StartError::Retry(_)));
    f.clear_failures();
    s.start().unwrap();
}

// ---- nvml counters ----------------------------------------------------------------------------

#[test]
fn every_nvml_counter_reads_the_driver_value_in_its_unit() {
    let f = fake(vec![h100(0x65)]);
    set_all(&f, 0, 73);
    f.update(0, |v| {
        v.process_samples = vec![
            ProcessUtilSample {
                pid: PID,
                timestamp_us: 10,
                sm_pct: 99,
                mem_pct: 1,
            }, // before start: not counted
            ProcessUtilSample {
                pid: 1,
                timestamp_us: 20,
                sm_pct: 50,
                mem_pct: 0,
            },
        ];
        v.graphics_processes = vec![
            ProcessMemory {
                pid: 1,
                used_bytes: Some(1 << 30),
            },
            ProcessMemory {
                pid: PID,
                used_bytes: Some(512 << 20),
            },
        ];
    });
    let mut s = nvml(&f, GpuHint::Unknown);
    assert_eq!(s.id(), "nvml");
    assert_eq!(s.min_interval(), Duration::from_millis(100));
    s.start().unwrap();
    f.update(0, |v| {
        v.energy_mj = 9_001_500;
        v.process_samples.push(ProcessUtilSample {
            pid: PID,
            timestamp_us: 30,
            sm_pct: 20,
            mem_pct: 5,
        });
        v.process_samples.push(ProcessUtilSample {
            pid: PID,
            timestamp_us: 40,
            sm_pct: 40,
            mem_pct: 5,
        });
    });
    let (r, out) = read(&mut s, &f, T0);
    assert_eq!(
        r.unwrap(),
        CounterWindow {
            begin_ns: T0,
            end_ns: T0
        }
    );
    let expected: [(&str, &str, f64); 13] = [
        ("gpu_util_pct", "%", 73.0),
        ("gpu_mem_util_pct", "%", 41.0),
        ("gpu_clock_mhz", "MHz", 1755.0),
        ("gpu_sm_clock_mhz", "MHz", 1980.0),
        ("gpu_mem_clock_mhz", "MHz", 2619.0),
        ("gpu_power_w", "W", 312.5),
        ("gpu_energy_j", "J", 1.5),
        ("gpu_temp_c", "C", 47.0),
        ("vram_used_bytes", "bytes", (3u64 << 30) as f64),
        ("vram_total_bytes", "bytes", (80u64 << 30) as f64),
        ("gpu_throttle_reasons", "bitmask", 4.0),
        ("proc_gpu_util_pct", "%", 30.0),
        ("proc_vram_bytes", "bytes", (512u64 << 20) as f64),
    ];
    let cat = s.catalogue();
    assert_eq!(cat.len(), expected.len());
    for ((c, x), (name, unit, v)) in cat.iter().zip(&out).zip(expected) {
        assert_eq!((c.name.as_str(), c.unit.as_str()), (name, unit));
        assert_eq!(*x, v, "{name}");
    }
    assert_eq!(cat[11].scope.name(), "process");
    assert_eq!(cat[0].scope.name(), "device");
}

#[test]
fn energy_is_counted_from_start_and_slow_calls_are_spaced_out() {
    let f = fake(vec![h100(1)]);
    f.update(0, |v| v.energy_mj = 1_000_000);
    let mut s = NvmlSource::new(f.clone(), GpuHint::Unknown).with_pid(PID); // default 500 ms
    s.start().unwrap();
    let (_, out) = read(&mut s, &f, T0);
    assert_eq!(value(&s, &out, "gpu_energy_j"), 0.0);
    assert_eq!(value(&s, &out, "proc_gpu_util_pct"), 0.0, "NOT_FOUND (idle GPU) is 0 %");

    f.update(0, |v| v.energy_mj = 1_002_500);
    let (_, out) = read(&mut s, &f, T0 + 100 * MS);
    assert_eq!(
        value(&s, &out, "gpu_energy_j"),
        0.0,
        "not due yet: the last value repeats"
    );
    assert_eq!(f.calls(0, Call::Energy), 2, "one baseline at start, one read");
    assert_eq!(f.calls(0, Call::Power), 2, "fast calls are made on every read");

    let (_, out) = read(&mut s, &f, T0 + 500 * MS);
    assert_eq!(value(&s, &out, "gpu_energy_j"), 2.5);
    assert_eq!(f.calls(0, Call::Energy), 3);

    // The driver's total restarts (driver reload): what was counted stays.
    f.update(0, |v| v.energy_mj = 400);
    let (_, out) = read(&mut s, &f, T0 + 1000 * MS);
    assert_eq!(value(&s, &out, "gpu_energy_j"), 2.5);
    f.update(0, |v| v.energy_mj = 1_400);
    let (_, out) = read(&mut s, &f, T0 + 1500 * MS);
    assert_eq!(value(&s, &out, "gpu_energy_j"), 3.5);
}

#[test]
fn process_counters_cover_our_pid_since_the_last_read() {
    let f = fake(vec![h100(1)]);
    let mut s = nvml(&f, GpuHint::Unknown);
    s.start().unwrap();
    let sample = |ts, pid, sm| ProcessUtilSample {
        pid,
        timestamp_us: ts,
        sm_pct: sm,
        mem_pct: 0,
    };
    f.update(0, |v| {
        v.process_samples = vec![sample(100, PID, 60), sample(100, 7, 10)]
    });
    let (_, out) = read(&mut s, &f, T0);
    assert_eq!(value(&s, &out, "proc_gpu_util_pct"), 60.0);
    assert_eq!(value(&s, &out, "proc_vram_bytes"), 0.0, "in no process list: no memory");

    // Only another process used the GPU since.
    f.update(0, |v| v.process_samples.push(sample(200, 7, 80)));
    let (_, out) = read(&mut s, &f, T0 + 10 * MS);
    assert_eq!(value(&s, &out, "proc_gpu_util_pct"), 0.0);
    // Nobody did: the driver says NOT_FOUND.
    let (_, out) = read(&mut s, &f, T0 + 20 * MS);
    assert_eq!(value(&s, &out, "proc_gpu_util_pct"), 0.0);

    // Graphics and compute list the same memory for a process doing both.
    f.update(0, |v| {
        v.graphics_processes = vec![ProcessMemory {
            pid: PID,
            used_bytes: Some(300),
        }];
        v.compute_processes = vec![ProcessMemory {
            pid: PID,
            used_bytes: Some(300),
        }];
    });
    let (_, out) = read(&mut s, &f, T0 + 30 * MS);
    assert_eq!(value(&s, &out, "proc_vram_bytes"), 300.0);
    f.update(0, |v| {
        v.graphics_processes[0].used_bytes = None; // NVML_VALUE_NOT_AVAILABLE
        v.compute_processes.clear();
    });
    let (_, out) = read(&mut s, &f, T0 + 40 * MS);
    assert!(value(&s, &out, "proc_vram_bytes").is_nan());
}

#[test]
fn an_unsupported_call_gives_nan_and_is_not_made_again() {
    let f = fake(vec![h100(1)]);
    set_all(&f, 0, 50);
    f.fail(0, Call::Power, NvmlError::NotSupported);
    f.fail(0, Call::Energy, NvmlError::NotSupported);
    f.fail(0, Call::Memory, NvmlError::NoPermission);
    f.fail(0, Call::Temperature, NvmlError::Timeout);
    let mut s = nvml(&f, GpuHint::Unknown);
    s.start().unwrap();
    for k in 0..3 {
        let (r, out) = read(&mut s, &f, T0 + k * 200 * MS);
        r.unwrap();
        assert!(value(&s, &out, "gpu_power_w").is_nan());
        assert!(value(&s, &out, "gpu_energy_j").is_nan());
        assert!(value(&s, &out, "vram_used_bytes").is_nan());
        assert!(value(&s, &out, "vram_total_bytes").is_nan());
        assert!(
            value(&s, &out, "gpu_temp_c").is_nan(),
            "a passing failure is NaN this time"
        );
        assert_eq!(value(&s, &out, "gpu_util_pct"), 50.0, "the other counters carry on");
    }
    assert_eq!(f.calls(0, Call::Power), 1);
    assert_eq!(f.calls(0, Call::Energy), 1, "turned off at the start-time baseline");
    assert_eq!(f.calls(0, Call::Memory), 1);
    assert_eq!(f.calls(0, Call::Temperature), 3, "TIMEOUT is asked again");
    assert_eq!(
        s.disabled_reason("gpu_power_w").as_deref(),
        Some("nvmlDeviceGetPowerUsage: NVML_ERROR_NOT_SUPPORTED (3)")
    );
    assert_eq!(s.disabled_reason("gpu_temp_c"), None);

    f.clear_failures();
    let (_, out) = read(&mut s, &f, T0 + 1000 * MS);
    assert_eq!(value(&s, &out, "gpu_temp_c"), 47.0);
}

#[test]
fn a_lost_gpu_fails_the_read_and_the_source_starts_over() {
    let f = fake(vec![h100(1)]);
    set_all(&f, 0, 50);
    let mut s = nvml(&f, GpuHint::Unknown);
    s.start().unwrap();
    assert_eq!(f.open_inits(), 1);
    read(&mut s, &f, T0).0.unwrap();
    f.lose(0);
    let (r, _) = read(&mut s, &f, T0 + 100 * MS);
    assert_eq!(
        r,
        Err(ReadError::Lost(
            "nvmlDeviceGetUtilizationRates: NVML_ERROR_GPU_IS_LOST (15)".into()
        ))
    );
    assert_eq!(f.open_inits(), 0, "NVML is shut down so a restart re-initialises it");
    let calls = f.calls(0, Call::Utilization);
    let (r, _) = read(&mut s, &f, T0 + 200 * MS);
    assert!(matches!(r, Err(ReadError::Lost(_))), "not started: {r:?}");
    assert_eq!(f.calls(0, Call::Utilization), calls, "a lost device is not asked again");
}

#[test]
fn an_output_shorter_than_the_catalogue_does_not_panic() {
    let f = fake(vec![h100(1)]);
    let mut s = nvml(&f, GpuHint::Unknown);
    s.start().unwrap();
    let mut out = [0.0; 3];
    s.read(T0, &mut out).unwrap();
    let mut g = gpm(&f);
    g.start().unwrap();
    assert_eq!(g.read(T0, &mut out), Err(ReadError::NotYet));
    f.set_now_ns(T0 + 200 * MS);
    g.read(T0 + 200 * MS, &mut []).unwrap();
}

#[test]
fn reading_before_start_is_lost_not_a_panic() {
    let f = fake(vec![h100(1)]);
    let mut out = [0.0; 13];
    assert!(matches!(
        nvml(&f, GpuHint::Unknown).read(T0, &mut out),
        Err(ReadError::Lost(_))
    ));
    assert!(matches!(gpm(&f).read(T0, &mut out), Err(ReadError::Lost(_))));
}

// ---- gpm --------------------------------------------------------------------------------------

fn set_gpm(f: &FakeNvml, index: usize) {
    f.update(index, |v| {
        for (id, x) in [
            (1, 98.0),
            (2, 95.0),
            (3, 14.0),
            (10, 25.0),
            (12, 3.0),
            (13, 1.0),
            (5, 80.0),
            (20, 512.0),
            (21, 2048.0),
        ] {
            v.gpm.insert(id, Ok(x));
        }
    });
}

#[test]
fn gpm_reads_less_than_100_ms_apart_are_not_yet_and_later_ones_cover_the_window() {
    let f = fake(vec![h100(1)]);
    set_gpm(&f, 0);
    let mut g = gpm(&f);
    assert_eq!(g.id(), "gpm");
    assert_eq!(g.min_interval(), Duration::from_millis(100));
    g.start().unwrap();

    assert_eq!(
        read(&mut g, &f, T0).0,
        Err(ReadError::NotYet),
        "the first read only samples"
    );
    assert_eq!(read(&mut g, &f, T0 + 50 * MS).0, Err(ReadError::NotYet));
    assert_eq!(f.calls(0, Call::GpmMetricsGet), 0);

    let (r, out) = read(&mut g, &f, T0 + 120 * MS);
    assert_eq!(
        r,
        Ok(CounterWindow {
            begin_ns: T0,
            end_ns: T0 + 120 * MS
        })
    );
    let expected = [
        ("gpm_graphics_util_pct", "%", 98.0),
        ("gpm_sm_util_pct", "%", 95.0),
        ("gpm_sm_occupancy_pct", "%", 14.0),
        ("gpm_dram_bw_util_pct", "%", 25.0),
        ("gpm_fp32_util_pct", "%", 3.0),
        ("gpm_fp16_util_pct", "%", 1.0),
        ("gpm_tensor_util_pct", "%", 80.0),
        ("gpm_pcie_tx_mibps", "MiB/s", 512.0),
        ("gpm_pcie_rx_mibps", "MiB/s", 2048.0),
    ];
    assert_eq!(g.catalogue().len(), expected.len());
    for ((c, x), (name, unit, v)) in g.catalogue().iter().zip(&out).zip(expected) {
        assert_eq!((c.name.as_str(), c.unit.as_str()), (name, unit));
        assert_eq!(*x, v, "{name}");
    }

    // The next window starts at the sample that ended this one.
    assert_eq!(read(&mut g, &f, T0 + 170 * MS).0, Err(ReadError::NotYet));
    let (r, out) = read(&mut g, &f, T0 + 220 * MS);
    assert_eq!(
        r,
        Ok(CounterWindow {
            begin_ns: T0 + 120 * MS,
            end_ns: T0 + 220 * MS
        })
    );
    assert_eq!(out[1], 95.0);
    assert_eq!(f.calls(0, Call::GpmMetricsGet), 2);
    assert_eq!(
        f.calls(0, Call::GpmSampleGet),
        4,
        "the start probe and three reads that sampled"
    );
}

#[test]
fn gpm_nan_and_per_metric_errors_are_no_value() {
    let f = fake(vec![h100(1)]);
    set_gpm(&f, 0);
    f.update(0, |v| {
        v.gpm.insert(10, Ok(f64::NAN)); // DRAM bandwidth right after a refresh
        v.gpm.insert(20, Err(NvmlError::InvalidArgument));
    });
    let mut g = gpm(&f);
    g.start().unwrap();
    read(&mut g, &f, T0).0.unwrap_err();
    let (r, out) = read(&mut g, &f, T0 + 100 * MS);
    r.unwrap();
    assert!(out[3].is_nan() && out[7].is_nan());
    assert_eq!(out[8], 2048.0);

    // The whole call failing (not a lost device) is a window of NaN.
    f.fail(0, Call::GpmMetricsGet, NvmlError::Unknown);
    let (r, out) = read(&mut g, &f, T0 + 200 * MS);
    assert!(r.is_ok());
    assert!(out.iter().all(|x| x.is_nan()));
}

#[test]
fn gpm_on_a_gpu_without_it_is_unavailable_with_the_reason() {
    let f = fake(vec![FakeDevice::new("NVIDIA A100-SXM4-80GB", 0, 1, 0).without_gpm()]);
    let mut g = gpm(&f);
    assert_eq!(
        g.start(),
        Err(StartError::Unavailable(
            "GPM needs Hopper or newer: nvmlGpmQueryDeviceSupport says unsupported".into()
        ))
    );
    assert_eq!(f.open_inits(), 0);
    assert_eq!(f.live_samples(), 0);
    // The nvml source still works on that GPU.
    nvml(&f, GpuHint::Unknown).start().unwrap();
}

#[test]
fn gpm_refused_to_this_user_names_the_module_parameter() {
    let f = fake(vec![h100(1)]);
    f.fail(0, Call::GpmSupported, NvmlError::NoPermission);
    let e = gpm(&f).start().unwrap_err();
    let StartError::Unavailable(r) = &e else {
        panic!("{e:?}")
    };
    assert!(
        r.contains("NVreg_RestrictProfilingToAdminUsers") && r.contains("NO_PERMISSION"),
        "{r}"
    );

    // Refused at the first sample instead: the start probe catches it.
    f.clear_failures();
    f.fail(0, Call::GpmSampleGet, NvmlError::NoPermission);
    let e = gpm(&f).start().unwrap_err();
    assert!(
        matches!(&e, StartError::Unavailable(r) if r.contains("NVreg_RestrictProfilingToAdminUsers")),
        "{e:?}"
    );
    assert_eq!(f.live_samples(), 0, "samples of a failed start are freed");
    assert_eq!(f.open_inits(), 0);
}

#[test]
fn gpm_on_a_lost_gpu_is_lost_and_frees_its_samples() {
    let f = fake(vec![h100(1)]);
    let mut g = gpm(&f);
    g.start().unwrap();
    assert_eq!(f.live_samples(), 2);
    read(&mut g, &f, T0).0.unwrap_err();
    f.lose(0);
    let (r, _) = read(&mut g, &f, T0 + 150 * MS);
    assert_eq!(
        r,
        Err(ReadError::Lost("nvmlGpmSampleGet: NVML_ERROR_GPU_IS_LOST (15)".into()))
    );
    assert_eq!(f.live_samples(), 0);
    assert_eq!(f.open_inits(), 0);
    assert!(matches!(
        g.start(),
        Err(StartError::Retry(_)) | Err(StartError::Unavailable(_))
    ));
}

// ---- both -------------------------------------------------------------------------------------

#[test]
fn both_sources_share_one_library_and_release_it() {
    let f = fake(vec![h100(1)]);
    set_all(&f, 0, 12);
    set_gpm(&f, 0);
    {
        let (n, g) = nvidia::sources_with(f.clone(), &GpuHint::Unknown);
        let mut boxed: Vec<Box<dyn CounterSource>> = vec![Box::new(n), Box::new(g)];
        for s in boxed.iter_mut() {
            s.start().unwrap();
        }
        assert_eq!(f.open_inits(), 2, "one init each, reference-counted by NVML");
        let ids: Vec<_> = boxed.iter().map(|s| s.id()).collect();
        assert_eq!(ids, ["nvml", "gpm"]);
    }
    assert_eq!(f.open_inits(), 0);
    assert_eq!(f.live_samples(), 0);
}

#[test]
fn without_the_nvidia_driver_the_real_library_is_not_found() {
    if std::path::Path::new("/proc/driver/nvidia").exists() {
        return;
    }
    match nvidia::sources(&GpuHint::Unknown) {
        Ok(_) => panic!("NVML loaded on a machine without the NVIDIA driver"),
        Err(e) => assert_eq!(e, "libnvidia-ml.so.1 not found: no NVIDIA driver"),
    }
}
