//! The `system` source: a fixture `/proc`, exact CPU load and process CPU % from two
//! scripted snapshots, the 16-core cap, `/proc/cpuinfo` clocks, malformed files, and one
//! check against this machine's real `/proc`.

#[path = "support/sensors.rs"]
mod sensors;

use framescope_collectors::seam::{FixtureFs, ScriptedFs, Step};
use framescope_collectors::source::{CounterSource, ReadError, StartError};
use framescope_collectors::sources::{SystemParams, SystemSource};
use sensors::{close, fixture, get, read_named};

const PARAMS: SystemParams = SystemParams {
    page_size: 4096,
    clk_tck: 100,
};

#[test]
fn fixture_single_read() {
    let mut s = SystemSource::with_fs(Box::new(FixtureFs::new(fixture("system"))), PARAMS);
    s.start().unwrap();
    let names: Vec<&str> = s.catalogue().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "cpu_load_pct",
            "ram_used_bytes",
            "ram_total_bytes",
            "proc_cpu_pct",
            "proc_rss_bytes",
            "proc_cpu_time_ns",
            "cpu0_load_pct",
            "cpu0_mhz",
            "cpu1_load_pct",
            "cpu1_mhz",
            "cpu3_load_pct",
            "cpu3_mhz",
        ]
    );
    let (v, w) = read_named(&mut s, 1_000_000);
    assert_eq!(
        (w.begin_ns, w.end_ns),
        (1_000_000, 1_000_000),
        "first read: no interval"
    );
    for n in ["cpu_load_pct", "proc_cpu_pct", "cpu0_load_pct", "cpu3_load_pct"] {
        assert!(get(&v, n).is_nan(), "{n}: the first read has no delta");
    }
    assert_eq!(get(&v, "ram_total_bytes"), 16_318_412.0 * 1024.0);
    assert_eq!(get(&v, "ram_used_bytes"), (16_318_412.0 - 9_876_544.0) * 1024.0);
    assert_eq!(get(&v, "proc_rss_bytes"), 30_000.0 * 4096.0);
    // utime 250 + stime 50 ticks at 100 Hz; the command name holds ") (" to trip naive parsers.
    assert_eq!(get(&v, "proc_cpu_time_ns"), 3e9);
    assert_eq!(get(&v, "cpu0_mhz"), 3600.0);
    assert_eq!(get(&v, "cpu1_mhz"), 2200.0);
    assert_eq!(get(&v, "cpu3_mhz"), 4875.5);
}

fn stat(total: [u64; 8], cores: &[[u64; 8]]) -> String {
    let line = |name: &str, f: &[u64; 8]| {
        let nums: Vec<String> = f.iter().map(u64::to_string).collect();
        format!("{name} {} 0 0\n", nums.join(" "))
    };
    let mut s = line("cpu ", &total);
    for (i, c) in cores.iter().enumerate() {
        s += &line(&format!("cpu{i}"), c);
    }
    s + "intr 1 2 3\nctxt 99\n"
}

fn self_stat(utime: u64, stime: u64) -> String {
    format!("77 (a b) R 1 77 77 0 -1 0 0 0 0 0 {utime} {stime} 0 0 20 0 1 0 5 1000 10\n")
}

#[test]
fn loads_and_process_cpu_from_two_snapshots() {
    // user nice system idle iowait irq softirq steal
    let t0 = [1000, 0, 500, 8000, 500, 0, 0, 0];
    // +300 user +100 system +50 irq +50 steal busy; +400 idle +100 iowait: 500/1000 busy.
    let t1 = [1300, 0, 600, 8400, 600, 50, 0, 50];
    let c0a = [500, 0, 250, 4000, 250, 0, 0, 0];
    let c0b = [800, 0, 350, 4100, 250, 0, 0, 0]; // 400 busy of 500: 80 %
    let c1a = [500, 0, 250, 4000, 250, 0, 0, 0];
    let c1b = [500, 0, 250, 4300, 450, 0, 0, 0]; // idle only: 0 %
    let mut fs = ScriptedFs::new();
    // The first snapshot twice: construction reads /proc/stat once to find the cores.
    fs.file(
        "/proc/stat",
        [stat(t0, &[c0a, c1a]), stat(t0, &[c0a, c1a]), stat(t1, &[c0b, c1b])],
    )
    .file("/proc/meminfo", ["MemTotal: 1000 kB\nMemAvailable: 250 kB\n"])
    .file("/proc/self/stat", [self_stat(10, 5), self_stat(40, 25)])
    .file("/proc/self/statm", ["100 7 3 1 0 2 0\n"])
    .file(
        "/proc/cpuinfo",
        ["processor\t: 0\ncpu MHz\t\t: 2999.998\n\nprocessor\t: 1\ncpu MHz\t\t: 1400.5\n"],
    );
    let mut s = SystemSource::with_fs(Box::new(fs), PARAMS);
    s.start().unwrap();
    let (v, _) = read_named(&mut s, 2_000_000_000);
    assert!(get(&v, "cpu_load_pct").is_nan());
    assert_eq!(get(&v, "cpu0_mhz"), 2999.998, "no cpufreq: clocks from /proc/cpuinfo");
    assert_eq!(get(&v, "cpu1_mhz"), 1400.5);
    assert_eq!(get(&v, "proc_rss_bytes"), 7.0 * 4096.0);
    assert_eq!(get(&v, "ram_used_bytes"), 750.0 * 1024.0);

    // 0.5 s later: the process used 50 ticks = 0.5 s of CPU, i.e. 100 % of one core.
    let (v, w) = read_named(&mut s, 2_500_000_000);
    assert_eq!((w.begin_ns, w.end_ns), (2_000_000_000, 2_500_000_000));
    close(get(&v, "cpu_load_pct"), 50.0);
    close(get(&v, "cpu0_load_pct"), 80.0);
    close(get(&v, "cpu1_load_pct"), 0.0);
    close(get(&v, "proc_cpu_pct"), 100.0);
    assert_eq!(get(&v, "proc_cpu_time_ns"), 650_000_000.0);

    // Nothing changed: no ticks passed, so no load; the process used none.
    let (v, _) = read_named(&mut s, 3_500_000_000);
    assert!(get(&v, "cpu_load_pct").is_nan());
    close(get(&v, "proc_cpu_pct"), 0.0);
}

#[test]
fn counters_going_backwards_give_nan_not_garbage() {
    let hi = [9000, 0, 0, 9000, 0, 0, 0, 0];
    let lo = [10, 0, 0, 10, 0, 0, 0, 0];
    let mut fs = ScriptedFs::new();
    fs.file("/proc/stat", [stat(hi, &[hi]), stat(hi, &[hi]), stat(lo, &[lo])])
        .file("/proc/self/stat", [self_stat(100, 0), self_stat(1, 0)]);
    let mut s = SystemSource::with_fs(Box::new(fs), PARAMS);
    read_named(&mut s, 1);
    let (v, _) = read_named(&mut s, 2);
    assert!(get(&v, "cpu_load_pct").is_nan());
    assert!(get(&v, "cpu0_load_pct").is_nan());
    assert!(get(&v, "proc_cpu_pct").is_nan());
    assert!(get(&v, "ram_total_bytes").is_nan(), "no /proc/meminfo scripted");
}

#[test]
fn per_core_counters_stop_at_16_cores() {
    let f = [1, 0, 0, 1, 0, 0, 0, 0];
    let cores = vec![f; 20];
    let mut fs = ScriptedFs::new();
    fs.file("/proc/stat", [stat(f, &cores)]);
    let s = SystemSource::with_fs(Box::new(fs), PARAMS);
    assert_eq!(s.catalogue().len(), 6 + 2 * 16);
    assert_eq!(s.catalogue().last().unwrap().name, "cpu15_mhz");
}

#[test]
fn malformed_files_do_not_panic() {
    let junk: &[&[u8]] = &[
        b"",
        b"cpu",
        b"cpu \n",
        b"cpu  x y z\ncpu0 1 2\n",
        b"cpu  99999999999999999999999 1 1 1\n",
        b"\xff\xfe\x00(((",
        b")",
        b"1 (x) S",
        b"MemTotal: lots kB\nMemAvailable:\n",
        b"processor: 0\ncpu MHz: fast\n",
    ];
    for &j in junk {
        let mut fs = ScriptedFs::new();
        for p in [
            "/proc/stat",
            "/proc/meminfo",
            "/proc/self/stat",
            "/proc/self/statm",
            "/proc/cpuinfo",
        ] {
            fs.file(p, [j]);
        }
        let mut s = SystemSource::with_fs(Box::new(fs), PARAMS);
        let _ = s.start();
        let mut out = vec![0.0; s.catalogue().len()];
        for t in 1..3 {
            let _ = s.read(t, &mut out);
        }
    }
}

#[test]
fn no_proc_is_unavailable_then_lost() {
    let mut s = SystemSource::with_fs(Box::new(ScriptedFs::new()), PARAMS);
    let e = s.start().unwrap_err();
    assert!(matches!(e, StartError::Unavailable(_)));
    assert!(e.reason().starts_with("cannot read /proc/stat"), "{}", e.reason());
    let mut out = vec![0.0; s.catalogue().len()];
    assert!(matches!(s.read(1, &mut out), Err(ReadError::Lost(_))));

    // A /proc/stat that vanishes mid-run resets the baseline instead of mixing snapshots.
    let mut fs = ScriptedFs::new();
    let a = [100, 0, 0, 100, 0, 0, 0, 0];
    let b = [150, 0, 0, 150, 0, 0, 0, 0];
    fs.steps(
        "/proc/stat",
        vec![
            Step::Data(stat(a, &[]).into_bytes()),
            Step::Data(stat(a, &[]).into_bytes()),
            Step::Missing,
            Step::Data(stat(b, &[]).into_bytes()),
        ],
    )
    .file("/proc/meminfo", ["MemTotal: 4 kB\n"]);
    let mut s = SystemSource::with_fs(Box::new(fs), PARAMS);
    read_named(&mut s, 1);
    let (v, _) = read_named(&mut s, 2);
    assert!(get(&v, "cpu_load_pct").is_nan());
    let (v, _) = read_named(&mut s, 3);
    assert!(get(&v, "cpu_load_pct").is_nan(), "no baseline after the gap");
}

/// A `Key:   value kB` line of a `/proc` file, in the file's unit.
fn proc_kb(path: &str, key: &str) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("{key} in {path}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn real_proc_of_this_machine() {
    let mut s = SystemSource::new();
    s.start().expect("this machine's /proc");
    let (v, _) = read_named(&mut s, 1);
    assert_eq!(
        get(&v, "ram_total_bytes"),
        (proc_kb("/proc/meminfo", "MemTotal:") * 1024) as f64
    );
    let rss = get(&v, "proc_rss_bytes");
    let vm_rss = (proc_kb("/proc/self/status", "VmRSS:") * 1024) as f64;
    assert!(
        (rss - vm_rss).abs() <= 0.5 * vm_rss,
        "statm RSS {rss} vs status VmRSS {vm_rss}"
    );
    let cpu0 = get(&v, "proc_cpu_time_ns");
    assert!(cpu0 >= 0.0);
    // Burn some CPU so the second read has a delta to show.
    let t0 = std::time::Instant::now();
    let mut x = 0u64;
    while t0.elapsed() < std::time::Duration::from_millis(50) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    std::hint::black_box(x);
    let (v, _) = read_named(&mut s, 1 + 60_000_000);
    let load = get(&v, "cpu_load_pct");
    assert!(load.is_nan() || (0.0..=100.0).contains(&load), "{load}");
    assert!(get(&v, "proc_cpu_pct") >= 0.0);
    assert!(
        get(&v, "proc_cpu_time_ns") > cpu0,
        "50 ms of CPU burnt between the reads"
    );
}
