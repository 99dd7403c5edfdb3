//! Recording hooks that only matter for sampling: pass ends, subpass changes, debug labels,
//! the app's own queries, and the objects whose properties decide where our queries may go.

use crate::device_state::{self, CmdBufState, DeviceState};
use crate::dispatch::vk_calls::Recorder;
use crate::samples::recording::PassStart;
use crate::samples::{BindPoint, Level, SampleState, Sampling};
use ash::vk::{self, Handle};
use framescope_core::guard::{guarded, Site};
use framescope_core::sample::DrawParams;
use std::ffi::CStr;

static SAMPLE: Site = Site::new("sample recording");

/// What a counting hook means for sampling.
pub enum Sampled {
    None,
    Draw(DrawParams, BindPoint),
    PassBegin(PassStart),
    /// A pipeline bind: at draw level its handle becomes part of the next draws' keys; a
    /// graphics bind also starts statistics that wait for one (`stats_after_bind`).
    Bind {
        point: BindPoint,
        pipeline: u64,
        stats_wait: bool,
    },
}

/// What a pipeline bind means for sampling: only where our statistics wait for a bound
/// graphics pipeline is it anything.
pub fn pipeline_bind(d: &DeviceState, bind_point: vk::PipelineBindPoint, pipeline: vk::Pipeline) -> Sampled {
    let Some(s) = d.samples.as_ref() else {
        return Sampled::None;
    };
    let Some(point) = BindPoint::of(bind_point) else {
        return Sampled::None;
    };
    let stats_wait = s.stats_after_bind && s.stats.is_some() && point == BindPoint::Graphics;
    if !stats_wait && s.level < Level::Draw {
        return Sampled::None;
    }
    Sampled::Bind {
        point,
        pipeline: pipeline.as_raw(),
        stats_wait,
    }
}

/// The state of a command buffer being recorded, when the device samples at all.
/// Runs `f` with the device's sampling view, the state of `cb` and `cb` as a recording; `None`
/// (without calling `f`) when the device does not sample or does not track `cb`.
fn with_sampling<R>(
    cb: vk::CommandBuffer,
    f: impl FnOnce(&Sampling<'_>, &CmdBufState, &Recorder<'_>) -> R,
) -> Option<R> {
    // SAFETY: `cb` is a handle the app (or the loader) passed to this command.
    let d = unsafe { device_state::lookup(cb.as_raw()) }?;
    let sd = d.sampling()?;
    let st = d.command_buffer(cb)?;
    // SAFETY: every caller is the app's `vkCmd*` hook for `cb`, which Vulkan's contract has
    // recording on this thread for the call; the token does not outlive `f`.
    let rc = unsafe { sd.app_recording(cb) };
    Some(f(&sd, &st, &rc))
}

/// Runs `forward` (the app's command) with the sampling work `sampled` asks for around it.
pub fn around(d: &DeviceState, st: &CmdBufState, cb: vk::CommandBuffer, sampled: Sampled, forward: impl FnOnce()) {
    let Some(sd) = d.sampling() else {
        return forward();
    };
    let (d, level) = (&sd, sd.state.level);
    // Below draw level a draw samples nothing: no lock on the hot path.
    if matches!(sampled, Sampled::Draw(..) | Sampled::None) && level < Level::Draw {
        return forward();
    }
    let mut rec = st.rec.lock();
    // SAFETY: `around` runs inside the app's `vkCmd*` hook for `cb` (`hooks::commands`), which
    // Vulkan's contract has recording on this thread for the call.
    let cb = unsafe { d.app_recording(cb) };
    let cb = &cb;
    match sampled {
        Sampled::Draw(params, point) if level >= Level::Draw => {
            if rec.around_draw(d, cb, params, point, forward) {
                st.counts.bump(crate::counts::Counted::TimedDraw);
            }
        }
        Sampled::PassBegin(start) => {
            rec.before_pass(d, cb, level);
            forward();
            rec.after_pass_begin(d, cb, level, start);
        }
        Sampled::Bind {
            point,
            pipeline,
            stats_wait,
        } => {
            forward();
            rec.bound(point, pipeline);
            if stats_wait {
                rec.after_gfx_bind(d, cb);
            }
        }
        _ => forward(),
    }
}

macro_rules! end_pass_hook {
    ($name:ident, $fp:expr, ($($arg:ident : $ty:ty),*)) => {
        pub unsafe extern "system" fn $name(cb: vk::CommandBuffer $(, $arg: $ty)*) {
            // SAFETY: `cb` is a handle the app (or the loader) passed to this command.
            let Some(d) = (unsafe { device_state::lookup(cb.as_raw()) }) else { return };
            let next = $fp(&d);
            let Some(next) = next else { return };
            let sampled = with_sampling(cb, |sd, st, rc| {
                let mut rec = st.rec.lock();
                let stats = guarded(&SAMPLE, || rec.before_pass_end(rc)).flatten();
                // SAFETY: forwarding the app's arguments.
                unsafe { next(cb $(, $arg)*) };
                guarded(&SAMPLE, || rec.after_pass_end(sd, rc, sd.state.level, stats));
            });
            if sampled.is_none() {
                // SAFETY: forwarding the app's arguments.
                unsafe { next(cb $(, $arg)*) };
            }
        }
    };
}

end_pass_hook!(
    cmd_end_render_pass,
    |d: &DeviceState| Some(d.fns.fp_v1_0().cmd_end_render_pass),
    ()
);
end_pass_hook!(cmd_end_render_pass2, |d: &DeviceState| Some(d.fns.fp_v1_2().cmd_end_render_pass2), (i: *const vk::SubpassEndInfo<'_>));
end_pass_hook!(cmd_end_render_pass2_khr, |d: &DeviceState| d.sample_fns.end_render_pass2_khr, (i: *const vk::SubpassEndInfo<'_>));
end_pass_hook!(
    cmd_end_rendering,
    |d: &DeviceState| Some(d.fns.fp_v1_3().cmd_end_rendering),
    ()
);
end_pass_hook!(
    cmd_end_rendering_khr,
    |d: &DeviceState| d.sample_fns.end_rendering_khr,
    ()
);

fn next_subpass(cb: vk::CommandBuffer, secondary_contents: bool, forward: impl FnOnce()) {
    let mut forward = Some(forward);
    with_sampling(cb, |sd, st, rc| {
        let mut rec = st.rec.lock();
        guarded(&SAMPLE, || rec.before_next_subpass(rc));
        if let Some(f) = forward.take() {
            f();
        }
        guarded(&SAMPLE, || rec.after_next_subpass(sd, rc, secondary_contents));
    });
    if let Some(f) = forward {
        f();
    }
}

pub unsafe extern "system" fn cmd_next_subpass(cb: vk::CommandBuffer, contents: vk::SubpassContents) {
    // SAFETY: `cb` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(cb.as_raw()) }) else {
        return;
    };
    let f = d.fns.fp_v1_0().cmd_next_subpass;
    // SAFETY: forwarding the app's arguments.
    next_subpass(
        cb,
        contents == vk::SubpassContents::SECONDARY_COMMAND_BUFFERS,
        || unsafe { f(cb, contents) },
    );
}

fn subpass2_secondary(info: Option<&vk::SubpassBeginInfo<'_>>) -> bool {
    info.is_some_and(|i| i.contents == vk::SubpassContents::SECONDARY_COMMAND_BUFFERS)
}

pub unsafe extern "system" fn cmd_next_subpass2(
    cb: vk::CommandBuffer,
    b: *const vk::SubpassBeginInfo<'_>,
    e: *const vk::SubpassEndInfo<'_>,
) {
    // SAFETY: `cb` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(cb.as_raw()) }) else {
        return;
    };
    let f = d.fns.fp_v1_2().cmd_next_subpass2;
    // SAFETY: the app's begin info, valid or null for this call.
    let secondary = subpass2_secondary(unsafe { b.as_ref() });
    // SAFETY: forwarding the app's arguments.
    next_subpass(cb, secondary, || unsafe { f(cb, b, e) });
}

pub unsafe extern "system" fn cmd_next_subpass2_khr(
    cb: vk::CommandBuffer,
    b: *const vk::SubpassBeginInfo<'_>,
    e: *const vk::SubpassEndInfo<'_>,
) {
    // SAFETY: `cb` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(cb.as_raw()) }) else {
        return;
    };
    let Some(f) = d.sample_fns.next_subpass2_khr else {
        return;
    };
    // SAFETY: the app's begin info, valid or null for this call.
    let secondary = subpass2_secondary(unsafe { b.as_ref() });
    // SAFETY: forwarding the app's arguments.
    next_subpass(cb, secondary, || unsafe { f(cb, b, e) });
}

pub unsafe extern "system" fn cmd_begin_debug_utils_label(
    cb: vk::CommandBuffer,
    info: *const vk::DebugUtilsLabelEXT<'_>,
) {
    // SAFETY: `cb` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(cb.as_raw()) }) else {
        return;
    };
    let Some(next) = d.sample_fns.begin_label else { return };
    // SAFETY: forwarding the app's arguments.
    unsafe { next(cb, info) };
    with_sampling(cb, |sd, st, rc| {
        if sd.state.level < Level::Label {
            return;
        }
        guarded(&SAMPLE, || {
            // SAFETY: the app's label info with a NUL-terminated name.
            let name = unsafe {
                info.as_ref()
                    .filter(|i| !i.p_label_name.is_null())
                    .map(|i| CStr::from_ptr(i.p_label_name))
            };
            let id = framescope_core::labels::intern(name.map_or(&b"?"[..], |n| n.to_bytes()));
            st.rec.lock().label_begin(sd, rc, id);
        });
    });
}

pub unsafe extern "system" fn cmd_end_debug_utils_label(cb: vk::CommandBuffer) {
    // SAFETY: `cb` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(cb.as_raw()) }) else {
        return;
    };
    let Some(next) = d.sample_fns.end_label else { return };
    with_sampling(cb, |sd, st, rc| {
        if sd.state.level >= Level::Label {
            guarded(&SAMPLE, || st.rec.lock().label_end(sd, rc));
        }
    });
    // SAFETY: forwarding the app's arguments.
    unsafe { next(cb) };
}

fn is_app_stats_pool(s: &SampleState, pool: vk::QueryPool) -> bool {
    s.app_stats_pools.read().contains(&pool.as_raw())
}

pub unsafe extern "system" fn cmd_begin_query(
    cb: vk::CommandBuffer,
    pool: vk::QueryPool,
    q: u32,
    flags: vk::QueryControlFlags,
) {
    // SAFETY: `cb` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(cb.as_raw()) }) else {
        return;
    };
    with_sampling(cb, |sd, st, rc| {
        if is_app_stats_pool(sd.state, pool) {
            guarded(&SAMPLE, || st.rec.lock().app_stats_begin(rc));
        }
    });
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().cmd_begin_query)(cb, pool, q, flags) };
}

pub unsafe extern "system" fn cmd_end_query(cb: vk::CommandBuffer, pool: vk::QueryPool, q: u32) {
    // SAFETY: `cb` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(cb.as_raw()) }) else {
        return;
    };
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().cmd_end_query)(cb, pool, q) };
    with_sampling(cb, |sd, st, _| {
        if is_app_stats_pool(sd.state, pool) {
            st.rec.lock().app_stats_end();
        }
    });
}

pub unsafe extern "system" fn create_query_pool(
    device: vk::Device,
    ci: *const vk::QueryPoolCreateInfo<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::QueryPool,
) -> vk::Result {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    // SAFETY: forwarding the app's arguments.
    let r = unsafe { (d.fns.fp_v1_0().create_query_pool)(device, ci, alloc, out) };
    if r == vk::Result::SUCCESS {
        // SAFETY: success: ci and *out are valid.
        let (ty, pool) = unsafe { ((*ci).query_type, *out) };
        if let (Some(s), vk::QueryType::PIPELINE_STATISTICS) = (d.samples.as_ref(), ty) {
            s.app_stats_pools.write().insert(pool.as_raw());
        }
    }
    r
}

pub unsafe extern "system" fn destroy_query_pool(
    device: vk::Device,
    pool: vk::QueryPool,
    alloc: *const vk::AllocationCallbacks<'_>,
) {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return;
    };
    if let Some(s) = d.samples.as_ref() {
        s.app_stats_pools.write().remove(&pool.as_raw());
    }
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().destroy_query_pool)(device, pool, alloc) };
}

/// Remembers the per-subpass view masks of a multiview render pass.
fn note_render_pass(d: &DeviceState, rp: vk::RenderPass, view_masks: impl Iterator<Item = u32> + Clone) {
    if let (Some(s), true) = (d.samples.as_ref(), view_masks.clone().any(|m| m != 0)) {
        s.multiview_passes.write().insert(rp.as_raw(), view_masks.collect());
    }
}

pub unsafe extern "system" fn create_render_pass(
    device: vk::Device,
    ci: *const vk::RenderPassCreateInfo<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::RenderPass,
) -> vk::Result {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    // SAFETY: forwarding the app's arguments.
    let r = unsafe { (d.fns.fp_v1_0().create_render_pass)(device, ci, alloc, out) };
    if r == vk::Result::SUCCESS {
        // SAFETY: success: ci's chain is valid and *out the new pass.
        unsafe {
            let mv = crate::dispatch::chain::find((*ci).p_next, vk::StructureType::RENDER_PASS_MULTIVIEW_CREATE_INFO)
                as *const vk::RenderPassMultiviewCreateInfo<'static>;
            let masks = if mv.is_null() || (*mv).subpass_count == 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts((*mv).p_view_masks, (*mv).subpass_count as usize)
            };
            note_render_pass(&d, *out, masks.iter().copied());
        }
    }
    r
}

/// # Safety
/// The app's arguments of `vkCreateRenderPass2[KHR]`, valid for the call.
unsafe fn create_render_pass2_impl(
    device: vk::Device,
    ci: *const vk::RenderPassCreateInfo2<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::RenderPass,
    khr: bool,
) -> vk::Result {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let next = if khr {
        d.sample_fns.create_render_pass2_khr
    } else {
        Some(d.fns.fp_v1_2().create_render_pass2)
    };
    let Some(next) = next else {
        return vk::Result::ERROR_EXTENSION_NOT_PRESENT;
    };
    // SAFETY: forwarding the app's arguments.
    let r = unsafe { next(device, ci, alloc, out) };
    if r == vk::Result::SUCCESS {
        // SAFETY: success: ci is valid and *out the new pass.
        unsafe {
            let c = &*ci;
            let subpasses = if c.subpass_count == 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(c.p_subpasses, c.subpass_count as usize)
            };
            note_render_pass(&d, *out, subpasses.iter().map(|s| s.view_mask));
        }
    }
    r
}

pub unsafe extern "system" fn create_render_pass2(
    device: vk::Device,
    ci: *const vk::RenderPassCreateInfo2<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::RenderPass,
) -> vk::Result {
    // SAFETY: the app's arguments of this call.
    unsafe { create_render_pass2_impl(device, ci, alloc, out, false) }
}

pub unsafe extern "system" fn create_render_pass2_khr(
    device: vk::Device,
    ci: *const vk::RenderPassCreateInfo2<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::RenderPass,
) -> vk::Result {
    // SAFETY: the app's arguments of this call.
    unsafe { create_render_pass2_impl(device, ci, alloc, out, true) }
}

pub unsafe extern "system" fn destroy_render_pass(
    device: vk::Device,
    rp: vk::RenderPass,
    alloc: *const vk::AllocationCallbacks<'_>,
) {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return;
    };
    if let Some(s) = d.samples.as_ref() {
        s.multiview_passes.write().remove(&rp.as_raw());
    }
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().destroy_render_pass)(device, rp, alloc) };
}
