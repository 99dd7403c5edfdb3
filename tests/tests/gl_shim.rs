//! Issue 5 (without the HUD): the GL LD_PRELOAD shim. Frames, GPU time and draw counts of GL and
//! GLES apps (glxgears, glmark2, glmark2-es2) through `framescope run`, the app's own numbers as
//! the reference, the shim's exported symbols, and GL state left intact (`glmark2 --validate`).
//!
//! Numbers for the report are printed: run with `--nocapture` to see them.

use framescope_tests::artifacts::require_program;
use framescope_tests::{dump, Artifacts, Outcome, Sandbox, Xvfb};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// The tests here compare frame rates and timings with the app's own: they run one at a time
/// so they do not compete for the CPU with each other.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}
/// Small enough to keep glmark2 quick on 2 shared cores.
const GLMARK_SIZE: &str = "400x300";

/// The dynamic symbols the shim defines: exactly the GL/EGL entry points it interposes.
const EXPECTED_EXPORTS: &[&str] = &[
    "dlsym",
    "dlvsym",
    "eglDestroyContext",
    // Wayland display times: the calls that name the app's wl_display and wl_surface, the
    // surface's end, and the display's disconnect (framescope's objects on it go first).
    "eglCreatePlatformWindowSurface",
    "eglCreatePlatformWindowSurfaceEXT",
    "eglCreateWindowSurface",
    "eglDestroySurface",
    "eglGetDisplay",
    "eglGetPlatformDisplay",
    "eglGetPlatformDisplayEXT",
    "wl_display_disconnect",
    "eglGetProcAddress",
    "eglMakeCurrent",
    "eglSwapBuffers",
    "eglSwapBuffersWithDamageEXT",
    "eglSwapBuffersWithDamageKHR",
    // Closing a display destroys its contexts: our statistics queries end first.
    "eglTerminate",
    // Draws: counted whether the app looks them up or imports them from libGL directly.
    "glDrawArrays",
    "glDrawArraysEXT",
    "glDrawArraysIndirect",
    "glDrawArraysInstanced",
    "glDrawArraysInstancedARB",
    "glDrawArraysInstancedBaseInstance",
    "glDrawArraysInstancedEXT",
    "glDrawElements",
    "glDrawElementsBaseVertex",
    "glDrawElementsIndirect",
    "glDrawElementsInstanced",
    "glDrawElementsInstancedARB",
    "glDrawElementsInstancedBaseInstance",
    "glDrawElementsInstancedBaseVertex",
    "glDrawElementsInstancedBaseVertexBaseInstance",
    "glDrawElementsInstancedEXT",
    "glDrawRangeElements",
    "glDrawRangeElementsBaseVertex",
    "glDrawRangeElementsEXT",
    "glMultiDrawArrays",
    "glMultiDrawArraysEXT",
    "glMultiDrawArraysIndirect",
    "glMultiDrawArraysIndirectCount",
    "glMultiDrawArraysIndirectCountARB",
    "glMultiDrawElements",
    "glMultiDrawElementsBaseVertex",
    "glMultiDrawElementsEXT",
    "glMultiDrawElementsIndirect",
    "glMultiDrawElementsIndirectCount",
    "glMultiDrawElementsIndirectCountARB",
    // Legacy draws, which the apps that use them import from libGL directly.
    "glBegin",
    // The app's own queries: our per-frame statistics queries end before its own begin, even
    // when it imports these from libGL directly.
    "glBeginQuery",
    "glBeginQueryIndexed",
    "glCallList",
    "glCallLists",
    "glEnd",
    "glEndList",
    "glEndQuery",
    "glEndQueryIndexed",
    // The app's shader compiles and program links, timed into its frame's `creation_by_kind`,
    // and its program changes (the first draw with a new program is its `first_use`).
    "glCompileShader",
    "glLinkProgram",
    "glProgramBinary",
    "glUseProgram",
    // The app's waits, timed into its frame's `cpu_wait_by_kind_ns`.
    "glClientWaitSync",
    "glFinish",
    "glGetQueryIndexediv",
    "glGetQueryiv",
    "glNewList",
    "glXDestroyContext",
    "glXGetProcAddress",
    "glXGetProcAddressARB",
    "glXMakeContextCurrent",
    "glXMakeCurrent",
    "glXSwapBuffers",
    "glXSwapBuffersMscOML",
    "XCloseDisplay",
];

#[test]
fn shim_exports_exactly_its_gl_entry_points_and_no_vk_symbol() {
    require_program("nm");
    let a = Artifacts::get();
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&a.gl_shim)
        .output()
        .expect("run nm");
    assert!(
        out.status.success(),
        "nm failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let names: BTreeSet<&str> = text.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    assert!(
        names.iter().all(|n| !n.starts_with("vk")),
        "vk symbols exported: {names:?}"
    );
    let expected: BTreeSet<&str> = EXPECTED_EXPORTS.iter().copied().collect();
    assert_eq!(names, expected, "exported dynamic symbols of {}", a.gl_shim.display());
}

#[test]
fn framescope_run_prepends_the_shim_to_ld_preload() {
    let a = Artifacts::get();
    let mut sb = Sandbox::new("glpreload");
    sb.set("LD_PRELOAD", "libm.so.6");
    let out = sb.run_under_framescope(&a, "printenv", &["LD_PRELOAD"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let shim = a.gl_shim.canonicalize().expect("shim path");
    // The shim through ld.so's $LIB (lib/x86_64-linux-gnu here): a link in run's private
    // directory to the build, beside the 32-bit build's link for 32-bit apps.
    let value = out.stdout.trim();
    let (first, rest) = value.split_once(':').expect("two entries");
    assert_eq!(rest, "libm.so.6", "{value}");
    assert!(first.ends_with("/$LIB/libframescope_gl.so"), "{value}");
    let expanded = std::path::PathBuf::from(first.replace("$LIB", "lib/x86_64-linux-gnu"));
    assert_eq!(expanded.canonicalize().expect("the 64-bit link resolves"), shim);
    // A process that never touches GL gets nothing from the shim: no message, no dump.
    assert!(out.lines_with("framescope").is_empty(), "{}", out.describe());
}

/// `(frames, fps)` of every "N frames in S seconds = F FPS" line glxgears printed.
fn glxgears_reports(out: &Outcome) -> Vec<(u64, f64)> {
    out.stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [n, "frames", "in", _, "seconds", "=", fps, "FPS"] => Some((n.parse().ok()?, fps.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// GPU times of the frames after the first. Every GPU time is non-zero and sits inside its
/// frame: the begin timestamp executes after the previous swap was issued and the end one
/// before the next swap is issued (llvmpipe renders at swap and its swap waits, and its
/// `GL_TIMESTAMP` clock is `CLOCK_MONOTONIC`, so the calibrated values compare with `t_ns`).
/// The GPU time is the frame's span (`gpu_time: span`): on llvmpipe our begin timestamp runs in
/// a scene of its own right after the previous swap, and the end one after the frame's scene
/// was rasterized, which happens after the frame's `t_ns`; so the span may exceed the CPU frame
/// time by that rasterization (it did in 3-5% of glxgears' and glmark2's frames), and the
/// bounds above are what holds. Returns how many frames had no GPU time.
fn check_gpu_times(tag: &str, d: &dump::Dump) -> usize {
    const SLACK_NS: u64 = 100_000;
    let (mut missing, mut over) = (0, 0);
    let f = &d.frames;
    for i in 1..f.len() {
        let Some(busy) = f[i]["gpu_busy_ns"].as_u64() else {
            missing += 1;
            continue;
        };
        let cpu = f[i]["cpu_frame_ns"].as_u64().expect("cpu_frame_ns after frame 0");
        assert!(busy > 0, "{tag}: zero GPU time: {}", f[i]);
        assert_eq!(
            f[i]["gpu_span_ns"].as_u64(),
            Some(busy),
            "{tag}: GL span is busy: {}",
            f[i]
        );
        let begin = f[i]["gpu_begin_ns"].as_u64().expect("calibrated gpu_begin_ns");
        let end = f[i]["gpu_end_ns"].as_u64().expect("calibrated gpu_end_ns");
        let prev_t = f[i - 1]["t_ns"].as_u64().unwrap();
        assert!(
            begin + SLACK_NS >= prev_t,
            "{tag}: GPU begin before the previous swap: {}",
            f[i]
        );
        if let Some(next) = f.get(i + 1) {
            let next_t = next["t_ns"].as_u64().unwrap();
            assert!(end <= next_t + SLACK_NS, "{tag}: GPU end after the next swap: {}", f[i]);
        }
        if busy > cpu {
            over += 1;
        }
    }
    println!(
        "{tag}: {} frames, {missing} without GPU time, {over} with GPU span > CPU frame time",
        f.len()
    );
    missing
}

fn assert_contiguous(tag: &str, d: &dump::Dump) {
    let idx = d.u64s("frame");
    assert_eq!(
        idx,
        (0..idx.len() as u64).collect::<Vec<_>>(),
        "{tag}: frames 0..n without gaps"
    );
}

#[test]
fn glxgears_dump_counts_the_frames_glxgears_reports() {
    let _serial = serial();
    require_program("glxgears");
    require_program("timeout");
    let a = Artifacts::get();
    let x = Xvfb::start();

    let mut bare = Sandbox::new("gears-bare");
    bare.display(&x);
    let b = bare.run(Path::new("timeout"), &["-s", "INT", "5.5", "glxgears"], LIMIT);
    let bare_reports = glxgears_reports(&b);
    assert!(
        !bare_reports.is_empty(),
        "bare glxgears printed no report: {}",
        b.describe()
    );

    // Two 5 s reports: the first window starts before glxgears' first (shader-compiling) draw,
    // which no swap marks, so the comparison uses the later, steady-state windows.
    let mut sb = Sandbox::new("gears");
    let path = sb.path("gears.jsonl");
    sb.display(&x).set("FRAMESCOPE_DUMP", path.display().to_string());
    let out = sb.run_under_framescope(&a, "timeout", &["-s", "INT", "11.5", "glxgears"], LIMIT);
    assert_eq!(out.code(), Some(124), "timeout ends glxgears: {}", out.describe());
    let reports = glxgears_reports(&out);
    assert!(
        reports.len() >= 2,
        "glxgears printed {} reports: {}",
        reports.len(),
        out.describe()
    );

    let d = dump::read(&path);
    assert_eq!(d.header["api"], "opengl");
    assert_eq!(d.header["device"]["window_system"], "glx");
    assert_contiguous("glxgears", &d);
    let t: Vec<u64> = d.u64s("t_ns");

    // Every frame glxgears counted is in the dump (SIGINT may only cut the last 50 ms).
    let reported_total: u64 = reports.iter().map(|r| r.0).sum();
    assert!(
        t.len() as f64 >= reported_total as f64 * 0.99,
        "dump has {} frames, glxgears reported {reported_total}",
        t.len()
    );

    // Window k of glxgears runs from the start of its frame S(k-1) (the one that printed
    // report k-1) to the start of frame S(k), N(k) frames in N(k)/fps(k) seconds. The start of
    // frame j is the end of swap j-1, i.e. dump frame j-2. Count the dump's frames in a window
    // of that length from there.
    let mut cumulative = reports[0].0;
    for (k, &(n, fps)) in reports.iter().enumerate().skip(1) {
        let anchor = (cumulative as usize)
            .checked_sub(2)
            .expect("reports start after frame 2");
        let start = t[anchor];
        let len_ns = (n as f64 / fps * 1e9) as u64;
        let ours = t[anchor + 1..].iter().take_while(|&&ti| ti <= start + len_ns).count() as u64;
        let diff = ours.abs_diff(n) as f64 / n as f64;
        println!(
            "glxgears report {}: glxgears {n} frames in {:.3} s ({fps} fps), dump {ours} frames in that window ({:.3}% off)",
            k + 1,
            len_ns as f64 / 1e9,
            diff * 100.0
        );
        assert!(diff <= 0.01, "window {}: dump {ours} frames vs glxgears {n}", k + 1);
        cumulative += n;
    }
    let missing = check_gpu_times("glxgears", &d);
    assert!(
        missing * 100 <= d.frames.len(),
        "{missing} of {} frames without GPU time",
        d.frames.len()
    );
    let busy: Vec<u64> = d.frames.iter().filter_map(|f| f["gpu_busy_ns"].as_u64()).collect();
    println!(
        "glxgears fps: bare {:?}, under framescope {:?}; GPU time per frame mean {:.1} us over {} frames",
        bare_reports.iter().map(|r| r.1).collect::<Vec<_>>(),
        reports.iter().map(|r| r.1).collect::<Vec<_>>(),
        busy.iter().sum::<u64>() as f64 / busy.len().max(1) as f64 / 1000.0,
        busy.len()
    );
}

/// glmark2's final score.
fn glmark_score(out: &Outcome) -> u64 {
    framescope_tests::glmark::score(&out.stdout).unwrap_or_else(|| panic!("no glmark2 score: {}", out.describe()))
        as u64
}

#[test]
fn glmark2_and_glmark2_es2_through_framescope_record_frames_gpu_time_and_draws() {
    let _serial = serial();
    let a = Artifacts::get();
    let x = Xvfb::start();
    let scenes = ["-s", GLMARK_SIZE, "-b", "build:duration=2", "-b", "texture:duration=2"];
    for (app, api, ws) in [("glmark2", "opengl", "glx"), ("glmark2-es2", "opengles", "egl")] {
        require_program(app);
        let mut bare = Sandbox::new(&format!("{app}-bare"));
        bare.display(&x);
        let b = bare.run(Path::new(app), &scenes, LIMIT);
        assert_eq!(b.code(), Some(0), "bare {app}: {}", b.describe());

        let mut sb = Sandbox::new(app);
        let path = sb.path("glmark.jsonl");
        sb.display(&x)
            .set("FRAMESCOPE_DUMP", path.display().to_string())
            .set("FRAMESCOPE_CONFIG", "hud=0");
        let out = sb.run_under_framescope(&a, app, &scenes, LIMIT);
        assert_eq!(out.code(), Some(0), "{app}: {}", out.describe());
        let (bare_score, score) = (glmark_score(&b), glmark_score(&out));
        println!(
            "{app} score: bare {bare_score}, framescope hud=0 {score} ({:+.1}%)",
            (score as f64 / bare_score as f64 - 1.0) * 100.0
        );

        let d = dump::read(&path);
        assert_eq!(d.header["api"], api, "{app}");
        assert_eq!(d.header["device"]["window_system"], ws, "{app}");
        assert_contiguous(app, &d);
        let s = d.summary.as_ref().expect("summary at exit");
        assert_eq!(s["frames"].as_u64(), Some(d.frames.len() as u64), "{app}");
        // glmark2 recreates its context per scene; the dump spans both scenes.
        let said = framescope_tests::glmark::scene_frames(&out.stdout);
        let ours = d.frames.len() as f64;
        println!("{app}: dump {ours} frames, glmark2 scenes FPS x duration = {said}");
        assert!(
            (ours - said).abs() / said < 0.03,
            "{app}: dump {ours} frames vs glmark2's {said}"
        );
        // glmark2 loads GL through dlsym/GetProcAddress: its draws reach our wrappers.
        let with_draws = d.frames.iter().filter(|f| f["draws"].as_u64() > Some(0)).count();
        assert!(
            with_draws * 10 >= d.frames.len() * 9,
            "{app}: only {with_draws} of {} frames counted draws",
            d.frames.len()
        );
        let missing = check_gpu_times(app, &d);
        assert!(
            missing * 100 <= d.frames.len(),
            "{app}: {missing} frames without GPU time"
        );
    }
}

fn validation_lines(out: &Outcome) -> Vec<String> {
    out.stdout
        .lines()
        .filter(|l| l.contains("Validation: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn glmark2_validate_passes_under_framescope() {
    let _serial = serial();
    let a = Artifacts::get();
    let x = Xvfb::start();
    for app in ["glmark2", "glmark2-es2"] {
        require_program(app);
        let args = ["-s", GLMARK_SIZE, "--validate"];
        let mut bare = Sandbox::new(&format!("{app}-vbare"));
        bare.display(&x);
        let b = bare.run(Path::new(app), &args, LIMIT);
        let mut sb = Sandbox::new(&format!("{app}-validate"));
        sb.display(&x);
        let out = sb.run_under_framescope(&a, app, &args, LIMIT);
        assert_eq!(out.code(), Some(0), "{app}: {}", out.describe());
        let (bare_lines, lines) = (validation_lines(&b), validation_lines(&out));
        let successes = lines.iter().filter(|l| l.ends_with("Validation: Success")).count();
        println!(
            "{app} --validate under framescope: {successes} of {} scenes succeed",
            lines.len()
        );
        assert!(successes > 0, "{app}: no scene validated: {}", out.describe());
        assert!(
            lines.iter().all(|l| !l.contains("Failure")),
            "{app}: {}",
            out.describe()
        );
        assert_eq!(lines, bare_lines, "{app}: same validation results as bare");
    }
}

#[test]
fn a_panic_in_the_swap_hook_is_contained_and_logged_once() {
    let _serial = serial();
    require_program("glmark2");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("glfault");
    sb.display(&x).set("FRAMESCOPE_FAULT", "gl_swap");
    let out = sb.run_under_framescope(&a, "glmark2", &["-s", GLMARK_SIZE, "-b", "build:duration=1"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(glmark_score(&out) > 0);
    let errors = out.lines_with("framescope: internal error in swap buffers");
    assert_eq!(errors.len(), 1, "{}", out.describe());
}

/// `gpu_timing=0`: the shim writes no timer queries; every frame says why it has no GPU time.
#[test]
fn glxgears_with_gpu_timing_off_gets_frames_without_gpu_time() {
    let _serial = serial();
    require_program("glxgears");
    require_program("timeout");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("gears-notiming");
    let path = sb.path("gears.jsonl");
    sb.display(&x)
        .set("FRAMESCOPE_CONFIG", "gpu_timing=0")
        .set("FRAMESCOPE_DUMP", path.display().to_string());
    let out = sb.run_under_framescope(&a, "timeout", &["-s", "INT", "3", "glxgears"], LIMIT);
    assert_eq!(out.code(), Some(124), "timeout ends glxgears: {}", out.describe());
    let d = dump::read(&path);
    assert_contiguous("glxgears gpu_timing=0", &d);
    assert!(d.frames.len() > 10, "only {} frames", d.frames.len());
    let unavailable = d.header["unavailable"].to_string();
    assert!(
        !unavailable.contains("gl_timer_query"),
        "timer queries are not missing: {unavailable}"
    );
    for f in &d.frames {
        assert!(f["gpu_busy_ns"].is_null(), "GPU time without GPU timing: {f}");
        assert_eq!(f["gpu_missing"], "disabled", "{f}");
        assert!(
            f.get("samples")
                .is_none_or(|s| s.as_array().is_some_and(|s| s.is_empty())),
            "{f}"
        );
    }
}

/// Legacy GL draws: `gl_probe --legacy` draws, every frame, two immediate-mode triangles, one
/// primitive fed by a display list called inside `glBegin`/`glEnd`, one `glCallList` and one
/// `glCallLists` of two lists; frame 0 also compiles three lists (one with
/// `GL_COMPILE_AND_EXECUTE`, which draws once). Its one modern draw goes through a lookup.
#[test]
fn legacy_immediate_mode_and_display_list_draws_are_counted() {
    let _serial = serial();
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("gl-legacy");
    let path = sb.path("legacy.jsonl");
    sb.display(&x)
        .set("FRAMESCOPE_CONFIG", "hud=0")
        .set("FRAMESCOPE_DUMP", path.display().to_string());
    let probe = env!("CARGO_BIN_EXE_gl_probe");
    let out = sb.run_under_framescope(&a, probe, &["--profile", "compat", "--frames", "6", "--legacy"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let d = dump::read(&path);
    assert_eq!(d.frames.len(), 6);
    for f in &d.frames {
        let k = &f["draws_by_kind"];
        let first = f["frame"] == 0;
        assert_eq!(k["draw_immediate"], if first { 4 } else { 3 }, "{f}");
        assert_eq!(k["draw_call_list"], 3, "{f}");
        assert_eq!(k["draw"], 1, "{f}");
        assert_eq!(f["draws"], if first { 8 } else { 7 }, "{f}");
    }
}

/// Natively built games import `glDrawArrays` and the like from libGL at link time (neverball
/// showed `Draws 0`): the GL test app drawing that way gets every draw counted, as when it
/// looks the entry point up.
#[test]
fn draws_imported_from_libgl_at_link_time_are_counted() {
    let _serial = serial();
    let a = Artifacts::get();
    let x = Xvfb::start();
    let app = a.glapp.display().to_string();
    let run = |name: &str, direct: bool| {
        let mut sb = Sandbox::new(name);
        let path = sb.path("dump.jsonl");
        sb.display(&x)
            .set("FRAMESCOPE_CONFIG", "hud=0")
            .set("FRAMESCOPE_DUMP", path.display().to_string());
        let mut args = vec!["--frames", "6", "--width", "160", "--height", "120"];
        if direct {
            args.push("--direct-draws");
        }
        let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
        assert_eq!(out.code(), Some(0), "{}", out.describe());
        let line = out.lines_with("glapp-result ").pop().expect("glapp-result line");
        let r: serde_json::Value = serde_json::from_str(line.trim_start_matches("glapp-result ")).expect("result JSON");
        (
            dump::read(&path),
            r["draws_per_frame"].as_u64().expect("draws_per_frame"),
        )
    };
    for direct in [false, true] {
        let (d, per_frame) = run(
            if direct {
                "gl-direct-draws"
            } else {
                "gl-looked-up-draws"
            },
            direct,
        );
        assert_eq!(d.frames.len(), 6);
        for f in &d.frames {
            assert_eq!(f["draws"], per_frame, "direct={direct}: {f}");
            assert_eq!(f["draws_by_kind"]["draw"], per_frame, "direct={direct}: {f}");
        }
    }
}
