//! The toggle key hides the HUD of a Vulkan app, read by the key reader's own thread: the
//! key is held (xdotool, on the Xvfb the app draws to) until the reader says it hid the HUD,
//! and the app still presents all its frames afterwards and exits 0.

use framescope_tests::artifacts::require_program;
use framescope_tests::{Artifacts, Sandbox, Xvfb};
use std::time::Duration;

/// A hang, not a timing.
const LIMIT: Duration = Duration::from_secs(180);

/// The app (`$2`) runs in the background; once its window is up the key is pressed, 0.3 s a
/// time, until framescope's log says the HUD is hidden (at most 100 tries).
const SCRIPT: &str = r#""$2" --frames 5000 --width 200 --height 200 > "$1/app.txt" 2>&1 & pid=$!
for i in $(seq 1 300); do xwininfo -name 'framescope-testapp 0' >/dev/null 2>&1 && break; sleep 0.1; done
for i in $(seq 1 100); do
  grep -q 'framescope: HUD hidden' "$1/app.txt" && break
  xdotool keydown Shift_R keydown F12; sleep 0.3; xdotool keyup F12 keyup Shift_R; sleep 0.2
done
wait $pid; echo "app-exit $?"
cat "$1/app.txt""#;

#[test]
fn the_toggle_key_hides_the_hud_of_a_vulkan_app() {
    for p in ["xdotool", "xwininfo"] {
        require_program(p);
    }
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("keys-toggle-vk");
    let dir = sb.dir.display().to_string();
    sb.display(&x).set("FRAMESCOPE_CONFIG", "hud=1");
    let app = a.testapp.display().to_string();
    let out = sb.run_under_framescope(&a, "sh", &["-c", SCRIPT, "sh", &dir, &app], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert_eq!(
        out.lines_with("app-exit ").pop().as_deref(),
        Some("app-exit 0"),
        "{}",
        out.describe()
    );
    assert!(
        !out.lines_with("framescope: HUD hidden").is_empty(),
        "{}",
        out.describe()
    );
    assert!(
        out.lines_with("framescope: internal error").is_empty(),
        "{}",
        out.describe()
    );
}
