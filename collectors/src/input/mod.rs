//! Input the toggle keys are read from where X11 has none to poll: the app's own Wayland
//! keyboard events ([`wayland_keys`]), with xkbcommon for the keymap ([`xkb`]).

pub mod wayland_keys;
pub mod xkb;
