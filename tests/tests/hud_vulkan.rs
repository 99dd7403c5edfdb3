//! Issue 4: the live HUD drawn into the app's swapchain. Screenshots (`screenshot=N`) of the
//! same frame with and without the HUD, an Xvfb root capture, 50 window resizes while vkcube
//! runs, and the HUD on both swapchains of a two-window app; validation layer on throughout.

use framescope_tests::artifacts::require_program;
use framescope_tests::image::{
    assert_hud_pair, assert_whole_rows, count_in, diff_bbox, differs, is_text, is_text_edge, Rect, Rgb,
};
use framescope_tests::{dump, validation, Artifacts, Outcome, Sandbox, Xvfb};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(240);

fn hud_changed_fraction(on: &Rgb, off: &Rgb, hud: Rect) -> f64 {
    let total = (hud.x1 - hud.x0) * (hud.y1 - hud.y0);
    let changed = count_in(on, hud, |_| true)
        - (hud.y0..hud.y1)
            .flat_map(|y| (hud.x0..hud.x1).map(move |x| (x, y)))
            .filter(|&(x, y)| !differs(on.at(x, y), off.at(x, y), 0))
            .count();
    changed as f64 / total as f64
}

fn check(out: &Outcome, what: &str) {
    assert_eq!(out.code(), Some(0), "{what}\n{}", out.describe());
    validation::assert_clean(what, &out.combined());
    assert!(
        out.lines_with("framescope: internal error").is_empty() && !out.stderr.contains("no HUD"),
        "{what}\n{}",
        out.describe()
    );
}

fn screenshot_run(a: &Artifacts, x: &Xvfb, name: &str, config: &str, app: &str, args: &[&str]) -> (Sandbox, Outcome) {
    let mut sb = Sandbox::new(name);
    let shots = sb.path("shot-%N.png").display().to_string();
    sb.display(x)
        .with_validation()
        .set("FRAMESCOPE_CONFIG", format!("{config},screenshot_path={shots}"));
    let out = sb.run_under_framescope(a, app, args, LIMIT);
    check(&out, name);
    (sb, out)
}

/// Distinct colours of the HUD's background pixels (neither text, nor its antialiased edges,
/// nor graph) in `on`: an opaque background has a handful, a translucent one shows the app
/// through, which varies.
fn background_colours(on: &Rgb, hud: Rect) -> usize {
    let graph = |p: [u8; 3]| p[1] > p[0].saturating_add(60) && p[1] > p[2].saturating_add(40);
    let mut seen = std::collections::HashSet::new();
    for y in hud.y0..hud.y1 {
        for x in hud.x0..hud.x1 {
            let p = on.at(x, y);
            if !is_text(p) && !is_text_edge(p) && !graph(p) {
                seen.insert(p);
            }
        }
    }
    seen.len()
}

/// Both composite paths: the default opaque HUD (`hud_alpha=1`, copied in) and a translucent
/// one (blended with a quad), each against the same frame without HUD.
#[test]
fn vkcube_screenshot_shows_the_hud_over_the_same_frame() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let args = ["--c", "120"];
    let (off_sb, _) = screenshot_run(&a, &x, "hudshot-off", "hud=0,screenshot=100", "vkcube", &args);
    let off = Rgb::read(&off_sb.path("shot-100.png"));
    // The timeline rows off: the translucent HUD must cover enough of the cube to show its
    // colours through (vkcube's uniform background shows few); with the four timeline rows
    // the HUD's background showed 37 colours, under the 64 this asks for.
    for (name, config, opaque) in [
        ("hudshot-opaque", "screenshot=100,hud_timeline=0", true),
        (
            "hudshot-translucent",
            "screenshot=100,hud_alpha=0.6,hud_timeline=0",
            false,
        ),
    ] {
        let (on_sb, on_out) = screenshot_run(&a, &x, name, config, "vkcube", &args);
        let on_png = on_sb.path("shot-100.png");
        assert!(on_png.is_file(), "{name}: no screenshot\n{}", on_out.describe());
        let on = Rgb::read(&on_png);
        assert_eq!((on.w, on.h), (500, 500));
        let hud = assert_hud_pair(&on, &off, name);
        let colours = background_colours(&on, hud);
        eprintln!("{name}: {colours} distinct background colours in the HUD");
        if opaque {
            assert!(
                colours <= 16,
                "{name}: {colours} background colours: the app shows through"
            );
        } else {
            assert!(
                colours >= 64,
                "{name}: {colours} background colours: the app does not show through"
            );
        }
    }
}

/// Runs `script` (sh) under framescope with the HUD on or off; returns the sandbox.
fn run_script(a: &Artifacts, x: &Xvfb, name: &str, config: &str, script: &str) -> (Sandbox, Outcome) {
    let mut sb = Sandbox::new(name);
    sb.display(x).with_validation().set("FRAMESCOPE_CONFIG", config);
    let dir = sb.dir.display().to_string();
    let out = sb.run_under_framescope(a, "sh", &["-c", script, "sh", &dir], LIMIT);
    (sb, out)
}

/// `x y` of the only top-level window (vkcube's, which has no name).
const FIND_WINDOW: &str = r#"win=""; for i in $(seq 1 100); do win=$(xwininfo -root -children | awk '/^     0x/{print $1; exit}'); [ -n "$win" ] && break; sleep 0.1; done"#;

#[test]
fn xvfb_root_capture_shows_the_hud_on_vkcube() {
    require_program("vkcube");
    require_program("import");
    require_program("xwininfo");
    let a = Artifacts::get();
    let x = Xvfb::start();
    // vkcube runs until killed; the root window is captured after 4 s of frames.
    let script = format!(
        r#"vkcube --c 1000000 & pid=$!
{FIND_WINDOW}
sleep 4
xwininfo -id "$win" | awk '/Absolute upper-left X/{{x=$NF}} /Absolute upper-left Y/{{y=$NF}} END{{print "window-at " x " " y}}'
import -window root "$1/root.png"
kill $pid; wait $pid; exit 0"#
    );
    let (on_sb, on_out) = run_script(&a, &x, "hudroot-on", "hud=1", &script);
    assert_eq!(on_out.code(), Some(0), "{}", on_out.describe());
    validation::assert_clean("root capture with HUD", &on_out.combined());
    let (off_sb, off_out) = run_script(&a, &x, "hudroot-off", "hud=0", &script);
    assert_eq!(off_out.code(), Some(0), "{}", off_out.describe());
    let at = |o: &Outcome| -> (usize, usize) {
        let l = o
            .lines_with("window-at ")
            .pop()
            .unwrap_or_else(|| panic!("{}", o.describe()));
        let v: Vec<usize> = l.split_whitespace().skip(1).map(|n| n.parse().unwrap()).collect();
        (v[0], v[1])
    };
    let (wx, wy) = at(&on_out);
    assert_eq!(at(&off_out), (wx, wy), "window moved between runs");
    let on = Rgb::read(&on_sb.path("root.png"));
    let off = Rgb::read(&off_sb.path("root.png"));
    // The HUD's region in window coordinates: top-left, 8 px margin; its height and width are
    // at least those of the text lines (about a dozen rows of the fit's smaller face: the whole
    // HUD takes at most half of the 500x500 window). vkcube's cube spins with time, so the
    // captures of two runs only agree where the cube never goes: outside the window, and the
    // window's corners away from the HUD (vkcube's flat background).
    let hud = Rect {
        x0: 8,
        y0: 8,
        x1: 250,
        y1: 200,
    }
    .offset(wx, wy);
    let text_on = count_in(&on, hud, is_text);
    let text_off = count_in(&off, hud, is_text);
    assert!(
        text_on >= 300 && text_on > 10 * text_off.max(1),
        "{text_on} text-coloured pixels in the HUD region with the HUD, {text_off} without"
    );
    let changed = hud_changed_fraction(&on, &off, hud);
    assert!(changed > 0.5, "only {changed:.2} of the HUD region differs from hud=0");
    let outside = |x: usize, y: usize| x < wx || y < wy || x >= wx + 500 || y >= wy + 500;
    let mut diff_outside = 0;
    for y in 0..on.h {
        for x in 0..on.w {
            if outside(x, y) && differs(on.at(x, y), off.at(x, y), 0) {
                diff_outside += 1;
            }
        }
    }
    assert_eq!(diff_outside, 0, "pixels outside vkcube's window differ");
    for corner in [
        Rect {
            x0: 440,
            y0: 440,
            x1: 500,
            y1: 500,
        },
        Rect {
            x0: 0,
            y0: 450,
            x1: 50,
            y1: 500,
        },
        Rect {
            x0: 450,
            y0: 0,
            x1: 500,
            y1: 50,
        },
    ] {
        let c = corner.offset(wx, wy);
        assert!(
            diff_bbox(&on, &off, c, 2).is_none(),
            "window corner {corner:?} differs between the HUD and hud=0 runs"
        );
    }
}

#[test]
fn vkcube_survives_50_resizes_with_every_frame_dumped() {
    require_program("vkcube");
    require_program("xdotool");
    require_program("xwininfo");
    let a = Artifacts::get();
    let x = Xvfb::start();
    // vkcube runs until it gets Escape (after the resizes), not for a frame count: how many
    // frames the resizes take depends on the machine's speed (a loaded CI rehearsal saw 10000
    // frames end after 21 resizes). Focus plus an XTEST key press: vkcube ignores synthetic
    // (XSendEvent) keys.
    let script = format!(
        r#"vkcube & pid=$!
{FIND_WINDOW}
sleep 1
n=0
for i in $(seq 1 50); do
  xdotool windowsize "$win" $((200 + (i % 7) * 60)) $((150 + (i % 5) * 70)) && n=$((n+1))
  sleep 0.1
done
kill -0 $pid 2>/dev/null && echo "alive-after-resizes"
echo "resized $n"
xdotool windowfocus --sync "$win" key Escape
i=0; while kill -0 $pid 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
kill -0 $pid 2>/dev/null && echo "ignored-escape" && kill $pid
wait $pid; echo "vkcube-exit $?""#
    );
    let mut sb = Sandbox::new("hudresize");
    let dump_path = sb.path("resize.jsonl");
    sb.display(&x)
        .with_validation()
        .set("FRAMESCOPE_DUMP", dump_path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "hud=1");
    let dir = sb.dir.display().to_string();
    let out = sb.run_under_framescope(&a, "sh", &["-c", &script, "sh", &dir], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert_eq!(
        out.lines_with("resized ").pop().as_deref(),
        Some("resized 50"),
        "{}",
        out.describe()
    );
    assert!(
        !out.lines_with("alive-after-resizes").is_empty(),
        "vkcube ended during the resizes\n{}",
        out.describe()
    );
    assert_eq!(
        out.lines_with("vkcube-exit ").pop().as_deref(),
        Some("vkcube-exit 0"),
        "{}",
        out.describe()
    );
    validation::assert_clean("vkcube with 50 resizes", &out.combined());
    assert!(
        out.lines_with("framescope: internal error").is_empty(),
        "{}",
        out.describe()
    );
    let d = dump::read(&dump_path);
    let frames = d.frames.len() as u64;
    assert!(frames >= 50, "only {frames} frames");
    assert_eq!(
        d.u64s("frame"),
        (0..frames).collect::<Vec<u64>>(),
        "frames 0..N-1 without gaps"
    );
    assert!(d.summary.is_some(), "vkcube quit cleanly: the dump has its summary");
    // The swapchain really was recreated: sizes in the dump change.
    let mut sizes: Vec<(u64, u64)> = d
        .frames
        .iter()
        .filter_map(|f| Some((f["swapchain"]["width"].as_u64()?, f["swapchain"]["height"].as_u64()?)))
        .collect();
    sizes.dedup();
    assert!(
        sizes.len() >= 10,
        "only {} swapchain sizes seen: {sizes:?}",
        sizes.len()
    );
}

#[test]
fn two_swapchains_in_one_present_both_show_the_hud() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let app = a.testapp.display().to_string();
    let args = ["--frames", "60", "--windows", "2", "--draws", "40"];
    let (on_sb, on_out) = screenshot_run(&a, &x, "hud2-on", "screenshot=50", &app, &args);
    let (off_sb, _) = screenshot_run(&a, &x, "hud2-off", "hud=0,screenshot=50", &app, &args);
    for name in ["shot-50.png", "shot-50-1.png"] {
        let p = on_sb.path(name);
        assert!(p.is_file(), "{name} missing\n{}", on_out.describe());
        let on = Rgb::read(&p);
        let off = Rgb::read(&off_sb.path(name));
        assert_hud_pair(&on, &off, name);
    }
}

/// The HUD's submit waits the app's present semaphores; an app may destroy one as soon as its
/// own work that used it is done (libplacebo does), so the layer must first finish the HUD
/// work that waits it. The validation layer below reports the destroy otherwise, every frame.
#[test]
fn present_semaphores_destroyed_after_the_apps_own_fence_are_valid() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let app = a.testapp.display().to_string();
    let args = ["--frames", "40", "--recreate-semaphores"];
    let (sb, out) = screenshot_run(&a, &x, "hud-recreate-sems", "screenshot=30", &app, &args);
    assert!(sb.path("shot-30.png").is_file(), "{}", out.describe());
}

/// Screenshots of the regions scene at frame 70 with `base` config and, in turn, `hud=0`,
/// `plain` and `table`: the HUD rectangles without and with the table, and the table's shot.
fn table_rects(tag: &str, base: &str, plain: &str, table: &str) -> (Rect, Rect, Rgb) {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let app = a.testapp.display().to_string();
    // Large enough for the whole HUD with its tables within half of it (it cuts its last
    // rows in a smaller window).
    let args = [
        "--scene", "regions", "--frames", "80", "--width", "1280", "--height", "960",
    ];
    let shot = |name: &str, config: &str| {
        let (sb, out) = screenshot_run(&a, &x, name, &format!("{base},screenshot=70,{config}"), &app, &args);
        let png = sb.path("shot-70.png");
        assert!(png.is_file(), "{name}: no screenshot\n{}", out.describe());
        Rgb::read(&png)
    };
    let off = shot(&format!("{tag}-hud-off"), "hud=0");
    let without = shot(&format!("{tag}-hud-plain"), plain);
    let with = shot(&format!("{tag}-hud-table"), table);
    let plain_rect = assert_hud_pair(&without, &off, &format!("HUD without the {tag} table"));
    let table_rect = assert_hud_pair(&with, &off, &format!("HUD with the {tag} table"));
    (plain_rect, table_rect, with)
}

#[test]
fn top_regions_table_adds_rows_to_the_hud() {
    let (plain_rect, table_rect, table) = table_rects("regions", "samples=label", "hud_regions=0", "hud_regions=5");
    let (h0, h1) = (plain_rect.y1 - plain_rect.y0, table_rect.y1 - table_rect.y0);
    // A title row plus the scene's regions (Frame, Main, Shadows, Post, and its passes): at
    // least four more text rows of the 13 px font.
    assert!(h1 >= h0 + 4 * 13, "HUD height {h1} with the table vs {h0} without");
    let extra = Rect {
        x0: table_rect.x0,
        y0: plain_rect.y1,
        x1: table_rect.x1,
        y1: table_rect.y1,
    };
    let text = count_in(&table, extra, is_text);
    assert!(text >= 200, "only {text} text-coloured pixels in the table rows");
}

/// With `samples=draw`, `hud_draws` adds a "top draws" table under the regions: a title and
/// one row per draw (the regions scene has 111 draws, so all five rows fill).
#[test]
fn top_draws_table_adds_rows_to_the_hud() {
    let (plain_rect, table_rect, _) = table_rects("draws", "samples=draw,hud_regions=0", "hud_draws=0", "hud_draws=5");
    let (h0, h1) = (plain_rect.y1 - plain_rect.y0, table_rect.y1 - table_rect.y0);
    // A title row plus five draws: six more text rows of the 13 px font.
    assert!(h1 >= h0 + 6 * 13, "HUD height {h1} with the table vs {h0} without");
}

/// `hud_counters` adds rows by device for the chosen counters the catalogue has (CPU, the
/// app's own use and RAM here; the GPU sensor names are absent on lavapipe and give no row).
/// Frame 70 of the test app in a `size` window with `config` (counters read every 20 ms), as
/// a screenshot.
fn frame_70(a: &Artifacts, x: &Xvfb, app: &str, size: [&str; 2], name: &str, config: &str) -> Rgb {
    let args = [
        "--frames",
        "80",
        "--width",
        size[0],
        "--height",
        size[1],
        "--present-mode",
        "fifo",
    ];
    let (sb, out) = screenshot_run(
        a,
        x,
        name,
        &format!("screenshot=70,counter_interval_ms=20,{config}"),
        app,
        &args,
    );
    let png = sb.path("shot-70.png");
    assert!(png.is_file(), "{name}: no screenshot\n{}", out.describe());
    Rgb::read(&png)
}

#[test]
fn counter_lines_add_rows_to_the_hud() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let app = a.testapp.display().to_string();
    // Large enough for the whole HUD within half of it (it cuts its last rows in a smaller
    // window).
    let shot = |name: &str, config: &str| frame_70(&a, &x, &app, ["1280", "960"], name, config);
    let off = shot("counters-hud-off", "hud=0");
    let plain = shot("counters-hud-none", "hud_counters=none");
    let lines = shot(
        "counters-hud-four",
        "hud_counters=cpu_load_pct:ram_used_bytes:ram_total_bytes:proc_rss_bytes:gpu_temp_c",
    );
    let plain_rect = assert_hud_pair(&plain, &off, "HUD without counter lines");
    let lines_rect = assert_hud_pair(&lines, &off, "HUD with counter lines");
    let (h0, h1) = (plain_rect.y1 - plain_rect.y0, lines_rect.y1 - lines_rect.y0);
    // Device rows of the 13 px font: CPU, the app's own (RSS), RAM (used / total); the GPU
    // row has no source here (gpu_temp_c: none on lavapipe), so no row.
    assert!(
        h1 >= h0 + 3 * 13 && h1 < h0 + 5 * 13,
        "HUD height {h1} with counters vs {h0} without"
    );
    let extra = Rect {
        x0: lines_rect.x0,
        y0: plain_rect.y1,
        x1: lines_rect.x1,
        y1: lines_rect.y1,
    };
    let text = count_in(&lines, extra, is_text);
    assert!(text >= 200, "only {text} text-coloured pixels in the counter rows");
}

/// The HUD's first content is rendered at the first present, before any frame has its numbers;
/// it is replaced as soon as the history has them, not a refresh period later: with the longest
/// refresh period (10 s), frame 40's HUD already shows the frame-time graph (in a window large
/// enough for the graphs: a smaller one drops them before any row).
#[test]
fn the_first_hud_content_with_numbers_does_not_wait_for_the_refresh_period() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let app = a.testapp.display().to_string();
    let args = ["--frames", "50", "--width", "1280", "--height", "960"];
    let (sb, out) = screenshot_run(
        &a,
        &x,
        "hud-first-content",
        "hud_refresh_ms=10000,screenshot=40",
        &app,
        &args,
    );
    let png = sb.path("shot-40.png");
    assert!(png.is_file(), "no screenshot\n{}", out.describe());
    let img = Rgb::read(&png);
    // overlay::ui::GRAPH_RGB, the graphs' line colour.
    let g = [80u8, 230, 120];
    let near = |p: [u8; 3]| p.iter().zip(g).all(|(&a, b)| a.abs_diff(b) <= 40);
    let graph = count_in(&img, img.whole(), near);
    assert!(
        graph >= 20,
        "only {graph} graph-coloured pixels: the HUD still shows its first, empty content"
    );
}

/// The most frequent colour of the HUD's background pixels.
fn dominant_background(on: &Rgb, hud: Rect) -> [u8; 3] {
    let mut counts = std::collections::HashMap::new();
    for y in hud.y0..hud.y1 {
        for x in hud.x0..hud.x1 {
            let p = on.at(x, y);
            if !is_text(p) {
                *counts.entry(p).or_insert(0usize) += 1;
            }
        }
    }
    counts
        .into_iter()
        .max_by_key(|&(_, n)| n)
        .map(|(p, _)| p)
        .expect("HUD pixels")
}

/// B8G8R8A8_SRGB swapchains: the opaque HUD (copied) stores the same bytes as on a UNORM
/// swapchain, and the translucent one (blended after decoding to linear) shows the app through.
#[test]
fn srgb_swapchains_show_the_same_hud() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let app = a.testapp.display().to_string();
    let shot = |name: &str, config: &str, srgb: bool| {
        let mut args = vec!["--frames", "40", "--draws", "40"];
        if srgb {
            args.push("--srgb");
        }
        let (sb, out) = screenshot_run(&a, &x, name, &format!("screenshot=30,{config}"), &app, &args);
        let png = sb.path("shot-30.png");
        assert!(png.is_file(), "{name}: no screenshot\n{}", out.describe());
        Rgb::read(&png)
    };
    let unorm_off = shot("unorm-off", "hud=0", false);
    let unorm_opaque = shot("unorm-opaque", "hud=1", false);
    let srgb_off = shot("srgb-off", "hud=0", true);
    let srgb_opaque = shot("srgb-opaque", "hud=1", true);
    let srgb_translucent = shot("srgb-translucent", "hud_alpha=0.6", true);
    let unorm_hud = assert_hud_pair(&unorm_opaque, &unorm_off, "UNORM opaque");
    let srgb_hud = assert_hud_pair(&srgb_opaque, &srgb_off, "SRGB opaque");
    let (u, s) = (
        dominant_background(&unorm_opaque, unorm_hud),
        dominant_background(&srgb_opaque, srgb_hud),
    );
    assert_eq!(u, s, "opaque HUD background on UNORM vs SRGB");
    // Translucent: every background pixel lies between the opaque background and the app's
    // pixel under it (a blend), and is neither of them where those differ.
    let hud = assert_hud_pair(&srgb_translucent, &srgb_off, "SRGB translucent");
    let (mut blended, mut total) = (0, 0);
    for y in hud.y0..hud.y1 {
        for x in hud.x0..hud.x1 {
            let (t, app) = (srgb_translucent.at(x, y), srgb_off.at(x, y));
            if is_text(t) || app == s || srgb_opaque.at(x, y) != s {
                continue;
            }
            total += 1;
            let between = (0..3)
                .all(|c| t[c] >= app[c].min(s[c]).saturating_sub(1) && t[c] <= app[c].max(s[c]).saturating_add(1));
            blended += usize::from(between && t != app && t != s);
        }
    }
    assert!(total > 1000, "only {total} background pixels to compare");
    assert!(
        blended * 10 >= total * 9,
        "SRGB translucent: only {blended} of {total} background pixels are a blend of the HUD and the app"
    );
}

/// MangoHud (an implicit layer, below framescope under `framescope run`) draws its HUD
/// top-left over the presented image, where framescope's default HUD would be: framescope's goes
/// to the opposite corner and says so once. On a 500 × 500 window the two boxes must not meet:
/// MangoHud's box is measured in a capture of the window with framescope's HUD off, framescope's
/// in its own screenshot (taken before MangoHud draws) against the same frame without its HUD.
#[test]
fn the_hud_stays_clear_of_mangohuds_on_a_small_window() {
    require_program("import");
    require_program("xwininfo");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let app = a.testapp.display().to_string();
    let fs = a.framescope.display().to_string();
    let size = ["--width", "500", "--height", "500"];

    // MangoHud alone: a capture of the window while the app runs.
    let mut sb = Sandbox::new("hudmango-alone");
    sb.display(&x).set("MANGOHUD", "1").set("FRAMESCOPE_CONFIG", "hud=0");
    let dir = sb.dir.display().to_string();
    let script = r#""$2" run -- "$3" --frames 100000 --width 500 --height 500 --sleep-ms 5 > "$1/app.txt" 2>&1 & pid=$!
for i in $(seq 1 300); do xwininfo -name 'framescope-testapp 0' >/dev/null 2>&1 && break; sleep 0.1; done
sleep 2
id=$(xwininfo -name 'framescope-testapp 0' | awk '/Window id:/{print $4}')
import -window "$id" "$1/mango.png"
kill $pid; wait $pid
cat "$1/app.txt""#;
    let out = sb.run(
        std::path::Path::new("/bin/sh"),
        &["-c", script, "sh", &dir, &fs, &app],
        LIMIT,
    );
    let capture = Rgb::read(&sb.path("mango.png"));
    assert_eq!((capture.w, capture.h), (500, 500), "{}", out.describe());
    let background = capture.at(capture.w / 2, capture.h - 2);
    let mango = framescope_tests::image::bbox(capture.whole(), |x, y| differs(capture.at(x, y), background, 8))
        .unwrap_or_else(|| panic!("no MangoHud in the capture: {}", out.describe()));
    assert!(mango.x0 < 40 && mango.y0 < 40, "MangoHud is not top-left: {mango:?}");

    // framescope's HUD with MangoHud on, against the same frame without it.
    let mut shots = Vec::new();
    for (name, config) in [
        ("hudmango-off", "hud=0,screenshot=50"),
        ("hudmango-on", "screenshot=50"),
    ] {
        let mut sb = Sandbox::new(name);
        let path = sb.path("shot-%N.png").display().to_string();
        sb.display(&x)
            .with_validation()
            .set("MANGOHUD", "1")
            .set("FRAMESCOPE_CONFIG", format!("{config},screenshot_path={path}"));
        let mut args = vec!["--frames", "60"];
        args.extend(size);
        let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
        check(&out, name);
        let moved = out.lines_with(
            "framescope: MangoHud is active and draws its HUD top-left: framescope's HUD goes bottom-right",
        );
        assert_eq!(
            moved.len(),
            usize::from(name == "hudmango-on"),
            "{name}: {}",
            out.describe()
        );
        shots.push(Rgb::read(&sb.path("shot-50.png")));
    }
    let (off, on) = (&shots[0], &shots[1]);
    let ours = diff_bbox(on, off, on.whole(), 0).expect("no HUD in the screenshot");
    assert!(
        ours.x1 + 8 == on.w && ours.y1 + 8 == on.h,
        "HUD at {ours:?} in a {}x{} image: not bottom-right",
        on.w,
        on.h
    );
    let apart = ours.x0 >= mango.x1 || ours.x1 <= mango.x0 || ours.y0 >= mango.y1 || ours.y1 <= mango.y0;
    assert!(apart, "framescope's HUD {ours:?} meets MangoHud's {mango:?}");
}

/// vkd3d-triangle presents only when its window is exposed: `screenshot=0` must be written
/// while it sits idle after that present, not at some later present or at teardown.
#[test]
fn a_screenshot_of_an_app_that_presents_only_on_expose_is_written_before_it_exits() {
    require_program("vkd3d-triangle");
    require_program("xdotool");
    require_program("xwininfo");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("hudshot-expose");
    let shot = sb.path("shot-0.png");
    let script = r#"vkd3d-triangle & pid=$!
i=0; while [ ! -f "$1/shot-0.png" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
[ -f "$1/shot-0.png" ] && echo "shot-while-running" || echo "no-shot-while-running"
kill -0 $pid 2>/dev/null && echo "app-still-running"
for w in $(xwininfo -root -children | awk '/^     0x/{print $1}'); do xdotool key --window "$w" Escape 2>/dev/null; done
wait $pid"#;
    let config = format!(
        "hud=0,screenshot=0,screenshot_path={}",
        sb.path("shot-%N.png").display()
    );
    sb.display(&x).with_validation().set("FRAMESCOPE_CONFIG", config);
    let dir = sb.dir.display().to_string();
    let out = sb.run_under_framescope(&a, "sh", &["-c", script, "sh", &dir], LIMIT);
    check(&out, "vkd3d-triangle screenshot");
    assert!(
        !out.lines_with("app-still-running").is_empty(),
        "vkd3d-triangle quit by itself: {}",
        out.describe()
    );
    assert!(
        !out.lines_with("shot-while-running").is_empty(),
        "the screenshot of frame 0 was not written while the app idled: {}",
        out.describe()
    );
    let img = Rgb::read(&shot);
    assert!(img.w > 0 && img.h > 0);
}

/// In a small window the HUD covers at most half of it each way, every counter chosen, and ends
/// with whole rows: it takes a smaller face, drops graphs and then rows rather than run off the
/// window. tests/tests/gl_hud.rs checks the same on GL.
#[test]
fn in_a_300x300_window_the_hud_covers_at_most_half_of_it() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let app = a.testapp.display().to_string();
    let shot = |name: &str, config: &str| frame_70(&a, &x, &app, ["300", "300"], name, config);
    let off = shot("small-hud-off", "hud=0");
    let on = shot("small-hud-all", "hud_counters=all,hud_preset=profiling");
    let hud = diff_bbox(&on, &off, on.whole(), 0).expect("a HUD");
    let (w, h) = (hud.x1 - hud.x0, hud.y1 - hud.y0);
    println!("300x300 window: HUD {w}x{h} at ({}, {})", hud.x0, hud.y0);
    assert!(w <= 150 && h <= 150, "HUD {w}x{h} in a 300x300 window");
    let text = count_in(&on, hud, is_text);
    assert!(text > 300, "it still shows text: {text} text-coloured pixels");
    assert_whole_rows(&on, hud, "300x300 window");
}
