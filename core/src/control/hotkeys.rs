//! What the toggle keys do, whichever reader saw them: X11's (polled on a connection of
//! framescope's own, `framescope_overlay::keys`) or Wayland's (the app's keyboard events on a
//! private queue, `framescope_collectors::input::wayland_keys`). Both readers call [`pressed`]
//! from their own thread, so a key acts the same way whatever window system the app is on.

use crate::control::config::Config;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// The combinations, in the order [`combos`] gives them.
pub const HUD: usize = 0;
pub const DUMP: usize = 1;
pub const FPS_LIMIT: usize = 2;

static VISIBLE: AtomicBool = AtomicBool::new(true);

/// Presses of `fps_limit_key` so far: the index into `fps_limit`'s rates.
static FPS_PRESSES: AtomicU64 = AtomicU64::new(0);

/// Wayland keyboard readers attached now: with one, X11's absence is no reason to say the keys
/// are unavailable.
static WAYLAND_READERS: AtomicUsize = AtomicUsize::new(0);

/// Whether the HUD is shown (toggled by its key).
pub fn visible() -> bool {
    VISIBLE.load(Ordering::Relaxed)
}

/// How often the frame-limit key was pressed.
pub fn fps_presses() -> u64 {
    FPS_PRESSES.load(Ordering::Relaxed)
}

/// The key combinations to read under `c`, indexed by [`HUD`], [`DUMP`] and [`FPS_LIMIT`]
/// (empty: none): the HUD's while the HUD is on, the dump's while dumping, the rate key only
/// with several rates to go through.
pub fn combos(c: &Config) -> [&str; 3] {
    let hud = if c.hud { c.hud_toggle_key.as_str() } else { "" };
    let dump = if c.dump.is_some() {
        c.dump_toggle_key.as_str()
    } else {
        ""
    };
    let fps = if c.fps_limit.contains(':') {
        c.fps_limit_key.as_str()
    } else {
        ""
    };
    [hud, dump, fps]
}

/// Combination `k` went down: flips the HUD, the dump's capture, or steps the frame limit.
pub fn pressed(k: usize) {
    match k {
        HUD => {
            let v = !VISIBLE.load(Ordering::Relaxed);
            VISIBLE.store(v, Ordering::Relaxed);
            crate::runtime::log::info(format_args!("HUD {}", if v { "shown" } else { "hidden" }));
        }
        DUMP => match crate::control::capture::toggle() {
            Ok(_) => crate::runtime::log::info(format_args!(
                "dump capture {}",
                if crate::control::capture::capturing() {
                    "started"
                } else {
                    "stopped"
                }
            )),
            Err(e) => crate::runtime::log::info(format_args!("dump capture key: {e}")),
        },
        FPS_LIMIT => {
            FPS_PRESSES.fetch_add(1, Ordering::Relaxed);
        }
        _ => {}
    }
}

/// A Wayland keyboard reader started (`true`) or ended (`false`).
pub fn wayland_reader(started: bool) {
    if started {
        WAYLAND_READERS.fetch_add(1, Ordering::Relaxed);
    } else {
        let _ = WAYLAND_READERS.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }
}

/// Whether a Wayland keyboard reader is attached.
pub fn wayland_reading() -> bool {
    WAYLAND_READERS.load(Ordering::Relaxed) > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combos_follow_what_is_on() {
        let mut c = Config {
            hud: true,
            hud_toggle_key: "Shift_R+F12".into(),
            dump_toggle_key: "F9".into(),
            fps_limit_key: "F1".into(),
            fps_limit: "60".into(),
            ..Config::default()
        };
        assert_eq!(combos(&c), ["Shift_R+F12", "", ""]);
        c.hud = false;
        c.fps_limit = "60:0".into();
        assert_eq!(combos(&c), ["", "", "F1"]);
    }

    #[test]
    fn readers_are_counted_and_never_below_zero() {
        wayland_reader(false);
        assert!(!wayland_reading());
        wayland_reader(true);
        assert!(wayland_reading());
        wayland_reader(false);
        assert!(!wayland_reading());
    }
}
