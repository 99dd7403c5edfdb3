//! `cargo xtask bench`: the wall time framescope adds per frame, against bare runs and the
//! other overlays, written to `docs/performance.md`.
//!
//! Method: vkcube (500x500, immediate mode) under each configuration, interleaved (every
//! repetition runs each configuration once, in a rotating order), each run twice: with
//! `LONG` and with `SHORT` frames. Per-frame time is `(T_long - T_short) / (LONG - SHORT)`,
//! which cancels start-up and tear-down (layer loading, pipeline compiles, ImGui set-up). The
//! added time of a configuration is its per-frame time minus the bare run's of the same
//! repetition; the table shows the median over repetitions and the spread of those pairs.

use crate::measure::{cmd_line, median, Config};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The brief's lavapipe target: the HUD alone (`gpu_timing=0`) adds at most this fraction of
/// MangoHud's added time per frame on vkcube.
const HUD_ALONE_TARGET: f64 = 0.1;

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
        what: "framescope run, FRAMESCOPE_CONFIG=hud=0 (no HUD: frame timing and the default samples)",
        framescope: true,
        env: &[("FRAMESCOPE_CONFIG", "hud=0")],
    },
    Config {
        name: "framescope samples=off",
        what: "framescope run, FRAMESCOPE_CONFIG=samples=off (HUD and frame timing: what MangoHud shows, plus GPU busy time from timestamps)",
        framescope: true,
        env: &[("FRAMESCOPE_CONFIG", "samples=off")],
    },
    Config {
        name: "framescope gpu_timing=0",
        what: "framescope run, FRAMESCOPE_CONFIG=gpu_timing=0 (HUD without GPU queries: its own cost)",
        framescope: true,
        env: &[("FRAMESCOPE_CONFIG", "gpu_timing=0")],
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
    crate::apt::ensure("the benchmarks", PACKAGES)
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::shell::root().join("target"))
}

/// What one run cost: wall time, CPU time of every thread of the process, context switches.
#[derive(Clone, Copy)]
struct Cost {
    wall: Duration,
    cpu_s: f64,
    switches: f64,
}

/// CPU seconds and context switches of all waited-for children so far.
fn children_usage() -> (f64, f64) {
    // SAFETY: getrusage writes one rusage struct; RUSAGE_CHILDREN has no other precondition.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    (t(ru.ru_utime) + t(ru.ru_stime), (ru.ru_nvcsw + ru.ru_nivcsw) as f64)
}

/// One run of vkcube with `frames` frames under `c`.
fn run_once(c: &Config, framescope: &Path, frames: u32, runtime: &Path) -> Result<Cost, String> {
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
    let (cpu0, cs0) = children_usage();
    let start = Instant::now();
    let out = cmd.output().map_err(|e| format!("{}: {e}", c.name))?;
    let t = start.elapsed();
    let (cpu1, cs1) = children_usage();
    if !out.status.success() {
        return Err(format!(
            "{} ({} frames) failed ({}): {}",
            c.name,
            frames,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(Cost {
        wall: t,
        cpu_s: cpu1 - cpu0,
        switches: cs1 - cs0,
    })
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
const COUNTERS_BEGIN: &str = "<!-- counters:begin -->\n";
const COUNTERS_END: &str = "<!-- counters:end -->\n";
const SAMPLES_BEGIN: &str = "<!-- samples:begin -->\n";
const SAMPLES_END: &str = "<!-- samples:end -->\n";

fn build_release() -> Result<(), String> {
    crate::shell::build_release(&["framescope-testapp", "framescope-glapp"])
}

/// Replaces the section between `begin` and `end` in docs/performance.md (appends it if absent).
fn replace_section(begin: &str, end: &str, section: &str) -> Result<(), String> {
    let path = crate::shell::root().join("docs/performance.md");
    let md = std::fs::read_to_string(&path).unwrap_or_default();
    let new = match (md.find(begin), md.find(end)) {
        (Some(b), Some(e)) if b < e => format!("{}{begin}{section}{}", &md[..b], &md[e..]),
        _ => format!("{md}\n{begin}{section}{end}"),
    };
    std::fs::write(&path, new).map_err(|e| format!("{}: {e}", path.display()))?;
    print!("{section}");
    Ok(())
}

/// The counters' cost on the app's thread: `core/examples/counter_cost.rs` in release (a frame
/// close copying a full board that another thread writes back to back, against no board).
fn counters_section() -> Result<String, String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "run",
            "--release",
            "-q",
            "-p",
            "framescope-core",
            "--example",
            "counter_cost",
        ])
        .current_dir(crate::shell::root())
        .output()
        .map_err(|e| format!("cargo run counter_cost: {e}"))?;
    if !out.status.success() {
        return Err(format!("counter_cost failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| -> Result<f64, String> {
        let mut it = text.split_whitespace();
        it.find(|w| *w == name)
            .and_then(|_| it.next())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("no {name} in counter_cost output: {text}"))
    };
    let (with, without, added) = (field("with_ns")?, field("without_ns")?, field("added_ns")?);
    let verdict = if added <= 1000.0 { "meets" } else { "misses" };
    eprintln!("xtask: counters on the app's thread: {added:.0} ns per frame ({verdict} the 1 µs target)");
    Ok(format!(
        "## Counters on the app's thread\n\n\
         `core/examples/counter_cost.rs` (release): one frame close of the frame session copies the\n\
         counter board (96 counters, the most a frame holds) and marks the frame for the collector.\n\
         Another thread writes the whole board every 10 µs meanwhile (the collector writes every\n\
         100 ms by default), so reads race writes. Medians of 5 rounds of 200,000 closes.\n\n\
         | | ns per frame |\n\
         |---|---|\n\
         | close with a counter board | {with:.0} |\n\
         | close without counters | {without:.0} |\n\
         | **added by counters** (target ≤ 1000) | **{added:.0}** ({verdict}) |\n\n"
    ))
}

const TIMELINE_BEGIN: &str = "<!-- timeline:begin -->\n";
const TIMELINE_END: &str = "<!-- timeline:end -->\n";
/// Frames of the two callgrind runs whose difference is one frame's instructions.
const TIMELINE_CG: [u64; 2] = [10_000, 20_000];

/// The frame timeline's cost on the app's thread: `core/examples/timeline_cost.rs` in release,
/// timed natively and counted by callgrind (only the timeline's own function).
fn timeline_section() -> Result<String, String> {
    let root = crate::shell::root();
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "run",
            "--release",
            "-q",
            "-p",
            "framescope-core",
            "--example",
            "timeline_cost",
        ])
        .current_dir(&root)
        .output()
        .map_err(|e| format!("cargo run timeline_cost: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "timeline_cost failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let ns: f64 = text
        .split_whitespace()
        .skip_while(|w| *w != "timeline_ns")
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no timeline_ns in timeline_cost output: {text}"))?;
    let exe = target_dir().join("release/examples/timeline_cost");
    let mut ir = [0f64; 2];
    for (slot, frames) in ir.iter_mut().zip(TIMELINE_CG) {
        let out = std::process::Command::new("valgrind")
            .args([
                "--tool=callgrind",
                "--toggle-collect=*timeline_frame*",
                "--callgrind-out-file=/dev/null",
            ])
            .arg(&exe)
            .args(["--callgrind", &frames.to_string()])
            .output()
            .map_err(|e| format!("valgrind: {e}"))?;
        let err = String::from_utf8_lossy(&out.stderr);
        *slot = err
            .lines()
            .find_map(|l| l.split("Collected :").nth(1))
            .and_then(|n| n.trim().replace(',', "").parse().ok())
            .ok_or_else(|| format!("no callgrind total in:\n{err}"))?;
    }
    let per_frame = (ir[1] - ir[0]) / (TIMELINE_CG[1] - TIMELINE_CG[0]) as f64;
    let verdict = if ns <= 1000.0 { "meets" } else { "misses" };
    eprintln!("xtask: frame timeline on the app's thread: {ns:.0} ns, {per_frame:.0} instructions per frame ({verdict} the 1 µs target)");
    Ok(format!(
        "## The frame timeline on the app's thread\n\n\
         `core/examples/timeline_cost.rs` (release): per frame, what the layers add for the frame\n\
         timeline on a typical Vulkan frame: an image acquire and a fence wait timed (two clock reads\n\
         and a tally add each), the wait and creation tallies taken at present, the clock read when\n\
         the present returns and the session's `present_returned`. Wall time: the median of 5 rounds\n\
         of 200,000 frames, minus the same loop of frame closes alone. Instructions: callgrind over\n\
         exactly that function (`--toggle-collect`), {} frames minus {} (valgrind hides the vDSO,\n\
         so each of the 5 clock reads is a system call's worth of instructions there).\n\
         The display-time sources add their own per-present notification (their sections\n\
         below); no allocation either way (`steady_allocations`).\n\n\
         | | per frame |\n\
         |---|---|\n\
         | wall time (target ≤ 1000 ns) | **{ns:.0} ns** ({verdict}) |\n\
         | instructions (callgrind) | {per_frame:.0} |\n\n",
        TIMELINE_CG[1], TIMELINE_CG[0]
    ))
}

/// `cargo xtask bench timeline`: only the frame timeline's cost, replaced in docs/performance.md.
pub fn bench_timeline_only() -> Result<(), String> {
    install_packages()?;
    replace_section(TIMELINE_BEGIN, TIMELINE_END, &timeline_section()?)
}

/// `cargo xtask bench counters`: only the counters section, replaced in docs/performance.md.
pub fn bench_counters_only() -> Result<(), String> {
    replace_section(COUNTERS_BEGIN, COUNTERS_END, &counters_section()?)
}

/// `cargo xtask bench samples`: only the samples section, replaced in docs/performance.md.
pub fn bench_samples_only() -> Result<(), String> {
    build_release()?;
    let section = super::bench_samples::section(&target_dir().join("release"))?;
    replace_section(SAMPLES_BEGIN, SAMPLES_END, &section)
}

/// `cargo xtask bench gl`: only the GL sections (glxgears, then glmark2), replaced in docs/performance.md.
pub fn bench_gl_only() -> Result<(), String> {
    with_setup(|framescope, runtime| {
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
    let glmark = with_setup(super::bench_glmark::section)?;
    replace_section(GLMARK_BEGIN, GLMARK_END, &glmark)
}

/// Packages, release build, a private Xvfb and a runtime directory, then `f(framescope, runtime)`.
fn with_setup<T>(f: impl FnOnce(&Path, &Path) -> Result<T, String>) -> Result<T, String> {
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
    let r = f(&framescope, &runtime);
    let _ = std::fs::remove_dir_all(&runtime);
    drop(x);
    r
}

/// Median and range of paired differences `a - b`, and the median of `a`.
fn paired(a: &[f64], b: &[f64]) -> (f64, f64, f64, f64) {
    let mut t = a.to_vec();
    let mut d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let med_t = median(&mut t);
    let med_d = median(&mut d);
    (med_t, med_d, d[0], d[d.len() - 1])
}

/// The vkcube section: wall time, CPU time and context switches per frame, paired against
/// bare runs, and instruction counts; returns the section and its verdict.
fn vkcube_section(framescope: &Path, runtime: &Path) -> Result<(String, String), String> {
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    // Warm-up: caches, shader caches, the page cache for every library.
    for c in CONFIGS {
        run_once(c, framescope, SHORT, runtime)?;
    }
    // [config][rep]: wall ms, CPU ms, context switches, per frame.
    let mut wall = vec![Vec::with_capacity(REPS); CONFIGS.len()];
    let mut cpu = vec![Vec::with_capacity(REPS); CONFIGS.len()];
    let mut switches = vec![Vec::with_capacity(REPS); CONFIGS.len()];
    let frames = f64::from(LONG - SHORT);
    for rep in 0..REPS {
        for k in 0..CONFIGS.len() {
            let i = (k + rep) % CONFIGS.len();
            let c = &CONFIGS[i];
            let long = run_once(c, framescope, LONG, runtime)?;
            let short = run_once(c, framescope, SHORT, runtime)?;
            let ms = (long.wall.as_secs_f64() - short.wall.as_secs_f64()) * 1e3 / frames;
            let cpu_ms = (long.cpu_s - short.cpu_s) * 1e3 / frames;
            let cs = (long.switches - short.switches) / frames;
            eprintln!(
                "xtask: bench rep {} {:<26} {ms:.4} ms/frame, CPU {cpu_ms:.4} ms/frame, {cs:.1} switches/frame",
                rep + 1,
                c.name
            );
            wall[i].push(ms);
            cpu[i].push(cpu_ms);
            switches[i].push(cs);
        }
    }
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let ir = callgrind_per_frame(framescope, runtime)?;

    let dash = || "—".to_string();
    let mango_i = CONFIGS.iter().position(|c| c.name == "MangoHud").expect("MangoHud row");
    let mut rows = Vec::new();
    let mut added_of = Vec::new();
    let mut cpu_added_of = Vec::new();
    for (i, c) in CONFIGS.iter().enumerate() {
        let (med_t, med_added, lo, hi) = paired(&wall[i], &wall[0]);
        let (med_cpu, cpu_added, _, _) = paired(&cpu[i], &cpu[0]);
        let (med_cs, cs_added, _, _) = paired(&switches[i], &switches[0]);
        added_of.push(med_added);
        cpu_added_of.push(cpu_added);
        let first = i == 0;
        rows.push(format!(
            "| {} | {} | {med_t:.3} | {} | {} | {med_cpu:.3} | {} | {med_cs:.1} | {} | {:.2}M | {} |",
            c.name,
            c.what,
            if first { dash() } else { format!("{med_added:+.3}") },
            if first {
                dash()
            } else {
                format!("{lo:+.3} … {hi:+.3}")
            },
            if first { dash() } else { format!("{cpu_added:+.3}") },
            if first { dash() } else { format!("{cs_added:+.1}") },
            ir[i] / 1e6,
            if first {
                dash()
            } else {
                format!("{:+.2}M", (ir[i] - ir[0]) / 1e6)
            },
        ));
    }
    let within = |r: f64| if r <= HUD_ALONE_TARGET { "within" } else { "**misses**" };
    // The lighter configurations, so the cost of each part can be read off.
    let lighter = |name: &str| {
        let i = CONFIGS.iter().position(|c| c.name == name).expect("bench row");
        let mango = added_of[mango_i];
        if mango <= 0.0 {
            String::new()
        } else {
            format!(
                "Wall time of `{name}`: {:.2}x MangoHud's (CPU time {:.2}x).",
                added_of[i] / mango,
                cpu_added_of[i] / cpu_added_of[mango_i].max(f64::MIN_POSITIVE)
            )
        }
    };
    // The targets on lavapipe: the HUD alone (`gpu_timing=0`) within 0.1x MangoHud's added wall
    // and CPU time; the defaults' wall time is reported, not targeted (each GPU timestamp costs
    // a llvmpipe scene).
    let hud_i = CONFIGS
        .iter()
        .position(|c| c.name == "framescope gpu_timing=0")
        .expect("bench row");
    let hud_target = |what: &str, ours: f64, mango: f64| {
        if mango <= 0.0 {
            format!("MangoHud added no measurable {what} in this run: the HUD-alone {what} ratio is undefined.")
        } else {
            let r = ours / mango;
            format!(
                "HUD alone (`gpu_timing=0`), {what}: {r:.2}x MangoHud's added {what} per frame: {} the target (<= {HUD_ALONE_TARGET}x).",
                within(r)
            )
        }
    };
    let defaults = if added_of[mango_i] > 0.0 {
        format!(
            "Defaults (HUD on, GPU timing, render-pass samples), reported, not targeted: {:.2}x MangoHud's wall time, {:.2}x its CPU time, {:.2}x its instructions.",
            added_of[1] / added_of[mango_i],
            cpu_added_of[1] / cpu_added_of[mango_i].max(f64::MIN_POSITIVE),
            (ir[1] - ir[0]) / (ir[mango_i] - ir[0]).max(f64::MIN_POSITIVE)
        )
    } else {
        String::new()
    };
    let verdict = [
        hud_target("wall time", added_of[hud_i], added_of[mango_i]),
        hud_target("CPU time", cpu_added_of[hud_i], cpu_added_of[mango_i]),
        defaults,
        lighter("framescope samples=off"),
    ]
    .join("\n\n");

    let mut md = String::new();
    md.push_str("## Vulkan: vkcube\n\n");
    // `bench vkcube` replaces only this section: it carries its own date.
    md.push_str(&format!(
        "Run on {} UTC.\n\n",
        cmd_line("date", &["-u", "+%Y-%m-%d %H:%M"])
    ));
    md.push_str(&format!(
        "`vkcube --width 500 --height 500 --present_mode 0 --c N` (immediate mode), N = {LONG} and {SHORT}.\n\
         Per-frame figures = (X({LONG}) - X({SHORT})) / {}: start-up and tear-down cancel out. X is\n\
         the wall time, the CPU time of every thread of the process (user + system, from\n\
         `getrusage(RUSAGE_CHILDREN)`; Xvfb is another process and is not counted), or the number of\n\
         context switches (voluntary + involuntary). {REPS} repetitions, interleaved (each repetition\n\
         runs every configuration once, in a rotating order, after one warm-up run of each); *added*\n\
         is a configuration's figure minus the bare run's **of the same repetition**, and the table\n\
         gives the median of those paired differences (and, for wall time, their range).\n\n",
        LONG - SHORT
    ));
    md.push_str(
        "| configuration | what runs | ms/frame (median) | added ms/frame (median of pairs) | added, min … max | CPU ms/frame | added CPU ms/frame | switches/frame | added switches/frame | instructions/frame | added instructions/frame |\n",
    );
    md.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in &rows {
        md.push_str(r);
        md.push('\n');
    }
    md.push('\n');
    md.push_str(&super::bench_cg::method());
    md.push_str(&format!("\n{verdict}\n\n"));
    md.push_str(
        "Notes: lavapipe renders on the CPU, so everything (the app, the driver's queue and\n\
         rasteriser threads, the layers, Xvfb) shares the same cores and the wall-time spread\n\
         between repetitions is of the same order as the differences. What framescope adds here is\n\
         mostly kernel time spent switching threads, not instructions: lavapipe ends llvmpipe's\n\
         current scene at every timestamp not written at `TOP_OF_PIPE`, a query written outside a\n\
         render pass starts a scene of its own whose rasterisation wakes every rasteriser thread,\n\
         and every `vkGetQueryPoolResults` call waits for lavapipe's queue to go idle; on this\n\
         virtual machine a context switch costs about 20 µs of CPU. framescope's HUD re-renders its\n\
         content every `hud_refresh_ms` (250 ms) and composites the cached image every frame: by\n\
         default (`hud_alpha=1`, opaque) with one image copy, with `hud_alpha` below 1 with a blended\n\
         quad, which runs a fragment shader on every HUD pixel. Frame timing (timestamp command\n\
         buffers around every submit) is in every framescope row; the default\n\
         `samples=renderpass` (pass-level timestamps and pipeline statistics) in every row that does\n\
         not set `samples`.\n\n",
    );
    md.push_str(&format!(
        "Load average (/proc/loadavg) before the runs: `{}`, after: `{}`; other work on the\n\
         host during the runs shows up as spread.\n\n",
        load_before.trim(),
        load_after.trim()
    ));
    println!("{}", rows.join("\n"));
    Ok((md, verdict))
}

const H100_BEGIN: &str = "<!-- h100:begin -->\n";
const H100_END: &str = "<!-- h100:end -->\n";

/// `cargo xtask bench h100`: only the H100 section, from the committed device run.
pub fn bench_h100_only() -> Result<(), String> {
    replace_section(H100_BEGIN, H100_END, &super::bench_h100::section()?)
}

const FPS_BEGIN: &str = "<!-- fps-limit:begin -->\n";
const FPS_END: &str = "<!-- fps-limit:end -->\n";

/// `cargo xtask bench fps-limit`: only the frame limiter section, replaced in docs/performance.md.
pub fn bench_fps_only() -> Result<(), String> {
    let section = with_setup(super::bench_fps::section)?;
    replace_section(FPS_BEGIN, FPS_END, &section)
}

const HTML_BEGIN: &str = "<!-- report-html:begin -->\n";
const HTML_END: &str = "<!-- report-html:end -->\n";

/// `cargo xtask bench html`: `report --html` on a million-frame run and on 50 of them, in
/// headless Chromium, replaced in docs/performance.md. Not part of the full bench: it writes
/// 5 GB of dumps.
pub fn bench_html_only() -> Result<(), String> {
    let section = with_setup(super::bench_html::section)?;
    replace_section(HTML_BEGIN, HTML_END, &section)
}

const HUD_BEGIN: &str = "<!-- hud-time:begin -->\n";
const HUD_END: &str = "<!-- hud-time:end -->\n";

/// `cargo xtask bench hud`: only the HUD's time on the app's thread, replaced in docs/performance.md.
pub fn bench_hud_only() -> Result<(), String> {
    let section = with_setup(super::bench_hud::section)?;
    replace_section(HUD_BEGIN, HUD_END, &section)
}

const VKCUBE_BEGIN: &str = "<!-- vkcube:begin -->\n";
const VKCUBE_END: &str = "<!-- vkcube:end -->\n";

/// `cargo xtask bench vkcube`: only the vkcube section, replaced in docs/performance.md.
pub fn bench_vkcube_only() -> Result<(), String> {
    let (section, verdict) = with_setup(vkcube_section)?;
    replace_section(VKCUBE_BEGIN, VKCUBE_END, &section)?;
    println!("{verdict}");
    Ok(())
}

/// `cargo xtask bench callgrind`: only the instructions per vkcube frame of every
/// configuration, printed (nothing written): the stable before/after comparison of a change,
/// run on both commits of the same machine.
pub fn bench_callgrind_only() -> Result<(), String> {
    let ir = with_setup(callgrind_per_frame)?;
    println!("| configuration | instructions per vkcube frame (callgrind) |\n|---|---|");
    for (c, v) in CONFIGS.iter().zip(ir) {
        println!("| {} | {:.4}M |", c.name, v / 1e6);
    }
    Ok(())
}

/// Instructions per vkcube frame of every configuration, in the order of [`CONFIGS`]; the HUD
/// refreshes once in the run (`hud_refresh_ms=10000`), so its re-renders do not dominate.
fn callgrind_per_frame(framescope: &Path, runtime: &Path) -> Result<Vec<f64>, String> {
    let mut ir = Vec::with_capacity(CONFIGS.len());
    for c in CONFIGS {
        let mut env: Vec<(&str, String)> = c.env.iter().map(|&(k, v)| (k, v.to_string())).collect();
        if c.framescope {
            match env.iter_mut().find(|(k, _)| *k == "FRAMESCOPE_CONFIG") {
                Some((_, v)) => v.push_str(",hud_refresh_ms=10000"),
                None => env.push(("FRAMESCOPE_CONFIG", "hud_refresh_ms=10000".into())),
            }
        }
        let v = super::bench_cg::per_frame(c.framescope.then_some(framescope), &env, runtime)?;
        eprintln!("xtask: callgrind {:<26} {:.3}M instructions/frame", c.name, v / 1e6);
        ir.push(v);
    }
    Ok(ir)
}

pub fn bench() -> Result<(), String> {
    let (vkcube, verdict, gl, glmark, fps, hud) = with_setup(|framescope, runtime| {
        let (vkcube, verdict) = vkcube_section(framescope, runtime)?;
        let gl = super::bench_gl::section(framescope, runtime)?;
        let glmark = super::bench_glmark::section(framescope, runtime)?;
        let fps = super::bench_fps::section(framescope, runtime)?;
        let hud = super::bench_hud::section(framescope, runtime)?;
        Ok((vkcube, verdict, gl, glmark, fps, hud))
    })?;
    let mut md = String::new();
    md.push_str("# Performance\n\n");
    md.push_str("Written by `cargo xtask bench` (xtask/src/bench.rs); rerun it to refresh, or one section\n");
    md.push_str(
        "alone with `cargo xtask bench vkcube|samples|gl|glmark|fps-limit|hud|counters|h100`. Numbers are from one machine on\n",
    );
    md.push_str("one day: compare rows of the same run only.\n\n");
    md.push_str("## Machine\n\n| | |\n|---|---|\n");
    for (k, v) in machine_facts() {
        md.push_str(&format!("| {k} | {v} |\n"));
    }
    md.push('\n');
    md.push_str(VKCUBE_BEGIN);
    md.push_str(&vkcube);
    md.push_str(VKCUBE_END);
    md.push_str(SAMPLES_BEGIN);
    md.push_str(&super::bench_samples::section(&target_dir().join("release"))?);
    md.push_str(SAMPLES_END);
    md.push_str(GL_BEGIN);
    md.push_str(&gl);
    md.push_str(GL_END);
    md.push_str(GLMARK_BEGIN);
    md.push_str(&glmark);
    md.push_str(GLMARK_END);
    md.push_str(FPS_BEGIN);
    md.push_str(&fps);
    md.push_str(FPS_END);
    md.push_str(HUD_BEGIN);
    md.push_str(&hud);
    md.push_str(HUD_END);
    md.push_str(COUNTERS_BEGIN);
    md.push_str(&counters_section()?);
    md.push_str(COUNTERS_END);
    md.push_str(TIMELINE_BEGIN);
    md.push_str(&timeline_section()?);
    md.push_str(TIMELINE_END);
    md.push_str(H100_BEGIN);
    md.push_str(&super::bench_h100::section()?);
    md.push_str(H100_END);
    let path = crate::shell::root().join("docs/performance.md");
    std::fs::write(&path, md).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("{verdict}");
    println!("written to {}", path.display());
    Ok(())
}
