//! The HUD in GL and GLES apps (the GL shim's `hud` module): an Xvfb root capture of glxgears
//! with and without the HUD and after its toggle key, `screenshot=` PNGs, glxgears' own frame
//! counts with the HUD on, `glmark2 --validate` and `glmark2-es2 --validate`, GL state read back
//! after every swap by our probe app (`gl_probe`) in core,
//! compatibility and GL 2.1 contexts without VAOs, GLES 3 and GLES 2 contexts checked by the
//! shim's self-check, and the HUD's GL objects deleted with every context. Both composite
//! paths are covered: the default opaque HUD copied in (`glBlitFramebuffer`) and a translucent
//! one (`hud_alpha=0.6`) blended with a quad; the opaque one must hide the app, the translucent
//! one show it, and both show the same text at the same places. In a 300x300 window (glxgears,
//! our app) the HUD takes at most half of it each way and ends with whole rows.
//!
//! Numbers for the report are printed: run with `--nocapture` to see them.

use framescope_tests::artifacts::require_program;
use framescope_tests::image::{self, assert_hud_pair, Rect, Rgb};
use framescope_tests::{dump, Artifacts, Outcome, Sandbox, Xvfb};
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
/// Built with this package (`tests/src/bin/gl_probe.rs`).
const PROBE: &str = env!("CARGO_BIN_EXE_gl_probe");
const GLMARK_SIZE: &str = "400x300";
/// The shim's self-check: state compared before and after each HUD, `glGetError`, `glIs*`
/// after the objects are deleted. It consumes the app's pending GL errors, so it is only used
/// where the app does not read them (glmark2's benchmarks, our probe does not run with it).
const CHECK: (&str, &str) = ("FRAMESCOPE_GL_HUD_CHECK", "1");

/// The glxgears test compares frame rates with the app's own; the others would compete with
/// it for the 2 cores, so all run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn assert_no_errors(out: &Outcome, what: &str) {
    let bad: Vec<String> = out
        .lines_with("framescope:")
        .into_iter()
        .filter(|l| l.contains("internal error") || l.contains("no HUD") || l.contains("GL HUD check"))
        .collect();
    assert!(bad.is_empty(), "{what}: {bad:?}\n{}", out.describe());
}

fn text_pixels(img: &Rgb, area: Rect) -> usize {
    image::count_in(img, area.clip(img.whole()), image::is_text)
}

/// The HUD's region in window coordinates for the default top-left placement (8 px margin),
/// within a 300x300 window: most of its lines.
const HUD_REGION: Rect = Rect {
    x0: 8,
    y0: 8,
    x1: 290,
    y1: 200,
};

/// Distinct colours of the HUD's background (neither text, nor its antialiased edges, nor
/// graph) in `area`: 1 for an opaque HUD (black), many for a translucent one over a varied app.
fn background_colours(img: &Rgb, area: Rect) -> usize {
    let mut seen = std::collections::HashSet::new();
    for y in area.y0..area.y1 {
        for x in area.x0..area.x1 {
            let p = img.at(x, y);
            if !image::is_text(p) && !image::is_text_edge(p) && !is_graph(p) {
                seen.insert(p);
            }
        }
    }
    seen.len()
}

/// The overlay's graph colour (80, 230, 120), also blended.
fn is_graph(p: [u8; 3]) -> bool {
    p[1] > p[0].saturating_add(60) && p[1] > p[2].saturating_add(40)
}

/// The HUD's background over the app's colours, `on` and `off` being the same frame with and
/// without the HUD: for each app colour under at least 100 background pixels of `area`, the
/// most common HUD colour over it. Returns (app colours, distinct HUD colours over them): an
/// opaque HUD has one colour whatever lies below, a translucent one as many as the app has.
fn background_over(on: &Rgb, off: &Rgb, area: Rect) -> (usize, usize) {
    use std::collections::HashMap;
    let mut by_app: HashMap<[u8; 3], HashMap<[u8; 3], usize>> = HashMap::new();
    for y in area.y0..area.y1 {
        for x in area.x0..area.x1 {
            let p = on.at(x, y);
            if !image::is_text(p) && !is_graph(p) {
                *by_app.entry(off.at(x, y)).or_default().entry(p).or_default() += 1;
            }
        }
    }
    let modal: std::collections::HashSet<[u8; 3]> = by_app
        .values()
        .filter(|hud| hud.values().sum::<usize>() >= 100)
        .filter_map(|hud| hud.iter().max_by_key(|(_, &n)| n).map(|(&c, _)| c))
        .collect();
    let apps = by_app.values().filter(|hud| hud.values().sum::<usize>() >= 100).count();
    (apps, modal.len())
}

/// Intersection over union of the text pixels of `a` and `b` in `area`: near 1 for two HUDs
/// with the same lines at the same places (only changing numbers differ), low when one is
/// flipped or moved.
fn text_overlap(a: &Rgb, b: &Rgb, area: Rect) -> f64 {
    let (mut both, mut any) = (0usize, 0usize);
    for y in area.y0..area.y1 {
        for x in area.x0..area.x1 {
            let (ta, tb) = (image::is_text(a.at(x, y)), image::is_text(b.at(x, y)));
            both += usize::from(ta && tb);
            any += usize::from(ta || tb);
        }
    }
    both as f64 / any.max(1) as f64
}

/// The one `GL HUD set up` line names the composite path.
fn assert_composite(out: &Outcome, what: &str, path: &str) {
    let setup = out.lines_with("framescope: GL HUD set up on ");
    assert!(
        !setup.is_empty() && setup.iter().all(|l| l.ends_with(&format!("composited with a {path}"))),
        "{what}: expected the {path} path: {setup:?}"
    );
}

// ---- glxgears -------------------------------------------------------------------------------

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

/// glxgears runs for `$2` seconds; after 3 s the root window is captured, the toggle key is
/// held for 0.4 s, and the root is captured again.
const GEARS_SCRIPT: &str = r#"timeout -s INT "$2" glxgears > "$1/gears.txt" 2>&1 & pid=$!
for i in $(seq 1 100); do xwininfo -name glxgears >/dev/null 2>&1 && break; sleep 0.1; done
sleep 3
xwininfo -name glxgears | awk '/Absolute upper-left X/{x=$NF} /Absolute upper-left Y/{y=$NF} END{print "window-at " x " " y}'
import -window root "$1/root.png"
xdotool keydown Shift_R; xdotool keydown F12; sleep 0.4; xdotool keyup F12; xdotool keyup Shift_R
sleep 0.6
import -window root "$1/root-hidden.png"
wait $pid; echo "gears-exit $?"
cat "$1/gears.txt""#;

fn gears_run(a: &Artifacts, x: &Xvfb, name: &str, config: &str, seconds: &str) -> (Sandbox, Outcome) {
    let mut sb = Sandbox::new(name);
    let dir = sb.dir.display().to_string();
    sb.display(x).set(
        "FRAMESCOPE_CONFIG",
        format!("{config},dump={dir}/gears.jsonl,screenshot=300,screenshot_path={dir}/shot-%N.png"),
    );
    let out = sb.run_under_framescope(a, "sh", &["-c", GEARS_SCRIPT, "sh", &dir, seconds], LIMIT);
    assert_eq!(out.code(), Some(0), "{name}: {}", out.describe());
    assert_eq!(
        out.lines_with("gears-exit ").pop().as_deref(),
        Some("gears-exit 124"),
        "{name}: timeout ends glxgears\n{}",
        out.describe()
    );
    assert_no_errors(&out, name);
    (sb, out)
}

fn window_at(out: &Outcome) -> (usize, usize) {
    let l = out
        .lines_with("window-at ")
        .pop()
        .unwrap_or_else(|| panic!("{}", out.describe()));
    let v: Vec<usize> = l.split_whitespace().skip(1).map(|n| n.parse().unwrap()).collect();
    (v[0], v[1])
}

#[test]
fn glxgears_shows_the_hud_in_a_root_capture_and_a_screenshot_and_keeps_its_frame_count() {
    let _serial = serial();
    for p in ["glxgears", "timeout", "import", "xwininfo", "xdotool"] {
        require_program(p);
    }
    let a = Artifacts::get();
    let x = Xvfb::start();
    // Two glxgears reports (10 s) with the default, opaque HUD (copied in); a shorter run with a
    // translucent one (blended quad); one run without for the reference images.
    let (on_sb, on) = gears_run(&a, &x, "glhud-gears-on", "hud=1,log=debug", "10.5");
    let (tr_sb, tr) = gears_run(
        &a,
        &x,
        "glhud-gears-translucent",
        "hud=1,hud_alpha=0.6,log=debug",
        "4.5",
    );
    let (off_sb, off) = gears_run(&a, &x, "glhud-gears-off", "hud=0", "4.5");
    assert_composite(&on, "glxgears", "copy");
    assert_composite(&tr, "glxgears hud_alpha=0.6", "quad");
    let (wx, wy) = window_at(&on);
    assert_eq!(window_at(&off), (wx, wy), "window moved between runs");
    assert_eq!(window_at(&tr), (wx, wy), "window moved between runs");

    // Root captures: the HUD's text in the window's top-left corner, nothing outside the window
    // changed, and the toggle key hides it.
    let root_off = Rgb::read(&off_sb.path("root.png"));
    let region = HUD_REGION.offset(wx, wy);
    let t_off = text_pixels(&root_off, region);
    let window = Rect {
        x0: wx,
        y0: wy,
        x1: wx + 300,
        y1: wy + 300,
    };
    for (name, sb, out) in [("opaque", &on_sb, &on), ("translucent", &tr_sb, &tr)] {
        let root_on = Rgb::read(&sb.path("root.png"));
        let root_hidden = Rgb::read(&sb.path("root-hidden.png"));
        let (t_on, t_hidden) = (text_pixels(&root_on, region), text_pixels(&root_hidden, region));
        println!("glxgears root capture ({name}): {t_on} text pixels in the HUD region with the HUD, {t_off} with hud=0, {t_hidden} after the toggle key");
        assert!(t_on >= 300 && t_on > 10 * t_off.max(1), "{name}: {t_on} vs {t_off}");
        assert!(
            t_hidden * 10 < t_on,
            "{name}: the toggle key left {t_hidden} text pixels"
        );
        assert_eq!(out.lines_with("framescope: HUD hidden").len(), 1, "{}", out.describe());
        let outside = image::count_differing(&root_on, &root_off, root_on.whole())
            - image::count_differing(&root_on, &root_off, window.clip(root_on.whole()));
        assert_eq!(outside, 0, "{name}: pixels outside glxgears' window differ");
    }

    // screenshot=300: the presented frame with the HUD, the same frame number without. The
    // opaque HUD's background is plain black over the gears, the translucent one shows them;
    // both have the same lines at the same places (a copy flipped upside down would not).
    let shot_on = Rgb::read(&on_sb.path("shot-300.png"));
    let shot_tr = Rgb::read(&tr_sb.path("shot-300.png"));
    let shot_off = Rgb::read(&off_sb.path("shot-300.png"));
    assert_eq!((shot_on.w, shot_on.h), (300, 300), "screenshot size = window size");
    let s_off = text_pixels(&shot_off, HUD_REGION);
    let mut texts = Vec::new();
    for (name, shot) in [("opaque", &shot_on), ("translucent", &shot_tr)] {
        let s_on = text_pixels(shot, HUD_REGION);
        let text = image::bbox(shot.whole(), |x, y| image::is_text(shot.at(x, y))).expect("text");
        let colours = background_colours(shot, text);
        println!("glxgears screenshot=300 ({name}): {s_on} text pixels with the HUD, {s_off} without; {colours} background colours in the text's box {text:?}");
        assert!(s_on >= 300 && s_on > 10 * s_off.max(1), "{name}: {s_on} vs {s_off}");
        assert!(
            (8..=30).contains(&text.x0) && (8..=30).contains(&text.y0),
            "{name}: HUD text starts at {text:?}: not anchored top-left"
        );
        if name == "opaque" {
            assert!(
                colours <= 4,
                "{name}: {colours} background colours: the gears show through"
            );
        } else {
            assert!(
                colours >= 16,
                "{name}: {colours} background colours: the gears do not show through"
            );
        }
        texts.push(text);
    }
    // The two runs may show different values (and graphs) at frame 300 (refreshes follow the
    // clock), but both start with the labels "FPS" and "Frame": a HUD flipped upside down would
    // have other lines, mirrored, there.
    let labels = Rect {
        x0: texts[0].x0,
        y0: texts[0].y0,
        x1: texts[0].x0 + 40,
        y1: texts[0].y0 + 30,
    };
    let overlap = text_overlap(&shot_on, &shot_tr, labels);
    println!("glxgears screenshot=300: text overlap opaque/translucent in the first two labels {overlap:.2}");
    assert!(
        overlap > 0.6,
        "opaque and translucent HUD text overlap only {overlap:.2}"
    );

    // glxgears' own frame counts against the dump, as gl_shim.rs checks them (windows after the
    // first, whose start no swap marks). Window k covers glxgears' frames S(k-1)..S(k)-1, from
    // the start of frame S(k-1) (the end of swap S(k-1)-1: dump frame S(k-1)-2) for n/fps
    // seconds. A swap descheduled for tens of ms on a loaded machine shifts the boundary it sits
    // on, so the window is anchored at its start and, separately, at its end (dump frame
    // S(k)-2); one of the two must agree within 1%.
    let reports = glxgears_reports(&on);
    assert!(
        reports.len() >= 2,
        "{} glxgears reports: {}",
        reports.len(),
        on.describe()
    );
    let d = dump::read(&on_sb.path("gears.jsonl"));
    assert_eq!(d.header["api"], "opengl");
    let idx = d.u64s("frame");
    assert_eq!(
        idx,
        (0..idx.len() as u64).collect::<Vec<_>>(),
        "frames 0..n without gaps (dropped: {})",
        d.summary
            .as_ref()
            .map_or("no summary".into(), |s| s["dropped_frames"].to_string())
    );
    let t = d.u64s("t_ns");
    let total: u64 = reports.iter().map(|r| r.0).sum();
    assert!(
        t.len() as f64 >= total as f64 * 0.99,
        "dump has {} frames, glxgears reported {total}",
        t.len()
    );
    let mut cumulative = reports[0].0 as usize;
    for (k, &(n, fps)) in reports.iter().enumerate().skip(1) {
        let first = cumulative.checked_sub(2).expect("reports start after frame 2");
        let last = first + n as usize;
        assert!(last < t.len(), "the dump ends before report {}", k + 1);
        let len_ns = (n as f64 / fps * 1e9) as u64;
        let from_start = t[first + 1..].iter().take_while(|&&ti| ti <= t[first] + len_ns).count() as u64;
        let from_end = t[..last].iter().rev().take_while(|&&ti| ti + len_ns >= t[last]).count() as u64;
        let diff = from_start.abs_diff(n).min(from_end.abs_diff(n)) as f64 / n as f64;
        println!(
            "glxgears with the HUD, report {}: glxgears {n} frames ({fps} fps), dump {from_start} (window from its start) / {from_end} (from its end), {:.3}% off",
            k + 1,
            diff * 100.0
        );
        assert!(
            diff <= 0.01,
            "window {}: dump {from_start}/{from_end} frames vs glxgears {n}",
            k + 1
        );
        cumulative += n as usize;
    }
}

// ---- our probe: every piece of state read back ------------------------------------------------

fn probe_run(
    a: &Artifacts,
    x: &Xvfb,
    name: &str,
    config: &str,
    env: &[(&str, &str)],
    profile: &str,
) -> (Sandbox, Outcome) {
    let mut sb = Sandbox::new(name);
    let shots = sb.path("shot-%N.png").display().to_string();
    sb.display(x).set(
        "FRAMESCOPE_CONFIG",
        format!("log=debug,{config},screenshot=30,screenshot_path={shots}"),
    );
    for (k, v) in env {
        sb.set(k, v);
    }
    let out = sb.run_under_framescope(a, PROBE, &["--profile", profile, "--frames", "40"], LIMIT);
    (sb, out)
}

#[test]
fn gl_state_is_unchanged_by_the_hud_in_core_compat_and_gl2_contexts() {
    let _serial = serial();
    let a = Artifacts::get();
    let x = Xvfb::start();
    let gl21: &[(&str, &str)] = &[
        ("MESA_GL_VERSION_OVERRIDE", "2.1"),
        ("MESA_GLSL_VERSION_OVERRIDE", "120"),
        ("MESA_EXTENSION_OVERRIDE", "-GL_ARB_vertex_array_object"),
    ];
    for (tag, profile, env, path) in [
        ("core", "core", &[][..], "GLSL 1.50, VAO, canvas"),
        ("compat", "compat", &[][..], "GLSL 1.50, VAO, compatibility profile"),
        (
            "gl21",
            "compat",
            gl21,
            "GL 2.1, GLSL 1.10, no VAO, compatibility profile",
        ),
    ] {
        let (off_sb, off) = probe_run(&a, &x, &format!("glhud-probe-{tag}-off"), "hud=0", env, profile);
        assert_eq!(off.code(), Some(0), "{tag} hud=0: {}", off.describe());
        let shot_off = Rgb::read(&off_sb.path("shot-30.png"));
        // The default opaque HUD is copied in, a translucent one blended with a quad (every
        // context here has glBlitFramebuffer: GL_ARB_framebuffer_object on GL 2.1).
        let mut shots = Vec::new();
        for (alpha, composite) in [("1", "copy"), ("0.6", "quad")] {
            let name = format!("{tag} hud_alpha={alpha}");
            let (on_sb, on) = probe_run(
                &a,
                &x,
                &format!("glhud-probe-{tag}-{composite}"),
                // One refresh (the first frame): both screenshots show the same text.
                &format!("hud=1,hud_alpha={alpha},hud_refresh_ms=10000"),
                env,
                profile,
            );
            assert_eq!(on.code(), Some(0), "{name}: {}", on.describe());
            assert!(
                on.stdout.contains("probe: 40 frames, state preserved"),
                "{name}: {}",
                on.describe()
            );
            assert_no_errors(&on, &name);
            let setup = on.lines_with("framescope: GL HUD set up on glx context");
            assert!(
                setup.len() == 1 && setup[0].contains(path),
                "{name}: expected one set-up on the '{path}' path: {setup:?}"
            );
            assert_composite(&on, &name, composite);
            // The probe destroys its context while current: the HUD's objects go with it.
            let freed = on.lines_with("framescope: GL HUD freed on glx context");
            assert!(
                freed.len() == 1 && freed[0].contains("GL objects deleted;"),
                "{name}: {freed:?}"
            );
            let shot_on = Rgb::read(&on_sb.path("shot-30.png"));
            assert_eq!((shot_on.w, shot_on.h), (320, 240), "{name}");
            let hud = assert_hud_pair(&shot_on, &shot_off, &format!("probe {name} frame 30"));
            // Under the HUD: the probe's clear colour and its orange triangle.
            let (apps, huds) = background_over(&shot_on, &shot_off, hud);
            println!(
                "probe {name}: state preserved over 40 swaps; HUD {}x{} at ({}, {}), {huds} background colour(s) over {apps} app colours",
                hud.x1 - hud.x0,
                hud.y1 - hud.y0,
                hud.x0,
                hud.y0
            );
            assert!(apps >= 2, "{name}: {apps} app colours under the HUD");
            if composite == "copy" {
                assert_eq!(huds, 1, "{name}: the app shows through the opaque HUD");
            } else {
                assert_eq!(huds, apps, "{name}: the app does not show through");
            }
            shots.push((shot_on, hud));
        }
        let overlap = text_overlap(&shots[0].0, &shots[1].0, shots[0].1);
        println!("probe {tag}: text overlap opaque/translucent {overlap:.2}");
        assert!(
            overlap > 0.6,
            "{tag}: opaque and translucent HUD text overlap only {overlap:.2}"
        );
    }
}

#[test]
fn a_panic_inside_the_gl_hud_leaves_the_state_restored_and_logs_once() {
    let _serial = serial();
    let a = Artifacts::get();
    let x = Xvfb::start();
    // FRAMESCOPE_FAULT=gl_hud panics after the first HUD was drawn, with the app's state
    // changed: the probe must still read every piece back unchanged, the swaps go on, and the
    // HUD is off for that context after one line.
    let (_sb, out) = probe_run(
        &a,
        &x,
        "glhud-fault",
        "hud=1",
        &[("FRAMESCOPE_FAULT", "gl_hud")],
        "core",
    );
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(
        out.stdout.contains("probe: 40 frames, state preserved"),
        "{}",
        out.describe()
    );
    let errors = out.lines_with("framescope: internal error in GL HUD");
    assert_eq!(errors.len(), 1, "{}", out.describe());
}

// ---- glmark2 --------------------------------------------------------------------------------

fn validation_lines(out: &Outcome) -> Vec<String> {
    out.stdout
        .lines()
        .filter(|l| l.contains("Validation: "))
        .map(str::to_string)
        .collect()
}

/// `glmark2 --validate` draws one frame per scene and reads it back without ever swapping, so
/// the HUD (drawn at swaps) never runs there: this checks that the shim with the HUD on leaves
/// validation as it is. The HUD's own state handling is checked by `gl_probe` (every piece of
/// state read back after each swap) and by the shim's self-check in the glmark2 benchmark runs.
#[test]
fn glmark2_validate_passes_with_the_hud() {
    let _serial = serial();
    let a = Artifacts::get();
    let x = Xvfb::start();
    for app in ["glmark2", "glmark2-es2"] {
        require_program(app);
        let args = ["-s", GLMARK_SIZE, "--validate"];
        let mut bare = Sandbox::new("glhud-validate-bare");
        // One Mesa shader cache for both runs: the second does not compile every scene again.
        let cache = bare.path("mesa-cache").display().to_string();
        bare.display(&x).set("MESA_SHADER_CACHE_DIR", &cache);
        let b = bare.run(Path::new(app), &args, LIMIT);
        assert_eq!(b.code(), Some(0), "bare {app}: {}", b.describe());
        let mut sb = Sandbox::new("glhud-validate");
        sb.display(&x)
            .set("FRAMESCOPE_CONFIG", "hud=1")
            .set("MESA_SHADER_CACHE_DIR", &cache);
        let out = sb.run_under_framescope(&a, app, &args, LIMIT);
        assert_eq!(out.code(), Some(0), "{app}: {}", out.describe());
        assert_no_errors(&out, app);
        let (bare_lines, lines) = (validation_lines(&b), validation_lines(&out));
        let successes = lines.iter().filter(|l| l.ends_with("Validation: Success")).count();
        println!(
            "{app} --validate with the HUD on: {successes} of {} scenes succeed ({:.1} s; bare {:.1} s)",
            lines.len(),
            out.elapsed.as_secs_f64(),
            b.elapsed.as_secs_f64()
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

/// Every context that swapped and was destroyed had its HUD freed while current, with every
/// object gone (`glIs*`, self-check) and no HUD state left behind; returns the set-ups.
fn assert_freed(out: &Outcome, what: &str) -> Vec<String> {
    let destroyed = out
        .lines_with("framescope: ")
        .into_iter()
        .filter(|l| {
            l.split(" destroyed after ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| n > 0)
        })
        .count();
    let freed = out.lines_with("framescope: GL HUD freed on ");
    let setups = out.lines_with("framescope: GL HUD set up on ");
    println!(
        "{what}: {} HUD set-ups, {destroyed} contexts destroyed after frames, {} HUDs freed",
        setups.len(),
        freed.len()
    );
    assert!(destroyed >= 1, "{what}: no context was destroyed\n{}", out.describe());
    assert_eq!(freed.len(), destroyed, "{what}: {freed:?}\n{}", out.describe());
    for l in &freed {
        assert!(
            l.contains("GL objects deleted (0 still alive); 0 HUD contexts left"),
            "{what}: {l}"
        );
    }
    setups
}

#[test]
fn each_glmark2_context_deletes_its_hud_objects() {
    let _serial = serial();
    require_program("glmark2");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let scenes = ["build:duration=0.6", "texture:duration=0.6", "shading:duration=0.6"];
    let mut args = vec!["-s", GLMARK_SIZE];
    for s in &scenes {
        args.extend(["-b", s]);
    }
    let mut sb = Sandbox::new("glhud-free");
    sb.display(&x)
        .set("FRAMESCOPE_CONFIG", "hud=1,log=debug")
        .set(CHECK.0, CHECK.1);
    let out = sb.run_under_framescope(&a, "glmark2", &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert_no_errors(&out, "glmark2");
    let setups = assert_freed(&out, "glmark2, one context per scene");
    assert_eq!(setups.len(), scenes.len(), "one HUD per scene's context: {setups:?}");
}

#[test]
fn gles3_and_gles2_contexts_get_the_hud_with_their_state_intact() {
    let _serial = serial();
    require_program("glmark2-es2");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let gles2: &[(&str, &str)] = &[
        ("MESA_GLES_VERSION_OVERRIDE", "2.0"),
        ("MESA_EXTENSION_OVERRIDE", "-GL_OES_vertex_array_object"),
    ];
    // effect2d draws the same image every frame (here its texture at 40% brightness, so no
    // pixel is as bright as the HUD's text): the screenshots with and without the HUD must
    // agree outside it. Two scenes, so two contexts are set up and one destroyed.
    let scenes = [
        "effect2d:kernel=0,0,0;0,0.4,0;0,0,0:normalize=false:duration=1",
        "texture:duration=0.8",
    ];
    // GLES 3 has glBlitFramebuffer: the opaque HUD is copied in; GLES 2 gets the quad.
    for (tag, env, path, composite) in [
        ("gles3", &[][..], "GLSL ES 3.00, VAO", "copy"),
        ("gles2", gles2, "GLES 2.0, GLSL ES 1.00, no VAO", "quad"),
    ] {
        let run = |name: &str, config: &str, scenes: &[&str]| {
            let mut sb = Sandbox::new(name);
            let dir = sb.dir.display().to_string();
            sb.display(&x)
                .set(
                    "FRAMESCOPE_CONFIG",
                    format!("{config},log=debug,dump={dir}/es.jsonl,screenshot=20,screenshot_path={dir}/shot-%N.png"),
                )
                .set(CHECK.0, CHECK.1);
            for (k, v) in env {
                sb.set(k, v);
            }
            let mut args = vec!["-s", GLMARK_SIZE];
            for s in scenes {
                args.extend(["-b", s]);
            }
            let out = sb.run_under_framescope(&a, "glmark2-es2", &args, LIMIT);
            assert_eq!(out.code(), Some(0), "{name}: {}", out.describe());
            assert_no_errors(&out, name);
            (sb, out)
        };
        let (on_sb, on) = run(&format!("glhud-{tag}"), "hud=1", &scenes);
        let (off_sb, _) = run(&format!("glhud-{tag}-off"), "hud=0", &scenes[..1]);
        let setups = assert_freed(&on, &format!("glmark2-es2 {tag}"));
        assert!(
            setups.len() == 2 && setups.iter().all(|l| l.contains("egl context") && l.contains(path)),
            "{tag}: expected two set-ups on the '{path}' path: {setups:?}"
        );
        assert_composite(&on, tag, composite);
        let d = dump::read(&on_sb.path("es.jsonl"));
        assert_eq!(d.header["api"], "opengles", "{tag}");
        assert!(d.frames.len() > 20, "{tag}: {} frames", d.frames.len());
        let shot_on = Rgb::read(&on_sb.path("shot-20.png"));
        let shot_off = Rgb::read(&off_sb.path("shot-20.png"));
        assert_eq!((shot_on.w, shot_on.h), (400, 300), "{tag}");
        let hud = assert_hud_pair(&shot_on, &shot_off, &format!("glmark2-es2 {tag} effect2d frame 20"));
        // Opaque either way: plain black over effect2d's image.
        let colours = background_colours(&shot_on, hud);
        println!(
            "glmark2-es2 {tag}: {} frames, HUD on '{path}' ({composite}), {}x{} at ({}, {}) in screenshot 20, {colours} background colour(s)",
            d.frames.len(),
            hud.x1 - hud.x0,
            hud.y1 - hud.y0,
            hud.x0,
            hud.y0
        );
        assert!(
            colours <= 4,
            "{tag}: {colours} background colours: the app shows through"
        );
    }
}

/// `screenshot=N` where frame N is the last the app presents (an app that draws only on
/// expose): the file is written while the app still runs, with nothing presented after frame N
/// and its context alive, and the readback never waited on the app's thread (GL 4.5 here: a
/// pixel pack buffer and a fence, fetched after the swap, encoded on framescope's thread).
#[test]
fn a_screenshot_of_the_last_presented_frame_is_written_while_the_app_waits() {
    let _serial = serial();
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("glhud-lastshot");
    let png = sb.path("last.png");
    sb.display(&x).set(
        "FRAMESCOPE_CONFIG",
        format!("hud=0,log=debug,screenshot=4,screenshot_path={}", png.display()),
    );
    let png_s = png.display().to_string();
    let out = sb.run_under_framescope(
        &a,
        PROBE,
        &["--profile", "compat", "--frames", "5", "--wait-for", &png_s],
        LIMIT,
    );
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(out.stdout.contains("waited: found"), "{}", out.describe());
    assert!(
        out.combined()
            .contains("screenshot of frame 4 read back without waiting; written on framescope's thread"),
        "{}",
        out.describe()
    );
    let shot = Rgb::read(&png);
    assert_eq!((shot.w, shot.h), (320, 240));
}

// ---- a small window -------------------------------------------------------------------------

/// More rows than half of a 300x300 window holds: every counter, the profiling preset.
const MANY_ROWS: &str = "hud_counters=all,hud_preset=profiling,counter_interval_ms=20";

/// Frame 70 of our GL app in a 300x300 window with `config`, as a screenshot: the same frame
/// whatever the clock, over a blue background that shows the HUD's box.
fn glapp_300(a: &Artifacts, x: &Xvfb, name: &str, config: &str) -> Rgb {
    let mut sb = Sandbox::new(name);
    let png = sb.path("shot.png");
    sb.display(x).set(
        "FRAMESCOPE_CONFIG",
        format!("screenshot=70,screenshot_path={},{config}", png.display()),
    );
    let app = a.glapp.display().to_string();
    let out = sb.run_under_framescope(a, &app, &["--frames", "80", "--width", "300", "--height", "300"], LIMIT);
    assert_eq!(out.code(), Some(0), "{name}: {}", out.describe());
    assert_no_errors(&out, name);
    assert!(png.is_file(), "{name}: no screenshot\n{}", out.describe());
    Rgb::read(&png)
}

/// glxgears in a 300x300 window until its frame 100 is written as a screenshot.
const SMALL_GEARS_SCRIPT: &str = r#"glxgears -geometry 300x300 > "$1/gears.txt" 2>&1 & pid=$!
i=0; while [ ! -f "$1/shot-100.png" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
sleep 1; kill $pid; wait $pid; echo "gears-exit $?""#;

/// In a 300x300 window the HUD covers at most half of it each way, every counter chosen, and
/// ends with whole rows: it takes a smaller face, drops graphs and then rows rather than run off
/// the window (tests/tests/hud_vulkan.rs checks the same on Vulkan). Our app gives the HUD's box
/// (the same frame with and without it); glxgears, whose background is as black as the HUD's,
/// shows the HUD's text within the half of the window the HUD may take.
#[test]
fn in_a_300x300_window_the_hud_covers_at_most_half_of_it() {
    let _serial = serial();
    require_program("glxgears");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let off = glapp_300(&a, &x, "glhud-small-off", "hud=0");
    let on = glapp_300(&a, &x, "glhud-small-all", MANY_ROWS);
    let hud = image::diff_bbox(&on, &off, on.whole(), 0).expect("a HUD");
    let (w, h) = (hud.x1 - hud.x0, hud.y1 - hud.y0);
    let text = text_pixels(&on, hud);
    println!(
        "GL app, 300x300 window: HUD {w}x{h} at ({}, {}), {text} text pixels",
        hud.x0, hud.y0
    );
    assert!(
        (8..=12).contains(&hud.x0) && (8..=12).contains(&hud.y0),
        "HUD at {hud:?}"
    );
    assert!(w <= 150 && h <= 150, "HUD {w}x{h} in a 300x300 window");
    assert!(text >= 300, "it still shows text: {text} text-coloured pixels");
    image::assert_whole_rows(&on, hud, "GL app, 300x300 window");

    let mut sb = Sandbox::new("glhud-small-gears");
    let dir = sb.dir.display().to_string();
    sb.display(&x).set(
        "FRAMESCOPE_CONFIG",
        format!("{MANY_ROWS},screenshot=100,screenshot_path={dir}/shot-%N.png"),
    );
    let out = sb.run_under_framescope(&a, "sh", &["-c", SMALL_GEARS_SCRIPT, "sh", &dir], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert_no_errors(&out, "glxgears 300x300");
    let png = sb.path("shot-100.png");
    assert!(png.is_file(), "no screenshot\n{}", out.describe());
    let gears = Rgb::read(&png);
    assert_eq!((gears.w, gears.h), (300, 300), "glxgears' window");
    // The HUD starts 8 px from the window's corner and takes at most 150 px each way.
    let half = Rect {
        x0: 8,
        y0: 8,
        x1: 158,
        y1: 158,
    };
    let all = image::bbox(gears.whole(), |x, y| image::is_text(gears.at(x, y))).expect("HUD text");
    let text = text_pixels(&gears, half);
    println!("glxgears, 300x300 window: HUD text in {all:?}, {text} text pixels");
    assert!(
        all.x1 <= half.x1 && all.y1 <= half.y1,
        "the HUD's text {all:?} runs past half the window"
    );
    assert!(text >= 300, "it still shows text: {text} text-coloured pixels");
    image::assert_whole_rows(&gears, half, "glxgears, 300x300 window");
}
