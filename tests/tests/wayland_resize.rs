//! A native Wayland Vulkan app whose swapchain is recreated as its window is resized, under
//! framescope with the HUD: vkcube-wayland on a headless sway (`framescope_tests::sway`; weston's
//! headless output resizes nothing), its window tiled to the output, then floated and resized
//! with `swaymsg`, so vkcube recreates its swapchain twice (it follows each
//! `xdg_toplevel.configure`). The app must run to its end as it does bare, every frame in the
//! dump with the swapchain it was presented to, the HUD drawn on the last swapchain (the
//! screenshot is of the resized window), and the validation layer quiet about all of it.

use framescope_tests::dump;
use framescope_tests::image::{count_in, is_text, Rect, Rgb};
use framescope_tests::sway::Sway;
use framescope_tests::{Artifacts, Sandbox};
use std::collections::BTreeSet;
use std::time::Duration;

/// A hang, not a timing.
const LIMIT: Duration = Duration::from_secs(180);
const FRAMES: u64 = 300;
/// The screenshot's frame: long after the resize, which the script makes as soon as the
/// window is mapped (within a few frames of the first). vkcube-wayland sets no app_id: its
/// window is found by its title.
const SHOT: u64 = 250;
/// The floating window's size sway is asked for (the surface is a little smaller: borders).
const FLOATING: (u32, u32) = (400, 300);

/// `$1` sway's IPC socket, `$2` the sandbox dir, `$3…` the app and its arguments.
const SCRIPT: &str = r#"ipc=$1; dir=$2; shift 2
"$@" > "$dir/app.txt" 2>&1 & pid=$!
for i in $(seq 1 600); do
  swaymsg -s "$ipc" -t get_tree | grep -q '"name": "vkcube"' && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.05
done
swaymsg -s "$ipc" "[title=vkcube] floating enable, resize set $W $H"; echo "swaymsg $?"
wait $pid; echo "app-exit $?"
cat "$dir/app.txt""#;

#[test]
fn a_wayland_window_resized_twice_keeps_the_hud_and_every_frame() {
    framescope_tests::artifacts::require_program("vkcube-wayland");
    framescope_tests::artifacts::require_program("swaymsg");
    let a = Artifacts::get();
    let s = Sway::start_headless();
    let ipc = s.ipc_socket();
    let mut sb = Sandbox::new("wayland-resize");
    let dir = sb.dir.display().to_string();
    sb.with_validation()
        .sway(&s)
        .set("W", FLOATING.0.to_string())
        .set("H", FLOATING.1.to_string())
        .set(
            "FRAMESCOPE_CONFIG",
            format!("hud=1,screenshot={SHOT},dump={dir}/dump.jsonl,screenshot_path={dir}/shot-%N.png"),
        );
    let frames = FRAMES.to_string();
    let args = ["-c", SCRIPT, "sh", &ipc, &dir, "vkcube-wayland", "--c", &frames];
    let out = sb.run_under_framescope(&a, "sh", &args, LIMIT);
    let describe = || format!("{}\n--- sway ---\n{}", out.describe(), s.log());
    assert_eq!(out.code(), Some(0), "{}", describe());
    assert_eq!(
        out.lines_with("app-exit ").pop().as_deref(),
        Some("app-exit 0"),
        "{}",
        describe()
    );
    out.assert_no_loader_errors("vkcube-wayland");
    framescope_tests::validation::assert_clean("vkcube-wayland resized", &out.combined());
    let d = dump::read(&sb.path("dump.jsonl"));
    assert_eq!(d.frames.len() as u64, FRAMES, "{}", describe());
    // Every frame names the swapchain it was presented to; the window's sizes in order.
    let mut sizes: Vec<(u64, u64)> = Vec::new();
    let mut handles = BTreeSet::new();
    for f in &d.frames {
        let sc = &f["swapchain"];
        let size = (sc["width"].as_u64().unwrap(), sc["height"].as_u64().unwrap());
        handles.insert(sc["handle"].as_str().unwrap().to_string());
        if sizes.last() != Some(&size) {
            sizes.push(size);
        }
    }
    assert!(
        sizes.len() >= 2 && handles.len() >= 2,
        "no swapchain was recreated: sizes {sizes:?}\n{}",
        describe()
    );
    let last = *sizes.last().unwrap();
    assert!(
        last.0 <= u64::from(FLOATING.0) && last.1 <= u64::from(FLOATING.1) && last.0 >= 300 && last.1 >= 200,
        "the last swapchain is not the floating window's: sizes {sizes:?}\n{}",
        describe()
    );
    // The screenshot is of the resized window, with the HUD's text at its top-left corner.
    let shot = Rgb::read(&sb.path(&format!("shot-{SHOT}.png")));
    assert_eq!(
        (shot.w as u64, shot.h as u64),
        last,
        "frame {SHOT} was not presented to the resized window (the resize came late?)"
    );
    let corner = Rect {
        x0: 0,
        y0: 0,
        x1: shot.w.min(260),
        y1: shot.h.min(160),
    };
    let text = count_in(&shot, corner, is_text);
    assert!(text >= 300, "no HUD text on the resized window ({text} text pixels)");
}
