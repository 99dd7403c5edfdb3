//! Instructions per vkcube frame under callgrind: the stable companion of the wall-clock
//! table. Wall time on a 2-core software-rendered machine swings by more than the differences
//! being measured; the instruction count of the whole process (app, layers, lavapipe's
//! threads) barely moves between runs.
//!
//! Per-frame instructions = (Ir(LONG) - Ir(SHORT)) / (LONG - SHORT), as for the wall time.
//! Valgrind runs the app ~40x slower, so time-driven work would happen ~40x more often per
//! frame than in real time: framescope's configs get `hud_refresh_ms=10000`, which under
//! valgrind re-renders the HUD about as often per frame as the default 250 ms does at full
//! speed. MangoHud draws its whole HUD every frame whatever the clock says.

use std::path::Path;
use std::process::{Command, Stdio};

const LONG: u32 = 250;
const SHORT: u32 = 50;

/// Total instructions (all threads) of one vkcube run of `frames` frames.
fn total_ir(framescope: Option<&Path>, env: &[(&str, String)], frames: u32, runtime: &Path) -> Result<f64, String> {
    let out_file = runtime.join(format!("cg-{}-{frames}.out", std::process::id()));
    let count = frames.to_string();
    let app = [
        "vkcube",
        "--width",
        "500",
        "--height",
        "500",
        "--present_mode",
        "0",
        "--c",
        &count,
    ];
    let mut cmd = Command::new("valgrind");
    cmd.args(["--tool=callgrind", "--trace-children=yes"])
        .arg(format!("--callgrind-out-file={}", out_file.display()));
    if let Some(fs) = framescope {
        cmd.arg(fs).args(["run", "--"]);
    }
    cmd.args(app);
    for k in [
        "FRAMESCOPE",
        "FRAMESCOPE_CONFIG",
        "FRAMESCOPE_DUMP",
        "MANGOHUD",
        "VK_INSTANCE_LAYERS",
    ] {
        cmd.env_remove(k);
    }
    cmd.env("XDG_RUNTIME_DIR", runtime).env("DISABLE_MANGOHUD", "1");
    for (k, v) in env {
        cmd.env(k, v);
        if *k == "MANGOHUD" {
            cmd.env_remove("DISABLE_MANGOHUD");
        }
    }
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("valgrind: {e}"))?;
    let _ = std::fs::remove_file(&out_file);
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("callgrind run failed ({}):\n{err}", out.status));
    }
    app_total(&err, framescope).ok_or_else(|| format!("no callgrind total of the app in:\n{err}"))
}

/// The app's total from valgrind's log: `framescope run` forks the app and waits for it, so
/// the log holds one `Collected` line per process (`==PID== Command: ...` names each); the
/// app's is the one whose command is not framescope's own.
fn app_total(log: &str, framescope: Option<&Path>) -> Option<f64> {
    let pid_of = |l: &str| l.split("==").nth(1).map(str::to_owned);
    let ours = framescope.map(|f| f.display().to_string());
    let app_pid = log
        .lines()
        .filter_map(|l| Some((pid_of(l)?, l.split("Command: ").nth(1)?)))
        .find(|(_, cmd)| ours.as_deref().is_none_or(|f| !cmd.starts_with(f)))
        .map(|(pid, _)| pid)?;
    log.lines()
        .filter(|l| pid_of(l).as_deref() == Some(app_pid.as_str()))
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|n| n.trim().replace(',', "").parse::<f64>().ok())
}

/// Instructions per frame for one configuration (`config`: FRAMESCOPE_CONFIG under
/// framescope, else extra environment).
pub fn per_frame(framescope: Option<&Path>, env: &[(&str, String)], runtime: &Path) -> Result<f64, String> {
    let long = total_ir(framescope, env, LONG, runtime)?;
    let short = total_ir(framescope, env, SHORT, runtime)?;
    Ok((long - short) / f64::from(LONG - SHORT))
}

pub fn method() -> String {
    format!(
        "Instructions: the same vkcube under `valgrind --tool=callgrind --trace-children=yes`, every thread\n\
         of the process counted (app, layers, lavapipe and its rasteriser threads; Xvfb is another process\n\
         and is not), per frame = (Ir({LONG}) - Ir({SHORT})) / {}. framescope's runs add\n\
         `hud_refresh_ms=10000` so that, slowed down ~40x by valgrind, the HUD is re-rendered about as\n\
         often per frame as at full speed with the default 250 ms.\n",
        LONG - SHORT
    )
}

#[cfg(test)]
mod tests {
    use super::app_total;
    use std::path::Path;

    /// The log of `valgrind --trace-children=yes framescope run -- vkcube` (2026-11-28): the app
    /// ends first, then `framescope run`, whose own total is the last line.
    const LOG: &str = "==14315== Command: /x/target/release/framescope run -- vkcube --c 20\n\
                       ==14317== Command: /usr/bin/vkcube --c 20\n\
                       ==14317== Collected : 409,407,696\n\
                       ==14315== Collected : 1,153,322\n";

    #[test]
    fn the_apps_total_is_taken_not_framescope_runs() {
        let fs = Path::new("/x/target/release/framescope");
        assert_eq!(app_total(LOG, Some(fs)), Some(409_407_696.0));
    }

    #[test]
    fn a_bare_run_has_one_process() {
        let log = "==7== Command: vkcube\n==7== Collected : 5,000\n";
        assert_eq!(app_total(log, None), Some(5000.0));
    }
}
