//! `cargo xtask soak`: long runs of vkcube and glxgears under framescope with the HUD and
//! `samples=draw`, not part of `cargo xtask test`. Every 10 s the app's resident memory,
//! threads and open descriptors and the dump's size are sampled; at the end the table goes to
//! docs/reliability.md (between the soak markers) and to stdout.
//!
//! Options: `--minutes N` per app (default 30); `--app vkcube|glxgears|piglit` (default
//! vkcube and glxgears); `piglit` runs, again and again for the whole time, the piglit test
//! that once aborted at exit under the GL shim's defaults (heap corruption), with a swap
//! before each probe so the shim measures frames, and counts the runs that did not exit 0;
//! `--bare` runs the apps without framescope (does the driver crash on its own?);
//! `--asan` loads a Vulkan layer built with AddressSanitizer (nightly) with the sanitizer's
//! runtime preloaded; `--malloc-check` preloads glibc's malloc debugging with checks on every
//! call and freed memory overwritten, which turns a heap corruption into an abort near it.
//! A run passes when the app was still alive at the end (it is then ended with SIGTERM), the
//! dump ends with its summary, and memory, threads and descriptors stay flat after the warm-up.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// Samples before this are the warm-up; flatness is judged from the first one after it.
const WARMUP: Duration = Duration::from_secs(60);
const CONFIG: &str = "samples=draw,hud=1";
const BEGIN: &str = "<!-- soak:begin -->";
const END: &str = "<!-- soak:end -->";

#[derive(Default)]
struct Options {
    minutes: f64,
    apps: Vec<&'static str>,
    bare: bool,
    asan: bool,
    malloc_check: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        minutes: 30.0,
        ..Options::default()
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--minutes" => {
                o.minutes = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|m: &f64| *m > 0.0 && *m <= 24.0 * 60.0)
                    .ok_or("--minutes needs a number of minutes")?;
            }
            "--app" => match it.next().map(String::as_str) {
                Some("vkcube") => o.apps.push("vkcube"),
                Some("glxgears") => o.apps.push("glxgears"),
                Some("piglit") => o.apps.push("piglit"),
                _ => return Err("--app is vkcube, glxgears or piglit".into()),
            },
            "--bare" => o.bare = true,
            "--asan" => o.asan = true,
            "--malloc-check" => o.malloc_check = true,
            other => return Err(format!("soak: unknown option '{other}'")),
        }
    }
    if o.apps.is_empty() {
        o.apps = vec!["vkcube", "glxgears"];
    }
    if o.bare && o.asan {
        return Err("--asan instruments framescope; a --bare run has none".into());
    }
    Ok(o)
}

/// One sample of the app process.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    t_s: f64,
    rss_kib: u64,
    threads: u64,
    fds: u64,
    dump_bytes: u64,
}

fn sample(pid: u32, dump: &Path, t_s: f64) -> Option<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    };
    Some(Sample {
        t_s,
        rss_kib: field("VmRSS:")?,
        threads: field("Threads:")?,
        fds: std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64,
        dump_bytes: std::fs::metadata(dump).map_or(0, |m| m.len()),
    })
}

/// The dump's last line, when it is the summary.
fn summary(dump: &Path) -> Option<serde_json::Value> {
    let mut f = std::fs::File::open(dump).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(1 << 20);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut tail = String::new();
    f.read_to_string(&mut tail).ok()?;
    let last = tail.trim_end().rsplit('\n').next()?;
    let v: serde_json::Value = serde_json::from_str(last).ok()?;
    (v["type"] == "summary").then_some(v)
}

struct Outcome {
    app: &'static str,
    minutes: f64,
    /// `None`: alive at the end; else how it ended by itself.
    died: Option<String>,
    frames: Option<u64>,
    ended_by: Option<String>,
    samples: Vec<Sample>,
}

impl Outcome {
    fn after_warmup(&self) -> &[Sample] {
        let k = self
            .samples
            .iter()
            .position(|s| s.t_s >= WARMUP.as_secs_f64())
            .unwrap_or(0);
        &self.samples[k..]
    }

    /// Growth from the first sample after the warm-up to the last.
    fn growth(&self, f: impl Fn(&Sample) -> u64) -> Option<(u64, u64, u64)> {
        let s = self.after_warmup();
        let (first, last) = (s.first()?, s.last()?);
        Some((f(first), f(last), s.iter().map(&f).max()?))
    }

    fn passed(&self) -> bool {
        if self.app == "piglit" {
            // Many short processes: no samples; every run must have exited 0.
            return self.died.is_none() && self.frames.is_some_and(|n| n > 0);
        }
        let flat_rss = self
            .growth(|s| s.rss_kib)
            // Allocator noise, not a leak: within 8 MiB or 5 % of the first sample.
            .is_some_and(|(a, b, _)| b <= a + (8 * 1024).max(a / 20));
        let flat = |f: fn(&Sample) -> u64| self.growth(f).is_some_and(|(a, b, _)| b <= a);
        self.died.is_none()
            && (self.frames.is_some() || self.bare())
            && flat_rss
            && flat(|s| s.threads)
            && flat(|s| s.fds)
    }

    fn bare(&self) -> bool {
        self.ended_by.as_deref() == Some("bare")
    }
}

fn app_command(app: &str) -> (&'static str, Vec<&'static str>) {
    match app {
        "vkcube" => ("vkcube", vec!["--c", "2000000000"]),
        _ => ("glxgears", vec![]),
    }
}

fn run_one(
    o: &Options,
    app: &'static str,
    framescope: &Path,
    lib_dir: Option<&Path>,
    dir: &Path,
) -> Result<Outcome, String> {
    let dump = dir.join(format!("soak-{app}.jsonl"));
    let _ = std::fs::remove_file(&dump);
    let (program, args) = app_command(app);
    let secs = o.minutes * 60.0;
    let mut c = if o.bare {
        let mut c = Command::new(program);
        c.args(&args);
        c
    } else {
        let mut c = Command::new(framescope);
        // The dump ends itself at the end of the soak, with its summary, while the app runs on.
        c.args(["run", "--dump"])
            .arg(&dump)
            .args(["--config", &format!("{CONFIG},dump_duration={secs}")])
            .arg("--");
        if o.asan {
            c.args(["env", "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libasan.so.8"]);
            c.arg(format!(
                "ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:verify_asan_link_order=0:log_path={}",
                dir.join(format!("asan-{app}")).display()
            ));
        }
        c.arg(program).args(&args);
        if let Some(l) = lib_dir {
            c.env("FRAMESCOPE_LIB_DIR", l);
        }
        c
    };
    if o.malloc_check {
        c.env("LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0")
            .env("GLIBC_TUNABLES", "glibc.malloc.check=3:glibc.malloc.perturb=165");
    }
    let log = std::fs::File::create(dir.join(format!("soak-{app}.log"))).map_err(|e| e.to_string())?;
    c.stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log);
    eprintln!(
        "xtask: soak: {app} for {} min{}",
        o.minutes,
        if o.bare { " (bare)" } else { "" }
    );
    let mut child: Child = c.spawn().map_err(|e| format!("{program}: {e}"))?;
    // Under `framescope run` the app replaces framescope's process; with `--asan`, `env`'s.
    let pid = child.id();
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut died = None;
    // A little past the dump's end, so the summary is written before the app is ended.
    let limit = Duration::from_secs_f64(secs + 10.0);
    while start.elapsed() < limit {
        std::thread::sleep(SAMPLE_EVERY.min(limit.saturating_sub(start.elapsed())));
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            died = Some(format!("{status}"));
            break;
        }
        if let Some(s) = sample(pid, &dump, start.elapsed().as_secs_f64()) {
            samples.push(s);
        }
    }
    if died.is_none() {
        // SAFETY: our own child, still running.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        let _ = child.wait();
    }
    let s = if o.bare { None } else { summary(&dump) };
    let _ = std::fs::remove_file(&dump);
    Ok(Outcome {
        app,
        minutes: o.minutes,
        died,
        frames: s.as_ref().and_then(|s| s["frames"].as_u64()),
        ended_by: if o.bare {
            Some("bare".into())
        } else {
            s.as_ref().and_then(|s| s["ended_by"].as_str().map(str::to_owned))
        },
        samples,
    })
}

/// The piglit test that once aborted with `free(): corrupted unsorted chunks` at exit.
const PIGLIT_TEST: &str = "/usr/lib/x86_64-linux-gnu/piglit/generated_tests/spec/glsl-1.10/execution/variable-indexing/vs-temp-array-mat4-index-row-rd.shader_test";
const SHADER_RUNNER: &str = "/usr/lib/x86_64-linux-gnu/piglit/bin/shader_runner";

/// Runs [`PIGLIT_TEST`] under `framescope run` (the shim's defaults: HUD, statistics) again
/// and again for the soak's time; `frames` counts the runs, `died` names the first that did
/// not exit 0 with its output's last line.
fn run_piglit(o: &Options, framescope: &Path, dir: &Path) -> Result<Outcome, String> {
    let so = dir.join("swap_before_probe.so");
    let src = dir.join("swap_before_probe.c");
    std::fs::write(&src, include_str!("../../tests/fixtures/swap_before_probe.c")).map_err(|e| e.to_string())?;
    let cc = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&so)
        .arg(&src)
        .arg("-ldl")
        .status()
        .map_err(|e| format!("cc: {e}"))?;
    if !cc.success() {
        return Err("cc: the swap preload did not build".into());
    }
    eprintln!("xtask: soak: piglit (one test, again and again) for {} min", o.minutes);
    let mut preload = so.display().to_string();
    if o.malloc_check {
        preload = format!("/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0:{preload}");
    }
    let start = Instant::now();
    let (mut runs, mut failed) = (0u64, Vec::new());
    while start.elapsed() < Duration::from_secs_f64(o.minutes * 60.0) {
        let mut c = if o.bare {
            Command::new(SHADER_RUNNER)
        } else {
            let mut c = Command::new(framescope);
            c.args(["run", "--"]).arg(SHADER_RUNNER);
            c
        };
        c.args([PIGLIT_TEST, "-auto"]).env("LD_PRELOAD", &preload);
        if o.malloc_check {
            c.env("GLIBC_TUNABLES", "glibc.malloc.check=3:glibc.malloc.perturb=165");
        }
        let out = c
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{SHADER_RUNNER}: {e}"))?;
        runs += 1;
        if !out.status.success() {
            let text = String::from_utf8_lossy(&out.stderr);
            let last = text.lines().last().unwrap_or("").to_string();
            failed.push(format!("run {runs}: {} ({last})", out.status));
        }
    }
    std::fs::write(dir.join("soak-piglit.log"), failed.join("\n")).map_err(|e| e.to_string())?;
    Ok(Outcome {
        app: "piglit",
        minutes: o.minutes,
        died: (!failed.is_empty()).then(|| format!("{} of {runs} runs failed; first: {}", failed.len(), failed[0])),
        frames: Some(runs),
        ended_by: Some(format!("{runs} runs")),
        samples: Vec::new(),
    })
}

fn table(o: &Options, outcomes: &[Outcome]) -> String {
    let mut t = String::new();
    let mode = match (o.bare, o.asan, o.malloc_check) {
        (true, _, mc) => format!("bare (no framescope){}", if mc { ", glibc malloc checks" } else { "" }),
        (false, asan, mc) => format!(
            "`{CONFIG}`{}{}",
            if asan {
                ", layer built with AddressSanitizer"
            } else {
                ""
            },
            if mc { ", glibc malloc checks" } else { "" }
        ),
    };
    t.push_str(&format!(
        "\n`cargo xtask soak` run on {} ({mode}; Xvfb, lavapipe/llvmpipe; samples every {} s, flatness judged after {} s):\n\n",
        today(),
        SAMPLE_EVERY.as_secs(),
        WARMUP.as_secs()
    ));
    t.push_str("| app | minutes | ended | frames | dump bytes/frame | RSS MiB after warm-up → end (max) | threads | fds | verdict |\n");
    t.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for r in outcomes {
        let mib = |k: u64| k as f64 / 1024.0;
        let rss = r.growth(|s| s.rss_kib).map_or("-".into(), |(a, b, m)| {
            format!("{:.1} → {:.1} ({:.1})", mib(a), mib(b), mib(m))
        });
        let span = |f: fn(&Sample) -> u64| r.growth(f).map_or("-".into(), |(a, b, m)| format!("{a} → {b} ({m})"));
        let per_frame = match (r.frames, r.samples.last()) {
            (Some(f), Some(s)) if f > 0 => format!("{:.0}", s.dump_bytes as f64 / f as f64),
            _ => "-".into(),
        };
        t.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.app,
            r.minutes,
            match (r.died.as_deref(), r.app) {
                (Some(d), _) => format!("**died: {d}**"),
                (None, "piglit") => "every run exited 0 (the GL shim's defaults, not the config above)".into(),
                (None, _) => format!("alive; dump {}", r.ended_by.as_deref().unwrap_or("without summary")),
            },
            match (r.frames, r.app) {
                (Some(n), "piglit") => format!("{n} runs"),
                (f, _) => f.map_or("-".into(), |f| f.to_string()),
            },
            per_frame,
            rss,
            span(|s| s.threads),
            span(|s| s.fds),
            if r.passed() { "pass" } else { "**FAIL**" }
        ));
    }
    t
}

fn today() -> String {
    Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Builds the AddressSanitizer layer (nightly, its own target dir) and puts it next to the
/// ordinary GL shim: `run` preloads the shim into every process, and an instrumented shim
/// would need the sanitizer's runtime in `env` too.
fn asan_libs(root: &Path) -> Result<PathBuf, String> {
    let target = root.join("target/asan");
    let status = Command::new("cargo")
        .args([
            "+nightly",
            "build",
            "--release",
            "-p",
            "framescope-vk",
            "--target",
            "x86_64-unknown-linux-gnu",
        ])
        .env("RUSTFLAGS", "-Zsanitizer=address -Cforce-frame-pointers=yes")
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(root)
        .status()
        .map_err(|e| format!("cargo +nightly: {e}"))?;
    if !status.success() {
        return Err("the AddressSanitizer build failed".into());
    }
    let dir = target.join("libs");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let copy = |from: PathBuf, name: &str| {
        std::fs::copy(&from, dir.join(name)).map_err(|e| format!("{}: {e}", from.display()))
    };
    copy(
        target.join("x86_64-unknown-linux-gnu/release/libframescope_vk.so"),
        "libframescope_vk.so",
    )?;
    copy(root.join("target/release/libframescope_gl.so"), "libframescope_gl.so")?;
    Ok(dir)
}

pub fn soak(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    super::deps::install()?;
    crate::shell::build_release(&[])?;
    let root = crate::shell::root();
    let lib_dir = if o.asan { Some(asan_libs(&root)?) } else { None };
    let framescope = root.join("target/release/framescope");
    let x = framescope_tests::Xvfb::start();
    std::env::set_var("DISPLAY", &x.display);
    let dir = std::env::temp_dir().join(format!("framescope-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut outcomes = Vec::new();
    for app in &o.apps {
        outcomes.push(if *app == "piglit" {
            run_piglit(&o, &framescope, &dir)?
        } else {
            run_one(&o, app, &framescope, lib_dir.as_deref(), &dir)?
        });
    }
    drop(x);
    let section = table(&o, &outcomes);
    let path = root.join("docs/reliability.md");
    let md = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let new = match (md.find(BEGIN), md.find(END)) {
        (Some(b), Some(e)) if b < e => format!("{}{BEGIN}{}{section}{}", &md[..b], &md[b + BEGIN.len()..e], &md[e..]),
        _ => format!("{md}\n{BEGIN}{section}{END}\n"),
    };
    std::fs::write(&path, new).map_err(|e| format!("{}: {e}", path.display()))?;
    print!("{section}");
    eprintln!("xtask: soak logs (app output, sanitizer reports) in {}", dir.display());
    if outcomes.iter().all(Outcome::passed) {
        Ok(())
    } else {
        Err("a soak run failed (see the table)".into())
    }
}
