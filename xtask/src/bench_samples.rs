//! CPU cost of samples on the app's recording thread: our test app records 10k draws per frame
//! (one primary command buffer, headless), bare and under framescope in every
//! `samples` mode. Two figures per mode: wall-clock ns added per draw (the app's own recording
//! time, paired and interleaved), and callgrind instructions per draw inside the app's
//! recording function (layer hooks and driver recording included), which do not depend on
//! what else runs on the machine.

use std::path::Path;
use std::process::Command;

// `draw` modes time every draw (`sample_budget=100`): this measures the CPU cost per timed draw.
const MODES: [&str; 7] = [
    "bare",
    "off",
    "cmdbuf",
    "renderpass",
    "label",
    "draw,sample_budget=100",
    "draw,sample_stats=draw,sample_budget=100",
];
const DRAWS: u64 = 10_000;
const FRAMES: u64 = 60;
const REPS: usize = 5;
const CG_DRAWS: u64 = 2_000;
const CG_FRAMES: u64 = 4;
const RECORD_FN: &str = "framescope_testapp::record::Recorder::record";

fn app_command(bin: &Path, mode: &str, wrapper: &[&str], draws: u64, frames: u64) -> Command {
    let app = bin.join("framescope-testapp");
    // Under framescope the frames end at VK_EXT_frame_boundary markers (framescope provides the
    // extension; bare lavapipe does not have it), so results are read and recycled per frame.
    let mut app_args: Vec<String> = [
        "--headless",
        "--draws",
        &draws.to_string(),
        "--frames",
        &frames.to_string(),
    ]
    .map(String::from)
    .to_vec();
    if mode != "bare" {
        app_args.push("--frame-boundary".into());
    }
    let mut c = if mode == "bare" {
        let mut c = Command::new(wrapper.first().map_or(app.as_os_str(), |w| w.as_ref()));
        c.args(wrapper.iter().skip(1));
        if !wrapper.is_empty() {
            c.arg(&app);
        }
        c
    } else {
        let mut c = Command::new(bin.join("framescope"));
        c.arg("run").arg("--");
        c.args(wrapper);
        c.arg(&app);
        c.env("FRAMESCOPE_CONFIG", format!("samples={mode},hud=0,log=quiet"));
        c
    };
    c.args(app_args);
    c
}

fn record_ns(bin: &Path, mode: &str) -> Result<f64, String> {
    let out = app_command(bin, mode, &[], DRAWS, FRAMES)
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("testapp-result "))
        .ok_or_else(|| format!("{mode}: no result line"))?;
    let v: serde_json::Value =
        serde_json::from_str(line.trim_start_matches("testapp-result ")).map_err(|e| e.to_string())?;
    let ns = v["record_ns"].as_f64().ok_or("no record_ns")?;
    Ok(ns / (DRAWS * FRAMES) as f64)
}

fn callgrind_ir(bin: &Path, mode: &str) -> Result<f64, String> {
    let out_file = std::env::temp_dir().join(format!("framescope-cg-{}-{mode}.out", std::process::id()));
    let toggle = format!("--toggle-collect={RECORD_FN}");
    let out_arg = format!("--callgrind-out-file={}", out_file.display());
    let wrapper = ["valgrind", "--tool=callgrind", &toggle, &out_arg];
    let out = app_command(bin, mode, &wrapper, CG_DRAWS, CG_FRAMES)
        .output()
        .map_err(|e| format!("valgrind: {e}"))?;
    let _ = std::fs::remove_file(&out_file);
    let err = String::from_utf8_lossy(&out.stderr);
    let collected = err
        .lines()
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|n| n.trim().replace(',', "").parse::<f64>().ok())
        .ok_or_else(|| format!("{mode}: no callgrind total in:\n{err}"))?;
    Ok(collected / (CG_DRAWS * CG_FRAMES) as f64)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the measurements and returns the markdown section.
pub fn section(bin: &Path) -> Result<String, String> {
    if Command::new("valgrind").arg("--version").output().is_err() {
        return Err("valgrind is not installed: apt-get install -y valgrind".into());
    }
    let runtime = std::env::temp_dir().join(format!("framescope-bench-samples-{}", std::process::id()));
    std::fs::create_dir_all(&runtime).map_err(|e| e.to_string())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).map_err(|e| e.to_string())?;
    std::env::set_var("XDG_RUNTIME_DIR", &runtime);
    let mut per_draw: Vec<Vec<f64>> = vec![Vec::new(); MODES.len()];
    for m in MODES {
        record_ns(bin, m)?; // warm-up
    }
    for rep in 0..REPS {
        for k in 0..MODES.len() {
            let i = (k + rep) % MODES.len();
            let ns = record_ns(bin, MODES[i])?;
            eprintln!("xtask: samples bench rep {} {:<10} {ns:.1} ns/draw", rep + 1, MODES[i]);
            per_draw[i].push(ns);
        }
    }
    let mut ir = Vec::new();
    for m in MODES {
        let v = callgrind_ir(bin, m)?;
        eprintln!("xtask: callgrind {m:<10} {v:.0} instructions/draw");
        ir.push(v);
    }
    let _ = std::fs::remove_dir_all(&runtime);
    let mut md = String::from("## Samples: CPU cost per draw on the recording thread\n\n");
    md.push_str(&format!(
        "`framescope-testapp --headless --draws {DRAWS} --frames {FRAMES}` (`--frame-boundary` under framescope): one primary command\n\
         buffer re-recorded every frame; the app times its own recording (`record_ns`). {REPS} interleaved\n\
         repetitions; *added* is the median of the per-repetition differences to bare. Instructions: callgrind\n\
         inside `{RECORD_FN}` ({CG_DRAWS} draws x {CG_FRAMES} frames), layer hooks and the driver's own recording\n\
         included. Targets: <= 50 ns added per draw with `samples=renderpass`, <= 150 ns with `samples=draw`\n\
         (default `sample_stats=pass`: one timestamp per draw; the last row adds per-draw statistics,\n\
         two more query commands per draw). On lavapipe every command recorded costs a malloc.\n\n"
    ));
    md.push_str(
        "| mode | ns/draw (median) | added ns/draw (median of pairs) | instructions/draw | added instructions/draw |\n",
    );
    md.push_str("|---|---|---|---|---|\n");
    let bare = per_draw[0].clone();
    for (i, m) in MODES.iter().enumerate() {
        let added: Vec<f64> = per_draw[i].iter().zip(&bare).map(|(a, b)| a - b).collect();
        let (a, ai) = if i == 0 {
            ("—".to_string(), "—".to_string())
        } else {
            (format!("{:+.1}", median(added)), format!("{:+.0}", ir[i] - ir[0]))
        };
        md.push_str(&format!(
            "| {m} | {:.1} | {a} | {:.0} | {ai} |\n",
            median(per_draw[i].clone()),
            ir[i]
        ));
    }
    md.push('\n');
    Ok(md)
}
