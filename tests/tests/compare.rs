//! `framescope compare` as a regression gate and `framescope report` on several dumps: dumps
//! with a known slowdown fail the gate, runs of one vkcube configuration pass it every time,
//! and unusable input exits 2 naming the file and line.

use framescope_tests::{artifacts::require_program, Artifacts, Sandbox, Xvfb};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// A dump of `n` frames whose frame times are an AR(1) series (coefficient 0.6, frames are
/// autocorrelated) around `mean_ms`, ±10 % noise; GPU busy half the frame time; one `Shadows`
/// label region of a quarter of it; a counter `gpu_util_pct` around `util`.
fn synthetic(path: &Path, n: u64, mean_ms: f64, util: f64, seed: u64) {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut uniform = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let mut lines = vec![
        r#"{"type":"header","schema":"framescope.v1","api":"vulkan","gpu_time":"busy","counters":[{"name":"gpu_util_pct","unit":"%","source":"test","scope":"device"}]}"#.to_string(),
    ];
    let (mut t, mut e) = (1_000_000_000u64, 0.0);
    for frame in 0..n {
        e = 0.6 * e + 0.1 * mean_ms * uniform();
        let ft = ((mean_ms + e) * 1e6) as u64;
        t += ft;
        let util = util + 2.0 * uniform();
        lines.push(format!(
            r#"{{"type":"frame","frame":{frame},"t_ns":{t},"cpu_frame_ns":{ft},"gpu_busy_ns":{},"samples":[{{"scope":"label","label":"Frame/Shadows","cmdbuf":0,"draw":null,"gpu_ns":{}}}],"counters":{{"gpu_util_pct":{util:.3}}}}}"#,
            ft / 2,
            ft / 4
        ));
    }
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn compare(a: &Artifacts, sb: &Sandbox, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    let out = sb.run(&a.framescope, &all, LIMIT);
    (out.code(), out.stdout, out.stderr)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_known_ten_percent_slowdown_fails_the_gate_and_the_same_process_passes() {
    let a = Artifacts::get();
    let sb = Sandbox::new("compare-synthetic");
    let base = sb.path("base.jsonl");
    let same = sb.path("same.jsonl");
    let slow = sb.path("slow.jsonl");
    synthetic(&base, 1500, 16.0, 50.0, 1);
    synthetic(&same, 1500, 16.0, 50.0, 2);
    synthetic(&slow, 1500, 17.6, 50.0, 3);

    let (code, out, err) = compare(&a, &sb, &[s(&base), s(&slow)]);
    assert_eq!(code, Some(1), "{out}{err}");
    let ft = out.lines().find(|l| l.starts_with("frame_time")).expect(&out);
    assert!(ft.contains("REGRESSION"), "{out}");
    assert!(
        err.contains("one run a side"),
        "single runs say what the interval covers: {err}"
    );

    let (code, out, err) = compare(&a, &sb, &[s(&base), s(&same)]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!out.contains("REGRESSION"), "{out}");

    // JSON, a label region and a counter (unchanged) as metrics; the slowdown is 10 % of each
    // time metric, inside its interval.
    let (code, out, err) = compare(
        &a,
        &sb,
        &[
            "--json",
            "--metric",
            "Shadows",
            "--metric",
            "gpu_util_pct",
            "--metric",
            "gpu_busy",
            s(&base),
            s(&slow),
        ],
    );
    assert_eq!(code, Some(1), "{out}{err}");
    let v: Value = serde_json::from_str(&out).expect(&out);
    let m = v["metrics"].as_array().unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(m[0]["kind"], "label GPU time");
    assert_eq!(m[1]["kind"], "counter");
    assert_eq!(m[1]["verdict"], "no_change", "{}", m[1]);
    for i in [0, 2] {
        assert_eq!(m[i]["verdict"], "regression", "{}", m[i]);
        let (lo, hi) = (m[i]["ci_low"].as_f64().unwrap(), m[i]["ci_high"].as_f64().unwrap());
        assert!(lo < 0.1 && 0.1 < hi && lo > 0.05, "{}", m[i]);
    }

    // Several runs a side: the runs are the units of a t interval (two runs a side give one
    // degree of freedom each, too few for a 99 % gate). Three runs of the slow process against
    // three of the base one: the 10 % slowdown is found.
    let (slow2, slow3, base3) = (sb.path("slow2.jsonl"), sb.path("slow3.jsonl"), sb.path("base3.jsonl"));
    synthetic(&slow2, 1500, 17.6, 50.0, 5);
    synthetic(&slow3, 1500, 17.6, 50.0, 6);
    synthetic(&base3, 1500, 16.0, 50.0, 7);
    let (code, out, err) = compare(
        &a,
        &sb,
        &[
            "--json",
            s(&base),
            s(&same),
            s(&base3),
            "--",
            s(&slow),
            s(&slow2),
            s(&slow3),
        ],
    );
    assert_eq!(code, Some(1), "three runs a side, 10 % slowdown: {out}{err}");
    let v: Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(
        (v["base_runs"].as_u64(), v["new_runs"].as_u64()),
        (Some(3), Some(3)),
        "{out}"
    );
    let ft = &v["metrics"][0];
    assert_eq!(ft["interval_method"], "runs_t", "{ft}");
    let df = ft["df"].as_f64().unwrap();
    assert!((2.0..=4.0).contains(&df), "{ft}");
    assert!(!err.contains("one run a side"), "{err}");
    let (code, out, err) = compare(&a, &sb, &[s(&base), s(&same), "--", s(&slow), s(&slow2)]);
    assert!(
        out.contains("BASE: 2 run(s), NEW: 2 run(s)") && out.contains("Student's t"),
        "{out}{err}"
    );
    // One degree of freedom a side: the 10 % slowdown is inside the 99 % interval, and the
    // gate says why.
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("pass 3 or more runs a side"), "{err}");
    // Runs that differ from each other by 10 % (16 and 17.6 ms) on the NEW side: the
    // interval takes that spread in, and one fast and one slow run is no significant change.
    let (code, out, err) = compare(&a, &sb, &[s(&base), s(&same), "--", s(&same), s(&slow)]);
    assert_eq!(code, Some(0), "runs differing from each other: {out}{err}");
    // A percentile instead of the mean: the uniform 10 % slowdown moves p95 by as much; the
    // same process does not move it; p99.9 needs more frames than a run of 1500 has.
    let (code, out, err) = compare(&a, &sb, &["--json", "--stat", "p95", s(&base), s(&slow)]);
    assert_eq!(code, Some(1), "p95, 10 % slowdown: {out}{err}");
    let v: Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(v["statistic"], "p95", "{out}");
    let p95 = |path: &Path| {
        let text = std::fs::read_to_string(path).unwrap();
        let mut ft: Vec<f64> = text
            .lines()
            .skip(1)
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["cpu_frame_ns"]
                    .as_f64()
                    .unwrap()
            })
            .collect();
        ft.sort_by(f64::total_cmp);
        ft[(0.95 * ft.len() as f64).ceil() as usize - 1]
    };
    assert_eq!(
        v["metrics"][0]["base"].as_f64(),
        Some(p95(&base)),
        "nearest-rank p95: {out}"
    );
    assert_eq!(v["metrics"][0]["new"].as_f64(), Some(p95(&slow)), "{out}");
    let (code, out, err) = compare(&a, &sb, &["--stat", "p95", s(&base), s(&same)]);
    assert_eq!(code, Some(0), "p95, same process: {out}{err}");
    assert!(out.contains("base p95"), "{out}");
    let (code, _, err) = compare(&a, &sb, &["--stat", "p99.9", s(&base), s(&same)]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("at least 10000 a side are needed for the p99.9"), "{err}");
    // A 4 % slowdown is below the 5 % threshold.
    let slight = sb.path("slight.jsonl");
    synthetic(&slight, 1500, 16.64, 50.0, 4);
    let (code, out, err) = compare(&a, &sb, &[s(&base), s(&slight)]);
    assert_eq!(code, Some(0), "4 %: {out}{err}");
    let (code, out, err) = compare(&a, &sb, &["--threshold", "1%", s(&base), s(&slight)]);
    assert_eq!(code, Some(1), "4 % against a 1 % threshold: {out}{err}");
}

#[test]
fn unusable_input_exits_2_naming_the_file_and_line() {
    let a = Artifacts::get();
    let sb = Sandbox::new("compare-garbage");
    let base = sb.path("base.jsonl");
    synthetic(&base, 200, 16.0, 50.0, 1);
    let garbage = sb.path("garbage.bin");
    std::fs::write(&garbage, b"\x00\x01 this is not a dump\n\xff\xfe\n").unwrap();
    let (code, out, err) = compare(&a, &sb, &[s(&base), s(&garbage)]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("garbage.bin") && err.contains("line 1"), "{err}");

    // A damaged line in the middle of a dump: the line is named.
    let text = std::fs::read_to_string(&base).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[50] = "{\"type\":\"frame\",\"frame\":";
    let damaged = sb.path("damaged.jsonl");
    std::fs::write(&damaged, lines.join("\n")).unwrap();
    let (code, _, err) = compare(&a, &sb, &[s(&damaged), s(&base)]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("damaged.jsonl' line 51"), "{err}");

    // Missing file, empty file, a metric neither dump has, too few frames.
    let empty = sb.path("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let short = sb.path("short.jsonl");
    synthetic(&short, 5, 16.0, 50.0, 1);
    for (args, says) in [
        (vec![s(&base), "/nonexistent/x.jsonl"], "x.jsonl"),
        (vec![s(&base), s(&empty)], "empty.jsonl"),
        (vec!["--metric", "no_such_thing", s(&base), s(&base)], "no_such_thing"),
        (vec![s(&short), s(&base)], "at least 20"),
        (vec!["--skip-frames", "1000", s(&base), s(&base)], "no frames left"),
        (vec![s(&base)], "needs BASE and NEW"),
    ] {
        let (code, out, err) = compare(&a, &sb, &args);
        assert_eq!(code, Some(2), "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.starts_with("framescope: compare: "), "{err}");
        if !says.starts_with("needs") {
            assert_eq!(err.lines().count(), 1, "one line: {err}");
        }
    }
    // /dev/zero: bounded, and unusable.
    let (code, _, err) = compare(&a, &sb, &[s(&base), "/dev/zero"]);
    assert_eq!(code, Some(2), "{err}");
}

/// vkcube under framescope, 400 frames, dumped to `path`.
fn vkcube(a: &Artifacts, x: &Xvfb, path: &Path) {
    let mut sb = Sandbox::new("compare-vkcube-run");
    sb.display(x).set("FRAMESCOPE_DUMP", path.display().to_string());
    let out = sb.run_under_framescope(a, "vkcube", &["--c", "400"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
}

/// Runs of one configuration are the same process: the gate must pass them every time. Ten
/// tries, each three runs against three (interleaved, so a drift of the machine falls on both
/// sides): on lavapipe the mean frame time of identical vkcube runs spreads over about ±13 %,
/// which only several runs a side can measure. The first 50 frames (pipeline creation, the
/// first HUD render) are left out, as a benchmark farm leaves out its warm-up.
#[test]
fn runs_of_the_same_vkcube_configuration_pass_the_gate_ten_times_in_ten() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let sb = Sandbox::new("compare-vkcube");
    let mut verdicts = Vec::new();
    for k in 0..10 {
        let mut sides: [Vec<PathBuf>; 2] = Default::default();
        for r in 0..6 {
            let p = sb.path(&format!("t{k}-r{r}.jsonl"));
            vkcube(&a, &x, &p);
            sides[r % 2].push(p);
        }
        let mut args = vec!["--skip-frames", "50"];
        args.extend(sides[0].iter().map(|p| s(p)));
        args.push("--");
        args.extend(sides[1].iter().map(|p| s(p)));
        verdicts.push(compare(&a, &sb, &args));
    }
    let failed: Vec<_> = verdicts.iter().filter(|v| v.0 != Some(0)).collect();
    assert!(
        failed.is_empty(),
        "{} of 10 tries did not exit 0: {failed:#?}",
        failed.len()
    );

    // report on several dumps: one table each, and one JSON line each with its path.
    let (b0, b1) = (sb.path("t0-r0.jsonl"), sb.path("t0-r1.jsonl"));
    let rep = sb.run(&a.framescope, &["report", s(&b0), s(&b1)], LIMIT);
    assert_eq!(rep.code(), Some(0), "{}", rep.describe());
    assert_eq!(rep.stdout.matches("framescope report: ").count(), 2, "{}", rep.stdout);
    assert!(rep.stdout.contains("top regions by gpu time"), "{}", rep.stdout);
    let rep = sb.run(
        &a.framescope,
        &["report", "--json", s(&b0), "/nonexistent.jsonl", s(&b1)],
        LIMIT,
    );
    assert_eq!(rep.code(), Some(1), "a missing dump: {}", rep.describe());
    let lines: Vec<Value> = rep.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{}", rep.stdout);
    assert!(lines[0]["dump"].as_str().unwrap().ends_with("t0-r0.jsonl"));
    assert!(lines[1]["dump"].as_str().unwrap().ends_with("t0-r1.jsonl"));
    assert!(lines[0]["frames"].as_u64().unwrap() >= 390, "{}", lines[0]);
    assert!(!lines[0]["regions_top"].as_array().unwrap().is_empty(), "{}", lines[0]);
}

/// `framescope plot` on two dumps, to SVG and PNG: the files have the panels, the legend, the
/// axis text and both series' colours; bad arguments and a damaged dump are clear errors.
#[test]
fn plot_writes_svg_and_png_with_axis_text_and_both_series() {
    let a = Artifacts::get();
    let sb = Sandbox::new("plot");
    let (base, slow) = (sb.path("base.jsonl"), sb.path("slow.jsonl"));
    synthetic(&base, 600, 16.0, 50.0, 1);
    synthetic(&slow, 600, 20.0, 60.0, 2);
    let svg = sb.path("p.svg");
    let args = [s(&base), s(&slow), "--counter", "gpu_util_pct", "-o", s(&svg)];
    let out = sb.run(&a.framescope, &[&["plot"][..], &args].concat(), LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.len() > 10_000, "{} bytes", text.len());
    for want in [
        "frame time",
        "GPU time",
        "frame-time percentiles",
        "frame-time histogram",
        "gpu_util_pct",
        "base.jsonl",
        "slow.jsonl",
        "seconds since the first frame",
    ] {
        assert!(text.contains(want), "SVG lacks '{want}'");
    }
    assert!(text.lines().any(|l| l.trim() == "ms"), "the y axis unit");
    // Tick labels: numbers on the axes.
    assert!(text.matches("<text").count() > 40, "{}", text.matches("<text").count());
    assert!(
        text.contains("#1F77B4") || text.contains("#1f77b4"),
        "first series colour"
    );
    assert!(
        text.contains("#D62728") || text.contains("#d62728"),
        "second series colour"
    );

    let png = sb.path("p.png");
    let out = sb.run(
        &a.framescope,
        &["plot", s(&base), s(&slow), "--width", "800", "-o", s(&png)],
        LIMIT,
    );
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let img = framescope_tests::image::Rgb::read(&png);
    assert_eq!(
        (img.w, img.h),
        (800, 1200),
        "four panels of 300 px: frame time, GPU time, percentiles, histogram"
    );
    let count = |x0: usize, x1: usize, y0: usize, y1: usize, pred: &dyn Fn([u8; 3]) -> bool| {
        let mut n = 0;
        for y in y0..y1 {
            for x in x0..x1 {
                n += usize::from(pred(img.at(x, y)));
            }
        }
        n
    };
    let dark = |p: [u8; 3]| p.iter().all(|&c| c < 100);
    // Axis text: tick labels left of the first panel's plot area, and its caption on top.
    assert!(count(0, 60, 20, 260, &dark) > 150, "y tick labels");
    assert!(count(300, 500, 0, 30, &dark) > 40, "caption");
    assert!(count(0, 800, 0, 1200, &|p| p == [31, 119, 180]) > 500, "first series");
    assert!(count(0, 800, 0, 1200, &|p| p == [214, 39, 40]) > 500, "second series");

    // Errors: one clear line, exit status not 0.
    let bad = sb.path("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"type\":\"header\"}\nnot json\n{\"type\":\"frame\",\"frame\":1,\"t_ns\":5}\n",
    )
    .unwrap();
    for (args, says) in [
        (vec![s(&bad), "-o", "/tmp/x.svg"], "bad.jsonl' line 2"),
        (vec![s(&base), "-o", "x.gif"], ".svg or .png"),
        (vec![s(&base), "--counter", "nope", "-o", s(&svg)], "nope"),
    ] {
        let out = sb.run(&a.framescope, &[&["plot"][..], &args].concat(), LIMIT);
        assert_ne!(out.code(), Some(0), "{args:?}");
        assert!(
            out.stderr.starts_with("framescope: plot: ") && out.stderr.contains(says),
            "{}",
            out.stderr
        );
    }
    // Never through a symbolic link.
    let link = sb.path("link.svg");
    std::os::unix::fs::symlink(&base, &link).unwrap();
    let out = sb.run(&a.framescope, &["plot", s(&base), "-o", s(&link)], LIMIT);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert!(out.stderr.contains("symbolic link"), "{}", out.stderr);
    assert!(std::fs::read_to_string(&base)
        .unwrap()
        .starts_with("{\"type\":\"header\""));
}

/// A dump of `n` frames 16 ms apart whose display latency is `latency_ms` ± 10 % (uniform)
/// and of which every `drop_every`-th frame was dropped (0: none), and every
/// `stutter_every`-th a stutter.
fn with_display(path: &Path, n: u64, latency_ms: f64, drop_every: u64, stutter_every: u64, seed: u64) {
    let mut state = seed.wrapping_mul(2862933555777941757).wrapping_add(3037000493);
    let mut uniform = move || {
        state = state.wrapping_mul(2862933555777941757).wrapping_add(3037000493);
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let mut lines = vec![r#"{"type":"header","schema":"framescope.v1","api":"vulkan","gpu_time":"busy"}"#.to_string()];
    let mut t = 1_000_000_000u64;
    for frame in 0..n {
        t += 16_000_000;
        let dropped = drop_every > 0 && frame % drop_every == drop_every - 1;
        let stutter = stutter_every > 0 && frame % stutter_every == stutter_every - 1;
        let latency = ((latency_ms + 0.1 * latency_ms * uniform()) * 1e6) as u64;
        let display = if dropped {
            r#""display":"dropped","display_latency_ns":null"#.to_string()
        } else {
            format!(r#""display":"displayed","display_latency_ns":{latency}"#)
        };
        lines.push(format!(
            r#"{{"type":"frame","frame":{frame},"t_ns":{t},"cpu_frame_ns":16000000,"gpu_busy_ns":null,{display},"stutter":{stutter}}}"#
        ));
    }
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// The frame timeline's gates: display latency as a time metric, drops and stutters as rates
/// compared by difference (a base run without any is the usual case).
#[test]
fn display_latency_drops_and_stutters_gate_a_run() {
    let a = Artifacts::get();
    let sb = Sandbox::new("compare-display");
    let (base, same, worse) = (sb.path("base.jsonl"), sb.path("same.jsonl"), sb.path("worse.jsonl"));
    with_display(&base, 1200, 40.0, 0, 0, 1);
    with_display(&same, 1200, 40.0, 0, 0, 2);
    // 20 % more latency, one frame in 25 dropped (4 points), one in 50 a stutter (2 points).
    with_display(&worse, 1200, 48.0, 25, 50, 3);
    let metrics = [
        "--metric",
        "display_latency",
        "--metric",
        "dropped",
        "--metric",
        "stutters",
        "--threshold",
        "1%",
        "--json",
    ];
    let run = |new: &Path| {
        let mut args = metrics.to_vec();
        args.extend([s(&base), s(new)]);
        let (code, out, err) = compare(&a, &sb, &args);
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        (code, v)
    };
    let (code, v) = run(&same);
    assert_eq!(code, Some(0), "{v}");
    let (code, v) = run(&worse);
    assert_eq!(code, Some(1), "{v}");
    let m = v["metrics"].as_array().unwrap();
    assert_eq!(
        (m[0]["kind"].as_str(), m[0]["verdict"].as_str()),
        (Some("display latency"), Some("regression")),
        "{v}"
    );
    for (i, points) in [(1, 0.04), (2, 0.02)] {
        assert_eq!(m[i]["kind"], "rate", "{v}");
        assert_eq!(m[i]["verdict"], "regression", "{v}");
        assert_eq!(m[i]["interval_method"], "newcombe_wilson", "{v}");
        let change = m[i]["change"].as_f64().unwrap();
        assert!((change - points).abs() < 0.002, "{v}");
        assert_eq!(m[i]["base"], 0.0, "{v}");
    }
    // A dump without display fields cannot be gated on them: exit 2, naming the metric.
    let plain = sb.path("plain.jsonl");
    synthetic(&plain, 100, 16.0, 50.0, 9);
    let (code, _, err) = compare(&a, &sb, &["--metric", "display_latency", s(&plain), s(&base)]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("display_latency"), "{err}");
}
