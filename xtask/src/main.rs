//! `cargo xtask <demo|test|bench|soak|install-deps>`: the project's only set-up and test entry points.

mod apt;
mod bench;
mod bench_cg;
mod bench_fps;
mod bench_gl;
mod bench_glmark;
mod bench_h100;
mod bench_html;
mod bench_hud;
mod bench_samples;
mod deps;
mod deps32;
mod fnlen;
mod fuzz;
mod measure;
mod modgraph;
mod multiarch;
mod package;
mod shell;
mod soak;

use shell::{cargo, cargo_env, root};
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <demo|test|package|bench|soak|deps|fuzz|install-deps>
  demo          build in release, run vkcube under framescope (Xvfb if no DISPLAY), print what it measured
  test          install missing packages, then fmt check, clippy -D warnings, build, all tests
  package       target/package/release/: a Debian package and a tarball of the same tree (the CLI,
                the 64- and 32-bit layer and GL shim, manifests through $LIB, manual pages,
                completions, README); --debug packages the debug builds (the package test's)
  bench         performance benchmarks (writes docs/performance.md); `bench vkcube`: only the
                vkcube section (vs bare, MangoHud, Mesa overlay); `bench samples`: only the
                CPU cost per draw of each samples mode; `bench gl`: only the GL sections (glxgears
                and glmark2); `bench glmark`: only the glmark2/glmark2-es2 scores section;
                `bench counters`: only the counters' cost on the app's thread; `bench timeline`:
                only the frame timeline's cost on the app's thread (wall time and callgrind); `bench h100`: only
                the H100 section, from the committed run of tests/device/h100-costs.sh;
                `bench callgrind`: only vkcube's instructions per frame, printed (before/after);
                `bench fps-limit`: only the frame limiter's pacing of vkcube at 60 and 144;
                `bench hud`: only the HUD's time on the app's thread (vkcube, the GL test app);
                `bench html`: `report --html` on 1 and 50 runs of 1 M frames in headless
                Chromium (writes 5 GB of dumps to the temporary directory, then removes them)
  soak          long runs of vkcube and glxgears with the HUD and samples=draw (not in `test`):
                RSS, threads, fds and dump size sampled, results into docs/reliability.md;
                --minutes N (30), --app vkcube|glxgears, --bare, --asan, --malloc-check
  readme-keys   rewrite README's config key table from the code (core's KEYS)
  deps          import cycles between the modules (files) of each crate, printed as chains
  fuzz [SECS]   build the fuzz targets (nightly) and run each SECS seconds (60); `test` runs it
  install-deps  install the Debian, PyPI and 32-bit packages the tests need (root), else print the
                commands (`demo` installs only the demo's)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("install-deps") => deps::install(),
        Some("test") => test(),
        Some("deps") => {
            let cycles = modgraph::check(modgraph::ALL);
            let lengths = fnlen::check(&shell::root());
            cycles.and(lengths)
        }
        Some("readme-keys") => readme_keys(),
        Some("fuzz") => match args.get(1).map(|s| s.parse::<u32>()) {
            None => fuzz::fuzz(fuzz::CI_SECONDS),
            Some(Ok(s)) if s > 0 => fuzz::fuzz(s),
            Some(_) => Err("fuzz takes a number of seconds per target".into()),
        },
        Some("soak") => soak::soak(&args[1..]),
        Some("package") => package::package(&args[1..]),
        Some("demo") => demo(),
        Some("bench") if args.get(1).map(String::as_str) == Some("samples") => bench::bench_samples_only(),
        Some("bench") if args.get(1).map(String::as_str) == Some("vkcube") => bench::bench_vkcube_only(),
        Some("bench") if args.get(1).map(String::as_str) == Some("gl") => bench::bench_gl_only(),
        Some("bench") if args.get(1).map(String::as_str) == Some("glmark") => bench::bench_glmark_only(),
        Some("bench") if args.get(1).map(String::as_str) == Some("counters") => bench::bench_counters_only(),
        Some("bench") if args.get(1).map(String::as_str) == Some("timeline") => bench::bench_timeline_only(),
        Some("bench") if args.get(1).map(String::as_str) == Some("h100") => bench::bench_h100_only(),
        Some("bench") if args.get(1).map(String::as_str) == Some("callgrind") => bench::bench_callgrind_only(),
        Some("bench") if args.get(1).map(String::as_str) == Some("fps-limit") => bench::bench_fps_only(),
        Some("bench") if args.get(1).map(String::as_str) == Some("hud") => bench::bench_hud_only(),
        Some("bench") if args.get(1).map(String::as_str) == Some("html") => bench::bench_html_only(),
        Some("bench") => bench(),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

fn test() -> Result<(), String> {
    deps::install()?;
    // No import cycle between the modules of the crates already reshaped (`cargo xtask deps`
    // reports every crate, the two layers included).
    modgraph::check(modgraph::CHECKED)?;
    // No product function over 120 lines: a longer one is several phases under one name.
    fnlen::check(&shell::root())?;
    cargo(&["fmt", "--all", "--check"])?;
    cargo(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])?;
    // Integration tests run the built layer, CLI and test apps: build them all first, and the
    // 32-bit layers for the 32-bit apps (tests/tests/apps32.rs).
    cargo(&["build", "--workspace", "--bins", "--lib"])?;
    cargo(&LAYERS32_BUILD)?;
    // The package of these builds, for the test that installs and purges it.
    package::build(true)?;
    // The fuzz targets, a minute each; before the tests so that their summaries close the log.
    let fuzzed = fuzz::fuzz(fuzz::CI_SECONDS);
    // Every test, the Vulkan ones with the validation layer below framescope; then the Vulkan
    // integration tests again with framescope directly on the driver (tests/src/lane.rs says
    // why). Both lanes run even when the first fails, so one CI run shows everything.
    let all = cargo(&["test", "--workspace", "--no-fail-fast"]);
    let mut driver_lane = vec!["test", "-p", "framescope-tests", "--no-fail-fast"];
    for t in DRIVER_LANE_TESTS {
        driver_lane.extend(["--test", t]);
    }
    let driver = cargo_env(&driver_lane, &[("FRAMESCOPE_TEST_LANE", "driver")]);
    // What the layers are made of, on a 32-bit address space: the crates' own tests built for
    // i686 (handles, atomics, rings, the kernel seams' layouts, the HUD's arithmetic).
    let bits32 = cargo(&CRATES32_TEST);
    match (all, driver, bits32, fuzzed) {
        (Ok(()), Ok(()), Ok(()), Ok(())) => Ok(()),
        (a, d, b, f) => Err(format!(
            "tests failed: validation lane {}, driver lane {}, 32-bit crate tests {}, fuzzing {}",
            if a.is_ok() { "passed" } else { "FAILED" },
            if d.is_ok() { "passed" } else { "FAILED" },
            if b.is_ok() { "passed" } else { "FAILED" },
            match f {
                Ok(()) => "passed".to_string(),
                Err(e) => format!("FAILED ({e})"),
            }
        )),
    }
}

/// The 32-bit Vulkan layer and GL shim (`target/i686-unknown-linux-gnu/debug`).
const LAYERS32_BUILD: [&str; 7] = [
    "build",
    "--target",
    deps32::TARGET,
    "-p",
    "framescope-vk",
    "-p",
    "framescope-gl",
];

/// The layers' crates' tests, built for i686.
const CRATES32_TEST: [&str; 14] = [
    "test",
    "--target",
    deps32::TARGET,
    "--no-fail-fast",
    "-p",
    "framescope-core",
    "-p",
    "framescope-collectors",
    "-p",
    "framescope-overlay",
    "-p",
    "framescope-vk",
    "-p",
    "framescope-gl",
];

/// The integration tests that run Vulkan apps, run a second time in the `driver` lane.
const DRIVER_LANE_TESTS: &[&str] = &[
    "vulkan_foundation",
    "frames_and_dumps",
    "samples",
    "hud_vulkan",
    "steady_allocations",
    "zink",
    "lifecycle",
    "perf_query",
    "apps32",
    "faults",
    "frame_timeline",
    "display_present_wait",
    "display_x11",
    "display_present_timing",
    "wayland_presentation",
    "wayland_apps",
    "keys_wayland",
    "wayland_resize",
];

/// Replaces the README's config key table (between its `config-keys` markers) with the one the
/// code generates; `tests/tests/docs.rs` fails while the two differ.
fn readme_keys() -> Result<(), String> {
    const BEGIN: &str = "<!-- config-keys:begin -->\n";
    const END: &str = "<!-- config-keys:end -->";
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let begin = readme.find(BEGIN).ok_or("README.md has no config-keys:begin marker")? + BEGIN.len();
    let end = begin
        + readme[begin..]
            .find(END)
            .ok_or("README.md has no config-keys:end marker")?;
    let table = framescope_core::config::markdown_table();
    let out = format!("{}{}{}", &readme[..begin], table, &readme[end..]);
    std::fs::write(&path, out).map_err(|e| format!("{}: {e}", path.display()))?;
    println!(
        "README.md: config key table written ({} keys)",
        framescope_core::config::KEYS.len()
    );
    Ok(())
}

fn demo() -> Result<(), String> {
    eprintln!(
        "xtask: demo: installs the Debian packages it runs if missing ({}), builds framescope in \
         release (about 2 minutes on 2 cores), runs vkcube for 1500 frames under it",
        deps::DEMO.join(" ")
    );
    deps::install_for(deps::Task::Demo)?;
    shell::build_release(&[])?;
    let bin = root().join("target/release");
    let _xvfb = match std::env::var_os("DISPLAY") {
        Some(_) => None,
        None => {
            let x = framescope_tests::Xvfb::start();
            eprintln!("xtask: no DISPLAY; started Xvfb on {}", x.display);
            std::env::set_var("DISPLAY", &x.display);
            Some(x)
        }
    };
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        let dir = std::env::temp_dir().join(format!("framescope-demo-runtime-{}", unsafe_getuid()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| e.to_string())?;
        std::env::set_var("XDG_RUNTIME_DIR", &dir);
    }
    let dump = std::env::temp_dir().join("framescope-demo.jsonl");
    let _ = std::fs::remove_file(&dump);
    eprintln!(
        "xtask: running vkcube for 1500 frames under framescope, dump {}",
        dump.display()
    );
    // Frame 1000 with the HUD, saved as PNG: what the HUD looks like on a machine with no display.
    let shot = std::env::temp_dir().join("framescope-demo-frame%N.png");
    // framescope never overwrites an existing screenshot (it would write a numbered sibling).
    let _ = std::fs::remove_file(std::env::temp_dir().join("framescope-demo-frame1000.png"));
    let status = Command::new(bin.join("framescope"))
        .args(["run", "--dump"])
        .arg(&dump)
        .arg("--config")
        .arg(format!(
            "samples=renderpass,screenshot=1000,screenshot_path={}",
            shot.display()
        ))
        .args(["--", "vkcube", "--c", "1500"])
        .status()
        .map_err(|e| format!("framescope run: {e}"))?;
    if !status.success() {
        return Err(format!("vkcube under framescope failed ({status})"));
    }
    if dump.is_file() {
        let status = Command::new(bin.join("framescope"))
            .arg("report")
            .arg(&dump)
            .status()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err("framescope report failed".into());
        }
        println!("full per-frame dump: {}", dump.display());
        println!(
            "frame 1000 with the HUD: {}",
            std::env::temp_dir().join("framescope-demo-frame1000.png").display()
        );
    }
    println!(
        "the HUD over any other app: {} run -- APP [ARGS]",
        bin.join("framescope").display()
    );
    Ok(())
}

fn bench() -> Result<(), String> {
    bench::bench()
}

fn unsafe_getuid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}
