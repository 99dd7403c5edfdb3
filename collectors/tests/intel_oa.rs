//! The `intel_oa` source driven through `FakeSys` with fake i915 and Xe drivers
//! (`intel::fake`): the calls it makes (open, the stream open with its properties, enable,
//! reads), per-window values computed by hand from the fixture reports, report loss, frame
//! windows, privilege and device refusals, garbage streams, and no fd left after drop.

#[path = "support/sensors.rs"]
mod sensors;

use framescope_collectors::intel::fake::{
    self, build_report, report_lost_record, sample_record, ReadStep, ReportFields, METRIC_ID,
};
use framescope_collectors::intel::{i915_perf as i9, xe_observation as xe, IntelOaSource};
use framescope_collectors::seam::ScriptedFs;
use framescope_collectors::source::{CounterSource, GpuHint, ReadError, StartError};
use framescope_collectors::sys::fake::{Call, FakeSys};
use sensors::{close, get, read_named};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

const NOW: u64 = 10_000_000_000;
/// 12 MHz: 12 000 ticks per millisecond.
const MS: u32 = 12_000;
/// The render timestamp the fake i915 returns at `NOW` (its low 32 bits are 0x3000); a
/// report 3 ms before it lies across the 32-bit wrap.
const RENDER_TS: u64 = 0x1_0000_3000;

/// Report `k` of a steady 1 GHz GPU, `ms_before` ms before the render timestamp: per ms
/// 1 000 000 render clocks, A0 +600 000 (k odd) or +200 000 (k even), A7 (EU active) and A8
/// (EU stall) summed over 24 EUs.
fn report(ms_before: u32, ticks: u32, a0: u64, a7: u64, a8: u64, a21: u64) -> Vec<u8> {
    build_report(
        5,
        &ReportFields {
            rpt_id: 1 << 19,
            timestamp: 0x3000u32.wrapping_sub(ms_before * MS),
            gpu_ticks: ticks,
            a: vec![(0, a0), (7, a7), (8, a8), (21, a21)],
            ..ReportFields::default()
        },
    )
    .unwrap()
}

fn mono(ms_before: u64) -> u64 {
    NOW - ms_before * 1_000_000
}

fn i915_source(fs: ScriptedFs) -> (IntelOaSource, Arc<Mutex<FakeSys>>, fake::State) {
    let (shared, sys, state) = fake::setup("i915", fs);
    state.lock().unwrap().render_timestamp = RENDER_TS;
    (IntelOaSource::with_sys(Box::new(shared), GpuHint::Unknown), sys, state)
}

fn requests(sys: &Arc<Mutex<FakeSys>>) -> Vec<u64> {
    sys.lock()
        .unwrap()
        .log()
        .iter()
        .filter_map(|c| match c {
            Call::Ioctl { request, .. } => Some(*request),
            _ => None,
        })
        .collect()
}

#[test]
fn i915_open_enable_read_and_values() {
    let (mut s, sys, state) = i915_source(fake::sysfs("i915", "0", 0));
    // Reports at -3, -2, -1 ms; the first lies before the 32-bit wrap of the timestamp.
    let r0 = report(3, 1000, 0xFF_FFFF_0000, 0, 0, 0);
    let r1 = report(
        2,
        1000 + 1_000_000,
        0xFF_FFFF_0000 + 600_000,
        12_000_000,
        2_400_000,
        500,
    );
    let r2 = report(
        1,
        1000 + 2_000_000,
        0xFF_FFFF_0000 + 800_000,
        18_000_000,
        2_400_000,
        800,
    );
    let mut chunk = sample_record(&r0);
    chunk.extend(sample_record(&r1));
    chunk.extend(sample_record(&r2));
    state.lock().unwrap().reads.push_back(ReadStep::Data(chunk));

    s.start().unwrap();
    assert_eq!(
        s.note(),
        Some("renderD128 (i915), metric set 01234567-89ab-cdef-0123-456789abcdef id 7 (first published)")
    );
    {
        let st = state.lock().unwrap();
        // FD_CLOEXEC | FD_NONBLOCK | DISABLED; SAMPLE_OA 1, metric set 7, format 10
        // (A32u40_A4u32_B8_C8), exponent 12 (8192 ticks = 0.68 ms at 12 MHz).
        assert_eq!(
            st.i915_opens,
            vec![(1 | 2 | 4, vec![(2, 1), (3, METRIC_ID), (4, 10), (5, 12)])]
        );
        assert_eq!(st.stream_ioctls, vec![i9::I915_PERF_IOCTL_ENABLE]);
    }
    let (v, w) = read_named(&mut s, NOW);
    assert_eq!((w.begin_ns, w.end_ns), (mono(3), mono(1)));
    // 800 000 busy of 2 000 000 render clocks; A0 wrapped past 2^40 on the way.
    close(get(&v, "intel_gpu_busy_pct"), 40.0);
    // A7: 18 000 000 / (24 EUs * 2 000 000 clocks) = 37.5 %; A8: 2 400 000 / 48 000 000.
    close(get(&v, "intel_eu_active_pct"), 37.5);
    close(get(&v, "intel_eu_stall_pct"), 5.0);
    close(get(&v, "intel_gpu_core_clocks"), 2_000_000.0);
    // 2 000 000 clocks in 24 000 ticks at 12 MHz (2 ms): 1000 MHz.
    close(get(&v, "intel_gpu_core_clock_mhz"), 1000.0);
    close(get(&v, "intel_gpu_time_ns"), 2_000_000.0);
    close(get(&v, "intel_quads_rasterized"), 800.0);
    close(get(&v, "intel_oa_reports"), 2.0);
    close(get(&v, "intel_oa_reports_lost"), 0.0);
    // Counters not in the fixture read as zero deltas, not NaN.
    close(get(&v, "intel_shader_barriers"), 0.0);
    assert_eq!(
        s.read(NOW + 1, &mut vec![0.0; s.catalogue().len()]),
        Err(ReadError::NotYet)
    );

    let reqs = requests(&sys);
    assert_eq!(
        &reqs[..4],
        &[
            i9::DRM_IOCTL_I915_GETPARAM,
            i9::DRM_IOCTL_I915_GETPARAM,
            i9::DRM_IOCTL_I915_PERF_OPEN,
            i9::I915_PERF_IOCTL_ENABLE
        ]
    );
    assert!(reqs.contains(&i9::DRM_IOCTL_I915_REG_READ));
    {
        let g = sys.lock().unwrap();
        let log = g.log();
        assert_eq!(
            log[0],
            Call::Open {
                path: PathBuf::from("/dev/dri/renderD128"),
                ok: true
            }
        );
        let stream = log
            .iter()
            .find_map(|c| match c {
                Call::Ioctl {
                    request: i9::DRM_IOCTL_I915_PERF_OPEN,
                    ret: Some(fd),
                    ..
                } => Some(*fd),
                _ => None,
            })
            .unwrap();
        let reads: Vec<_> = log
            .iter()
            .filter_map(|c| match c {
                Call::Read { fd, ret } => Some((fd.0, *ret)),
                _ => None,
            })
            .collect();
        // One read with three 264-byte records, then EAGAIN; again EAGAIN on the second read.
        assert_eq!(reads, vec![(stream, Some(3 * 264)), (stream, None), (stream, None)]);
        assert_eq!(g.open_fds(), 2);
    }
    drop(s);
    let g = sys.lock().unwrap();
    assert_eq!(g.open_fds(), 0);
    assert!(matches!(g.log().last(), Some(Call::Close(_))));
    assert_eq!(
        state.lock().unwrap().stream_ioctls.last(),
        Some(&i9::I915_PERF_IOCTL_DISABLE)
    );
}

#[test]
fn i915_report_lost_breaks_the_chain_and_is_counted() {
    let (mut s, _sys, state) = i915_source(fake::sysfs("i915", "0", 0));
    let mut chunk = sample_record(&report(4, 0, 0, 0, 0, 0));
    chunk.extend(sample_record(&report(3, 100, 10, 0, 0, 0)));
    chunk.extend(report_lost_record());
    chunk.extend(sample_record(&report(2, 5_000, 1_000, 0, 0, 0)));
    chunk.extend(sample_record(&report(1, 5_300, 1_030, 0, 0, 0)));
    state.lock().unwrap().reads.push_back(ReadStep::Data(chunk));
    s.start().unwrap();
    let (v, w) = read_named(&mut s, NOW);
    // Intervals -4..-3 ms and -2..-1 ms; the gap across the lost report is not summed.
    assert_eq!((w.begin_ns, w.end_ns), (mono(4), mono(1)));
    close(get(&v, "intel_oa_reports"), 2.0);
    close(get(&v, "intel_oa_reports_lost"), 1.0);
    close(get(&v, "intel_gpu_core_clocks"), (100 + 300) as f64);
    close(get(&v, "intel_gpu_busy_pct"), 100.0 * (10.0 + 30.0) / 400.0);
    close(get(&v, "intel_gpu_time_ns"), 2_000_000.0);
}

#[test]
fn windows_end_at_the_frame_mark() {
    let (mut s, _sys, state) = i915_source(fake::sysfs("i915", "0", 0));
    let mut chunk = Vec::new();
    for (k, ms) in [3u32, 2, 1, 0].iter().enumerate() {
        chunk.extend(sample_record(&report(*ms, 1000 * k as u32, 0, 0, 0, 0)));
    }
    state.lock().unwrap().reads.push_back(ReadStep::Data(chunk));
    s.start().unwrap();
    s.frame_marked(7, mono(2) + 500_000);
    let (v, w) = read_named(&mut s, NOW);
    assert_eq!((w.begin_ns, w.end_ns), (mono(3), mono(2)));
    close(get(&v, "intel_oa_reports"), 1.0);
    // No report since, and the mark is behind what is pending: the rest goes out whole, on
    // the times it was placed at when it was read.
    let (v, w) = read_named(&mut s, NOW + 1_000_000);
    assert_eq!((w.begin_ns, w.end_ns), (mono(2), mono(0)));
    close(get(&v, "intel_oa_reports"), 2.0);
    close(get(&v, "intel_gpu_core_clocks"), 2000.0);
}

#[test]
fn xe_open_read_status_round_trip() {
    let (shared, sys, state) = fake::setup("xe", fake::sysfs("xe", "0", 0));
    let mut first = report(4, 0, 0, 0, 0, 0);
    first.extend(report(3, 1_000_000, 250_000, 0, 0, 10));
    let mut second = report(1, 3_000_000, 400_000, 0, 0, 20);
    second.extend(report(0, 4_000_000, 900_000, 0, 0, 35));
    {
        let mut st = state.lock().unwrap();
        st.reads.push_back(ReadStep::Data(first));
        st.reads.push_back(ReadStep::Errno(libc::EIO));
        st.reads.push_back(ReadStep::Data(second));
        st.xe_status = xe::OASTATUS_REPORT_LOST;
    }
    let mut s = IntelOaSource::with_sys(Box::new(shared), GpuHint::Unknown);
    s.start().unwrap();
    {
        let st = state.lock().unwrap();
        // OA unit 0, SAMPLE_OA, metric set 7, OAG format with counter select 5 (0x500),
        // exponent 12, opened disabled; observation type OA, op STREAM_OPEN.
        assert_eq!(
            st.xe_opens,
            vec![(0, 0, vec![(1, 0), (2, 1), (3, METRIC_ID), (4, 0x500), (5, 12), (6, 1)])]
        );
        assert_eq!(st.stream_ioctls, vec![xe::DRM_XE_OBSERVATION_IOCTL_ENABLE]);
    }
    let (v, w) = read_named(&mut s, NOW);
    // No render timestamp on Xe: the newest report is taken as now.
    assert_eq!((w.begin_ns, w.end_ns), (mono(4), mono(0)));
    close(get(&v, "intel_oa_reports"), 2.0);
    close(get(&v, "intel_oa_reports_lost"), 1.0);
    close(get(&v, "intel_gpu_core_clocks"), 2_000_000.0);
    close(
        get(&v, "intel_gpu_busy_pct"),
        100.0 * (250_000.0 + 500_000.0) / 2_000_000.0,
    );
    close(get(&v, "intel_quads_rasterized"), 25.0);
    // No EU count from Xe: the EU ratios have no value.
    assert!(get(&v, "intel_eu_active_pct").is_nan());
    assert_eq!(
        state.lock().unwrap().stream_ioctls,
        vec![xe::DRM_XE_OBSERVATION_IOCTL_ENABLE, xe::DRM_XE_OBSERVATION_IOCTL_STATUS]
    );
    let reqs = requests(&sys);
    assert_eq!(
        &reqs[..4],
        &[
            xe::DRM_IOCTL_XE_DEVICE_QUERY,
            xe::DRM_IOCTL_XE_DEVICE_QUERY,
            xe::DRM_IOCTL_XE_OBSERVATION,
            xe::DRM_XE_OBSERVATION_IOCTL_ENABLE
        ]
    );
    drop(s);
    assert_eq!(sys.lock().unwrap().open_fds(), 0);
}

#[test]
fn privilege_refused_names_the_sysctl() {
    let (mut s, sys, _) = i915_source(fake::sysfs("i915", "1", 0));
    let e = s.start().unwrap_err();
    assert!(matches!(e, StartError::Unavailable(_)), "{e:?}");
    assert!(
        e.reason()
            .contains("sysctl dev.i915.perf_stream_paranoid=0, or run with CAP_PERFMON"),
        "{}",
        e.reason()
    );
    // Refused before any device is opened.
    assert!(sys.lock().unwrap().log().is_empty());

    let (shared, _, _) = fake::setup("xe", fake::sysfs("xe", "1", 0));
    let e = IntelOaSource::with_sys(Box::new(shared), GpuHint::Unknown)
        .start()
        .unwrap_err();
    assert!(
        e.reason().contains("sysctl dev.xe.observation_paranoid=0"),
        "{}",
        e.reason()
    );
}

#[test]
fn cap_perfmon_or_cap_sys_admin_is_enough() {
    for cap in [38, 21] {
        let (mut s, sys, _) = i915_source(fake::sysfs("i915", "1", 1 << cap));
        s.start().unwrap();
        drop(s);
        assert_eq!(sys.lock().unwrap().open_fds(), 0);
    }
}

#[test]
fn no_intel_device() {
    // Nothing in /sys/class/drm.
    let (mut s, _, _) = i915_source(ScriptedFs::new());
    assert_eq!(s.start(), Err(StartError::Unavailable("no i915/xe device".into())));
    // An amdgpu render node only.
    let mut fs = ScriptedFs::new();
    fs.link(
        "/sys/class/drm/renderD128/device/driver",
        "../../../bus/pci/drivers/amdgpu",
    );
    let (mut s, _, _) = i915_source(fs);
    assert_eq!(s.start(), Err(StartError::Unavailable("no i915/xe device".into())));
    // The app renders on another GPU (PCI 0000:03:00.0; the Intel one is 0000:00:02.0).
    let (shared, _, _) = fake::setup("i915", fake::sysfs("i915", "0", 0));
    let hint = GpuHint::Pci {
        domain: 0,
        bus: 3,
        device: 0,
        function: 0,
    };
    let e = IntelOaSource::with_sys(Box::new(shared), hint).start().unwrap_err();
    assert_eq!(e, StartError::Unavailable("no i915/xe device".into()));
}

#[test]
fn busy_stream_is_retried_and_leaks_nothing() {
    let (mut s, sys, state) = i915_source(fake::sysfs("i915", "0", 0));
    state.lock().unwrap().open_errno = Some(libc::EBUSY);
    assert!(matches!(s.start(), Err(StartError::Retry(_))));
    assert_eq!(sys.lock().unwrap().open_fds(), 0);
    state.lock().unwrap().open_errno = None;
    s.start().unwrap();
    assert_eq!(sys.lock().unwrap().open_fds(), 2);
    // Starting again closes the old stream first.
    s.start().unwrap();
    assert_eq!(sys.lock().unwrap().open_fds(), 2);
}

#[test]
fn garbage_streams_never_panic() {
    let (mut s, sys, state) = i915_source(fake::sysfs("i915", "0", 0));
    s.start().unwrap();
    let mut x: u64 = 0x1234_5678_9ABC_DEF1;
    let mut out = vec![0.0; s.catalogue().len()];
    for round in 0..300u64 {
        let n = (round * 37 % 2000) as usize;
        let mut chunk: Vec<u8> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        if round % 2 == 0 && chunk.len() > 8 {
            // A plausible SAMPLE header with a wrong size.
            chunk[0..4].copy_from_slice(&1u32.to_le_bytes());
            chunk[6..8].copy_from_slice(&((round * 13 % 600) as u16).to_le_bytes());
        }
        state.lock().unwrap().reads.push_back(ReadStep::Data(chunk));
        s.frame_marked(round, x);
        match s.read(x >> 1, &mut out) {
            Ok(_) | Err(ReadError::NotYet) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
    drop(s);
    assert_eq!(sys.lock().unwrap().open_fds(), 0);
}

#[test]
fn catalogue_names_and_units() {
    let (s, _, _) = i915_source(ScriptedFs::new());
    assert_eq!(s.id(), "intel_oa");
    let cat = s.catalogue();
    for c in cat {
        assert!(c.name.starts_with("intel_"), "{}", c.name);
        assert!(
            ["%", "MHz", "ns", "count"].contains(&c.unit.as_str()),
            "{}: {}",
            c.name,
            c.unit
        );
        assert_eq!(c.name, c.name.to_lowercase());
    }
    let names: Vec<&str> = cat.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        &names[..3],
        &["intel_gpu_busy_pct", "intel_eu_active_pct", "intel_eu_stall_pct"]
    );
    assert_eq!(
        &names[names.len() - 2..],
        &["intel_oa_reports", "intel_oa_reports_lost"]
    );
}
