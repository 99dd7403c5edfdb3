//! glmark2 and glmark2-es2: their own score bare, through `framescope run` with `hud=0` and with
//! the HUD on, written as the glmark2 section of docs/performance.md.
//!
//! Each run is a short scene list ([`ARGS`]); runs are interleaved across configurations as in
//! the glxgears section (one warm-up of each, then every repetition runs each configuration once
//! in a rotating order), and *vs bare* is the median of per-repetition differences to bare, in %.
//! Noise is the spread of bare's own scores, (max - min) / median. The `hud=0` warm-up writes a
//! dump, whose frame count shows that framescope recorded the frames it is timed with.

use crate::measure::{median, Config};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ARGS: &[&str] = &["-s", "300x300", "-b", "build:duration=2", "-b", "texture:duration=2"];
const REPS: usize = 7;
/// A run lasts about 5 s; one that takes this long is hung.
const LIMIT: Duration = Duration::from_secs(90);

/// Program and the Debian package it comes from.
const APPS: &[(&str, &str, &str)] = &[
    ("glmark2", "GLX", "glmark2-x11"),
    ("glmark2-es2", "EGL", "glmark2-es2-x11"),
];

const CONFIGS: &[Config] = &[
    Config {
        name: "bare",
        what: "the app alone",
        framescope: false,
        env: &[],
    },
    Config {
        name: "framescope hud=0",
        what: "framescope run, FRAMESCOPE_CONFIG=hud=0 (frame timing only)",
        framescope: true,
        env: &[("FRAMESCOPE_CONFIG", "hud=0")],
    },
    Config {
        name: "framescope",
        what: "framescope run, HUD on (defaults)",
        framescope: true,
        env: &[],
    },
];

/// One run of `app` under `c`: glmark2's score and its stdout. `dump`: the run writes a dump there.
fn run_once(
    app: &str,
    package: &str,
    c: &Config,
    framescope: &Path,
    runtime: &Path,
    dump: Option<&Path>,
) -> Result<(f64, String), String> {
    let mut cmd = if c.framescope {
        let mut cmd = Command::new(framescope);
        cmd.arg("run");
        if let Some(d) = dump {
            cmd.arg("--dump").arg(d);
        }
        cmd.arg("--").arg(app);
        cmd
    } else {
        Command::new(app)
    };
    cmd.args(ARGS);
    super::bench_gl::clean_env(&mut cmd, runtime);
    cmd.envs(c.env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let what = format!("{app} ({})", c.name);
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("{what}: program not found ({e}); install it: apt-get install -y {package}")
        }
        _ => format!("{what}: {e}"),
    })?;
    // glmark2's output is a few hundred bytes: it fits the pipes until the process is reaped.
    let start = Instant::now();
    while child.try_wait().map_err(|e| format!("{what}: {e}"))?.is_none() {
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what}: still running after {} s, killed", LIMIT.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().map_err(|e| format!("{what}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let full = || format!("stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        return Err(format!("{what} failed ({}):\n{}", out.status, full()));
    }
    let score = framescope_tests::glmark::score(&stdout)
        .ok_or_else(|| format!("{what}: no 'glmark2 Score: N' line in its output:\n{}", full()))?;
    Ok((score, stdout))
}

/// Frame records in the dump at `path`.
fn dump_frames(path: &Path) -> Result<usize, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e} (framescope wrote no dump: is the GL shim built?)",
            path.display()
        )
    })?;
    let mut frames = 0;
    for (i, line) in text.lines().enumerate() {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{} line {}: {e}", path.display(), i + 1))?;
        if v["type"] == "frame" {
            frames += 1;
        }
    }
    Ok(frames)
}

fn pct(x: f64) -> String {
    format!("{x:+.1}%")
}

/// The markdown for one app: its table, noise and verdict.
fn app_section(app: &str, api: &str, package: &str, framescope: &Path, runtime: &Path) -> Result<String, String> {
    let dump = runtime.join(format!("{app}-warmup.jsonl"));
    let _ = std::fs::remove_file(&dump);
    let mut recorded = None;
    for c in CONFIGS {
        eprintln!("xtask: bench glmark {app} warm-up {}", c.name);
        let with_dump = c.name == "framescope hud=0";
        let (_, stdout) = run_once(
            app,
            package,
            c,
            framescope,
            runtime,
            with_dump.then_some(dump.as_path()),
        )?;
        if with_dump {
            let frames = dump_frames(&dump)?;
            let said = framescope_tests::glmark::scene_frames(&stdout);
            if frames == 0 {
                return Err(format!("{app}: framescope recorded no frames (glmark2 drew {said:.0})"));
            }
            recorded = Some((frames, said));
        }
    }
    let (frames, said) = recorded.expect("the hud=0 configuration is in CONFIGS");
    // scores[config][rep]
    let mut scores = vec![Vec::with_capacity(REPS); CONFIGS.len()];
    for rep in 0..REPS {
        for k in 0..CONFIGS.len() {
            let i = (k + rep) % CONFIGS.len();
            let (score, _) = run_once(app, package, &CONFIGS[i], framescope, runtime, None)?;
            eprintln!(
                "xtask: bench glmark {app} rep {} {:<18} score {score}",
                rep + 1,
                CONFIGS[i].name
            );
            scores[i].push(score);
        }
    }
    let mut md = format!("### {app} ({api})\n\n");
    md.push_str("| configuration | what runs | score (median) | score, min … max | vs bare (median of pairs) | vs bare, min … max |\n");
    md.push_str("|---|---|---|---|---|---|\n");
    let mut diff_of = Vec::new();
    for (i, c) in CONFIGS.iter().enumerate() {
        let mut s = scores[i].clone();
        let med = median(&mut s);
        let mut d: Vec<f64> = scores[i]
            .iter()
            .zip(&scores[0])
            .map(|(a, b)| (a / b - 1.0) * 100.0)
            .collect();
        let med_d = median(&mut d);
        diff_of.push(med_d);
        let (a, r) = if i == 0 {
            ("—".to_string(), "—".to_string())
        } else {
            (pct(med_d), format!("{} … {}", pct(d[0]), pct(d[d.len() - 1])))
        };
        md.push_str(&format!(
            "| {} | {} | {med:.0} | {:.0} … {:.0} | {a} | {r} |\n",
            c.name,
            c.what,
            s[0],
            s[s.len() - 1]
        ));
    }
    let mut bare = scores[0].clone();
    let bare_med = median(&mut bare);
    let noise = (bare[bare.len() - 1] - bare[0]) / bare_med * 100.0;
    let hud0 = diff_of[1];
    let below = scores[1].iter().zip(&scores[0]).filter(|(a, b)| a < b).count();
    let verdict = if hud0.abs() <= noise { "within" } else { "**outside**" };
    md.push_str(&format!(
        "\nNoise (bare's own spread, (max - min) / median of its {REPS} scores): {noise:.1}%. \
         `hud=0` vs bare: {}, {verdict} the noise \
         (below bare in {below} of {REPS} pairs). HUD on vs bare: {}.\n\
         Frames recorded: the `hud=0` warm-up's dump holds {frames} frames; glmark2's scenes drew \
         {said:.0} (FPS x duration).\n\n",
        pct(hud0),
        pct(diff_of[2])
    ));
    eprintln!(
        "xtask: bench glmark {app}: noise {noise:.1}%, hud=0 {}: {verdict}",
        pct(hud0)
    );
    Ok(md)
}

/// Runs the measurements and returns the markdown section (the X server is the caller's).
pub fn section(framescope: &Path, runtime: &Path) -> Result<String, String> {
    let start = Instant::now();
    let mut body = String::new();
    for &(app, api, package) in APPS {
        body.push_str(&app_section(app, api, package, framescope, runtime)?);
    }
    let mut md = String::from("## OpenGL: glmark2 and glmark2-es2\n\n");
    md.push_str(&format!(
        "`glmark2` (GLX) and `glmark2-es2` (EGL), `vblank_mode=0`, on the same Xvfb, with\n\
         `{}`;\n\
         the figure is glmark2's own score (higher is faster). {REPS} interleaved repetitions after\n\
         one warm-up run of each configuration; *vs bare* is the median of the per-repetition\n\
         differences to bare's score, in %. The noise is bare's own spread; `hud=0` (frame timing\n\
         only) is expected within it. The whole section took {:.0} s.\n\n",
        ARGS.join(" "),
        start.elapsed().as_secs_f64()
    ));
    md.push_str(&body);
    Ok(md)
}
