//! Run-time control of a running app's dump: `framescope ctl PID start|stop|mark|status` on
//! vkcube started with `dump_paused=1` (the dump then holds exactly the frames between start
//! and stop, and the mark, which the Perfetto export carries too), and `dump_toggle_key`
//! pressed with xdotool on the test app with the HUD off.

use framescope_tests::artifacts::require_program;
use framescope_tests::{dump, Artifacts, Sandbox, Xvfb};
use serde_json::Value;
use std::time::Duration;

/// A hang, not a timing.
const LIMIT: Duration = Duration::from_secs(180);

/// vkcube (`$2` is framescope) in the background; once its socket is up: status, start, mark,
/// stop, status, each reply on a line of its own prefixed with its request.
const SCRIPT: &str = r#"fs="$2"
"$fs" run -- vkcube --c 3000 > "$1/app.txt" 2>&1 & pid=$!
for i in $(seq 1 400); do "$fs" ctl $pid status >/dev/null 2>&1 && break; sleep 0.05; done
echo "status1 $("$fs" ctl $pid status)"
sleep 0.3
echo "start $("$fs" ctl $pid start)"
sleep 0.6
echo "mark $("$fs" ctl $pid mark boss fight)"
sleep 0.6
echo "stop $("$fs" ctl $pid stop)"
echo "status2 $("$fs" ctl $pid status)"
echo "refused-exit $("$fs" ctl $pid mark "$(printf 'a\033b')" >/dev/null 2>&1; echo $?)"
echo "usage-exit $("$fs" ctl $pid jump >/dev/null 2>&1; echo $?)"
wait $pid; echo "app-exit $?"
echo "gone-exit $("$fs" ctl $pid status >/dev/null 2>&1; echo $?)"
cat "$1/app.txt""#;

fn reply(out: &str, tag: &str) -> Value {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{tag} ")))
        .unwrap_or_else(|| panic!("no '{tag}' line: {out}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{tag}: {e}: {line}"))
}

#[test]
fn ctl_starts_and_stops_a_capture_in_a_running_vkcube_and_marks_it() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("ctl-vkcube");
    let dir = sb.dir.display().to_string();
    let path = sb.path("dump.jsonl");
    sb.display(&x)
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "dump_paused=1,hud=0");
    let fs = a.framescope.display().to_string();
    let out = sb.run(std::path::Path::new("/bin/sh"), &["-c", SCRIPT, "sh", &dir, &fs], LIMIT);
    let text = out.stdout.clone();
    assert!(text.contains("app-exit 0"), "{}", out.describe());
    let status1 = reply(&text, "status1");
    assert_eq!(
        (status1["ok"].as_bool(), status1["capturing"].as_bool()),
        (Some(true), Some(false)),
        "{text}"
    );
    let (start, mark, stop) = (reply(&text, "start"), reply(&text, "mark"), reply(&text, "stop"));
    for r in [&start, &mark, &stop] {
        assert_eq!(r["ok"], true, "the app was still running: {text}");
    }
    let status2 = reply(&text, "status2");
    assert_eq!(
        (status2["capturing"].as_bool(), status2["marks"].as_u64()),
        (Some(false), Some(1)),
        "{text}"
    );
    assert!(
        text.contains("refused-exit 1"),
        "the app refuses a label with control characters: {text}"
    );
    assert!(
        text.contains("usage-exit 2"),
        "an unknown request is a usage error: {text}"
    );
    assert!(text.contains("gone-exit 1"), "no socket after the app ended: {text}");

    let (t1, tm, t2) = (
        start["t_ns"].as_u64().unwrap(),
        mark["t_ns"].as_u64().unwrap(),
        stop["t_ns"].as_u64().unwrap(),
    );
    let d = dump::read(&path);
    assert!(d.summary.is_some(), "summary at exit");
    assert!(d.frames.len() >= 10, "{} frames captured in 1.2 s", d.frames.len());
    for f in &d.frames {
        let t = f["t_ns"].as_u64().unwrap();
        assert!(
            (t1..t2).contains(&t),
            "frame at {t} outside the capture [{t1}, {t2}): {f}"
        );
    }
    assert_eq!(
        d.summary.as_ref().unwrap()["frames"].as_u64(),
        Some(d.frames.len() as u64)
    );
    assert_eq!(d.marks.len(), 1, "{:?}", d.marks);
    let m = &d.marks[0];
    assert_eq!(
        (m["label"].as_str(), m["t_ns"].as_u64()),
        (Some("boss fight"), Some(tm)),
        "{m}"
    );
    let before = m["frame"].as_u64().expect("a frame follows the mark");
    assert!(d.frames.iter().any(|f| f["frame"].as_u64() == Some(before)), "{m}");

    // The mark in `report` and in the Perfetto trace (an instant event on the marks track).
    let rep = sb.run(&a.framescope, &["report", path.to_str().unwrap()], LIMIT);
    assert!(rep.stdout.contains("boss fight"), "{}", rep.describe());
    let trace = sb.path("t.perfetto-trace");
    let exp = sb.run(
        &a.framescope,
        &["export", path.to_str().unwrap(), "--perfetto", trace.to_str().unwrap()],
        LIMIT,
    );
    assert_eq!(exp.code(), Some(0), "{}", exp.describe());
    let bytes = std::fs::read(&trace).unwrap();
    let has = |s: &str| bytes.windows(s.len()).any(|w| w == s.as_bytes());
    assert!(
        has("boss fight") && has("marks (framescope ctl)"),
        "the trace carries the mark"
    );
}

/// vkcube (`$2` is framescope) with a 0.3 s `dump_duration`: once its socket is up, status is
/// asked until it says the dump ended (at most 20 s), then a start and a mark are tried.
const ENDED_SCRIPT: &str = r#"fs="$2"
"$fs" run -- vkcube --c 100000 > "$1/app.txt" 2>&1 & pid=$!
for i in $(seq 1 400); do "$fs" ctl $pid status >/dev/null 2>&1 && break; sleep 0.05; done
echo "status1 $("$fs" ctl $pid status)"
for i in $(seq 1 400); do "$fs" ctl $pid status | grep -q '"dump_ended":"dump_duration"' && break; sleep 0.05; done
echo "status2 $("$fs" ctl $pid status)"
echo "start $("$fs" ctl $pid start 2>/dev/null)"
echo "start-exit $("$fs" ctl $pid start >/dev/null 2>&1; echo $?)"
echo "mark $("$fs" ctl $pid mark late 2>/dev/null)"
kill $pid; wait $pid"#;

#[test]
fn ctl_says_the_dump_has_ended_and_refuses_start_and_mark_after_it() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("ctl-ended");
    let dir = sb.dir.display().to_string();
    let path = sb.path("dump.jsonl");
    sb.display(&x)
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "dump_duration=0.3,hud=0");
    let fs = a.framescope.display().to_string();
    let out = sb.run(
        std::path::Path::new("/bin/sh"),
        &["-c", ENDED_SCRIPT, "sh", &dir, &fs],
        LIMIT,
    );
    let text = out.stdout.clone();
    let status1 = reply(&text, "status1");
    assert_eq!(status1["ok"], true, "{text}");
    let status2 = reply(&text, "status2");
    assert_eq!(status2["dump_ended"], "dump_duration", "{}", out.describe());
    assert_eq!(status2["capturing"], false, "{text}");
    for tag in ["start", "mark"] {
        let r = reply(&text, tag);
        assert_eq!(r["ok"], false, "{tag} after the end: {text}");
        let why = r["error"].as_str().unwrap_or_default();
        assert!(why.contains("the dump has ended (dump_duration)"), "{tag}: {why}");
    }
    assert!(text.contains("start-exit 1"), "{text}");
    let d = dump::read(&path);
    assert_eq!(
        d.summary.as_ref().and_then(|s| s["ended_by"].as_str()),
        Some("dump_duration")
    );
    assert!(d.marks.is_empty(), "{:?}", d.marks);
}

/// The app (`$2`) in the background; once its window is up the dump key is pressed, 0.3 s a
/// time, until framescope's log says capture started (at most 100 tries).
const KEY_SCRIPT: &str = r#""$2" --frames 3000 --width 200 --height 200 > "$1/app.txt" 2>&1 & pid=$!
for i in $(seq 1 300); do xwininfo -name 'framescope-testapp 0' >/dev/null 2>&1 && break; sleep 0.1; done
for i in $(seq 1 100); do
  grep -q 'framescope: dump capture started' "$1/app.txt" && break
  xdotool keydown Control_R keydown F11; sleep 0.3; xdotool keyup F11 keyup Control_R; sleep 0.2
done
wait $pid; echo "app-exit $?"
cat "$1/app.txt""#;

#[test]
fn the_dump_key_starts_a_paused_capture_with_the_hud_off() {
    for p in ["xdotool", "xwininfo"] {
        require_program(p);
    }
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("ctl-key");
    let dir = sb.dir.display().to_string();
    let path = sb.path("dump.jsonl");
    sb.display(&x)
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "hud=0,dump_paused=1,dump_toggle_key=Control_R+F11");
    let app = a.testapp.display().to_string();
    let out = sb.run_under_framescope(&a, "sh", &["-c", KEY_SCRIPT, "sh", &dir, &app], LIMIT);
    assert!(out.stdout.contains("app-exit 0"), "{}", out.describe());
    assert!(
        out.stdout.contains("framescope: dump capture started"),
        "{}",
        out.describe()
    );
    let d = dump::read(&path);
    // Paused until the key: the first frames are not in the dump, later ones are.
    assert!(!d.frames.is_empty(), "frames after the key press");
    let first = d.frames[0]["frame"].as_u64().unwrap();
    assert!(first > 0, "frames before the key press were left out: first is {first}");
}

/// An app that takes no requests (stopped by SIGSTOP: the kernel queues the connection, nobody
/// answers): `ctl` says so in words after its 5 s, not "Resource temporarily unavailable".
#[test]
fn ctl_to_an_app_that_never_answers_says_so_in_words() {
    let a = Artifacts::get();
    let sb = Sandbox::new("ctl-silent");
    let dir = sb.path("runtime/framescope");
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    }
    let pid = std::process::id().to_string();
    // Bound and listening, never accepted: what a stopped app's socket does.
    let _listener = std::os::unix::net::UnixListener::bind(dir.join(format!("{pid}.sock"))).unwrap();
    let out = sb.run(&a.framescope, &["ctl", &pid, "status"], Duration::from_secs(30));
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert!(out.stderr.contains("no answer within 5 s"), "{}", out.describe());
    assert!(!out.stderr.contains("os error"), "{}", out.describe());
}
