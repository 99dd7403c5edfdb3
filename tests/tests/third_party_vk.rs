//! Third-party Vulkan apps under framescope, each run bare and through `framescope run`, with
//! the validation layer below and without it (framescope directly on the driver): vkd3d's
//! demos (D3D12 on Vulkan: push descriptors, root constants, a 1.0 instance), mpv through
//! libplacebo, and vkcube stacked with the MangoHud and vkBasalt implicit layers. Each must
//! exit as it does bare, add no validation message, and leave a complete dump.

use framescope_tests::artifacts::require_program;
use framescope_tests::image::{diff_bbox, Rgb};
use framescope_tests::{dump, Artifacts, Outcome, Sandbox, Xvfb};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(240);

/// How a run ends.
#[derive(Clone, Copy)]
enum End {
    /// The app exits by itself.
    Itself,
    /// The app runs until told to stop: after this many seconds every top-level window gets
    /// an Escape key press, which vkd3d's demos answer by quitting cleanly (exit 0, device
    /// destroyed, the dump's summary written). A kill would leave a dump without its summary.
    EscapeAfter(u32),
}

struct App<'a> {
    tag: &'a str,
    program: &'a str,
    args: Vec<String>,
    env: &'a [(&'a str, &'a str)],
    end: End,
    /// Frames the dump must hold at least (exactly, with `exact`).
    frames: u64,
    exact: bool,
    /// Draws every frame must count: the app's own only, none of the layers framescope must
    /// sit above (vkBasalt's post-processing pass counted 4 more when it sat above framescope).
    draws: Option<u64>,
}

/// Runs `"$@"`, then after `$1` seconds presses Escape in every top-level window once a second
/// until the app quits (a slow start may not have mapped its window yet), for up to 60 s; exits
/// with the app's status (143 and `still-alive` when it had to be killed).
const ESCAPE_SCRIPT: &str = r#"secs=$1; shift
"$@" & pid=$!
sleep "$secs"
i=0
while kill -0 $pid 2>/dev/null && [ $i -lt 60 ]; do
  for w in $(xwininfo -root -children | awk '/^     0x/{print $1}'); do
    xdotool key --window "$w" Escape 2>/dev/null
  done
  sleep 1; i=$((i+1))
done
if kill -0 $pid 2>/dev/null; then echo "still-alive"; kill $pid; fi
wait $pid"#;

/// The identifiers (`VUID-…`, `UNASSIGNED-…`) of the validation messages in `out`.
fn validation_ids(out: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for line in out.lines() {
        let mut rest = line;
        while let Some(i) = rest.find("[ ") {
            rest = &rest[i + 2..];
            let id: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            if id.starts_with("VUID-") || id.starts_with("UNASSIGNED-") {
                ids.insert(id);
            }
        }
    }
    ids
}

fn run(x: &Xvfb, app: &App, framescope: bool, with_validation: bool) -> (Outcome, Option<dump::Dump>) {
    let a = Artifacts::get();
    let tag = format!(
        "{}-{}-{}",
        app.tag,
        if framescope { "fs" } else { "bare" },
        if with_validation { "val" } else { "noval" }
    );
    let mut sb = Sandbox::new(&tag);
    let path = sb.path("dump.jsonl");
    sb.display(x).set("FRAMESCOPE_DUMP", path.display().to_string());
    if app.draws.is_some() {
        // Draws are counted only when asked for (each is then intercepted).
        sb.set("FRAMESCOPE_CONFIG", "command_counts=1");
    }
    for (k, v) in app.env {
        sb.set(k, v);
    }
    if with_validation {
        sb.with_validation();
    }
    let mut argv: Vec<String> = Vec::new();
    let program = match app.end {
        End::Itself => app.program.to_string(),
        End::EscapeAfter(secs) => {
            argv.extend(["-c".into(), ESCAPE_SCRIPT.into(), "sh".into(), secs.to_string()]);
            argv.push(app.program.into());
            "sh".to_string()
        }
    };
    argv.extend(app.args.iter().cloned());
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = if framescope {
        sb.run_under_framescope(&a, &program, &args, LIMIT)
    } else {
        sb.run(Path::new(&program), &args, LIMIT)
    };
    let d = framescope.then(|| dump::read(&path));
    (out, d)
}

fn check(x: &Xvfb, app: &App) {
    require_program(app.program);
    if let End::EscapeAfter(_) = app.end {
        require_program("xdotool");
        require_program("xwininfo");
    }
    for with_validation in [true, false] {
        let what = format!(
            "{} ({} the validation layer)",
            app.tag,
            if with_validation { "with" } else { "without" }
        );
        let (bare, _) = run(x, app, false, with_validation);
        assert_eq!(bare.code(), Some(0), "{what}, bare: {}", bare.describe());
        let (fs, d) = run(x, app, true, with_validation);
        assert_eq!(fs.code(), bare.code(), "{what}, under framescope: {}", fs.describe());
        assert!(fs.lines_with("still-alive").is_empty(), "{what}: {}", fs.describe());
        let new: Vec<String> = validation_ids(&fs.combined())
            .difference(&validation_ids(&bare.combined()))
            .cloned()
            .collect();
        assert!(
            new.is_empty(),
            "{what}: new validation messages {new:?}\n{}",
            fs.describe()
        );
        assert!(
            fs.lines_with("framescope: internal error").is_empty(),
            "{what}: {}",
            fs.describe()
        );
        let d = d.expect("a dump");
        let summary = d
            .summary
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: the dump has no summary: {}", fs.describe()));
        assert_eq!(summary["ended_by"], "finish", "{what}: {summary}");
        let frames = d.frames.len() as u64;
        if app.exact {
            assert_eq!(frames, app.frames, "{what}: frames in the dump");
        } else {
            assert!(frames >= app.frames, "{what}: only {frames} frames in the dump");
        }
        if let Some(n) = app.draws {
            assert_eq!(
                d.u64s("draws").into_iter().collect::<BTreeSet<u64>>(),
                [n].into(),
                "{what}: draws per frame"
            );
        }
        println!("{what}: exit {:?}, {frames} frames", fs.code());
    }
}

#[test]
fn vkd3d_gears_runs_and_quits_as_it_does_bare() {
    let x = Xvfb::start();
    check(
        &x,
        &App {
            tag: "vkd3d-gears",
            program: "vkd3d-gears",
            args: vec![],
            env: &[],
            end: End::EscapeAfter(7),
            frames: 10,
            exact: false,
            draws: None,
        },
    );
}

#[test]
fn vkd3d_triangle_runs_and_quits_as_it_does_bare() {
    let x = Xvfb::start();
    check(
        &x,
        &App {
            tag: "vkd3d-triangle",
            program: "vkd3d-triangle",
            args: vec![],
            env: &[],
            end: End::EscapeAfter(7),
            // It presents when the window is exposed, not continuously.
            frames: 1,
            exact: false,
            draws: None,
        },
    );
}

/// libplacebo skips software devices unless one is named: the name lavapipe reports.
fn vulkan_device_name() -> String {
    require_program("vulkaninfo");
    let sb = Sandbox::new("third-party-devname");
    let out = sb.run(Path::new("vulkaninfo"), &["--summary"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    out.stdout
        .lines()
        .find_map(|l| {
            Some(
                l.trim()
                    .strip_prefix("deviceName")?
                    .trim()
                    .strip_prefix('=')?
                    .trim()
                    .to_string(),
            )
        })
        .unwrap_or_else(|| panic!("no deviceName: {}", out.describe()))
}

#[test]
fn mpv_on_vulkan_plays_a_generated_clip_as_it_does_bare() {
    let x = Xvfb::start();
    let device = vulkan_device_name();
    check(
        &x,
        &App {
            tag: "mpv",
            program: "mpv",
            args: vec![
                "--no-config".into(),
                "--vo=gpu".into(),
                "--gpu-api=vulkan".into(),
                "--gpu-context=x11vk".into(),
                format!("--vulkan-device={device}"),
                "--frames=120".into(),
                "av://lavfi:testsrc=duration=5".into(),
            ],
            env: &[],
            end: End::Itself,
            frames: 100,
            exact: false,
            draws: None,
        },
    );
}

#[test]
fn vkcube_with_mangohud_and_with_vkbasalt_runs_as_it_does_bare() {
    let x = Xvfb::start();
    for (tag, env) in [
        ("vkcube-mangohud", &[("MANGOHUD", "1")][..]),
        ("vkcube-vkbasalt", &[("ENABLE_VKBASALT", "1")][..]),
        ("vkcube-both", &[("MANGOHUD", "1"), ("ENABLE_VKBASALT", "1")][..]),
    ] {
        check(
            &x,
            &App {
                tag,
                program: "vkcube",
                args: vec!["--c".into(), "120".into()],
                env,
                end: End::Itself,
                frames: 120,
                exact: true,
                draws: Some(1),
            },
        );
    }
}

/// framescope sees the app's own image: its screenshot of a vkcube frame is the same with
/// MangoHud or vkBasalt enabled as without, because both sit below it (above it, MangoHud's
/// HUD or vkBasalt's sharpening would be in the picture).
#[test]
fn framescope_sees_the_apps_own_frames_with_mangohud_and_vkbasalt() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut shots = Vec::new();
    for (tag, env) in [
        ("shot-plain", &[][..]),
        ("shot-mangohud", &[("MANGOHUD", "1")][..]),
        ("shot-vkbasalt", &[("ENABLE_VKBASALT", "1")][..]),
    ] {
        let mut sb = Sandbox::new(tag);
        let config = format!(
            "hud=0,screenshot=50,screenshot_path={}",
            sb.path("shot-%N.png").display()
        );
        sb.display(&x).with_validation().set("FRAMESCOPE_CONFIG", config);
        for (k, v) in env {
            sb.set(k, v);
        }
        let out = sb.run_under_framescope(&a, "vkcube", &["--c", "60"], LIMIT);
        assert_eq!(out.code(), Some(0), "{tag}: {}", out.describe());
        shots.push((tag, Rgb::read(&sb.path("shot-50.png"))));
    }
    let (_, plain) = &shots[0];
    for (tag, shot) in &shots[1..] {
        assert_eq!((shot.w, shot.h), (plain.w, plain.h), "{tag}");
        let d = diff_bbox(shot, plain, plain.whole(), 0);
        assert!(d.is_none(), "{tag}: frame 50 differs from vkcube's own in {d:?}");
    }
}

#[cfg(test)]
mod unit {
    #[test]
    fn validation_ids_are_read_from_the_message_brackets() {
        let out = "[KV: 00:00:03 / 00:00:04 (77%)UNASSIGNED-GeneralParameterError-ExtensionNotEnabled(ERROR / SPEC): msgNum: -383040211 - Validation Error: [ UNASSIGNED-GeneralParameterError-ExtensionNotEnabled ] Object 0\nVUID-x(ERROR / SPEC): msgNum: 1 - Validation Error: [ VUID-vkDestroySemaphore-semaphore-01137 ] Object 0: [0] 0x1";
        let ids = super::validation_ids(out);
        assert_eq!(
            ids.into_iter().collect::<Vec<_>>(),
            [
                "UNASSIGNED-GeneralParameterError-ExtensionNotEnabled",
                "VUID-vkDestroySemaphore-semaphore-01137"
            ]
        );
    }
}

/// The dump header's `layers_above` names the known layers nearer the app than framescope,
/// whose draws and GPU work count as the app's: none under `framescope run`, which loads it
/// above the implicit layers; MangoHud (implicit) and the layers named before it when it is
/// enabled through `VK_INSTANCE_LAYERS` from an installed explicit manifest.
#[test]
fn the_dump_header_names_the_layers_above_framescope() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let header = |tag: &str, explicit: Option<&str>| {
        let mut sb = Sandbox::new(tag);
        let path = sb.path("dump.jsonl");
        sb.display(&x)
            .with_validation()
            .set("MANGOHUD", "1")
            .set("FRAMESCOPE_CONFIG", "command_counts=1")
            .set("FRAMESCOPE_DUMP", path.display().to_string());
        let out = match explicit {
            None => sb.run_under_framescope(&a, "vkcube", &["--c", "20"], LIMIT),
            Some(layers) => {
                // The installed explicit manifest, found in XDG_DATA_HOME.
                let inst = sb.run(&a.framescope, &["install"], LIMIT);
                assert_eq!(inst.code(), Some(0), "{}", inst.describe());
                sb.set("VK_INSTANCE_LAYERS", layers);
                sb.run(Path::new("vkcube"), &["--c", "20"], LIMIT)
            }
        };
        assert_eq!(out.code(), Some(0), "{tag}: {}", out.describe());
        let d = dump::read(&path);
        let above: Vec<String> = d.header["layers_above"]
            .as_array()
            .unwrap_or_else(|| panic!("{tag}: no layers_above: {}", d.header))
            .iter()
            .map(|v| v.as_str().expect("a name").to_string())
            .collect();
        (above, d.u64s("draws"))
    };
    let (above, draws) = header("above-run", None);
    assert_eq!(above, Vec::<String>::new());
    assert!(draws.iter().all(|&n| n == 1), "{draws:?}");
    let (above, draws) = header(
        "above-explicit",
        Some("VK_LAYER_FRAMESCOPE_overlay:VK_LAYER_KHRONOS_validation"),
    );
    assert_eq!(above, ["VK_LAYER_MANGOHUD_overlay"]);
    assert!(draws.iter().all(|&n| n > 1), "MangoHud's draws count here: {draws:?}");
    let (above, _) = header(
        "above-explicit-second",
        Some("VK_LAYER_KHRONOS_validation:VK_LAYER_FRAMESCOPE_overlay"),
    );
    assert_eq!(above, ["VK_LAYER_MANGOHUD_overlay", "VK_LAYER_KHRONOS_validation"]);
}
