//! The `amdgpu` source and the `gpu_metrics` parser: fixture trees of a dGPU (v1.3), an
//! Instinct (v1.4) and an APU (v2.2), every known revision's layout, an unknown revision,
//! truncated and short files, device choice by PCI address, and no device at all.

#[path = "support/gpu_metrics_blob.rs"]
mod blob;
#[path = "support/sensors.rs"]
mod sensors;

use framescope_collectors::seam::{FixtureFs, ScriptedFs, Step};
use framescope_collectors::source::{CounterSource, GpuHint, ReadError, StartError};
use framescope_collectors::sources::gpu_metrics::{self, MetricsError};
use framescope_collectors::sources::AmdgpuSource;
use sensors::{close, fixture, get, read_named};

fn pci(bus: u32) -> GpuHint {
    GpuHint::Pci {
        domain: 0,
        bus,
        device: 0,
        function: 0,
    }
}

#[test]
fn dgpu_v1_3_fixture_through_the_device_link() {
    let mut s = AmdgpuSource::with_fs(Box::new(FixtureFs::new(fixture("amdgpu-v1_3"))), pci(3));
    s.start().unwrap();
    assert_eq!(s.device(), Some("card0 (0000:03:00.0)"));
    assert_eq!(s.choice_note(), None);
    let (v, w) = read_named(&mut s, 5_000);
    assert_eq!((w.begin_ns, w.end_ns), (5_000, 5_000));
    assert_eq!(get(&v, "gpu_util_pct"), 97.0);
    assert_eq!(get(&v, "vram_used_bytes"), 4_294_967_296.0);
    assert_eq!(get(&v, "vram_total_bytes"), 17_163_091_968.0);
    assert_eq!(get(&v, "gpu_temp_c"), 67.0);
    assert_eq!(get(&v, "gpu_power_w"), 185.0);
    assert_eq!(get(&v, "gpu_clock_mhz"), 2450.0);
    assert_eq!(get(&v, "gpu_mem_clock_mhz"), 1249.0);
    assert_eq!(get(&v, "gpu_fan_rpm"), 1320.0);
    assert_eq!(s.metrics_problem(), None);
    let units: Vec<&str> = s.catalogue().iter().map(|c| c.unit.as_str()).collect();
    assert_eq!(units, ["%", "bytes", "bytes", "C", "W", "MHz", "MHz", "rpm"]);
}

#[test]
fn dgpu_v1_3_fixture_without_hint_skips_the_nvidia_card_and_connectors() {
    let mut s = AmdgpuSource::with_fs(Box::new(FixtureFs::new(fixture("amdgpu-v1_3"))), GpuHint::Unknown);
    s.start().unwrap();
    assert_eq!(s.device(), Some("card0 (0000:03:00.0)"));
    assert_eq!(s.choice_note(), None, "card1 is NVIDIA: only one amdgpu device");
}

#[test]
fn hint_naming_another_gpu_is_unavailable() {
    // The app renders on the NVIDIA card (0000:01:00.0): the AMD card's numbers would mislead.
    let mut s = AmdgpuSource::with_fs(Box::new(FixtureFs::new(fixture("amdgpu-v1_3"))), pci(1));
    let e = s.start().unwrap_err();
    assert!(matches!(e, StartError::Unavailable(_)));
    assert_eq!(
        e.reason(),
        "the app renders on 0000:01:00.0, which is not an amdgpu device (amdgpu: card0 (0000:03:00.0))"
    );
}

#[test]
fn instinct_v1_4_fixture_pci_from_uevent() {
    let hint = GpuHint::Pci {
        domain: 0,
        bus: 0xc1,
        device: 0,
        function: 0,
    };
    let mut s = AmdgpuSource::with_fs(Box::new(FixtureFs::new(fixture("amdgpu-v1_4"))), hint);
    s.start().unwrap();
    assert_eq!(
        s.device(),
        Some("card0 (0000:c1:00.0)"),
        "uevent's upper-case address matched"
    );
    let (v, _) = read_named(&mut s, 1);
    assert_eq!(get(&v, "gpu_util_pct"), 12.0);
    assert_eq!(get(&v, "vram_total_bytes"), 206_158_430_208.0);
    assert_eq!(get(&v, "gpu_temp_c"), 72.0);
    assert_eq!(get(&v, "gpu_power_w"), 550.0);
    assert_eq!(get(&v, "gpu_clock_mhz"), 2100.0);
    assert_eq!(get(&v, "gpu_mem_clock_mhz"), 1300.0);
    assert!(get(&v, "gpu_fan_rpm").is_nan(), "v1.4 has no fan");
}

#[test]
fn apu_v2_2_fixture_units_and_clock_fallback() {
    let mut s = AmdgpuSource::with_fs(Box::new(FixtureFs::new(fixture("amdgpu-v2_2"))), GpuHint::Unknown);
    s.start().unwrap();
    assert_eq!(s.device(), Some("card1 (0000:04:00.0)"));
    let (v, _) = read_named(&mut s, 1);
    assert_eq!(get(&v, "gpu_util_pct"), 35.0);
    close(get(&v, "gpu_temp_c"), 51.5);
    close(get(&v, "gpu_power_w"), 15.25);
    assert_eq!(get(&v, "gpu_clock_mhz"), 1800.0, "average is 0xFFFF: current clock");
    assert_eq!(get(&v, "gpu_mem_clock_mhz"), 3200.0);
    assert!(get(&v, "gpu_fan_rpm").is_nan(), "APUs report a PWM duty, not rpm");
}

#[test]
fn every_known_revision_parses_at_its_offsets() {
    let raw = blob::Raw {
        temp: 6100,
        power: 9000,
        avg_gfxclk: 1111,
        cur_gfxclk: 1222,
        avg_uclk: 333,
        cur_uclk: 444,
        fan: 900,
    };
    for &((f, c), size) in blob::SIZES {
        let b = blob::revision_blob(f, c, raw);
        assert_eq!(b.len(), usize::from(size));
        let m = gpu_metrics::parse(&b).unwrap_or_else(|e| panic!("v{f}.{c}: {e}"));
        let o = blob::offsets(f, c);
        let (t, p) = if f == 2 { (61.0, 9.0) } else { (6100.0, 9000.0) };
        close(m.temp_c, t);
        close(m.power_w, p);
        let gfx = if o.avg_gfxclk.is_some() { 1111.0 } else { 1222.0 };
        let mem = if o.avg_uclk.is_some() { 333.0 } else { 444.0 };
        assert_eq!(m.gfx_clock_mhz, gfx, "v{f}.{c}");
        assert_eq!(m.mem_clock_mhz, mem, "v{f}.{c}");
        if o.fan.is_some() {
            assert_eq!(m.fan_rpm, 900.0, "v{f}.{c}");
        } else {
            assert!(m.fan_rpm.is_nan(), "v{f}.{c}");
        }
    }
}

#[test]
fn a_longer_structure_than_the_layout_is_read_by_its_known_prefix() {
    // A kernel that appended fields without a new revision: the known fields still parse.
    let mut b = blob::fixture_v1_3();
    b.extend_from_slice(&[0xFF; 8]);
    let n = b.len() as u16;
    b[0..2].copy_from_slice(&n.to_le_bytes());
    assert_eq!(gpu_metrics::parse(&b).unwrap().temp_c, 67.0);
}

#[test]
fn parser_errors() {
    assert_eq!(gpu_metrics::parse(&[]), Err(MetricsError::NoHeader { len: 0 }));
    assert_eq!(gpu_metrics::parse(&[1, 0, 1]), Err(MetricsError::NoHeader { len: 3 }));
    let v3 = blob::blob(200, 3, 0, &[]);
    assert_eq!(
        gpu_metrics::parse(&v3),
        Err(MetricsError::UnknownRevision { format: 3, content: 0 })
    );
    let cut = &blob::fixture_v1_3()[..100];
    assert_eq!(
        gpu_metrics::parse(cut),
        Err(MetricsError::Truncated {
            structure_size: 120,
            len: 100
        })
    );
    // The header claims v2.4 but the size of v2.1: no field is read past what the kernel
    // said it wrote.
    let small = blob::blob(120, 2, 4, &[]);
    assert_eq!(
        gpu_metrics::parse(&small),
        Err(MetricsError::SizeMismatch {
            format: 2,
            content: 4,
            structure_size: 120,
            expected: 168
        })
    );
}

#[test]
fn parser_never_panics_on_garbage() {
    // A cheap deterministic generator: every prefix length and header of pseudo-random bytes.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for len in 0..400 {
        let mut b = Vec::with_capacity(len);
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b.push(x as u8);
        }
        if len >= 4 {
            b[2] = (x % 4) as u8;
            b[3] = ((x >> 8) % 7) as u8;
        }
        let _ = gpu_metrics::parse(&b);
    }
}

/// A scripted one-card tree whose `gpu_metrics` reads return `metrics` in turn.
fn scripted(metrics: Vec<Step>) -> ScriptedFs {
    let d = "/sys/class/drm/card0/device";
    let mut fs = ScriptedFs::new();
    fs.file(format!("{d}/vendor"), ["0x1002\n"])
        .file(format!("{d}/uevent"), ["PCI_SLOT_NAME=0000:03:00.0\n"])
        .file(format!("{d}/gpu_busy_percent"), ["50\n"])
        .file(format!("{d}/mem_info_vram_used"), ["1024\n"])
        .file(format!("{d}/mem_info_vram_total"), ["not a number\n"])
        .steps(format!("{d}/gpu_metrics"), metrics);
    fs
}

#[test]
fn unknown_revision_gives_nan_and_one_reason_that_stays_the_first() {
    let fs = scripted(vec![
        Step::Data(blob::blob(200, 3, 0, &[])),
        Step::Data(blob::blob(100, 9, 9, &[])),
        Step::Data(blob::fixture_v1_3()),
    ]);
    let mut s = AmdgpuSource::with_fs(Box::new(fs), GpuHint::Unknown);
    s.start().unwrap();
    let (v, _) = read_named(&mut s, 1);
    assert_eq!(get(&v, "gpu_util_pct"), 50.0);
    assert_eq!(get(&v, "vram_used_bytes"), 1024.0);
    assert!(get(&v, "vram_total_bytes").is_nan(), "malformed file: NaN");
    for n in [
        "gpu_temp_c",
        "gpu_power_w",
        "gpu_clock_mhz",
        "gpu_mem_clock_mhz",
        "gpu_fan_rpm",
    ] {
        assert!(get(&v, n).is_nan(), "{n}");
    }
    let first = "gpu_metrics v3.0: revision not known to framescope";
    assert_eq!(s.metrics_problem(), Some(first));
    read_named(&mut s, 2);
    assert_eq!(
        s.metrics_problem(),
        Some(first),
        "reported once: the first reason stays"
    );
    let (v, _) = read_named(&mut s, 3);
    assert_eq!(get(&v, "gpu_temp_c"), 67.0, "a good blob later still parses");
}

#[test]
fn truncated_gpu_metrics_file() {
    let fs = scripted(vec![Step::Data(blob::fixture_v2_2()[..64].to_vec())]);
    let mut s = AmdgpuSource::with_fs(Box::new(fs), GpuHint::Unknown);
    s.start().unwrap();
    let (v, _) = read_named(&mut s, 1);
    assert!(get(&v, "gpu_temp_c").is_nan());
    assert_eq!(s.metrics_problem(), Some("gpu_metrics: header says 128 bytes, read 64"));
}

#[test]
fn missing_gpu_metrics_and_vanished_device() {
    let fs = scripted(vec![Step::Missing]);
    let mut s = AmdgpuSource::with_fs(Box::new(fs), GpuHint::Unknown);
    s.start().unwrap();
    let (v, _) = read_named(&mut s, 1);
    assert_eq!(get(&v, "gpu_util_pct"), 50.0);
    assert!(get(&v, "gpu_power_w").is_nan());
    assert!(s.metrics_problem().unwrap().contains("gpu_metrics"));

    // Every file gone (GPU reset, hot unplug): the read as a whole is lost.
    let d = "/sys/class/drm/card0/device";
    let mut fs = ScriptedFs::new();
    fs.file(format!("{d}/vendor"), ["0x1002"]);
    for f in [
        "gpu_busy_percent",
        "mem_info_vram_used",
        "mem_info_vram_total",
        "gpu_metrics",
    ] {
        fs.steps(format!("{d}/{f}"), vec![Step::Missing]);
    }
    let mut s = AmdgpuSource::with_fs(Box::new(fs), GpuHint::Unknown);
    s.start().unwrap();
    let mut out = vec![0.0; s.catalogue().len()];
    assert!(matches!(s.read(1, &mut out), Err(ReadError::Lost(_))));
}

#[test]
fn two_amdgpu_devices() {
    let mut fs = ScriptedFs::new();
    for (card, addr) in [("card0", "0000:0a:00.0"), ("card1", "0000:03:00.0")] {
        let d = format!("/sys/class/drm/{card}/device");
        fs.file(format!("{d}/vendor"), ["0x1002\n"])
            .link(format!("/sys/class/drm/{card}/device"), format!("../../../{addr}"))
            .file(
                format!("{d}/gpu_busy_percent"),
                [if card == "card0" { "10" } else { "90" }],
            );
    }
    // The link entry and the files below it coexist in a scripted tree.
    let mut s = AmdgpuSource::with_fs(Box::new(fs.clone()), GpuHint::Unknown);
    s.start().unwrap();
    assert_eq!(s.device(), Some("card0 (0000:0a:00.0)"));
    assert_eq!(
        s.choice_note(),
        Some("2 amdgpu devices and no PCI address of the app's GPU; reading card0 (0000:0a:00.0)")
    );

    let mut s = AmdgpuSource::with_fs(Box::new(fs), pci(3));
    s.start().unwrap();
    assert_eq!(s.device(), Some("card1 (0000:03:00.0)"));
    assert_eq!(s.choice_note(), None);
    let (v, _) = read_named(&mut s, 1);
    assert_eq!(get(&v, "gpu_util_pct"), 90.0);
}

#[test]
fn no_amdgpu_device_is_unavailable() {
    let reason = "no amdgpu device (/sys/class/drm/card*/device/vendor 0x1002)";
    // No /sys/class/drm at all.
    let mut s = AmdgpuSource::with_fs(Box::new(ScriptedFs::new()), GpuHint::Unknown);
    assert_eq!(s.start(), Err(StartError::Unavailable(reason.into())));
    // Only an NVIDIA card (and a garbled vendor file).
    let mut fs = ScriptedFs::new();
    fs.file("/sys/class/drm/card0/device/vendor", ["0x10de\n"])
        .file("/sys/class/drm/card1/device/vendor", ["\u{0}\u{ff}garbage"]);
    let mut s = AmdgpuSource::with_fs(Box::new(fs), GpuHint::Unknown);
    assert_eq!(s.start(), Err(StartError::Unavailable(reason.into())));
    let mut out = vec![0.0; s.catalogue().len()];
    assert!(
        matches!(s.read(1, &mut out), Err(ReadError::Lost(_))),
        "read before start"
    );
}
