//! `cargo xtask bench fps-limit`: how closely `fps_limit` paces vkcube on lavapipe (its
//! presents are what the limiter holds back): the mean frame rate and the 99th percentile of
//! the frame time against the limit's period, from the dump's CPU frame times after a
//! warm-up.

use std::path::Path;
use std::process::{Command, Stdio};

/// Frames run and frames left out at the start.
const FRAMES: u32 = 1500;
const WARMUP: usize = 100;

/// (mean fps, p99 frame time in ms, frames) of vkcube limited to `fps`.
fn run_once(framescope: &Path, runtime: &Path, fps: u32) -> Result<(f64, f64, usize), String> {
    let dump = runtime.join(format!("fps-{fps}.jsonl"));
    let _ = std::fs::remove_file(&dump);
    let mut cmd = Command::new(framescope);
    cmd.args(["run", "--dump"])
        .arg(&dump)
        .args(["--config", &format!("hud=0,fps_limit={fps}"), "--", "vkcube", "--c"])
        .arg(FRAMES.to_string());
    super::bench_gl::clean_env(&mut cmd, runtime);
    let st = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("{}: {e}", framescope.display()))?;
    if !st.success() {
        return Err(format!("vkcube at fps_limit={fps}: {st}"));
    }
    let text = std::fs::read_to_string(&dump).map_err(|e| format!("{}: {e}", dump.display()))?;
    let mut ft: Vec<f64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "frame")
        .filter_map(|v| v["cpu_frame_ns"].as_f64())
        .skip(WARMUP)
        .collect();
    if ft.len() < 100 {
        return Err(format!("vkcube at fps_limit={fps}: only {} frames", ft.len()));
    }
    let mean_ns = ft.iter().sum::<f64>() / ft.len() as f64;
    ft.sort_by(f64::total_cmp);
    let p99 = ft[(ft.len() * 99).div_ceil(100) - 1];
    Ok((1e9 / mean_ns, p99 / 1e6, ft.len()))
}

/// The markdown section (the X server is the caller's).
pub fn section(framescope: &Path, runtime: &Path) -> Result<String, String> {
    let mut md = String::from(
        "## Frame limiter\n\n\
         `cargo xtask bench fps-limit`: vkcube on lavapipe under `framescope run` with `hud=0` and\n\
         `fps_limit` at 60 and 144, 1500 frames, the first 100 left out; CPU frame time from the\n\
         dump (present to present). Targets: mean within 0.5 % of the limit, p99 frame time within\n\
         0.3 ms of the period.\n\n\
         | limit | frames | mean fps | off the limit | p99 frame time | period | p99 over the period |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for fps in [60u32, 144] {
        let (mean, p99, n) = run_once(framescope, runtime, fps)?;
        let period = 1000.0 / f64::from(fps);
        let off = 100.0 * (mean - f64::from(fps)) / f64::from(fps);
        eprintln!("xtask: fps_limit={fps}: mean {mean:.2} fps ({off:+.2} %), p99 {p99:.3} ms");
        md.push_str(&format!(
            "| {fps} | {n} | {mean:.2} | {off:+.2} % | {p99:.3} ms | {period:.3} ms | {:+.3} ms |\n",
            p99 - period
        ));
    }
    md.push('\n');
    Ok(md)
}
