//! The `hwmon` source: a fixture with an amdgpu, a k10temp and two unrelated chips; i915's
//! energy counter turned into power; choice by PCI address; nothing found.

#[path = "support/sensors.rs"]
mod sensors;

use framescope_collectors::seam::{FixtureFs, ScriptedFs};
use framescope_collectors::source::{CounterScope, CounterSource, GpuHint, ReadError, StartError};
use framescope_collectors::sources::HwmonSource;
use sensors::{close, fixture, get, read_named};

#[test]
fn fixture_gpu_and_cpu_sensors() {
    let mut s = HwmonSource::with_fs(Box::new(FixtureFs::new(fixture("hwmon"))), GpuHint::Unknown);
    s.start().unwrap();
    let cat: Vec<(&str, &str, CounterScope)> = s
        .catalogue()
        .iter()
        .map(|c| (c.name.as_str(), c.unit.as_str(), c.scope))
        .collect();
    assert_eq!(
        cat,
        [
            ("gpu_temp_c", "C", CounterScope::Device),
            ("gpu_power_w", "W", CounterScope::Device),
            ("gpu_fan_rpm", "rpm", CounterScope::Device),
            ("gpu_clock_mhz", "MHz", CounterScope::Device),
            ("cpu_temp_c", "C", CounterScope::System),
        ]
    );
    assert_eq!(s.gpu_chip(), Some("/sys/class/hwmon/hwmon1 (amdgpu)"));
    let (v, w) = read_named(&mut s, 7);
    assert_eq!((w.begin_ns, w.end_ns), (7, 7));
    close(get(&v, "gpu_temp_c"), 54.0);
    close(get(&v, "gpu_power_w"), 123.0); // power1_average wins over power1_input
    assert_eq!(get(&v, "gpu_fan_rpm"), 1450.0);
    close(get(&v, "gpu_clock_mhz"), 2100.0);
    close(get(&v, "cpu_temp_c"), 61.25);
}

#[test]
fn pci_hint_picks_the_chip_and_a_foreign_hint_drops_gpu_sensors() {
    let hint = GpuHint::Pci {
        domain: 0,
        bus: 3,
        device: 0,
        function: 0,
    };
    let s = HwmonSource::with_fs(Box::new(FixtureFs::new(fixture("hwmon"))), hint);
    assert_eq!(s.gpu_chip(), Some("/sys/class/hwmon/hwmon1 (amdgpu)"));

    // The app renders on a GPU without hwmon (e.g. NVIDIA's driver): CPU temperature only.
    let other = GpuHint::Pci {
        domain: 0,
        bus: 1,
        device: 0,
        function: 0,
    };
    let mut s = HwmonSource::with_fs(Box::new(FixtureFs::new(fixture("hwmon"))), other);
    s.start().unwrap();
    assert_eq!(s.gpu_chip(), None);
    let names: Vec<&str> = s.catalogue().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["cpu_temp_c"]);
}

#[test]
fn i915_energy_becomes_power_over_the_read_interval() {
    let d = "/sys/class/hwmon/hwmon4";
    let mut fs = ScriptedFs::new();
    fs.file(format!("{d}/name"), ["i915\n"])
        // 3 J in 0.25 s is 12 W; then a counter reset (driver reload) gives NaN.
        .file(
            format!("{d}/energy1_input"),
            ["1000000\n", "1000000\n", "4000000\n", "5\n"],
        )
        .file("/sys/class/hwmon/hwmon0/name", ["coretemp\n"])
        .file("/sys/class/hwmon/hwmon0/temp1_input", ["45000\n"]);
    let mut s = HwmonSource::with_fs(Box::new(fs), GpuHint::Unknown);
    s.start().unwrap();
    let names: Vec<&str> = s.catalogue().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["gpu_power_w", "cpu_temp_c"], "i915 has no temp1 or fan");
    let (v, w) = read_named(&mut s, 1_000_000_000);
    assert!(get(&v, "gpu_power_w").is_nan(), "no previous energy reading");
    assert_eq!((w.begin_ns, w.end_ns), (1_000_000_000, 1_000_000_000));
    let (v, w) = read_named(&mut s, 1_250_000_000);
    close(get(&v, "gpu_power_w"), 12.0);
    assert_eq!((w.begin_ns, w.end_ns), (1_000_000_000, 1_250_000_000));
    close(get(&v, "cpu_temp_c"), 45.0);
    let (v, _) = read_named(&mut s, 1_500_000_000);
    assert!(get(&v, "gpu_power_w").is_nan());
}

#[test]
fn two_gpu_chips_without_hint_take_the_first_and_say_so() {
    let mut fs = ScriptedFs::new();
    fs.file("/sys/class/hwmon/hwmon2/name", ["amdgpu\n"])
        .file("/sys/class/hwmon/hwmon2/temp1_input", ["50000\n"])
        .file("/sys/class/hwmon/hwmon10/name", ["nouveau\n"])
        .file("/sys/class/hwmon/hwmon10/temp1_input", ["60000\n"]);
    let s = HwmonSource::with_fs(Box::new(fs), GpuHint::Unknown);
    // hwmon2 sorts before hwmon10 numerically, not as text.
    assert_eq!(s.gpu_chip(), Some("/sys/class/hwmon/hwmon2 (amdgpu)"));
    assert!(s.choice_note().unwrap().starts_with("2 GPU hwmon chips"));
}

#[test]
fn nothing_found_is_unavailable_with_reason() {
    let mut fs = ScriptedFs::new();
    fs.file("/sys/class/hwmon/hwmon0/name", ["nvme\n"])
        .file("/sys/class/hwmon/hwmon0/temp1_input", ["30000\n"])
        // A GPU chip whose files are garbage adds nothing.
        .file("/sys/class/hwmon/hwmon1/name", ["amdgpu\n"])
        .file("/sys/class/hwmon/hwmon1/temp1_input", ["hot\n"]);
    let mut s = HwmonSource::with_fs(Box::new(fs), GpuHint::Unknown);
    assert!(s.catalogue().is_empty());
    assert_eq!(
        s.start(),
        Err(StartError::Unavailable(
            "no GPU or CPU sensor under /sys/class/hwmon/hwmon*/ (chips looked for: amdgpu, nouveau, i915, xe, \
             coretemp, k10temp, zenpower; found: nvme, amdgpu)"
                .into()
        ))
    );

    let mut s = HwmonSource::with_fs(Box::new(ScriptedFs::new()), GpuHint::Unknown);
    assert!(s.start().unwrap_err().reason().ends_with("found: none)"));
}

#[test]
fn sensors_that_vanish() {
    let mut fs = ScriptedFs::new();
    fs.file("/sys/class/hwmon/hwmon0/name", ["k10temp\n"]).steps(
        "/sys/class/hwmon/hwmon0/temp1_input",
        vec![
            framescope_collectors::seam::Step::Data(b"40000".to_vec()),
            framescope_collectors::seam::Step::Data(b"40000".to_vec()),
            framescope_collectors::seam::Step::Missing,
        ],
    );
    let mut s = HwmonSource::with_fs(Box::new(fs), GpuHint::Unknown);
    s.start().unwrap();
    let (v, _) = read_named(&mut s, 1);
    close(get(&v, "cpu_temp_c"), 40.0);
    let mut out = vec![0.0; 1];
    assert!(matches!(s.read(2, &mut out), Err(ReadError::Lost(_))));
}
