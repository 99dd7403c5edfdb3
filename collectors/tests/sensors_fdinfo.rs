//! The `fdinfo` source: a fixture with two fds of one amdgpu client (counted once), busy %
//! from scripted engine times, i915 engine capacity, Xe cycles, link filtering, an fd
//! closed between reads, and no DRM fd (retry).

#[path = "support/sensors.rs"]
mod sensors;

use framescope_collectors::seam::{FixtureFs, ScriptedFs, Step};
use framescope_collectors::source::{CounterSource, StartError};
use framescope_collectors::sources::FdinfoSource;
use sensors::{close, fixture, get, read_named};

#[test]
fn fixture_two_fds_of_one_client_count_once() {
    let mut s = FdinfoSource::with_fs(Box::new(FixtureFs::new(fixture("fdinfo"))));
    s.start().unwrap();
    assert_eq!(
        s.drm_fds(),
        [5, 6, 9],
        "fd 0 (a file) and 7 (an eventfd) are not DRM fds"
    );
    let (v, w) = read_named(&mut s, 100);
    // Client 42 (fds 5 and 6): 262144 KiB; client 43: 4 MiB.
    assert_eq!(get(&v, "proc_vram_bytes"), (262_144.0 * 1024.0) + 4.0 * 1024.0 * 1024.0);
    assert!(get(&v, "proc_gpu_busy_pct").is_nan(), "first read: no delta");
    assert_eq!((w.begin_ns, w.end_ns), (100, 100));
    assert_eq!(s.engines(), ["gfx", "compute", "dec"]);
    let units: Vec<&str> = s.catalogue().iter().map(|c| c.unit.as_str()).collect();
    assert_eq!(units, ["%", "bytes"]);
}

fn amdgpu_fdinfo(client: u64, gfx_ns: u64, compute_ns: u64) -> String {
    format!(
        "pos:\t0\nflags:\t02100002\ndrm-driver:\tamdgpu\ndrm-client-id:\t{client}\n\
         drm-memory-vram:\t1024 KiB\ndrm-engine-gfx:\t{gfx_ns} ns\ndrm-engine-compute:\t{compute_ns} ns\n"
    )
}

#[test]
fn busy_is_the_busiest_engine_summed_over_clients() {
    let mut fs = ScriptedFs::new();
    let (a, b) = (
        amdgpu_fdinfo(42, 1_000_000_000, 0),
        amdgpu_fdinfo(42, 1_250_000_000, 100_000_000),
    );
    // fds 5 and 6 are one client; without dedup gfx would read 120 %.
    fs.file("/proc/self/fdinfo/5", [&a, &a, &b])
        .file("/proc/self/fdinfo/6", [&a, &a, &b])
        .file(
            "/proc/self/fdinfo/8",
            [
                amdgpu_fdinfo(7, 500_000_000, 0),
                amdgpu_fdinfo(7, 500_000_000, 0),
                amdgpu_fdinfo(7, 600_000_000, 0),
            ],
        )
        .link("/proc/self/fd/5", "/dev/dri/renderD128")
        .link("/proc/self/fd/6", "/dev/dri/renderD128")
        .link("/proc/self/fd/8", "/dev/dri/renderD128");
    let mut s = FdinfoSource::with_fs(Box::new(fs));
    s.start().unwrap();
    let (v, _) = read_named(&mut s, 1_000_000_000);
    assert!(get(&v, "proc_gpu_busy_pct").is_nan());
    assert_eq!(
        get(&v, "proc_vram_bytes"),
        2.0 * 1024.0 * 1024.0,
        "two clients of 1 MiB"
    );
    let (v, w) = read_named(&mut s, 1_500_000_000);
    // gfx: (0.25 s + 0.1 s) / 0.5 s = 70 %; compute: 0.1 s / 0.5 s = 20 %.
    close(get(&v, "proc_gpu_busy_pct"), 70.0);
    assert_eq!((w.begin_ns, w.end_ns), (1_000_000_000, 1_500_000_000));
}

#[test]
fn i915_capacity_and_xe_cycles() {
    let i915 = |render: u64, video: u64| {
        format!(
            "drm-driver:\ti915\ndrm-pdev:\t0000:00:02.0\ndrm-client-id:\t3\n\
             drm-engine-render:\t{render} ns\ndrm-engine-video:\t{video} ns\ndrm-engine-capacity-video:\t2\n\
             drm-total-system0:\t8 MiB\ndrm-resident-system0:\t6 MiB\n"
        )
    };
    let mut fs = ScriptedFs::new();
    fs.file(
        "/proc/self/fdinfo/4",
        [i915(0, 0), i915(0, 0), i915(100_000_000, 800_000_000)],
    );
    let mut s = FdinfoSource::with_fs(Box::new(fs));
    s.start().unwrap();
    let (v, _) = read_named(&mut s, 0);
    assert_eq!(
        get(&v, "proc_vram_bytes"),
        6.0 * 1024.0 * 1024.0,
        "no VRAM region: resident memory"
    );
    let (v, _) = read_named(&mut s, 500_000_000);
    // video: 0.8 s over 0.5 s on 2 engines = 80 %; render 20 %.
    close(get(&v, "proc_gpu_busy_pct"), 80.0);

    let xe = |cycles: u64, total: u64| {
        format!(
            "drm-driver:\txe\ndrm-client-id:\t9\ndrm-cycles-rcs:\t{cycles}\ndrm-total-cycles-rcs:\t{total}\n\
             drm-resident-vram0:\t3 MiB\ndrm-total-vram0:\t5 MiB\ndrm-resident-system:\t1 MiB\n"
        )
    };
    let mut fs = ScriptedFs::new();
    fs.file("/proc/self/fdinfo/4", [xe(100, 1000), xe(100, 1000), xe(600, 2000)]);
    let mut s = FdinfoSource::with_fs(Box::new(fs));
    s.start().unwrap();
    let (v, _) = read_named(&mut s, 0);
    assert_eq!(
        get(&v, "proc_vram_bytes"),
        3.0 * 1024.0 * 1024.0,
        "resident VRAM region"
    );
    let (v, _) = read_named(&mut s, 1_000);
    close(get(&v, "proc_gpu_busy_pct"), 50.0);
}

#[test]
fn links_outside_dev_dri_are_not_read() {
    let mut fs = ScriptedFs::new();
    // fdinfo 3 would look like DRM, but its fd is a regular file: skipped by its link.
    fs.file("/proc/self/fdinfo/3", [amdgpu_fdinfo(1, 0, 0)])
        .link("/proc/self/fd/3", "/home/user/save.dat");
    let mut s = FdinfoSource::with_fs(Box::new(fs));
    assert!(matches!(s.start(), Err(StartError::Retry(_))));
}

#[test]
fn no_drm_fd_retries_and_a_late_fd_is_found() {
    let mut fs = ScriptedFs::new();
    fs.file("/proc/self/fdinfo/0", ["pos:\t0\nflags:\t02\n"]).steps(
        "/proc/self/fdinfo/11",
        vec![
            Step::Data(b"pos:\t0\neventfd-count:\t0\n".to_vec()),
            Step::Data(amdgpu_fdinfo(5, 10, 0).into_bytes()),
        ],
    );
    let mut s = FdinfoSource::with_fs(Box::new(fs));
    let e = s.start().unwrap_err();
    assert_eq!(
        e,
        StartError::Retry(
            "no DRM fd with drm-usage-stats keys in /proc/self/fdinfo (yet: the app may open the GPU later)".into()
        )
    );
    s.start().unwrap();
    assert_eq!(s.drm_fds(), [11]);
}

#[test]
fn an_fd_closed_between_reads_is_dropped_by_a_rescan() {
    let mut fs = ScriptedFs::new();
    fs.steps(
        "/proc/self/fdinfo/5",
        vec![
            Step::Data(amdgpu_fdinfo(1, 0, 0).into_bytes()),
            Step::Data(amdgpu_fdinfo(1, 0, 0).into_bytes()),
            Step::Missing,
        ],
    )
    .file(
        "/proc/self/fdinfo/6",
        [amdgpu_fdinfo(2, 0, 0), amdgpu_fdinfo(2, 0, 0), amdgpu_fdinfo(2, 250, 0)],
    );
    let mut s = FdinfoSource::with_fs(Box::new(fs));
    s.start().unwrap();
    assert_eq!(s.drm_fds(), [5, 6]);
    read_named(&mut s, 0);
    let (v, _) = read_named(&mut s, 1_000);
    assert_eq!(s.drm_fds(), [6]);
    close(get(&v, "proc_gpu_busy_pct"), 25.0);
    assert_eq!(get(&v, "proc_vram_bytes"), 1024.0 * 1024.0);
}

#[test]
fn malformed_fdinfo_does_not_panic() {
    let junk = [
        "drm-driver:\n",
        "drm-driver: x\ndrm-engine-gfx: lots ns\ndrm-engine-: 5 ns\ndrm-memory-vram: 99999999999999999999 GiB\n",
        "drm-driver: x\ndrm-client-id: -1\ndrm-engine-gfx: 5\ndrm-engine-capacity-gfx: 0\n",
        "\u{0}drm-driver:\u{ff}\n:::\n",
    ];
    for j in junk {
        let mut fs = ScriptedFs::new();
        fs.file("/proc/self/fdinfo/3", [j]);
        let mut s = FdinfoSource::with_fs(Box::new(fs));
        let _ = s.start();
        let mut out = [0.0; 2];
        for t in 0..3 {
            let _ = s.read(t * 1000, &mut out);
        }
    }
}
