//! Faults below framescope: the test-only layer `VK_LAYER_FRAMESCOPE_fault` (tests/faultlayer)
//! sits between the lane's layers and the driver and makes the driver lose the device, the
//! surface, answer out of date or suboptimal, or run out of memory. The test app runs once
//! with only that layer ("bare") and once under framescope, with the same fault: framescope
//! passes every fault on unchanged (the app's exit code and swapchain rebuilds are bare's),
//! neither hangs (the sandbox's limit) nor reports an internal error, writes a dump that parses
//! line by line and records a lost device or surface, and in the validation lane causes no
//! validation message the bare run does not have.
//!
//! The app runs windowed (under Xvfb) throughout, also for the faults that need no present:
//! headless, framescope's frames need `--frame-boundary`, which lavapipe lacks bare, so the
//! two runs could not share their arguments (one headless test compares them anyway).

use framescope_tests::{dump, test_layers, validation, Artifacts, Outcome, Sandbox, Xvfb};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);
/// 200 frames in a small window.
const WINDOWED: [&str; 6] = ["--frames", "200", "--width", "320", "--height", "240"];

/// The two runs of one fault.
struct Runs {
    bare: Outcome,
    under: Outcome,
    dump: PathBuf,
    /// Owns the dump's directory.
    _sb: Sandbox,
}

/// Runs the test app with `FRAMESCOPE_FAULT=fault` bare (`bare_args`) and under framescope
/// (`args`), windowed on `x` when given, and checks what holds for every fault: the same exit
/// status, no internal error or panic, the fault layer's count line in both, and no validation
/// message that only framescope's run has.
fn runs(name: &str, fault: &str, x: Option<&Xvfb>, bare_args: &[&str], args: &[&str]) -> Runs {
    let a = Artifacts::get();
    let mut sb = Sandbox::new(name);
    let path = sb.path("dump.jsonl");
    sb.with_validation().set("FRAMESCOPE_DUMP", path.display().to_string());
    if let Some(x) = x {
        sb.display(x);
    }
    test_layers::enable_faults(&mut sb, fault);
    let bare = sb.run(&a.testapp, bare_args, LIMIT);
    let app = a.testapp.display().to_string();
    let under = sb.run_under_framescope(&a, &app, args, LIMIT);
    let both = format!(
        "FRAMESCOPE_FAULT={fault}\n=== bare ===\n{}\n=== under framescope ===\n{}",
        bare.describe(),
        under.describe()
    );
    assert!(
        bare.lines_with("framescope: ").is_empty(),
        "framescope in the bare run\n{both}"
    );
    assert!(
        bare.code().is_some() && under.code() == bare.code(),
        "exit status under framescope differs from bare\n{both}"
    );
    for bad in ["framescope: internal error", "panicked at"] {
        assert!(!under.combined().contains(bad), "'{bad}'\n{both}");
    }
    injected(&bare, &both);
    injected(&under, &both);
    let ours = added_messages(&bare, &under);
    assert!(
        ours.is_empty(),
        "validation messages only under framescope:\n{}\n{both}",
        ours.join("\n")
    );
    Runs {
        bare,
        under,
        dump: path,
        _sb: sb,
    }
}

/// The fault layer's count at `vkDestroyDevice`: `framescope-fault: injected K faults (...)`.
fn injected(out: &Outcome, both: &str) -> u64 {
    let lines = out.lines_with("framescope-fault: injected ");
    assert_eq!(lines.len(), 1, "not one count line of the fault layer\n{both}");
    lines[0]
        .trim_start_matches("framescope-fault: injected ")
        .split(' ')
        .next()
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("bad count line {:?}", lines[0]))
}

/// A validation message without its handles, addresses and counts, which differ between runs.
fn normalized(m: &str) -> String {
    let mut out = String::new();
    let mut chars = m.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '0' && chars.peek() == Some(&'x') {
            chars.next();
            while chars.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                chars.next();
            }
            out.push_str("0x_");
        } else if c.is_ascii_digit() {
            while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
                chars.next();
            }
            out.push('#');
        } else {
            out.push(c);
        }
    }
    out
}

/// Validation messages of `under` that `bare` has not (numbers and handles aside).
fn added_messages(bare: &Outcome, under: &Outcome) -> Vec<String> {
    let known: BTreeSet<String> = validation::messages(&bare.combined())
        .iter()
        .map(|m| normalized(m))
        .collect();
    validation::messages(&under.combined())
        .into_iter()
        .filter(|m| !known.contains(&normalized(m)))
        .collect()
}

/// The app's result line.
fn result(out: &Outcome) -> Value {
    let line = out
        .lines_with("testapp-result ")
        .pop()
        .unwrap_or_else(|| panic!("no result line\n{}", out.describe()));
    serde_json::from_str(line.trim_start_matches("testapp-result ")).unwrap()
}

/// The dump's raw records, each line parsed on its own (before the schema sees them, so that
/// a missing record is named as such).
fn raw_records(path: &PathBuf) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("line {} does not parse: {e}: {l}", i + 1)))
        .collect()
}

/// The records after the last frame record and before the summary.
fn tail_before_summary(records: &[Value]) -> &[Value] {
    let end = records
        .iter()
        .position(|r| r["type"] == "summary")
        .unwrap_or(records.len());
    let start = records[..end]
        .iter()
        .rposition(|r| r["type"] == "frame")
        .map_or(0, |i| i + 1);
    &records[start..end]
}

/// The `fault` record of `kind` among the last records before the summary, with `result`, a
/// call named, a frame (or null) and a time.
fn fault_record(path: &PathBuf, kind: &str, result: &str, both: &str) -> Value {
    let records = raw_records(path);
    let tail = tail_before_summary(&records);
    let f = tail
        .iter()
        .find(|r| r["type"] == "fault" && r["kind"] == kind)
        .unwrap_or_else(|| {
            let all: Vec<String> = tail.iter().map(Value::to_string).collect();
            panic!(
                "no {{\"type\":\"fault\",\"kind\":\"{kind}\"}} among the last records before the summary:\n{}\n{both}",
                all.join("\n")
            )
        })
        .clone();
    assert_eq!(f["result"], result, "{f}");
    assert!(f["call"].as_str().is_some_and(|c| c.starts_with("vk")), "{f}");
    assert!(f["frame"].is_null() || f["frame"].is_u64(), "{f}");
    assert!(f["t_ns"].is_u64(), "{f}");
    f
}

fn both(r: &Runs) -> String {
    format!(
        "=== bare ===\n{}\n=== under framescope ===\n{}",
        r.bare.describe(),
        r.under.describe()
    )
}

/// The calls that fail once the fault layer has lost the device.
const LOST_CALLS: [&str; 10] = [
    "vkQueueSubmit",
    "vkQueueSubmit2",
    "vkQueueSubmit2KHR",
    "vkQueuePresentKHR",
    "vkWaitForFences",
    "vkGetQueryPoolResults",
    "vkQueueWaitIdle",
    "vkDeviceWaitIdle",
    "vkGetFenceStatus",
    "vkAcquireNextImageKHR",
];

#[test]
fn a_device_lost_at_the_20th_submit_reaches_the_app_and_the_dump_records_it() {
    let x = Xvfb::start();
    let r = runs("fault-lost", "lost_at_submit=20", Some(&x), &WINDOWED, &WINDOWED);
    let b = both(&r);
    assert_eq!(r.bare.code(), Some(1), "{b}");
    assert!(
        r.bare
            .stderr
            .contains("framescope-testapp: error: The logical device has been lost"),
        "{b}"
    );
    assert!(
        r.under
            .stderr
            .contains("framescope-testapp: error: The logical device has been lost"),
        "{b}"
    );
    let f = fault_record(&r.dump, "device_lost", "VK_ERROR_DEVICE_LOST", &b);
    assert!(LOST_CALLS.contains(&f["call"].as_str().unwrap()), "{f}");
    // The app's own teardown, not a kill: the dump is whole.
    let d = dump::read(&r.dump);
    assert!(d.summary.is_some(), "no summary\n{b}");
    assert_eq!(d.faults.len(), 1, "{:?}", d.faults);
    assert!(
        !d.frames.is_empty() && d.frames.len() < 20,
        "{} frames\n{b}",
        d.frames.len()
    );
}

#[test]
fn a_device_lost_headless_with_the_emulated_frame_boundary() {
    // Bare lavapipe has no VK_EXT_frame_boundary: the bare run leaves the flag out.
    let r = runs(
        "fault-lost-headless",
        "lost_at_submit=20",
        None,
        &["--headless", "--frames", "200"],
        &["--headless", "--frame-boundary", "--frames", "200"],
    );
    let b = both(&r);
    assert_eq!(r.bare.code(), Some(1), "{b}");
    assert!(
        r.bare
            .stderr
            .contains("framescope-testapp: error: The logical device has been lost"),
        "{b}"
    );
    let f = fault_record(&r.dump, "device_lost", "VK_ERROR_DEVICE_LOST", &b);
    assert_eq!(f["call"], "vkQueueSubmit", "{f}");
    let d = dump::read(&r.dump);
    assert!(d.summary.is_some(), "no summary\n{b}");
    // One submit a frame, none of framescope's own: frames 0..18 ended, the 20th submit failed.
    let n = d.frames.len() as u64;
    assert_eq!(d.u64s("frame"), (0..n).collect::<Vec<u64>>(), "{b}");
    assert!((1..20).contains(&n), "{n} frames\n{b}");
}

/// A present fault every `every`th present: the app sees each (rebuilds as often as bare),
/// finishes all 200 frames, and the dump has them.
fn present_fault(name: &str, fault: &str, frames: u64) {
    let x = Xvfb::start();
    let n = frames.to_string();
    let args = ["--frames", n.as_str(), "--width", "320", "--height", "240"];
    let r = runs(name, fault, Some(&x), &args, &args);
    let b = both(&r);
    assert_eq!(r.bare.code(), Some(0), "{b}");
    let (bare, under) = (result(&r.bare), result(&r.under));
    assert_eq!(under["frames"], frames, "{b}");
    assert!(bare["swapchain_rebuilds"].as_u64().unwrap() > 0, "{b}");
    assert_eq!(under["swapchain_rebuilds"], bare["swapchain_rebuilds"], "{b}");
    assert_eq!(injected(&r.under, &b), injected(&r.bare, &b), "{b}");
    let d = dump::read(&r.dump);
    assert!(
        d.frames.len() as u64 >= frames * 95 / 100,
        "{} frames\n{b}",
        d.frames.len()
    );
    let s = d.summary.as_ref().unwrap_or_else(|| panic!("no summary\n{b}"));
    assert_eq!(s["frames"].as_u64(), Some(d.frames.len() as u64), "{s}");
}

#[test]
fn every_7th_present_out_of_date_is_passed_on() {
    present_fault("fault-ood", "out_of_date_every=7", 200);
}

/// A swapchain storm: every present out of date, so the app rebuilds its swapchain (and
/// framescope its HUD's images for it) every frame, 500 times.
#[test]
fn a_swapchain_rebuilt_after_every_one_of_500_presents_is_survived() {
    present_fault("fault-ood-storm", "out_of_date_every=1", 500);
}

#[test]
fn every_5th_present_suboptimal_is_passed_on() {
    present_fault("fault-subopt", "suboptimal_every=5", 200);
}

#[test]
fn a_surface_lost_at_the_30th_present_reaches_the_app_and_the_dump_records_it() {
    let x = Xvfb::start();
    let r = runs("fault-surface", "surface_lost_at=30", Some(&x), &WINDOWED, &WINDOWED);
    let b = both(&r);
    assert_eq!(r.bare.code(), Some(1), "{b}");
    assert!(
        r.bare
            .stderr
            .contains("framescope-testapp: error: ERROR_SURFACE_LOST_KHR"),
        "{b}"
    );
    assert!(
        r.under
            .stderr
            .contains("framescope-testapp: error: ERROR_SURFACE_LOST_KHR"),
        "{b}"
    );
    let f = fault_record(&r.dump, "surface_lost", "VK_ERROR_SURFACE_LOST_KHR", &b);
    assert_eq!(f["call"], "vkQueuePresentKHR", "{f}");
    let d = dump::read(&r.dump);
    assert!(d.summary.is_some(), "no summary\n{b}");
    assert!((29..=30).contains(&d.frames.len()), "{} frames\n{b}", d.frames.len());
}

#[test]
fn no_query_pools_leaves_frames_without_gpu_time_and_the_app_unharmed() {
    let x = Xvfb::start();
    let r = runs("fault-oom-qp", "oom_query_pool", Some(&x), &WINDOWED, &WINDOWED);
    let b = both(&r);
    assert_eq!(r.bare.code(), Some(0), "{b}");
    // The app creates no query pool; framescope's timing does and is refused.
    assert_eq!(injected(&r.bare, &b), 0, "{b}");
    assert!(injected(&r.under, &b) > 0, "{b}");
    assert_eq!(result(&r.under)["frames"], 200, "{b}");
    let d = dump::read(&r.dump);
    assert_eq!(d.frames.len(), 200, "{b}");
    assert!(d.summary.is_some(), "no summary\n{b}");
    // docs/dump-schema.md: `disabled` is "`gpu_timing=0`, or GPU timing could not be set up".
    for f in &d.frames {
        assert!(f["gpu_busy_ns"].is_null() && f["gpu_missing"] == "disabled", "{f}");
    }
}

#[test]
fn out_of_memory_after_the_first_present_is_survived() {
    // Each kind alone, with a swapchain rebuild every 50 presents so that framescope sets its
    // HUD up again after the first present (it sets up nothing else then). Not `semaphore`
    // (the app's rebuild creates its render-finished semaphores) nor `command_buffers` (the
    // app allocates its second frame's buffer after the first present): those fail the app.
    let mut hit = Vec::new();
    for kind in ["query_pool", "image", "buffer", "memory", "command_pool", "fence"] {
        let x = Xvfb::start();
        let fault = format!("oom_after_present={kind},out_of_date_every=50");
        let r = runs(&format!("fault-oom-{kind}"), &fault, Some(&x), &WINDOWED, &WINDOWED);
        let b = both(&r);
        assert_eq!(r.bare.code(), Some(0), "{b}");
        assert_eq!(result(&r.under)["frames"], 200, "{b}");
        let d = dump::read(&r.dump);
        assert_eq!(d.frames.len(), 200, "{fault}\n{b}");
        assert!(d.summary.is_some(), "no summary\n{b}");
        if injected(&r.under, &b) > injected(&r.bare, &b) {
            hit.push(kind);
        }
    }
    // Else the test tests nothing.
    assert!(!hit.is_empty(), "no create of framescope's failed");
    eprintln!("framescope's own creates failed for: {hit:?}");
}

/// Out of memory from the start, before the first present: every create of one kind fails,
/// the app's own (which it reports and exits on, as bare) and framescope's alike (its feature
/// off, one line). The app's result reaches it unchanged: the same exit status and the same
/// error line as bare.
#[test]
fn out_of_memory_from_the_start_fails_the_app_as_bare() {
    // The kinds the test app creates before its first present, then those it never creates.
    const APP_CREATES: [&str; 6] = [
        "device",
        "swapchain",
        "command_pool",
        "command_buffers",
        "semaphore",
        "fence",
    ];
    let mut app_failed = Vec::new();
    for kind in APP_CREATES
        .into_iter()
        .chain(["image", "buffer", "memory", "query_pool"])
    {
        let x = Xvfb::start();
        let fault = format!("oom_always={kind}");
        let r = runs(
            &format!("fault-oom-always-{kind}"),
            &fault,
            Some(&x),
            &WINDOWED,
            &WINDOWED,
        );
        let b = both(&r);
        let errors = |o: &Outcome| o.lines_with("framescope-testapp: error:");
        assert_eq!(errors(&r.under), errors(&r.bare), "{fault}\n{b}");
        if r.bare.code() != Some(0) {
            assert!(!errors(&r.bare).is_empty(), "{fault}: no error line\n{b}");
            app_failed.push(kind);
        } else {
            // A kind the app never creates: only framescope's own failed, and the app ran on.
            assert_eq!(result(&r.under)["frames"], 200, "{fault}\n{b}");
        }
    }
    // Each kind the test app creates before its first present must have failed it.
    for kind in APP_CREATES {
        assert!(
            app_failed.contains(&kind),
            "{kind} did not fail the app: {app_failed:?}"
        );
    }
}
