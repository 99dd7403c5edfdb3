//! Staying clear of MangoHud's HUD. Under `framescope run` MangoHud sits below framescope and
//! draws its HUD over ours; both default to the top-left corner. MangoHud's box is about 280 px
//! wide (its default width is 11.7 × its 24 px font) and 140 px high with its default lines, so
//! the neighbouring top-right corner still overlaps it on a small window (by ~100 px on
//! vkcube's 500 × 500). The corner diagonally opposite MangoHud's is the farthest from it.
//!
//! MangoHud's position comes from its configuration as MangoHud reads it: the first of
//! `$MANGOHUD_CONFIGFILE`, `$XDG_CONFIG_HOME/MangoHud/<exe>.conf` and
//! `$XDG_CONFIG_HOME/MangoHud/MangoHud.conf` (`~/.config` without `XDG_CONFIG_HOME`) that
//! exists, then `$MANGOHUD_CONFIG` (comma-separated) on top.

use framescope_core::config::HudPosition;
use std::path::{Path, PathBuf};

/// Where MangoHud puts its HUD, by side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub left: bool,
    pub right: bool,
    pub top: bool,
    pub bottom: bool,
}

impl Place {
    const TOP_LEFT: Place = Place {
        left: true,
        right: false,
        top: true,
        bottom: false,
    };

    /// MangoHud's `position` value (`top-left`, `middle-right`, `bottom-center`, …).
    fn parse(v: &str) -> Option<Place> {
        let (v_part, h_part) = v.trim().split_once('-')?;
        let (top, bottom) = match v_part {
            "top" => (true, false),
            "middle" => (false, false),
            "bottom" => (false, true),
            _ => return None,
        };
        let (left, right) = match h_part {
            "left" => (true, false),
            "center" => (false, false),
            "right" => (false, true),
            _ => return None,
        };
        Some(Place {
            left,
            right,
            top,
            bottom,
        })
    }

    pub fn name(self) -> String {
        let v = if self.top {
            "top"
        } else if self.bottom {
            "bottom"
        } else {
            "middle"
        };
        let h = if self.left {
            "left"
        } else if self.right {
            "right"
        } else {
            "center"
        };
        format!("{v}-{h}")
    }

    /// The corner of the window farthest from this place.
    pub fn opposite(self) -> HudPosition {
        match (self.right, self.top) {
            (false, true) => HudPosition::BottomRight,
            (false, false) => HudPosition::TopRight,
            (true, true) => HudPosition::BottomLeft,
            (true, false) => HudPosition::TopLeft,
        }
    }
}

/// The `position` set in MangoHud's option text (`key=value` entries separated by `sep`,
/// `#` comments); the last one wins, as in MangoHud.
fn position_in(text: &str, sep: char) -> Option<Place> {
    text.split(sep)
        .map(|e| e.split('#').next().unwrap_or("").trim())
        .filter_map(|e| e.split_once('='))
        .filter(|(k, _)| k.trim() == "position")
        .filter_map(|(_, v)| Place::parse(v))
        .next_back()
}

/// MangoHud's configuration files for `exe`, in the order MangoHud tries them.
fn config_files(env: &dyn Fn(&str) -> Option<String>, exe: &str) -> Vec<PathBuf> {
    if let Some(f) = env("MANGOHUD_CONFIGFILE").filter(|f| !f.is_empty()) {
        return vec![PathBuf::from(f)];
    }
    let base = env("XDG_CONFIG_HOME")
        .filter(|d| d.starts_with('/'))
        .map(PathBuf::from)
        .or_else(|| {
            env("HOME")
                .filter(|h| h.starts_with('/'))
                .map(|h| Path::new(&h).join(".config"))
        });
    let Some(base) = base else { return Vec::new() };
    let dir = base.join("MangoHud");
    let mut files = Vec::new();
    if !exe.is_empty() && !exe.contains('/') {
        files.push(dir.join(format!("{exe}.conf")));
    }
    files.push(dir.join("MangoHud.conf"));
    files
}

/// Where MangoHud draws its HUD for the program `exe`; `read` reads a configuration file
/// (`None` when it does not exist or cannot be read).
pub fn place(env: &dyn Fn(&str) -> Option<String>, read: &dyn Fn(&Path) -> Option<String>, exe: &str) -> Place {
    let from_file = config_files(env, exe)
        .iter()
        .find_map(|f| read(f))
        .and_then(|text| position_in(&text, '\n'));
    let from_env = env("MANGOHUD_CONFIG").and_then(|c| position_in(&c, ','));
    from_env.or(from_file).unwrap_or(Place::TOP_LEFT)
}

/// Whether MangoHud's library is loaded in this process (its Vulkan layer, or its GL
/// interposer). By device or context creation the loader has loaded every layer of the chain.
pub fn loaded() -> bool {
    [c"libMangoHud.so", c"libMangoHud_opengl.so"]
        .iter()
        .any(|name| framescope_core::loaded::loaded(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn run(vars: &[(&str, &str)], files: &[(&str, &str)], exe: &str) -> Place {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let files: HashMap<PathBuf, String> = files.iter().map(|(k, v)| (PathBuf::from(k), v.to_string())).collect();
        place(&|k| vars.get(k).cloned(), &|p| files.get(p).cloned(), exe)
    }

    #[test]
    fn the_default_is_top_left_and_framescope_goes_bottom_right() {
        let p = run(&[("HOME", "/home/u")], &[], "vkcube");
        assert_eq!(p, Place::TOP_LEFT);
        assert_eq!(p.opposite(), HudPosition::BottomRight);
        assert_eq!(p.name(), "top-left");
    }

    #[test]
    fn files_are_tried_in_mangohuds_order_and_the_environment_wins() {
        let files = [
            (
                "/home/u/.config/MangoHud/vkcube.conf",
                "fps\nposition=bottom-right # mine\n",
            ),
            ("/home/u/.config/MangoHud/MangoHud.conf", "position=top-right\n"),
            ("/x/own.conf", "position=middle-left"),
        ];
        let home = ("HOME", "/home/u");
        assert_eq!(run(&[home], &files, "vkcube").name(), "bottom-right");
        assert_eq!(run(&[home], &files, "glxgears").name(), "top-right");
        assert_eq!(
            run(&[home, ("MANGOHUD_CONFIGFILE", "/x/own.conf")], &files, "vkcube").name(),
            "middle-left"
        );
        assert_eq!(
            run(
                &[home, ("MANGOHUD_CONFIG", "fps_limit=60,position=bottom-center")],
                &files,
                "vkcube"
            )
            .name(),
            "bottom-center"
        );
        assert_eq!(
            run(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/home/u")], &files, "vkcube"),
            Place::TOP_LEFT,
            "XDG_CONFIG_HOME replaces ~/.config"
        );
    }

    #[test]
    fn each_place_gets_the_corner_farthest_from_it() {
        let opp = |v: &str| Place::parse(v).unwrap().opposite();
        assert_eq!(opp("top-right"), HudPosition::BottomLeft);
        assert_eq!(opp("bottom-left"), HudPosition::TopRight);
        assert_eq!(opp("bottom-right"), HudPosition::TopLeft);
        assert_eq!(opp("middle-left"), HudPosition::TopRight);
        assert_eq!(opp("top-center"), HudPosition::BottomRight);
        assert_eq!(Place::parse("sideways"), None);
        assert_eq!(
            run(&[("MANGOHUD_CONFIG", "position=nowhere")], &[], "a"),
            Place::TOP_LEFT
        );
    }
}
