//! glxgears: the wall time per frame framescope's GL shim (and its HUD) adds, against bare
//! glxgears and MangoHud's GL layer, written as the GL section of docs/performance.md.
//!
//! glxgears reports its frame rate every 5 s; each run lasts [`RUN`] and the second report
//! (after the first 5 s, i.e. after start-up) is its rate. Runs are interleaved across
//! configurations as in the Vulkan table, and *added* is the median of per-repetition
//! differences to bare.

use crate::measure::median;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const RUN: Duration = Duration::from_millis(11_500);
const REPS: usize = 5;

struct GlConfig {
    name: &'static str,
    what: &'static str,
    /// Program and arguments before `glxgears` (`framescope run --`, `mangohud`), if any.
    prefix: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
}

const CONFIGS: &[GlConfig] = &[
    GlConfig {
        name: "bare",
        what: "glxgears alone",
        prefix: &[],
        env: &[],
    },
    GlConfig {
        name: "framescope",
        what: "framescope run, HUD on (defaults)",
        prefix: &["@framescope", "run", "--"],
        env: &[],
    },
    GlConfig {
        name: "framescope hud=0",
        what: "framescope run, FRAMESCOPE_CONFIG=hud=0 (frame timing only)",
        prefix: &["@framescope", "run", "--"],
        env: &[("FRAMESCOPE_CONFIG", "hud=0")],
    },
    GlConfig {
        name: "MangoHud",
        what: "`mangohud glxgears` (the Debian package's wrapper, default HUD)",
        prefix: &["mangohud"],
        env: &[],
    },
];

/// Frames per second from glxgears' second report of one run.
fn run_once(c: &GlConfig, framescope: &Path, runtime: &Path) -> Result<f64, String> {
    let mut words: Vec<String> = c
        .prefix
        .iter()
        .map(|w| {
            if *w == "@framescope" {
                framescope.display().to_string()
            } else {
                (*w).to_string()
            }
        })
        .collect();
    words.push("glxgears".into());
    let mut cmd = Command::new(&words[0]);
    cmd.args(&words[1..]);
    clean_env(&mut cmd, runtime);
    cmd.envs(c.env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let child = cmd.spawn().map_err(|e| format!("{}: {e}", words[0]))?;
    std::thread::sleep(RUN);
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rates: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("seconds = ").nth(1))
        .filter_map(|r| r.trim().trim_end_matches("FPS").trim().parse().ok())
        .collect();
    rates
        .get(1)
        .copied()
        .ok_or_else(|| format!("{}: fewer than two frame-rate reports in:\n{text}", c.name))
}

/// The environment of a GL benchmark run: no framescope, MangoHud or preload from the caller's
/// environment, `runtime` as XDG_RUNTIME_DIR, and no vsync (`vblank_mode=0`).
pub(crate) fn clean_env(cmd: &mut Command, runtime: &Path) {
    for k in [
        "FRAMESCOPE",
        "FRAMESCOPE_CONFIG",
        "FRAMESCOPE_DUMP",
        "MANGOHUD",
        "LD_PRELOAD",
    ] {
        cmd.env_remove(k);
    }
    cmd.env("XDG_RUNTIME_DIR", runtime).env("vblank_mode", "0");
}

/// Runs the measurements and returns the markdown section (the X server is the caller's).
pub fn section(framescope: &Path, runtime: &Path) -> Result<String, String> {
    if Command::new("mangohud").arg("--version").output().is_err() && !Path::new("/usr/bin/mangohud").exists() {
        return Err("the mangohud wrapper is not installed: apt-get install -y mangohud".into());
    }
    for c in CONFIGS {
        eprintln!("xtask: bench gl warm-up {}", c.name);
        run_once(c, framescope, runtime)?;
    }
    let mut ms = vec![Vec::with_capacity(REPS); CONFIGS.len()];
    for rep in 0..REPS {
        for k in 0..CONFIGS.len() {
            let i = (k + rep) % CONFIGS.len();
            let fps = run_once(&CONFIGS[i], framescope, runtime)?;
            eprintln!("xtask: bench gl rep {} {:<18} {fps:.1} fps", rep + 1, CONFIGS[i].name);
            ms[i].push(1e3 / fps);
        }
    }
    let mut md = String::from("## OpenGL: glxgears\n\n");
    md.push_str(&format!(
        "`glxgears` (300x300, `vblank_mode=0`) on the same Xvfb, {:.1} s per run; its frame rate is\n\
         the second 5-second report of the run (the first holds start-up). {REPS} interleaved\n\
         repetitions after one warm-up run each; *added* is the median of per-repetition\n\
         differences to bare, in ms per frame (1000 / fps).\n\n",
        RUN.as_secs_f64()
    ));
    md.push_str("| configuration | what runs | ms/frame (median) | fps (median) | added ms/frame (median of pairs) | added, min … max |\n");
    md.push_str("|---|---|---|---|---|---|\n");
    let mut added_of = Vec::new();
    for (i, c) in CONFIGS.iter().enumerate() {
        let mut added: Vec<f64> = ms[i].iter().zip(&ms[0]).map(|(a, b)| a - b).collect();
        added.sort_by(f64::total_cmp);
        let med = median(&mut ms[i].clone());
        let med_added = median(&mut added.clone());
        added_of.push(med_added);
        let (a, r) = if i == 0 {
            ("—".to_string(), "—".to_string())
        } else {
            (
                format!("{med_added:+.4}"),
                format!("{:+.4} … {:+.4}", added[0], added[added.len() - 1]),
            )
        };
        md.push_str(&format!(
            "| {} | {} | {med:.4} | {:.0} | {a} | {r} |\n",
            c.name,
            c.what,
            1e3 / med
        ));
    }
    let (ours, mango) = (added_of[1], added_of[3]);
    md.push('\n');
    md.push_str(&if mango <= 0.0 {
        "MangoHud added no measurable time in this run, so the ratio is undefined.\n".to_string()
    } else {
        let ratio = ours / mango;
        let verdict = if ratio <= 0.25 { "within" } else { "**misses**" };
        format!("framescope (HUD on) adds {ratio:.2}x MangoHud's time per frame: {verdict} the target (<= 0.25x).\n")
    });
    md.push('\n');
    Ok(md)
}
