//! `cargo xtask bench`: the wall time framescope adds per frame, against bare runs and the
//! other overlays, written to `docs/performance.md`.
//!
//! Method: vkcube (500x500, immediate mode) under each configuration, interleaved (every
//! repetition runs each configuration once, in a rotating order), each run twice: with
//! `LONG` and with `SHORT` frames. Per-frame time is `(T_long - T_short) / (LONG - SHORT)`,
//! which cancels start-up and tear-down (layer loading, pipeline compiles, ImGui set-up). The
//! added time of a configuration is its per-frame time minus the bare run's of the same
//! repetition; the table shows the median over repetitions and the spread of those pairs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LONG: u32 = 2000;
const SHORT: u32 = 200;
const REPS: usize = 7;
const PACKAGES: &[&str] = &[
    "glmark2-es2-x11",
    "glmark2-x11",
    "mangohud",
    "mesa-vulkan-drivers",
    "mesa-utils",
    "valgrind",
    "vulkan-tools",
    "xvfb",
];

/// One configuration of a benchmarked app (shared by the vkcube and glmark2 sections).
pub(crate) struct Config {
    pub(crate) name: &'static str,
    pub(crate) what: &'static str,
    /// Through `framescope run` (else the app directly).
    pub(crate) framescope: bool,
    pub(crate) env: &'static [(&'static str, &'static str)],
}

const CONFIGS: &[Config] = &[
    Config {
        name: "bare",
        what: "vkcube alone",
        framescope: false,
        env: &[],
    },
    Config {
        name: "framescope",
        what: "framescope run, HUD on (defaults)",
        framescope: true,
        env: &[],
    },
    Config {
        name: "framescope hud_alpha=0.6",
        what: "framescope run, FRAMESCOPE_CONFIG=hud_alpha=0.6 (translucent HUD: a blended quad)",
        framescope: true,
        env: &[("FRAMESCOPE_CONFIG", "hud_alpha=0.6")],
    },
    Config {
        name: "framescope hud=0",
        what: "framescope run, FRAMESCOPE_CONFIG=hud=0 (frame timing only)",
        framescope: true,
        env: &[("FRAMESCOPE_CONFIG", "hud=0")],
    },
    Config {
        name: "MangoHud",
        what: "MANGOHUD=1 (implicit layer of the Debian package, default HUD)",
        framescope: false,
        env: &[("MANGOHUD", "1")],
    },
    Config {
        name: "Mesa overlay",
        what: "VK_INSTANCE_LAYERS=VK_LAYER_MESA_overlay (default HUD)",
        framescope: false,
        env: &[("VK_INSTANCE_LAYERS", "VK_LAYER_MESA_overlay")],
    },
];

fn install_packages() -> Result<(), String> {
    let missing: Vec<&str> = PACKAGES
        .iter()
        .copied()
        .filter(|p| {
            let out = Command::new("dpkg-query")
                .args(["-W", "-f=${db:Status-Status}", p])
                .output();
            !matches!(out, Ok(o) if o.status.success() && o.stdout == b"installed")
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(format!(
            "missing Debian packages; run as root:\n  sudo apt-get update && sudo apt-get install -y --no-install-recommends {}",
            missing.join(" ")
        ));
    }
    eprintln!("xtask: installing {}", missing.join(" "));
    for args in [
        vec!["update", "-q"],
        [vec!["install", "-y", "-q", "--no-install-recommends"], missing.clone()].concat(),
    ] {
        let status = Command::new("apt-get")
            .args(&args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map_err(|e| format!("apt-get: {e}"))?;
        if !status.success() {
            return Err(format!("apt-get {} failed ({status})", args.join(" ")));
        }
    }
    Ok(())
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::root().join("target"))
}

/// Wall time of one run of vkcube with `frames` frames under `c`.
fn run_once(c: &Config, framescope: &Path, frames: u32, runtime: &Path) -> Result<Duration, String> {
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
    let mut cmd = if c.framescope {
        let mut cmd = Command::new(framescope);
        cmd.arg("run").arg("--").args(app);
        cmd
    } else {
        let mut cmd = Command::new(app[0]);
        cmd.args(&app[1..]);
        cmd
    };
    for k in [
        "FRAMESCOPE",
        "FRAMESCOPE_CONFIG",
        "FRAMESCOPE_DUMP",
        "MANGOHUD",
        "VK_INSTANCE_LAYERS",
        "VK_LOADER_LAYERS_ENABLE",
    ] {
        cmd.env_remove(k);
    }
    cmd.env("XDG_RUNTIME_DIR", runtime)
        .env("DISABLE_MANGOHUD", "1")
        .envs(c.env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if c.env.iter().any(|(k, _)| *k == "MANGOHUD") {
        cmd.env_remove("DISABLE_MANGOHUD");
    }
    let start = Instant::now();
    let out = cmd.output().map_err(|e| format!("{}: {e}", c.name))?;
    let t = start.elapsed();
    if !out.status.success() {
        return Err(format!(
            "{} ({} frames) failed ({}): {}",
            c.name,
            frames,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(t)
}

/// Sorts `v` and returns its median.
pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn cmd_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn machine_facts() -> Vec<(String, String)> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "?".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let pkg = |p: &str| cmd_line("dpkg-query", &["-W", "-f=${Version}", p]);
    vec![
        ("date (UTC)".into(), cmd_line("date", &["-u", "+%Y-%m-%d %H:%M"])),
        ("CPU".into(), format!("{cpu} ({cores} cores available)")),
        ("kernel".into(), cmd_line("uname", &["-r"])),
        (
            "Vulkan driver".into(),
            format!("lavapipe (mesa-vulkan-drivers {})", pkg("mesa-vulkan-drivers")),
        ),
        ("display".into(), "Xvfb (private server, 1280x720x24)".into()),
        (
            "versions".into(),
            format!(
                "vkcube (vulkan-tools {}), MangoHud {}, framescope {} (release build)",
                pkg("vulkan-tools"),
                pkg("mangohud"),
                env!("CARGO_PKG_VERSION")
            ),
        ),
    ]
}

const GL_BEGIN: &str = "<!-- gl:begin -->\n";
const GL_END: &str = "<!-- gl:end -->\n";
const GLMARK_BEGIN: &str = "<!-- glmark:begin -->\n";
const GLMARK_END: &str = "<!-- glmark:end -->\n";
const SAMPLES_BEGIN: &str = "<!-- samples:begin -->\n";
const SAMPLES_END: &str = "<!-- samples:end -->\n";

fn build_release() -> Result<(), String> {
    super::cargo(&[
        "build",
        "--release",
        "-p",
        "framescope-vk",
        "-p",
        "framescope-gl",
        "-p",
        "framescope-cli",
        "-p",
        "framescope-testapp",
    ])
}

/// Replaces the section between `begin` and `end` in docs/performance.md (appends it if absent).
fn replace_section(begin: &str, end: &str, section: &str) -> Result<(), String> {
    let path = super::root().join("docs/performance.md");
    let md = std::fs::read_to_string(&path).unwrap_or_default();
    let new = match (md.find(begin), md.find(end)) {
        (Some(b), Some(e)) if b < e => format!("{}{begin}{section}{}", &md[..b], &md[e..]),
        _ => format!("{md}\n{begin}{section}{end}"),
    };
    std::fs::write(&path, new).map_err(|e| format!("{}: {e}", path.display()))?;
    print!("{section}");
    Ok(())
}

/// `cargo xtask bench samples`: only the samples section, replaced in docs/performance.md.
pub fn bench_samples_only() -> Result<(), String> {
    build_release()?;
    let section = super::bench_samples::section(&target_dir().join("release"))?;
    replace_section(SAMPLES_BEGIN, SAMPLES_END, &section)
}

/// Packages, release build, a private Xvfb and a runtime directory, then `f(framescope, runtime)`.
fn with_gl_setup<T>(f: impl FnOnce(&Path, &Path) -> Result<T, String>) -> Result<T, String> {
    install_packages()?;
    build_release()?;
    let framescope = target_dir().join("release/framescope");
    if !framescope.is_file() {
        return Err(format!("{} was not built", framescope.display()));
    }
    let x = framescope_tests::Xvfb::start();
    std::env::set_var("DISPLAY", &x.display);
    let runtime = std::env::temp_dir().join(format!("framescope-bench-gl-{}", std::process::id()));
    std::fs::create_dir_all(&runtime).map_err(|e| e.to_string())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).map_err(|e| e.to_string())?;
    let r = f(&framescope, &runtime);
    let _ = std::fs::remove_dir_all(&runtime);
    r
}

/// `cargo xtask bench gl`: only the GL sections (glxgears, then glmark2), replaced in docs/performance.md.
pub fn bench_gl_only() -> Result<(), String> {
    with_gl_setup(|framescope, runtime| {
        replace_section(GL_BEGIN, GL_END, &super::bench_gl::section(framescope, runtime)?)?;
        replace_section(
            GLMARK_BEGIN,
            GLMARK_END,
            &super::bench_glmark::section(framescope, runtime)?,
        )
    })
}

/// `cargo xtask bench glmark`: only the glmark2 section, replaced in docs/performance.md.
pub fn bench_glmark_only() -> Result<(), String> {
    let glmark = with_gl_setup(super::bench_glmark::section)?;
    replace_section(GLMARK_BEGIN, GLMARK_END, &glmark)
}

pub fn bench() -> Result<(), String> {
    install_packages()?;
    build_release()?;
    let framescope = target_dir().join("release/framescope");
    if !framescope.is_file() {
        return Err(format!("{} was not built", framescope.display()));
    }
    // A private X server, so nothing else draws on it.
    let x = framescope_tests::Xvfb::start();
    std::env::set_var("DISPLAY", &x.display);
    let runtime = std::env::temp_dir().join(format!("framescope-bench-runtime-{}", std::process::id()));
    std::fs::create_dir_all(&runtime).map_err(|e| e.to_string())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).map_err(|e| e.to_string())?;

    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    // Warm-up: caches, shader caches, the page cache for every library.
    for c in CONFIGS {
        run_once(c, &framescope, SHORT, &runtime)?;
    }
    // per_frame[config][rep] in ms.
    let mut per_frame = vec![Vec::with_capacity(REPS); CONFIGS.len()];
    for rep in 0..REPS {
        for k in 0..CONFIGS.len() {
            let i = (k + rep) % CONFIGS.len();
            let c = &CONFIGS[i];
            let long = run_once(c, &framescope, LONG, &runtime)?;
            let short = run_once(c, &framescope, SHORT, &runtime)?;
            let ms = (long.as_secs_f64() - short.as_secs_f64()) * 1e3 / f64::from(LONG - SHORT);
            eprintln!("xtask: bench rep {} {:<18} {ms:.4} ms/frame", rep + 1, c.name);
            per_frame[i].push(ms);
        }
    }
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut ir = Vec::with_capacity(CONFIGS.len());
    for c in CONFIGS {
        let mut env: Vec<(&str, String)> = c.env.iter().map(|&(k, v)| (k, v.to_string())).collect();
        if c.framescope {
            match env.iter_mut().find(|(k, _)| *k == "FRAMESCOPE_CONFIG") {
                Some((_, v)) => v.push_str(",hud_refresh_ms=10000"),
                None => env.push(("FRAMESCOPE_CONFIG", "hud_refresh_ms=10000".into())),
            }
        }
        let v = super::bench_cg::per_frame(c.framescope.then_some(framescope.as_path()), &env, &runtime)?;
        eprintln!("xtask: callgrind {:<26} {:.3}M instructions/frame", c.name, v / 1e6);
        ir.push(v);
    }
    let gl = super::bench_gl::section(&framescope, &runtime)?;
    let glmark = super::bench_glmark::section(&framescope, &runtime)?;
    let _ = std::fs::remove_dir_all(&runtime);
    drop(x);

    let bare = per_frame[0].clone();
    let mango_i = CONFIGS.iter().position(|c| c.name == "MangoHud").expect("MangoHud row");
    let mut rows = Vec::new();
    let mut added_of = Vec::new();
    for (i, c) in CONFIGS.iter().enumerate() {
        let mut t = per_frame[i].clone();
        let mut added: Vec<f64> = per_frame[i].iter().zip(&bare).map(|(a, b)| a - b).collect();
        let med_t = median(&mut t);
        let med_added = median(&mut added);
        let (lo, hi) = (added[0], added[added.len() - 1]);
        added_of.push(med_added);
        rows.push(format!(
            "| {} | {} | {:.3} | {} | {} | {:.2}M | {} |",
            c.name,
            c.what,
            med_t,
            if i == 0 {
                "—".to_string()
            } else {
                format!("{med_added:+.3}")
            },
            if i == 0 {
                "—".to_string()
            } else {
                format!("{lo:+.3} … {hi:+.3}")
            },
            ir[i] / 1e6,
            if i == 0 {
                "—".to_string()
            } else {
                format!("{:+.2}M", (ir[i] - ir[0]) / 1e6)
            },
        ));
    }
    let ours = added_of[1];
    let mango = added_of[mango_i];
    let within = |r: f64| if r <= 0.25 { "within" } else { "**misses**" };
    let wall = if mango <= 0.0 {
        "MangoHud added no measurable wall time in this run, so the wall-time ratio is undefined.".to_string()
    } else {
        let r = ours / mango;
        format!("Wall time: framescope (HUD on, defaults) adds {r:.2}x MangoHud's time per frame: {} the target (<= 0.25x).", within(r))
    };
    let (ir_ours, ir_mango) = (ir[1] - ir[0], ir[mango_i] - ir[0]);
    let instr = if ir_mango <= 0.0 {
        "MangoHud added no instructions in this run, so the instruction ratio is undefined.".to_string()
    } else {
        let r = ir_ours / ir_mango;
        format!("Instructions: framescope (HUD on, defaults) adds {r:.2}x MangoHud's instructions per frame: {} the target (<= 0.25x).", within(r))
    };
    let verdict = format!("{wall}\n\n{instr}");

    let mut md = String::new();
    md.push_str("# Performance\n\n");
    md.push_str("Written by `cargo xtask bench` (xtask/src/bench.rs); rerun it to refresh. Numbers are\n");
    md.push_str("from one machine on one day: compare rows of the same run only.\n\n");
    md.push_str("## Machine\n\n| | |\n|---|---|\n");
    for (k, v) in machine_facts() {
        md.push_str(&format!("| {k} | {v} |\n"));
    }
    md.push_str("\n## Vulkan: vkcube\n\n");
    md.push_str(&format!(
        "`vkcube --width 500 --height 500 --present_mode 0 --c N` (immediate mode), N = {LONG} and {SHORT}.\n\
         Per-frame wall time = (T({LONG}) - T({SHORT})) / {}: start-up and tear-down cancel out.\n\
         {REPS} repetitions, interleaved (each repetition runs every configuration once, in a\n\
         rotating order, after one warm-up run of each); *added* is a configuration's per-frame\n\
         time minus the bare run's **of the same repetition**, and the table gives the median of\n\
         those paired differences and their range.\n\n",
        LONG - SHORT
    ));
    md.push_str(
        "| configuration | what runs | ms/frame (median) | added ms/frame (median of pairs) | added, min … max | instructions/frame | added instructions/frame |\n",
    );
    md.push_str("|---|---|---|---|---|---|---|\n");
    for r in &rows {
        md.push_str(r);
        md.push('\n');
    }
    md.push('\n');
    md.push_str(&super::bench_cg::method());
    md.push_str(&format!("\n{verdict}\n\n"));
    md.push_str(
        "Notes: lavapipe renders on the CPU, so everything (the app, the driver's rasteriser\n\
         threads, the layers, Xvfb) shares the same cores and the wall-time spread between\n\
         repetitions is of the same order as the differences; the instruction counts are the\n\
         stable figure. framescope's HUD re-renders its content every `hud_refresh_ms` (250 ms)\n\
         and composites the cached image every frame: by default (`hud_alpha=1`, opaque) with one\n\
         image copy, with `hud_alpha` below 1 with a blended quad, which runs a fragment shader on\n\
         every HUD pixel. Frame timing (timestamp command buffers around every submit) and the\n\
         default `samples=renderpass` (pass-level timestamps and pipeline statistics) are included\n\
         in every framescope row except `hud=0`'s HUD.\n\n",
    );
    md.push_str(&format!(
        "Load average (/proc/loadavg) before the runs: `{}`, after: `{}`; other work on the\n\
         host during the runs shows up as spread.\n\n",
        load_before.trim(),
        load_after.trim()
    ));
    md.push_str(SAMPLES_BEGIN);
    md.push_str(&super::bench_samples::section(&target_dir().join("release"))?);
    md.push_str(SAMPLES_END);
    md.push_str(GL_BEGIN);
    md.push_str(&gl);
    md.push_str(GL_END);
    md.push_str(GLMARK_BEGIN);
    md.push_str(&glmark);
    md.push_str(GLMARK_END);
    let path = super::root().join("docs/performance.md");
    std::fs::write(&path, md).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("{}", rows.join("\n"));
    println!("{verdict}");
    println!("written to {}", path.display());
    Ok(())
}
