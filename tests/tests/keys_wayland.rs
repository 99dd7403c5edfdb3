//! The toggle key hides the HUD of a native Wayland app, read from the app's own keyboard
//! events on framescope's private queue: vkcube-wayland (Vulkan, lavapipe) on a headless sway
//! (`framescope_tests::sway`), with `wtype` typing `Shift_R+F12` into the focused app window,
//! and no X display at all.
//!
//! wtype's first keysym is evdev 1, which vkcube takes for Escape (see `sway`'s module
//! comment); so one wtype runs through the whole test: its first key, `x`, goes out before
//! the app starts (to nobody: the app waits for wtype's request to show in its
//! `WAYLAND_DEBUG` log), and `Shift_R` and `F12` come at evdev 2 and 3
//! (the app's `1` and `2`, which it ignores), held 0.2 s once a second. Holding the virtual
//! keyboard from the start also gives the seat its keyboard before the app starts, so the app
//! and framescope bind theirs at once. Once framescope says the HUD is hidden, that wtype is
//! stopped and a second one presses Escape: vkcube quits through its own path, which tears
//! framescope's queue down at the surface's destruction.
//!
//! The seat gains its keyboard again only when that second wtype creates its virtual keyboard,
//! and a client's `wl_keyboard` gets the key events sent after it was created (wayland.xml,
//! `wl_seat.get_keyboard`). vkcube asks for its keyboard when it dispatches the seat's
//! `capabilities` event, between frames; a wtype that pressed Escape at once was seen, with
//! the validation layer below, pressing it about 5 ms before vkcube's `get_keyboard`, and
//! vkcube never quit. So the Escape wtype waits half a second after creating its keyboard, and
//! another one tries again while vkcube runs.

use framescope_tests::sway::Sway;
use framescope_tests::{Artifacts, Sandbox};
use std::time::Duration;

/// A hang, not a timing.
const LIMIT: Duration = Duration::from_secs(120);

/// `$1` the sandbox dir, `$2…` the app and its arguments.
const SCRIPT: &str = r#"dir=$1; shift
combo=""
for i in $(seq 1 60); do combo="$combo -P Shift_R -P F12 -s 200 -p F12 -p Shift_R -s 800"; done
WAYLAND_DEBUG=1 wtype -P x -p x -s 1500 $combo > "$dir/wtype.txt" 2>&1 & keys=$!
for i in $(seq 1 300); do grep -q 'zwp_virtual_keyboard_v1@[0-9]*\.key([0-9]*, 1, 0)' "$dir/wtype.txt" && break; sleep 0.1; done
sleep 0.2
"$@" > "$dir/app.txt" 2>&1 & pid=$!
for i in $(seq 1 600); do
  grep -q 'framescope: HUD hidden' "$dir/app.txt" && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
kill $keys; wait $keys 2>/dev/null
sleep 0.3
for i in $(seq 1 20); do
  kill -0 $pid 2>/dev/null || break
  wtype -s 500 -k Escape
  sleep 0.5
done
wait $pid; echo "app-exit $?"
cat "$dir/app.txt"
grep -v '^\[' "$dir/wtype.txt"; true"#;

fn toggles_the_hud(name: &str, app: &[&str]) {
    framescope_tests::artifacts::require_program(app[0]);
    let a = Artifacts::get();
    let s = Sway::start_headless();
    let mut sb = Sandbox::new(name);
    let dir = sb.dir.display().to_string();
    sb.with_validation().sway(&s).set("FRAMESCOPE_CONFIG", "hud=1");
    let mut args = vec!["-c", SCRIPT, "sh", &dir];
    args.extend_from_slice(app);
    let out = sb.run_under_framescope(&a, "sh", &args, LIMIT);
    let describe = || format!("{}\n--- sway ---\n{}", out.describe(), s.log());
    assert_eq!(out.code(), Some(0), "{}", describe());
    assert_eq!(
        out.lines_with("app-exit ").pop().as_deref(),
        Some("app-exit 0"),
        "{}",
        describe()
    );
    assert!(
        out.combined()
            .contains("framescope: toggle keys Shift_R+F12 read from the app's Wayland keyboard events"),
        "{}",
        describe()
    );
    assert!(!out.lines_with("framescope: HUD hidden").is_empty(), "{}", describe());
    assert!(
        out.lines_with("framescope: toggle keys")
            .iter()
            .all(|l| !l.contains("unavailable")),
        "{}",
        describe()
    );
    out.assert_no_loader_errors(app[0]);
    framescope_tests::validation::assert_clean(app[0], &out.combined());
}

#[test]
fn the_toggle_key_hides_the_hud_of_a_vulkan_wayland_app() {
    toggles_the_hud("keys-wayland-vk", &["vkcube-wayland"]);
}
