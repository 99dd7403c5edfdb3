//! The H100 section of `docs/performance.md`, rendered from the committed results of
//! `tests/device/h100-costs.sh` (`docs/h100-costs.json`): the GPU machine is reached only
//! through the device tool, so `cargo xtask bench` reads the run that the script made and was
//! committed with its date and driver, and states each target against it.

use serde_json::Value;

/// Where the committed results live, relative to the repository root.
pub const RESULTS: &str = "docs/h100-costs.json";
/// The CPU cost split into parts, from `tests/device/h100_cpu_parts.py`.
pub const PARTS: &str = "docs/h100-cpu-parts.json";

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
    let path = super::root().join(RESULTS);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (run tests/device/h100-costs.sh through the device tool and commit its h100-costs.json there)",
            path.display()
        )
    })?;
    let r: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut md = render(&r).ok_or_else(|| format!("{}: missing fields", path.display()))?;
    let parts = super::root().join(PARTS);
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
         of framescope added at a time, 3 interleaved repetitions, medians; *recording* is the app's own\n\
         time recording its command buffer (`record_ns`), where the per-draw hooks run.\n\n\
         | configuration | CPU ms/frame | wall ms/frame | recording µs/frame |\n|---|---|---|---|\n",
        p["date_utc"].as_str()?,
        p["gpu_driver"].as_str()?
    );
    // In the order the script adds the parts (the JSON object's keys are sorted).
    let order = [
        "bare",
        "hooks only",
        "+ GPU timing",
        "+ render-pass samples",
        "+ counters (defaults)",
        "+ dump",
    ];
    for name in order {
        let Some(row) = parts.get(name) else { continue };
        let med = |k: &str| median(row[k].as_array().map_or(vec![], |a| a.iter().filter_map(num).collect()));
        let f = |v: Option<f64>, d: usize| v.map_or("-".into(), |x| format!("{x:.d$}"));
        md.push_str(&format!(
            "| {name} | {} | {} | {} |\n",
            f(med("cpu_ms"), 3),
            f(med("wall_ms"), 3),
            f(med("record_us"), 0)
        ));
    }
    md.push_str(
        "\nThe hooks alone (every recording command intercepted, counted by kind, nothing timed) add\n\
         about 12 ns per draw here, 0.1 ms a frame at 10 000 draws: against this app's 0.35 ms of CPU\n\
         per frame (it does nothing but record draws) that is a third, so the 2 % CPU target is\n\
         missed by far; in absolute terms it is 1 % of a 60 fps frame. GPU timing, render-pass\n\
         samples, counters and the dump add 0.03–0.05 ms more, partly on framescope's own threads.\n\n",
    );
    Some(md)
}

fn render(r: &Value) -> Option<String> {
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
         is the mean of frames 100 on; CPU per frame is `(X({}) - X({})) / {}` of the whole process's\n\
         user + system time, which cancels start-up; bare runs have no dump, so no GPU busy.\n\n",
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
        ("draw", "`samples=draw` (`sample_budget=3`)"),
        ("draw_all", "`samples=draw,sample_budget=100` (every draw)"),
    ] {
        let busy = field(mode, "busy_ns");
        let vs = if mode == "off" { String::new() } else { list(&rel(mode)) };
        md.push_str(&format!("| {what} | {} | {vs} |\n", us(&busy)));
    }
    md.push('\n');

    let cpu_bare = field("bare", "cpu_ms_per_frame");
    let cpu_def = field("defaults", "cpu_ms_per_frame");
    let cpu_added: Vec<f64> = cpu_bare.iter().zip(&cpu_def).map(|(b, d)| d / b - 1.0).collect();
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
    md.push_str(&format!(
        "| defaults ≤ 3 % of GPU busy at 10k draws | {} (per repetition {}) | {} |\n",
        pct(busy_def),
        list(&rel("defaults")),
        verdict(busy_def <= 0.03)
    ));
    md.push_str(&format!(
        "| defaults ≤ 2 % of CPU frame time at 10k draws | {} (bare {} ms, defaults {} ms per frame) | {} |\n",
        pct(cpu_med),
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
        verdict(cpu_med <= 0.02)
    ));
    md.push_str(&format!(
        "| `samples=draw` ≤ 3 % of GPU busy | {} (per repetition {}) | {} |\n",
        pct(busy_draw),
        list(&rel("draw")),
        verdict(busy_draw <= 0.03)
    ));
    let over_defaults: Vec<f64> = reps
        .iter()
        .filter_map(|x| Some(num(&x["draw"]["busy_ns"])? / num(&x["defaults"]["busy_ns"])? - 1.0))
        .collect();
    md.push_str(&format!(
        "| the draw window alone (`samples=draw` against the defaults, which it includes) ≤ 3 % | {} (per repetition {}) | {} |\n",
        pct(median(over_defaults.clone())?),
        list(&over_defaults),
        verdict(median(over_defaults)? <= 0.03)
    ));
    md.push_str(&format!(
        "| every draw timed within 64 frames | {} frames (per repetition {}) | {} |\n",
        within_med.map_or("never".into(), |x| format!("{x:.0}")),
        within.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(" / "),
        verdict(within_med.is_some_and(|x| x <= 64.0))
    ));
    md.push_str(&format!(
        "| per-draw means within 10 % of `sample_budget=100` (regions scene, {} keys) | max {}, median {} | {} |\n",
        regions["keys_all"],
        key_max.map_or("-".into(), |x| format!("{:.1} %", 100.0 * x)),
        key_med.map_or("-".into(), |x| format!("{:.1} %", 100.0 * x)),
        verdict(key_max.is_some_and(|x| x <= 0.10))
    ));
    match (gb, gf, gm) {
        (Some(b), Some(f), Some(m)) if m > b => {
            let ratio = (f - b) / (m - b);
            md.push_str(&format!(
                "| HUD's added time ≤ 0.25× MangoHud's (glxgears, GLX on Xvfb) | {ratio:.2}× (bare {b:.4} ms, framescope {f:.4} ms, MangoHud {m:.4} ms per frame) | {} |\n",
                verdict(ratio <= 0.25)
            ));
        }
        _ => md.push_str("| HUD's added time ≤ 0.25× MangoHud's (glxgears) | MangoHud added no measurable time (or a run failed) | undefined |\n"),
    }
    md.push_str(
        "\n`samples=draw` includes the render-pass samples of the defaults (+2.6 % here), and\n\
         `sample_budget` sizes the draw window to its own 3 % on top of them (it is measured\n\
         against baseline frames that still take the pass samples), so the mode as a whole costs\n\
         5.5–6.7 %. The window itself costs 2.8–4.4 % rather than 3 %: its count is fixed from the\n\
         cost per timed draw measured in the first 48 frames and then held, and that cost differs\n\
         from run to run (265–347 ns; a check with 128 settling frames gave the same spread, so it\n\
         is not the GPU warming up).\n\n\
         Why `samples=draw` and the 64-frame coverage cannot both be met at 10 000 small draws on\n\
         this GPU: each timed draw costs about 275 ns of GPU time (a timestamp after a draw waits for\n\
         it), so 3 % of a 260 µs frame is about 28 draws a frame, and 10 000 draws then take about\n\
         360 frames to come round; 64 frames would need 157 a frame, 17 % of the frame. framescope\n\
         keeps the budget and says how far round the window is (`draw_window` in every frame).\n\n",
    );
    Some(md)
}
