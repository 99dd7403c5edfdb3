//! Recording-time hooks: per-command-buffer counts (`counts`) of draws (by kind), dispatches, trace-rays,
//! render passes, pipeline binds and barriers. Counts live in the command buffer's own state
//! (atomics, no lock on the recording path) and are added into the frame at each submit, so a
//! command buffer submitted N times counts N times.

use crate::counts::Counted;
use crate::device_state::{self, CmdBufState, DeviceState};
use crate::hooks::samples::{self as sample_hooks, Sampled};
use crate::recording_cache;
use crate::samples::recording::{Event, PassStart};
use crate::samples::BindPoint;
use crate::samples::Level;
use ash::vk::{self, Handle};
use framescope_core::frame::{DispatchKind, DrawKind};
use framescope_core::sample::DrawParams;
use std::sync::Arc;

fn draw(kind: DrawKind, vertex_count: u32, index_count: u32, instance_count: u32, indirect: bool) -> Sampled {
    Sampled::Draw(
        DrawParams {
            kind: Some(kind),
            vertex_count,
            index_count,
            instance_count,
            indirect,
            pipeline: 0,
        },
        BindPoint::Graphics,
    )
}

fn dispatch() -> Sampled {
    Sampled::Draw(DrawParams::default(), BindPoint::Compute)
}

fn trace_rays() -> Sampled {
    Sampled::Draw(DrawParams::default(), BindPoint::RayTracing)
}

fn pass(d: &DeviceState, rp: vk::RenderPass, contents: vk::SubpassContents) -> Sampled {
    Sampled::PassBegin(PassStart {
        secondary_contents: contents == vk::SubpassContents::SECONDARY_COMMAND_BUFFERS,
        views: d.samples.as_ref().map_or(1, |s| s.subpass_views(rp.as_raw(), 0)),
        render_pass: rp.as_raw(),
    })
}

/// # Safety
/// `i` must be the app's valid render pass begin info.
unsafe fn pass1(d: &DeviceState, i: *const vk::RenderPassBeginInfo<'_>, contents: vk::SubpassContents) -> Sampled {
    // SAFETY: caller's contract.
    pass(d, unsafe { (*i).render_pass }, contents)
}

/// # Safety
/// `i` and `s` must be the app's valid structs.
unsafe fn pass2(d: &DeviceState, i: *const vk::RenderPassBeginInfo<'_>, s: *const vk::SubpassBeginInfo<'_>) -> Sampled {
    // SAFETY: caller's contract.
    unsafe { pass(d, (*i).render_pass, (*s).contents) }
}

/// # Safety
/// `i` must be the app's valid rendering info.
unsafe fn rendering(i: *const vk::RenderingInfo<'_>) -> Sampled {
    // SAFETY: caller's contract.
    let i = unsafe { &*i };
    let split = vk::RenderingFlags::SUSPENDING | vk::RenderingFlags::RESUMING;
    Sampled::PassBegin(PassStart {
        secondary_contents: i.flags.contains(vk::RenderingFlags::CONTENTS_SECONDARY_COMMAND_BUFFERS)
            || i.flags.intersects(split),
        views: crate::samples::views_of_mask(i.view_mask),
        render_pass: 0,
    })
}

/// Defines a hook that counts `$what` and forwards to the next layer's `$slot` pointer.
macro_rules! counting_hooks {
    ($( $hook:ident, $slot:ident : fn($($arg:ident : $ty:ty),*) => $what:expr, $sampled:expr; )*) => {
        $(
            pub unsafe extern "system" fn $hook(cb: vk::CommandBuffer $(, $arg: $ty)*) {
                let hook = |d: &DeviceState, st: Option<&Arc<CmdBufState>>| {
                    let Some(f) = d.cmd_fns.$slot else { return };
                    if let Some(s) = st {
                        s.counts.bump($what);
                    }
                    match (st, d.samples.as_ref()) {
                        (Some(st), Some(s)) if s.level >= Level::Draw || $what.samples_below_draw_level() => {
                            #[allow(unused_unsafe)]
                            let sampled: Sampled = unsafe { ($sampled)(d) };
                            // SAFETY: forwarding the app's arguments to the next layer.
                            sample_hooks::around(d, st, cb, sampled, || unsafe { f(cb $(, $arg)*) });
                        }
                        // SAFETY: forwarding the app's arguments to the next layer.
                        _ => unsafe { f(cb $(, $arg)*) },
                    }
                };
                // SAFETY: the app's command buffer, in the recording state for this call.
                unsafe { recording_cache::with(cb.as_raw(), hook) };
            }
        )*

        /// What the counting hook for a command name counts, if there is one.
        pub fn counted_by(name: &[u8]) -> Option<Counted> {
            $(
                if name == stringify!($slot).as_bytes() {
                    return Some($what);
                }
            )*
            None
        }

        /// Our hook for a command name, if it is one of the counting hooks.
        pub fn hook_for(name: &[u8]) -> vk::PFN_vkVoidFunction {
            $(
                if name == stringify!($slot).as_bytes() {
                    let f: unsafe extern "system" fn(vk::CommandBuffer $(, $ty)*) = $hook;
                    // SAFETY: PFN representations are identical; the caller casts back by name.
                    return Some(unsafe { std::mem::transmute::<unsafe extern "system" fn(vk::CommandBuffer $(, $ty)*), unsafe extern "system" fn()>(f) });
                }
            )*
            None
        }
    };
}

use DispatchKind as Dk;
use DrawKind as Dr;

crate::dispatch::command_fns::counted_commands!(counting_hooks);

/// Whether the app gets the next layer's command for `name` instead of our counting hook:
/// the device does not count commands and sampling needs nothing from this one. Draws,
/// dispatches, trace-rays and barriers sample nothing below draw level (and draw level counts);
/// a pipeline bind matters only where our statistics wait for one.
pub fn passed_through(d: &DeviceState, name: &[u8]) -> bool {
    if d.count_commands {
        return false;
    }
    match counted_by(name) {
        Some(Counted::PipelineBind) => !d
            .samples
            .as_ref()
            .is_some_and(|s| s.stats_after_bind && s.stats.is_some()),
        Some(c) => !c.samples_below_draw_level(),
        None => false,
    }
}

/// Secondaries' counts join the primary that executes them.
pub unsafe extern "system" fn cmd_execute_commands(
    cb: vk::CommandBuffer,
    n: u32,
    secondaries: *const vk::CommandBuffer,
) {
    // SAFETY: `cb` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(cb.as_raw()) }) else {
        return;
    };
    if let (Some(primary), false) = (d.command_buffer(cb), secondaries.is_null()) {
        // SAFETY: the app passes n valid secondary handles.
        for &s in unsafe { std::slice::from_raw_parts(secondaries, n as usize) } {
            if let Some(sec) = d.command_buffer(s) {
                primary.counts.absorb(&sec.counts);
                if d.samples.is_some() {
                    primary.rec.lock().events.push(Event::Execute(Arc::clone(&sec.rec)));
                }
            }
        }
    }
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().cmd_execute_commands)(cb, n, secondaries) }
}
