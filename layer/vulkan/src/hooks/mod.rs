//! The hooks: the Vulkan commands the layer intercepts, one module per group. Each finds the
//! device's state by handle (`device_state`), forwards the app's call to the next layer and
//! hands what it saw to the features below (timing, samples, frames, HUD).

/// Hooks that only time the app's call: each finds the device of its first argument, forwards
/// the call unchanged (`$d` names the device's state inside `$next`, the next layer's command)
/// and only then adds the call's wall time to the calling thread's tally through `$add`
/// (`framescope_core::waits::add`, `framescope_core::creation::add`), guarded: nothing of ours
/// runs before the app's call, and a failure of ours cannot change its result.
macro_rules! timed_hooks {
    ($site:ident; $(
        $name:ident($handle:ident: $hty:ty $(, $arg:ident: $ty:ty)* $(,)?) => $add:path, $kind:expr, |$d:ident| $next:expr;
    )*) => {
        static $site: framescope_core::guard::Site = framescope_core::guard::Site::new(stringify!($site));
        $(
            pub unsafe extern "system" fn $name($handle: $hty $(, $arg: $ty)*) -> ash::vk::Result {
                use ash::vk::Handle;
                // SAFETY: a dispatchable handle the app (or the loader) passed to this command.
                let Some($d) = (unsafe { crate::device_state::lookup($handle.as_raw()) }) else {
                    return ash::vk::Result::ERROR_DEVICE_LOST;
                };
                let t0 = framescope_core::clock::monotonic_now_ns();
                // SAFETY: forwarding the app's arguments unchanged to the next layer's command.
                let r = unsafe { ($next)($handle $(, $arg)*) };
                let t1 = framescope_core::clock::monotonic_now_ns();
                framescope_core::guard::guarded(&$site, || $add($kind, t1.saturating_sub(t0)));
                r
            }
        )*
    };
}

pub mod cmdbuf;
pub mod commands;
pub mod create;
pub mod creation;
pub mod fault;
pub mod frame_boundary;
pub mod present;
pub mod queue;
pub mod samples;
pub mod surface;
pub mod waits;

#[cfg(test)]
mod tests;
