//! `cargo xtask bench html`: `framescope report --html` at farm scale. Synthetic dumps of
//! 1 000 000 frames each (10 ms ± 1 ms with a pseudo-random jitter, one 80 ms stutter per run,
//! the GPU time half the frame time): one run, a comparison of 50 runs, and the farm view of
//! the same 50 in a directory. For each: the release build's time to write the page and its
//! size, and headless Chromium's time from launch to the page's DOM with its `ok` status
//! (`--dump-dom`, which returns after the load event; the page's script draws during load),
//! beside Chromium's time for an empty page, its own start-up.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Frames per run and runs of the comparison and farm views.
const FRAMES: u64 = 1_000_000;
const RUNS: usize = 50;

/// Writes one run of [`FRAMES`] frames, its jitter seeded by `seed`; `driver` in the header.
fn write_run(path: &Path, seed: u64, driver: &str) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let io = |e: std::io::Error| format!("{}: {e}", path.display());
    writeln!(
        w,
        r#"{{"type":"header","schema":"framescope.v1","exe":"/usr/bin/bench","api":"vulkan","gpu_time":"busy","device":{{"name":"Bench GPU","driver_name":"radv","driver_version":"{driver}"}}}}"#
    )
    .map_err(io)?;
    let (mut t, mut x) = (1_000_000_000u64, seed.wrapping_mul(2654435761) | 1);
    // Runs differ by up to 2 % in pace, so the comparison has something to judge.
    let scale = 1.0 + (seed % 5) as f64 * 0.005;
    for i in 0..FRAMES {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let base = if i == FRAMES / 2 {
            80_000_000
        } else {
            9_000_000 + (x >> 33) % 2_000_000
        };
        let ft = (base as f64 * scale) as u64;
        t += ft;
        if i == FRAMES / 2 {
            writeln!(
                w,
                r#"{{"type":"frame","frame":{i},"t_ns":{t},"cpu_frame_ns":{ft},"gpu_busy_ns":{},"stutter":true,"stutter_causes":[{{"cause":"pipeline_create","ns":60000000}}]}}"#,
                ft / 2
            )
        } else {
            writeln!(
                w,
                r#"{{"type":"frame","frame":{i},"t_ns":{t},"cpu_frame_ns":{ft},"gpu_busy_ns":{}}}"#,
                ft / 2
            )
        }
        .map_err(io)?;
    }
    w.flush().map_err(io)
}

/// Runs `framescope report --html OUT ARGS...`; seconds and the page's bytes.
fn write_page(framescope: &Path, out: &Path, args: &[PathBuf]) -> Result<(f64, u64), String> {
    let start = Instant::now();
    let st = Command::new(framescope)
        .args(["report", "--html"])
        .arg(out)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("{}: {e}", framescope.display()))?;
    let secs = start.elapsed().as_secs_f64();
    if !st.success() {
        return Err(format!("report --html {}: {st}", out.display()));
    }
    let bytes = std::fs::metadata(out).map_err(|e| e.to_string())?.len();
    Ok((secs, bytes))
}

/// Seconds from Chromium's launch to the DOM of `page` (a `file://` URL or `about:blank`),
/// the best of three; checks the page's `ok` status where it has one.
fn chromium_load(url: &str, profile: &Path, page: bool) -> Result<f64, String> {
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let _ = std::fs::remove_dir_all(profile);
        let start = Instant::now();
        let out = Command::new("chromium")
            .args([
                "--headless",
                "--disable-gpu",
                "--no-sandbox",
                "--no-first-run",
                "--window-size=1400,2400",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("--dump-dom")
            .arg(url)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("chromium: {e}"))?;
        let secs = start.elapsed().as_secs_f64();
        let dom = String::from_utf8_lossy(&out.stdout);
        if page && !dom.contains(r#"id="status" data-status="ok""#) {
            return Err(format!("{url}: the page did not reach its ok status"));
        }
        best = best.min(secs);
    }
    Ok(best)
}

fn mb(bytes: u64) -> String {
    if bytes < 100_000 {
        format!("{:.0} kB", bytes as f64 / 1e3)
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

/// The markdown section.
pub fn section(framescope: &Path, runtime: &Path) -> Result<String, String> {
    let dir = runtime.join("html-bench");
    let runs_dir = dir.join("runs");
    std::fs::create_dir_all(&runs_dir).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let mut runs = Vec::with_capacity(RUNS);
    for k in 0..RUNS {
        let p = runs_dir.join(format!("run-{k:02}.jsonl"));
        let driver = if k % 2 == 0 { "24.1.3" } else { "24.2.0" };
        write_run(&p, k as u64 + 1, driver)?;
        runs.push(p);
    }
    let dump_bytes = std::fs::metadata(&runs[0]).map_err(|e| e.to_string())?.len();
    eprintln!(
        "xtask: {RUNS} dumps of {FRAMES} frames written in {:.0} s",
        start.elapsed().as_secs_f64()
    );
    let chromium_version = Command::new("chromium")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let profile = dir.join("profile");
    let blank = chromium_load("about:blank", &profile, false)?;
    let views: [(&str, &str, Vec<PathBuf>); 3] = [
        ("run (1 × 1 M frames)", "run.html", vec![runs[0].clone()]),
        ("comparison (50 × 1 M frames)", "compare.html", runs.clone()),
        (
            "farm (a directory of 50 × 1 M frames)",
            "farm.html",
            vec![runs_dir.clone()],
        ),
    ];
    let mut md = format!(
        "## `report --html` at farm scale\n\n\
         `cargo xtask bench html`: synthetic dumps of {FRAMES} frames each ({} a dump: frame \
         time, GPU time and one stutter), the release build's `report --html` on one run, on \
         {RUNS} runs (a comparison: every frame of every run in the statistics, each run drawn \
         as 4096 min/max points) and on their directory (the farm view); {chromium_version} \
         headless, launch to the DOM after the page's script drew it (`--dump-dom`, best of 3), \
         beside its launch with an empty page ({blank:.2} s). The 2 cores of the development \
         machine.\n\n\
         | view | page written in | page size | Chromium, launch to drawn | less its own start-up |\n\
         |---|---|---|---|---|\n",
        mb(dump_bytes)
    );
    for (name, file, args) in &views {
        let out = dir.join(file);
        let (secs, bytes) = write_page(framescope, &out, args)?;
        let load = chromium_load(&format!("file://{}", out.display()), &profile, true)?;
        md.push_str(&format!(
            "| {name} | {secs:.1} s | {} | {load:.2} s | {:.2} s |\n",
            mb(bytes),
            load - blank
        ));
    }
    md.push('\n');
    let _ = std::fs::remove_dir_all(&dir);
    Ok(md)
}
