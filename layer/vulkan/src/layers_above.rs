//! Which known layers sit above framescope (nearer the app), so that the dump says whose draws
//! and GPU work it counts as the app's. The loader (1.3.239) puts every enabled implicit layer
//! above the layers of `VK_INSTANCE_LAYERS`, in which the first named is nearest the app.
//! `framescope run` and `FRAMESCOPE=1` load framescope as an implicit layer found before the
//! system ones, so then nothing known sits above it; loaded through `VK_INSTANCE_LAYERS`, the
//! layers named before it there and the known implicit layers that are loaded do.

/// Implicit layers that draw or submit work of their own, and their libraries' file names.
const KNOWN_IMPLICIT: &[(&str, &str)] = &[
    ("VK_LAYER_MANGOHUD_overlay", "libMangoHud.so"),
    ("VK_LAYER_VKBASALT_post_processing", "libvkbasalt.so"),
    ("VK_LAYER_OBS_vkcapture_64", "libVkLayer_obs_vkcapture.so"),
];

const OURS: &str = "VK_LAYER_FRAMESCOPE_overlay";

fn env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.is_empty())
}

/// Whether `lib` (a file name) is loaded in this process; loads nothing.
fn loaded(lib: &str) -> bool {
    std::ffi::CString::new(lib).is_ok_and(|name| framescope_core::loaded::loaded(&name))
}

/// The names of the layers above framescope, nearest the app first.
pub fn layers_above() -> Vec<String> {
    let implicit = (env("FRAMESCOPE_RUN").as_deref() == Some("1") || env("FRAMESCOPE").as_deref() == Some("1"))
        && env("DISABLE_FRAMESCOPE").is_none();
    if implicit {
        return Vec::new();
    }
    let named: Vec<String> = env("VK_INSTANCE_LAYERS")
        .map(|l| l.split(':').map(str::to_string).collect())
        .unwrap_or_default();
    let mut above: Vec<String> = KNOWN_IMPLICIT
        .iter()
        .filter(|(name, lib)| !named.iter().any(|n| n == name) && loaded(lib))
        .map(|(name, _)| name.to_string())
        .collect();
    above.extend(named.into_iter().take_while(|n| n != OURS).filter(|n| !n.is_empty()));
    above
}
