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
    // The exec of `framescope run` into the app restarts the tool; the last total is the app's.
    err.lines()
        .rev()
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|n| n.trim().replace(',', "").parse::<f64>().ok())
        .ok_or_else(|| format!("no callgrind total in:\n{err}"))
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
