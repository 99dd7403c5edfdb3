//! The H100 section of `docs/performance.md`, rendered from the committed results of
//! `tests/device/h100-costs.sh` (`docs/h100-costs.json`): the GPU machine is reached only
//! through the device tool, so `cargo xtask bench` reads the run that the script made and was
//! committed with its date and driver, and states each target against it.

use serde_json::Value;

/// Where the committed results live, relative to the repository root.
pub const RESULTS: &str = "docs/h100-costs.json";
/// The CPU cost split into parts, from `tests/device/h100_cpu_parts.py`.
pub const PARTS: &str = "docs/h100-cpu-parts.json";
/// The GPU-busy run (`H100_COSTS_QUICK=1`) that measured the pass statistics rotated across
/// frames, which came after the full run above: the defaults' GPU cost is read from its
/// `stats_every_32` mode, the default since.
pub const ROTATION_RUN: &str = "docs/h100-runs/2026-11-27-stats-rotation.json";

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn pct(x: f64) -> String {
    format!("{:+.2} %", 100.0 * x)
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "within"
    } else {
        "**misses**"
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// The section's markdown, or why there is none.
pub fn section() -> Result<String, String> {
    let path = crate::shell::root().join(RESULTS);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (run tests/device/h100-costs.sh through the device tool and commit its h100-costs.json there)",
            path.display()
        )
    })?;
    let r: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let rotation = std::fs::read_to_string(crate::shell::root().join(ROTATION_RUN))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let mut md = render(&r, rotation.as_ref()).ok_or_else(|| format!("{}: missing fields", path.display()))?;
    let parts = crate::shell::root().join(PARTS);
    if let Ok(text) = std::fs::read_to_string(&parts) {
        let p: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", parts.display()))?;
        md.push_str(&render_parts(&p).ok_or_else(|| format!("{}: missing fields", parts.display()))?);
    }
    Ok(md)
}

/// Where the CPU time goes: one part of framescope added at a time.
fn render_parts(p: &Value) -> Option<String> {
    let parts = p["parts"].as_object()?;
    let mut md = format!(
        "### Where the CPU time goes at 10 000 draws ({} UTC, {})\n\n\
         [tests/device/h100_cpu_parts.py](../tests/device/h100_cpu_parts.py): the same app with one part\n\
         of framescope added at a time, {} interleaved repetitions pinned to the same four cores,\n\
         medians; *app thread* is the CPU time of the thread that records and submits (framescope's\n\
         own threads excluded), *recording* the app's own time recording its command buffer\n\
         (`record_ns`), where per-draw hooks would run.\n\n\
         | configuration | process CPU ms/frame | app thread ms/frame | wall ms/frame | recording µs/frame |\n|---|---|---|---|---|\n",
        p["date_utc"].as_str()?,
        p["gpu_driver"].as_str()?,
        parts.get("bare")?["cpu_ms"].as_array()?.len()
    );
    // In the order the script adds the parts (the JSON object's keys are sorted).
    let order = [
        "bare",
        "layer only",
        "+ GPU timing",
        "+ render-pass samples",
        "+ counters (defaults)",
        "+ dump",
        "+ command counts",
    ];
    for name in order {
        let Some(row) = parts.get(name) else { continue };
        let med = |k: &str| median(row[k].as_array().map_or(vec![], |a| a.iter().filter_map(num).collect()));
        let f = |v: Option<f64>, d: usize| v.map_or("-".into(), |x| format!("{x:.d$}"));
        md.push_str(&format!(
            "| {name} | {} | {} | {} | {} |\n",
            f(med("cpu_ms"), 3),
            f(med("thread_cpu_ms"), 3),
            f(med("wall_ms"), 3),
            f(med("record_us"), 0)
        ));
    }
    md.push_str(
        "\nBy default the app's draw commands are the driver's own: framescope intercepts draws,\n\
         dispatches, binds and barriers only to count them (`command_counts=1`) or time them\n\
         (`samples=draw`). Counting costs about 12 ns a draw here, 0.1 ms a frame at 10 000 draws:\n\
         a third of this app's CPU time, which does nothing but record draws. The other parts run\n\
         once per submission or frame; their medians lie within the runs' spread (the same\n\
         configuration varies by ±20 % between runs on this machine, pinned or not), so the CPU\n\
         cost of the defaults is not resolved to the 2 % the target asks for.\n\n",
    );
    Some(md)
}

fn render(r: &Value, rotation: Option<&Value>) -> Option<String> {
    let reps = r["reps_detail"].as_array()?;
    let field = |mode: &str, key: &str| -> Vec<f64> { reps.iter().filter_map(|x| num(&x[mode][key])).collect() };
    let rel = |mode: &str| -> Vec<f64> {
        reps.iter()
            .filter_map(|x| Some(num(&x[mode]["busy_ns"])? / num(&x["off"]["busy_ns"])? - 1.0))
            .collect()
    };
    let list = |v: &[f64]| v.iter().map(|x| pct(*x)).collect::<Vec<_>>().join(" / ");
    let us = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{:.1}", x / 1e3))
            .collect::<Vec<_>>()
            .join(" / ")
    };

    let mut md = String::new();
    md.push_str("## NVIDIA H100 (from the committed device run)\n\n");
    md.push_str(&format!(
        "Rendered from [`{RESULTS}`](h100-costs.json), written by\n\
         [tests/device/h100-costs.sh](../tests/device/h100-costs.sh) through the device tool on\n\
         {} UTC ({}). Headless test app, {} draws per frame at {}, {} frames, {} interleaved\n\
         repetitions (values per repetition, separated by `/`; every draw timed: {} frames); GPU busy\n\
         is the mean of frames 100 on; CPU per frame is `(X({}) - X({})) / {}` of the app thread's CPU\n\
         time (the process's where a run lacks it), which cancels start-up; bare runs have no dump,\n\
         so no GPU busy.\n\n",
        r["date_utc"].as_str()?,
        r["gpu_driver"].as_str()?,
        r["draws_per_frame"],
        r["resolution"].as_str()?,
        r["frames"],
        reps.len(),
        r["all_frames"],
        r["frames"],
        r["short_frames"],
        r["frames"].as_u64()? - r["short_frames"].as_u64()?,
    ));
    md.push_str("| mode | GPU busy per frame, µs | vs `samples=off` |\n|---|---|---|\n");
    for (mode, what) in [
        ("off", "`samples=off` (GPU timing only)"),
        ("defaults", "defaults (GPU timing, render-pass samples, counters)"),
        (
            "pass_no_stats",
            "defaults with `sample_stats=off` (pass timestamps only)",
        ),
        ("counted", "defaults with `command_counts=1`"),
        ("draw", "`samples=draw` (`sample_budget=3`)"),
        ("draw_all", "`samples=draw,sample_budget=100` (every draw)"),
    ] {
        let busy = field(mode, "busy_ns");
        if busy.is_empty() {
            continue;
        }
        let vs = if mode == "off" { String::new() } else { list(&rel(mode)) };
        md.push_str(&format!("| {what} | {} | {vs} |\n", us(&busy)));
    }
    md.push('\n');

    // The app's own thread where the run has it (framescope's threads are not the app's frame
    // time), else the whole process.
    let cpu_key = if field("bare", "thread_cpu_ms_per_frame").is_empty() {
        "cpu_ms_per_frame"
    } else {
        "thread_cpu_ms_per_frame"
    };
    let cpu_bare = field("bare", cpu_key);
    let cpu_def = field("defaults", cpu_key);
    let cpu_added: Vec<f64> = cpu_bare.iter().zip(&cpu_def).map(|(b, d)| d / b - 1.0).collect();
    // The app thread's time outside its own recording, per frame, and the thread's time over
    // its recording time: both follow the machine's speed less than CPU time does (runs of the
    // same configuration differed by ±20 %), since by default framescope adds nothing to the
    // recording of draws; its per-frame work (submit, frame end) lands outside it.
    let outside = |mode: &str| -> Vec<f64> {
        reps.iter()
            .filter_map(|x| {
                Some(num(&x[mode]["thread_cpu_ms_per_frame"])? * 1e3 - num(&x[mode]["record_us_per_frame"])?)
            })
            .collect()
    };
    let ratio = |mode: &str| -> Vec<f64> {
        reps.iter()
            .filter_map(|x| {
                Some(num(&x[mode]["thread_cpu_ms_per_frame"])? * 1e3 / num(&x[mode]["record_us_per_frame"])?)
            })
            .collect()
    };
    let normalized = median(ratio("defaults"))
        .zip(median(ratio("bare")))
        .map(|(d, b)| d / b - 1.0);
    let busy_def = median(rel("defaults"))?;
    let busy_draw = median(rel("draw"))?;
    let cpu_med = median(cpu_added.clone())?;
    let within = field("draw", "every_draw_timed_within_frames");
    let within_med = median(within.clone());
    let regions = &r["regions"];
    let key_max = num(&regions["per_key_mean_rel_diff"]["max"]);
    let key_med = num(&regions["per_key_mean_rel_diff"]["median"]);
    let gears = |k: &str| -> Vec<f64> {
        r["glxgears_fps"][k]
            .as_array()
            .map_or(vec![], |a| a.iter().filter_map(num).collect())
    };
    let ms = |fps: &[f64]| median(fps.iter().map(|f| 1e3 / f).collect());
    let (gb, gf, gm) = (ms(&gears("bare")), ms(&gears("framescope")), ms(&gears("mangohud")));

    md.push_str("| target | measured (median of repetitions) | verdict |\n|---|---|---|\n");
    // The defaults' statistics on one frame in 32 came after this run: the newer GPU-busy run
    // states the target, this run's every-frame statistics stay beside it.
    let rotated: Vec<f64> = rotation
        .and_then(|v| v["reps_detail"].as_array())
        .map_or(vec![], |reps| {
            reps.iter()
                .filter_map(|x| Some(num(&x["stats_every_32"]["busy_ns"])? / num(&x["off"]["busy_ns"])? - 1.0))
                .collect()
        });
    match median(rotated.clone()) {
        Some(m) => md.push_str(&format!(
            "| defaults ≤ 1 % of GPU busy at 10k draws | pass statistics on one frame in 32 (the default since): {} (per repetition {}; the {} GPU-busy run, [{ROTATION_RUN}]({})); this run, statistics on every frame: {} (per repetition {}) | {} |\n",
            pct(m),
            list(&rotated),
            rotation.and_then(|v| v["date_utc"].as_str()).unwrap_or("later"),
            ROTATION_RUN.trim_start_matches("docs/"),
            pct(busy_def),
            list(&rel("defaults")),
            verdict(m <= 0.01)
        )),
        None => md.push_str(&format!(
            "| defaults ≤ 1 % of GPU busy at 10k draws | {} (per repetition {}) | {} |\n",
            pct(busy_def),
            list(&rel("defaults")),
            verdict(busy_def <= 0.01)
        )),
    }
    md.push_str(&format!(
        "| defaults ≤ 2 % of CPU frame time at 10k draws | {} ({}; bare {} ms, defaults {} ms per frame){} | {} |\n",
        pct(cpu_med),
        if cpu_key == "thread_cpu_ms_per_frame" {
            "the app thread's CPU time"
        } else {
            "the process's CPU time"
        },
        cpu_bare
            .iter()
            .map(|x| format!("{x:.3}"))
            .collect::<Vec<_>>()
            .join(" / "),
        cpu_def
            .iter()
            .map(|x| format!("{x:.3}"))
            .collect::<Vec<_>>()
            .join(" / "),
        match (normalized, median(outside("bare")), median(outside("defaults"))) {
            (Some(n), Some(b), Some(d)) => format!(
                "; speed-normalised (app thread over its own recording time) {}, time outside recording {b:.1} → {d:.1} µs a frame",
                pct(n)
            ),
            _ => String::new(),
        },
        match normalized {
            Some(n) if n <= 0.02 && cpu_med > 0.02 => {
                "within on the speed-normalised measure; the raw CPU time does not resolve it"
            }
            _ if cpu_med <= 0.02 => "within",
            _ => "**misses** (or unresolved: the spread between runs is wider)",
        }
    ));
    md.push_str(&format!(
        "| `samples=draw` ≤ 3 % of GPU busy | {} (per repetition {}) | {} |\n",
        pct(busy_draw),
        list(&rel("draw")),
        verdict(busy_draw <= 0.03)
    ));
    md.push_str(&format!(
        "| `samples=draw` coverage, reported as `ceil(of / count)` frames (`draw_window` in every frame) | every draw timed within {} frames (per repetition {}) | reported |\n",
        within_med.map_or("never".into(), |x| format!("{x:.0}")),
        within.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(" / "),
    ));
    md.push_str(&format!(
        "| per-draw means within 10 % of `sample_budget=100` (regions scene, {} keys) | max {}, median {} | {} |\n",
        regions["keys_all"],
        key_max.map_or("-".into(), |x| format!("{:.1} %", 100.0 * x)),
        key_med.map_or("-".into(), |x| format!("{:.1} %", 100.0 * x)),
        verdict(key_max.is_some_and(|x| x <= 0.10))
    ));
    // The HUD's target is absolute (≤ 5 µs a frame); glxgears' frame time under framescope
    // against bare is the measure, and its spread between repetitions says what it resolves.
    let added_us: Vec<f64> = gears("framescope")
        .iter()
        .zip(gears("bare"))
        .map(|(f, b)| 1e6 / f - 1e6 / b)
        .collect();
    match (gb, gf, gm) {
        (Some(b), Some(f), Some(m)) => {
            let added = (f - b) * 1e3;
            let (lo, hi) = added_us
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| (l.min(x), h.max(x)));
            md.push_str(&format!(
                "| the HUD ≤ 5 µs a frame (glxgears, GLX on Xvfb: frame time under framescope against bare) | {added:+.1} µs (repetitions {lo:+.1} … {hi:+.1} µs; bare {b:.4} ms, framescope {f:.4} ms, MangoHud {m:.4} ms per frame, {:.2}× MangoHud's added time) | {} |\n",
                if m > b { (f - b) / (m - b) } else { f64::NAN },
                if added <= 5.0 && hi - lo > 10.0 {
                    "within (median), below the spread between repetitions: not resolved".to_string()
                } else {
                    verdict(added <= 5.0).to_string()
                }
            ));
        }
        _ => md.push_str("| the HUD ≤ 5 µs a frame (glxgears) | a run failed | undefined |\n"),
    }
    let stats_cost = median(
        reps.iter()
            .filter_map(|x| {
                Some(
                    (num(&x["defaults"]["busy_ns"])? - num(&x["pass_no_stats"]["busy_ns"])?)
                        / num(&x["off"]["busy_ns"])?,
                )
            })
            .collect(),
    );
    let counts = field("draw", "window_count_median")
        .iter()
        .map(|x| format!("{x:.0}"))
        .collect::<Vec<_>>()
        .join(" / ");
    md.push_str(&format!(
        "\n`sample_budget` covers the whole `samples=draw` mode against `samples=off`: every 16th\n\
         frame is a baseline that takes no sample of framescope's at all, the other frames' cost\n\
         beyond it (pass and label samples included) sizes the draw window, aimed at 90 % of the\n\
         budget, and every 128 frames the count is rescaled when the measured cost is over the\n\
         budget (or under three quarters of it) by more than three standard errors. The pass\n\
         samples' pipeline statistics cost {} of the frame on their own (defaults against\n\
         `sample_stats=off`), and the window gets the rest: a median of {counts} draws a frame.\n",
        stats_cost.map_or("-".into(), pct)
    ));
    md.push_str(
        "\nThe CPU target is measured on the thread that records and submits. Its raw CPU time varies\n\
         by ±20 % between identical runs on this machine, pinned or not, which hides 2 %. Recording\n\
         10 000 draws is 95 % of that thread's time and, by default, framescope adds nothing to it\n\
         (draws go to the driver directly), so the thread's time over its own recording time\n\
         follows the machine's speed and framescope's per-frame work (submit, frame end) shows\n\
         against it. That measure leaves out framescope's few hooks inside the recording\n\
         (command-buffer begin and end, the pass's timestamps and statistics query), which run\n\
         once per command buffer or pass, not per draw.\n",
    );
    md.push_str(
        "\n\
         Why `samples=draw`'s coverage is reported, not targeted, at 10 000 small draws on\n\
         this GPU: a timed draw must wait for the one before it to finish (a bottom-of-pipe\n\
         timestamp), about 275 ns of GPU time per draw against the 26 ns each of these draws takes\n\
         when they overlap, so 3 % of a 260 µs frame buys about 28 timed draws, and 10 000 draws\n\
         take at least 360 frames to come round; 64 frames would need 157 a frame, 17 % of the\n\
         frame. framescope keeps the budget and says how far round the window is (`draw_window`\n\
         in every frame).\n\n",
    );
    Some(md)
}
