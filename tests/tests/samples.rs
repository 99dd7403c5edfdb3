//! Issue 6: begin/end samples per command buffer, render pass, debug label and draw, checked
//! against the known answers of our test app's `--scene regions`.

use framescope_tests::{dump, validation, Artifacts, Sandbox, Xvfb};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);
const W: u64 = 320;
const H: u64 = 240;

/// `config`: the FRAMESCOPE_CONFIG, e.g. `samples=draw,sample_stats=draw`. The known-answer
/// checks need every draw and the statistics of every frame: `sample_budget=100` and
/// `sample_stats_every=1` (a config may override them).
fn run_regions(tag: &str, extra: &[&str], config: &str) -> dump::Dump {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new(tag);
    let path = sb.path("regions.jsonl");
    sb.display(&x)
        .with_validation()
        .set("FRAMESCOPE_DUMP", path.display().to_string());
    sb.set(
        "FRAMESCOPE_CONFIG",
        format!("sample_budget=100,sample_stats_every=1,{config}"),
    );
    let app = a.testapp.display().to_string();
    let (w, h) = (W.to_string(), H.to_string());
    let mut args = vec!["--scene", "regions", "--frames", "12", "--width", &w, "--height", &h];
    args.extend_from_slice(extra);
    let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{tag}: {}", out.describe());
    validation::assert_clean(tag, &out.combined());
    dump::read(&path)
}

fn samples<'a>(f: &'a Value, scope: &str) -> Vec<&'a Value> {
    f["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .filter(|s| s["scope"] == scope)
        .collect()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Per label: (draws, Σ vertex_count, Σ ia_vertices, Σ draw gpu_ns, Σ fs_invocations), the
/// statistics summed over the samples of `stats_scope` (`draw` or `renderpass`); samples of
/// the other scope must carry none.
fn draws_by_label(f: &Value, stats_scope: &str) -> BTreeMap<String, (u64, u64, u64, u64, u64)> {
    let mut m = BTreeMap::new();
    for s in samples(f, "draw") {
        let e = m
            .entry(s["label"].as_str().unwrap().to_string())
            .or_insert((0, 0, 0, 0, 0));
        e.0 += 1;
        e.1 += u(&s["params"]["vertex_count"]);
        e.3 += u(&s["gpu_ns"]);
    }
    for scope in ["draw", "renderpass"] {
        for s in samples(f, scope) {
            if scope != stats_scope {
                assert!(s.get("stats").is_none(), "statistics on a {scope} sample: {s}");
                continue;
            }
            let e = m.get_mut(s["label"].as_str().unwrap()).expect("a label with draws");
            e.2 += u(&s["stats"]["ia_vertices"]);
            e.4 += u(&s["stats"]["fs_invocations"]);
        }
    }
    m
}

fn label_time(f: &Value) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for s in samples(f, "label") {
        *m.entry(s["label"].as_str().unwrap().to_string()).or_insert(0) += u(&s["gpu_ns"]);
    }
    m
}

/// The scene's known answers, whatever the thread/secondary split and wherever the statistics
/// are taken.
fn check_regions_frame(f: &Value, stats_scope: &str) {
    check_regions_frame_views(f, stats_scope, 1);
}

/// The known answers when every draw renders `views` views (multiview): draw parameters are
/// what the app recorded; statistics count every view's fragments, and every view's vertices
/// or only one view's (how a multiview implementation runs vertex work is its own choice, the
/// same for every draw).
fn check_regions_frame_views(f: &Value, stats_scope: &str, views: u64) {
    let d = draws_by_label(f, stats_scope);
    let keys: Vec<&str> = d.keys().map(String::as_str).collect();
    assert_eq!(keys, ["Frame/Main", "Frame/Post", "Frame/Shadows"], "{f}");
    let (n, verts, ia, _, fs) = d["Frame/Post"];
    assert_eq!((n, verts), (1, 3), "Post: one full-screen triangle");
    let k = ia / 3;
    assert!(
        ia == 3 * k && (k == 1 || k == views),
        "Post ia_vertices {ia} with {views} views"
    );
    let (n, verts, ia, _, _) = d["Frame/Shadows"];
    assert_eq!(
        (n, verts, ia),
        (10, 3000, 3000 * k),
        "Shadows: 10 draws of 300 vertices"
    );
    let (n, verts, ia, _, _) = d["Frame/Main"];
    assert_eq!((n, verts, ia), (100, 3600, 3600 * k), "Main: 100 draws of 36 vertices");
    // llvmpipe counts the fragments along the diagonal that clipping adds to the triangle
    // twice (the probe saw 66560 for a 256x256 quad), so on it the count may exceed W*H by
    // those edge quads; it may never fall short.
    let px = W * H * views;
    assert!(
        (px..=px + px / 20).contains(&fs),
        "Post fs_invocations {fs} vs {px} ({views} views of {W}x{H})"
    );
    let labels = label_time(f);
    let busy = u(&f["gpu_busy_ns"]);
    for (name, (_, _, _, draw_ns, _)) in &d {
        let label_ns = labels[name];
        assert!(*draw_ns <= label_ns, "{name}: draws {draw_ns} ns > label {label_ns} ns");
    }
    assert!(
        labels["Frame"] <= busy,
        "label Frame {} ns > frame GPU busy {busy} ns",
        labels["Frame"]
    );
    for s in f["samples"].as_array().unwrap() {
        assert_eq!(s["overwritten"], false, "{s}");
    }
}

#[test]
fn several_submissions_per_frame_give_the_same_answers() {
    // Three submissions per frame retire in the same poll: their blocks are read together, one
    // call per query pool (timing.rs, span_reads.rs), and each must still get its own values.
    let d = run_regions("regions-submits", &["--submits", "3"], "samples=draw,sample_stats=draw");
    assert_eq!(d.frames.len(), 12);
    for f in &d.frames[2..] {
        assert_eq!(u(&f["submits"]), 3, "{f}");
        assert_eq!(samples(f, "cmdbuf").len(), 3, "one primary per submission: {f}");
        // The known answers per label region (the "Frame" label spans the three submissions
        // and the gaps between them, so it is not compared with the frame's busy time here).
        let d = draws_by_label(f, "draw");
        let got: Vec<(&str, u64, u64)> = d.iter().map(|(k, v)| (k.as_str(), v.0, v.2)).collect();
        assert_eq!(
            got,
            [
                ("Frame/Main", 100, 3600),
                ("Frame/Post", 1, 3),
                ("Frame/Shadows", 10, 3000)
            ],
            "{f}"
        );
        let fs = d["Frame/Post"].4;
        assert!((W * H..=W * H + W * H / 20).contains(&fs), "Post fs_invocations {fs}");
        for s in f["samples"].as_array().unwrap() {
            assert_eq!(s["overwritten"], false, "{s}");
            assert!(s["gpu_ns"].as_u64().is_some(), "{s}");
        }
    }
}

#[test]
fn draw_mode_gives_the_known_answers_of_the_regions_scene() {
    let d = run_regions("regions-draw", &[], "samples=draw");
    assert_eq!(d.frames.len(), 12);
    for f in &d.frames[2..] {
        check_regions_frame(f, "renderpass");
        // One recording thread: exactly one sample per label region and pass.
        let mut labels: Vec<&str> = samples(f, "label")
            .iter()
            .map(|s| s["label"].as_str().unwrap())
            .collect();
        labels.sort_unstable();
        assert_eq!(labels, ["Frame", "Frame/Main", "Frame/Post", "Frame/Shadows"]);
        assert_eq!(samples(f, "renderpass").len(), 3);
        assert_eq!(samples(f, "cmdbuf").len(), 1);
        // Draws sit inside their label's interval.
        for dr in samples(f, "draw") {
            let l = samples(f, "label")
                .into_iter()
                .find(|l| l["label"] == dr["label"])
                .unwrap();
            assert!(
                u(&l["gpu_begin_ns"]) <= u(&dr["gpu_begin_ns"]) && u(&dr["gpu_end_ns"]) <= u(&l["gpu_end_ns"]),
                "{dr} not in {l}"
            );
        }
    }
}

#[test]
fn four_recording_threads_with_secondaries_give_the_same_answers() {
    let d = run_regions(
        "regions-threads",
        &["--threads", "4", "--secondary"],
        "samples=draw,sample_stats=draw",
    );
    for f in &d.frames[2..] {
        check_regions_frame(f, "draw");
    }
}

#[test]
fn resubmitting_a_command_buffer_before_its_results_are_read_marks_overwritten() {
    // SIMULTANEOUS_USE, submitted twice per frame with no wait: both executions share the
    // query slots, so no numbers may be reported for either.
    let d = run_regions(
        "resubmit-sim",
        &["--reuse", "--simultaneous", "--resubmit-twice"],
        "samples=draw,sample_stats=draw",
    );
    for f in &d.frames[2..] {
        let draws = samples(f, "draw");
        assert_eq!(draws.len(), 222, "two submissions of 111 draws");
        for s in &draws {
            assert_eq!(s["overwritten"], true, "{s}");
            assert!(
                s["gpu_ns"].is_null() && s.get("stats").is_none(),
                "an overwritten sample reports numbers: {s}"
            );
        }
    }
    // Without SIMULTANEOUS_USE the app waits between the two submissions: the first one's
    // results are read before the resubmit, and both are right.
    let d = run_regions(
        "resubmit-wait",
        &["--reuse", "--resubmit-twice"],
        "samples=draw,sample_stats=draw",
    );
    for f in &d.frames[2..] {
        let post: Vec<&Value> = samples(f, "draw")
            .into_iter()
            .filter(|s| s["label"] == "Frame/Post")
            .collect();
        assert_eq!(post.len(), 2);
        for s in post {
            assert_eq!(s["overwritten"], false, "{s}");
            assert_eq!(s["stats"]["ia_vertices"], 3, "{s}");
        }
    }
}

/// Statistics on one frame in N: the passes of frames 0, 4 and 8 carry them (with their known
/// answers), the others none, and each frame counts the command buffers that took them.
#[test]
fn statistics_rotate_across_frames() {
    let d = run_regions("stats-rotation", &[], "samples=renderpass,sample_stats_every=4");
    assert!(d.frames.len() >= 12, "{} frames", d.frames.len());
    for f in &d.frames {
        let n = u(&f["frame"]);
        let carried = u(&f["stats_command_buffers"]);
        let passes = samples(f, "renderpass");
        assert!(!passes.is_empty(), "frame {n} has no pass samples");
        let with_stats = passes.iter().filter(|s| s.get("stats").is_some()).count();
        if n.is_multiple_of(4) {
            assert!(carried > 0, "frame {n}: {f}");
            assert_eq!(with_stats, passes.len(), "frame {n}: every pass carries statistics");
            for s in &passes {
                assert!(u(&s["stats"]["ia_vertices"]) > 0, "{s}");
            }
        } else {
            assert_eq!(carried, 0, "frame {n}: {f}");
            assert_eq!(with_stats, 0, "frame {n}: no pass carries statistics");
        }
    }
}

#[test]
fn vkcube_in_every_samples_mode_is_validation_clean() {
    framescope_tests::artifacts::require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    // (config, sample scopes, scope whose samples carry statistics)
    for (mode, scopes, stats_on) in [
        ("samples=off", &[][..], ""),
        ("samples=cmdbuf", &["cmdbuf"][..], ""),
        ("samples=renderpass", &["cmdbuf", "renderpass"][..], "renderpass"),
        ("samples=label", &["cmdbuf", "renderpass"][..], "renderpass"),
        ("samples=draw", &["cmdbuf", "draw", "renderpass"][..], "renderpass"),
        (
            "samples=draw,sample_stats=draw",
            &["cmdbuf", "draw", "renderpass"][..],
            "draw",
        ),
        (
            "samples=draw,sample_stats=off",
            &["cmdbuf", "draw", "renderpass"][..],
            "",
        ),
    ] {
        let mut sb = Sandbox::new(&format!("vkcube-{}", mode.replace([',', '='], "-")));
        let path = sb.path("vkcube.jsonl");
        sb.display(&x)
            .with_validation()
            .set("FRAMESCOPE_DUMP", path.display().to_string());
        // Every draw of every frame (vkcube has one): no baseline frames without a draw sample.
        sb.set("FRAMESCOPE_CONFIG", format!("sample_budget=100,{mode}"));
        let out = sb.run_under_framescope(&a, "vkcube", &["--c", "60"], LIMIT);
        assert_eq!(out.code(), Some(0), "{mode}: {}", out.describe());
        validation::assert_clean(&format!("vkcube {mode}"), &out.combined());
        let d = dump::read(&path);
        assert_eq!(d.frames.len(), 60);
        for f in &d.frames[1..] {
            let mut got: Vec<&str> = f["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["scope"].as_str().unwrap())
                .collect();
            got.sort_unstable();
            got.dedup();
            assert_eq!(got, scopes, "{mode}: {f}");
            for s in f["samples"].as_array().unwrap() {
                assert!(s["gpu_ns"].as_u64().is_some_and(|n| n > 0), "{mode}: {s}");
                assert_eq!(s.get("stats").is_some(), s["scope"] == stats_on, "{mode}: {s}");
            }
        }
    }
}

/// Σ of a statistic over the frame's samples of `scope`.
fn stat_sum(f: &Value, scope: &str, key: &str) -> u64 {
    samples(f, scope).iter().map(|s| u(&s["stats"][key])).sum()
}

#[test]
fn render_pass_objects_with_three_subpasses_sum_their_statistics() {
    // One VkRenderPass per frame, one subpass per region: statistics per draw give the known
    // answers through the subpass changes...
    let per_draw = run_regions(
        "renderpass-draw-stats",
        &["--render-pass"],
        "samples=draw,sample_stats=draw",
    );
    // ...and per pass, one query per subpass summed into the pass's sample.
    let per_pass = run_regions("renderpass-pass-stats", &["--render-pass"], "samples=draw");
    assert_eq!((per_draw.frames.len(), per_pass.frames.len()), (12, 12));
    for (fd, fp) in per_draw.frames[2..].iter().zip(&per_pass.frames[2..]) {
        check_regions_frame(fd, "draw");
        let passes = samples(fp, "renderpass");
        assert_eq!(passes.len(), 1, "one render pass per frame: {fp}");
        assert_eq!(passes[0]["label"], "Frame");
        assert_eq!(u(&passes[0]["stats"]["ia_vertices"]), 6603, "{}", passes[0]);
        assert_eq!(u(&passes[0]["stats"]["ia_primitives"]), 2201, "{}", passes[0]);
        // The same geometry rasterises the same way in both runs.
        assert_eq!(
            stat_sum(fp, "renderpass", "fs_invocations"),
            stat_sum(fd, "draw", "fs_invocations"),
            "pass fragments vs the sum of the draws' fragments"
        );
    }
    // Subpasses whose contents are secondaries: the secondaries sample their own draws (here
    // recorded on 4 threads), and the pass, whose primary cannot query there, carries no
    // statistics rather than a part of them.
    let d = run_regions(
        "renderpass-secondaries",
        &["--render-pass", "--threads", "4", "--secondary"],
        "samples=draw,sample_stats=draw",
    );
    for f in &d.frames[2..] {
        check_regions_frame(f, "draw");
    }
    let d = run_regions(
        "renderpass-secondaries-pass",
        &["--render-pass", "--secondary"],
        "samples=draw",
    );
    for f in &d.frames[2..] {
        let passes = samples(f, "renderpass");
        assert_eq!(passes.len(), 1);
        assert!(passes[0].get("stats").is_none(), "{}", passes[0]);
        assert!(u(&passes[0]["gpu_ns"]) > 0);
    }
}

#[test]
fn multiview_passes_take_one_query_slot_per_view() {
    // Dynamic rendering with viewMask 0b11: statistics per region pass and per draw.
    for (config, stats_scope) in [
        ("samples=draw", "renderpass"),
        ("samples=draw,sample_stats=draw", "draw"),
    ] {
        let d = run_regions(&format!("multiview-{stats_scope}"), &["--multiview"], config);
        assert_eq!(d.frames.len(), 12);
        for f in &d.frames[2..] {
            check_regions_frame_views(f, stats_scope, 2);
            assert!(f["gpu_busy_ns"].as_u64().is_some(), "frame GPU time: {f}");
        }
    }
    // A VkRenderPass with VkRenderPassMultiviewCreateInfo (masks per subpass) and 3 subpasses.
    let d = run_regions(
        "multiview-renderpass",
        &["--multiview", "--render-pass"],
        "samples=draw,sample_stats=draw",
    );
    for f in &d.frames[2..] {
        check_regions_frame_views(f, "draw", 2);
        let passes = samples(f, "renderpass");
        assert_eq!(passes.len(), 1);
        assert!(
            passes[0].get("stats").is_none(),
            "statistics on draws only: {}",
            passes[0]
        );
    }
    let d = run_regions(
        "multiview-renderpass-pass",
        &["--multiview", "--render-pass"],
        "samples=draw",
    );
    for f in &d.frames[2..] {
        let passes = samples(f, "renderpass");
        assert_eq!(passes.len(), 1);
        let ia = u(&passes[0]["stats"]["ia_vertices"]);
        assert!(ia == 6603 || ia == 2 * 6603, "{}", passes[0]);
        assert!(u(&passes[0]["stats"]["fs_invocations"]) >= 2 * W * H, "{}", passes[0]);
    }
}

/// Push constants recorded before the rendering instance begins, with no pipeline bound yet
/// (valid; vkd3d does it with root constants and push descriptors): lavapipe 22.3 crashed in
/// its queue thread at our pass statistics query there. The query now begins at the pass's
/// first pipeline bind on lavapipe, and the pass still carries the known statistics.
#[test]
fn pushing_constants_before_a_pass_keeps_the_app_alive_and_the_statistics() {
    let d = run_regions("push-first-dynamic", &["--push-first"], "samples=draw");
    assert_eq!(d.frames.len(), 12);
    for f in &d.frames[2..] {
        check_regions_frame(f, "renderpass");
    }
    // One VkRenderPass with a subpass per region: the query that waited for the bind in the
    // first subpass and those of the later subpasses sum to the whole scene.
    let d = run_regions(
        "push-first-renderpass",
        &["--push-first", "--render-pass"],
        "samples=draw",
    );
    assert_eq!(d.frames.len(), 12);
    for f in &d.frames[2..] {
        let passes = samples(f, "renderpass");
        assert_eq!(passes.len(), 1, "{f}");
        assert_eq!(u(&passes[0]["stats"]["ia_vertices"]), 6603, "{}", passes[0]);
        assert_eq!(u(&passes[0]["stats"]["ia_primitives"]), 2201, "{}", passes[0]);
    }
    let d = run_regions(
        "push-first-draw-stats",
        &["--push-first"],
        "samples=draw,sample_stats=draw",
    );
    for f in &d.frames[2..] {
        check_regions_frame(f, "draw");
    }
}

/// The headless test app with `draws` draws per frame in one command buffer, `samples=draw`
/// and `config`, `frames` frames.
fn run_draws(tag: &str, draws: u32, frames: u32, config: &str) -> dump::Dump {
    let a = Artifacts::get();
    let mut sb = Sandbox::new(tag);
    let path = sb.path("draws.jsonl");
    sb.with_validation()
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", format!("samples=draw,{config}"));
    let app = a.testapp.display().to_string();
    let (n, f) = (draws.to_string(), frames.to_string());
    let args = ["--headless", "--frame-boundary", "--draws", &n, "--frames", &f];
    let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{tag}: {}", out.describe());
    validation::assert_clean(tag, &out.combined());
    dump::read(&path)
}

/// Within the budget every frame of 10 000 draws accounts for all its draws (timed + not
/// timed), its timed draws are exactly the window's positions, no sample is dropped, the
/// window moves on by its length every frame, wrapping at the draw count, so every position
/// comes round within `ceil(draws / count)` frames plus baselines, and baseline frames take no
/// sample at all.
#[test]
fn budgeted_draw_windows_account_for_every_draw_and_move_across_frames() {
    const DRAWS: u64 = 10_000;
    const FRAMES: u64 = 700;
    let d = run_draws("draw-window", DRAWS as u32, FRAMES as u32, "sample_budget=3");
    let counts: Vec<&Value> = d.frames.iter().map(|f| &f["draw_window"]["count"]).collect();
    assert_eq!(
        d.summary.as_ref().unwrap()["dropped_samples"],
        0,
        "window counts by frame: {counts:?}"
    );
    let mut prev: Option<(u64, u64)> = None;
    let mut baselines = 0;
    let mut covered = vec![false; DRAWS as usize];
    // From frame 1 on (frame 0 times every draw): frames until every position was timed once,
    // and the smallest window count on the way.
    let (mut cumulative, mut covered_after, mut min_count) = (0u64, None, u64::MAX);
    let mut round = vec![false; DRAWS as usize];
    for f in &d.frames {
        assert_eq!(f["draws"].as_u64(), Some(DRAWS), "{f}");
        let w = &f["draw_window"];
        let (first, count, of) = (
            w["first"].as_u64().unwrap(),
            w["count"].as_u64().unwrap(),
            w["of"].as_u64().unwrap(),
        );
        let timed: Vec<u64> = samples(f, "draw").iter().map(|s| s["draw"].as_u64().unwrap()).collect();
        assert_eq!(f["draws_timed"].as_u64(), Some(timed.len() as u64), "{f}");
        let expected: Vec<u64> = (first..(first + count).min(DRAWS)).collect();
        assert_eq!(
            timed, expected,
            "frame {}: the window's positions, in order",
            f["frame"]
        );
        for &i in &timed {
            covered[i as usize] = true;
        }
        if count == 0 {
            baselines += 1;
            assert!(
                f["samples"].as_array().is_none_or(|a| a.is_empty()),
                "a baseline frame takes no samples: {f}"
            );
        }
        let frame = f["frame"].as_u64().unwrap();
        if frame >= 1 && covered_after.is_none() {
            for &i in &timed {
                round[i as usize] = true;
            }
            cumulative += count.min(DRAWS);
            if count > 0 {
                min_count = min_count.min(count);
            }
            if round.iter().all(|&c| c) {
                covered_after = Some(frame);
            }
        }
        // The window a frame records with follows from the previous one's.
        if let (Some((pf, pc)), true) = (prev, of == DRAWS) {
            let next = if pf + pc >= DRAWS { 0 } else { pf + pc };
            assert_eq!(first, next, "frame {}: window moves on by its length", f["frame"]);
        }
        prev = Some((first, count));
    }
    assert!(
        (40..=44).contains(&baselines),
        "every 16th frame is a baseline: {baselines}"
    );
    // Every position comes round once the windows' counts add up to the draws, and no later
    // than `ceil(draws / count)` frames plus one baseline in 16. On lavapipe the count settles
    // from noisy measurements, so how far round 700 frames get varies; the order is fixed.
    if cumulative >= DRAWS {
        let frames = covered_after.expect("every position timed once the counts add up to the draws");
        let bound = DRAWS.div_ceil(min_count);
        assert!(
            frames <= bound + bound / 15 + 1,
            "covered after {frames} frames, bound {bound} + baselines"
        );
    } else {
        let n = round.iter().take_while(|&&c| c).count() as u64;
        assert_eq!(
            n, cumulative,
            "the first positions, in order, as far as the counts reach"
        );
    }
    println!("window counts from {min_count}; every draw timed after frame {covered_after:?}");
    let last = d.frames.last().unwrap();
    assert!(
        last["draw_window"]["overhead_ns"].as_u64().is_some(),
        "the cost was measured: {last}"
    );

    // sample_budget=100: every draw of every frame, as before budgets.
    let all = run_draws("draw-window-all", 300, 20, "sample_budget=100");
    for f in &all.frames {
        assert_eq!(f["draws_timed"].as_u64(), Some(300), "{f}");
        assert!(f.get("draw_window").is_none());
    }
}

/// The summary's per-draw aggregates on the known-answer scene: one key per draw position
/// (111 a frame), each key's vertices and statistics those of its region, its count and mean
/// those of its samples in the frame records, and `framescope report`, recomputing the
/// aggregates from the frame records, agrees with the writer's summary.
#[test]
fn draw_keys_aggregate_the_known_answer_scene() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("draw-keys");
    let path = sb.path("keys.jsonl");
    sb.display(&x)
        .with_validation()
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "sample_budget=100,samples=draw,sample_stats=draw");
    let app = a.testapp.display().to_string();
    let (w, h) = (W.to_string(), H.to_string());
    let args = ["--scene", "regions", "--frames", "12", "--width", &w, "--height", &h];
    let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean("draw-keys", &out.combined());
    let d = dump::read(&path);
    let s = d.summary.as_ref().expect("summary");
    assert_eq!(s["draw_keys"], 111, "one key per draw position");
    assert!(s.get("draws_untracked").is_none(), "{s}");

    // Per (cmdbuf, draw): the GPU times of its timed samples in the frame records.
    let mut times: BTreeMap<(u64, u64), Vec<u64>> = BTreeMap::new();
    for f in &d.frames {
        for dr in samples(f, "draw") {
            if let Some(ns) = dr["gpu_ns"].as_u64() {
                times.entry((u(&dr["cmdbuf"]), u(&dr["draw"]))).or_default().push(ns);
            }
        }
    }
    let top = s["draws_top"].as_array().expect("draws_top");
    assert_eq!(top.len(), 20);
    let mut last_total = u64::MAX;
    for t in top {
        let (label, draw) = (t["label"].as_str().unwrap(), u(&t["draw"]));
        let (vertices, positions) = match label {
            "Frame/Shadows" => (300, 0..10),
            "Frame/Main" => (36, 10..110),
            "Frame/Post" => (3, 110..111),
            other => panic!("unexpected label {other}: {t}"),
        };
        assert!(positions.contains(&draw), "{t}");
        assert_eq!(t["vertices"], vertices as f64, "{t}");
        assert_eq!(t["stats"]["ia_vertices"], vertices as f64, "{t}");
        if label == "Frame/Post" {
            // Every pixel once, plus the diagonal's edge quads llvmpipe counts twice (see
            // `check_regions_frame_views`).
            let fs = t["stats"]["fs_invocations"].as_f64().unwrap();
            assert!(((W * H) as f64..=(W * H + W * H / 20) as f64).contains(&fs), "{t}");
        }
        assert_eq!(t["kind"], "draw", "{t}");
        assert_ne!(t["pipeline"], "0x0", "the bound pipeline is part of the key: {t}");
        let ns = &times[&(u(&t["cmdbuf"]), draw)];
        assert_eq!(u(&t["count"]), ns.len() as u64, "{t}");
        let total: u64 = ns.iter().sum();
        assert_eq!(u(&t["total_ns"]), total, "{t}");
        assert_eq!(t["mean_ns"].as_f64().unwrap(), total as f64 / ns.len() as f64, "{t}");
        assert_eq!(
            (u(&t["min_ns"]), u(&t["max_ns"])),
            (*ns.iter().min().unwrap(), *ns.iter().max().unwrap())
        );
        assert!(total <= last_total, "most expensive first");
        last_total = total;
    }

    let rep = sb.run(&a.framescope, &["report", path.to_str().unwrap()], LIMIT);
    let text = rep.combined();
    assert_eq!(rep.code(), Some(0), "{text}");
    assert!(
        text.contains("summary written by the dump"),
        "report recomputes the same aggregates: {text}"
    );
    assert!(text.contains("top draws by gpu time (111 keys)"), "{text}");
}
