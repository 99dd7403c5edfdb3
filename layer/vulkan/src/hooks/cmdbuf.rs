//! Command-buffer lifetime hooks: our per-command-buffer state follows the app's buffers.

use crate::counts::Counted;
use crate::device_state::{self, DeviceState};
use crate::recording_cache;
use ash::vk::{self, Handle};
use framescope_core::guard::{guarded, Site};
use std::sync::atomic::Ordering;

static ALLOCATE: Site = Site::new("vkAllocateCommandBuffers");
static CREATE_POOL: Site = Site::new("vkCreateCommandPool");
static BEGIN: Site = Site::new("vkBeginCommandBuffer");
static FREE: Site = Site::new("vkFreeCommandBuffers");

pub unsafe extern "system" fn allocate_command_buffers(
    device: vk::Device,
    info: *const vk::CommandBufferAllocateInfo<'_>,
    out: *mut vk::CommandBuffer,
) -> vk::Result {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    // SAFETY: forwarding the app's arguments.
    let r = unsafe { (d.fns.fp_v1_0().allocate_command_buffers)(device, info, out) };
    if r == vk::Result::SUCCESS {
        guarded(&ALLOCATE, || {
            // SAFETY: success: `out` holds commandBufferCount new handles.
            let (pool, level, cbs) = unsafe {
                (
                    (*info).command_pool,
                    (*info).level,
                    std::slice::from_raw_parts(out, (*info).command_buffer_count as usize),
                )
            };
            d.add_command_buffers(pool, level == vk::CommandBufferLevel::PRIMARY, cbs);
        });
    }
    r
}

pub unsafe extern "system" fn create_command_pool(
    device: vk::Device,
    info: *const vk::CommandPoolCreateInfo<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::CommandPool,
) -> vk::Result {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    // SAFETY: forwarding the app's arguments.
    let r = unsafe { (d.fns.fp_v1_0().create_command_pool)(device, info, alloc, out) };
    if r == vk::Result::SUCCESS {
        // SAFETY: success: `out` holds the new pool; `info` is the app's valid create info.
        guarded(&CREATE_POOL, || {
            d.add_command_pool(unsafe { *out }, unsafe { (*info).queue_family_index })
        });
    }
    r
}

pub unsafe extern "system" fn free_command_buffers(
    device: vk::Device,
    pool: vk::CommandPool,
    count: u32,
    buffers: *const vk::CommandBuffer,
) {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return;
    };
    if !buffers.is_null() {
        // SAFETY: the app passes `count` handles (null entries allowed and ignored).
        guarded(&FREE, || {
            d.remove_command_buffers(unsafe { std::slice::from_raw_parts(buffers, count as usize) })
        });
        recording_cache::invalidate();
    }
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().free_command_buffers)(device, pool, count, buffers) };
}

pub unsafe extern "system" fn destroy_command_pool(
    device: vk::Device,
    pool: vk::CommandPool,
    alloc: *const vk::AllocationCallbacks<'_>,
) {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return;
    };
    guarded(&FREE, || d.remove_pool(pool));
    recording_cache::invalidate();
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().destroy_command_pool)(device, pool, alloc) };
}

pub unsafe extern "system" fn begin_command_buffer(
    cb: vk::CommandBuffer,
    info: *const vk::CommandBufferBeginInfo<'_>,
) -> vk::Result {
    // SAFETY: `cb` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(cb.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    guarded(&BEGIN, || {
        d.stats.command_buffers_begun.fetch_add(1, Ordering::Relaxed);
        // Beginning a recording resets the buffer, and with it what it contains.
        if let Some(s) = d.command_buffer(cb) {
            s.counts.reset();
        }
    });
    // SAFETY: forwarding the app's arguments.
    let r = unsafe { (d.fns.fp_v1_0().begin_command_buffer)(cb, info) };
    if r == vk::Result::SUCCESS {
        guarded(&BEGIN, || {
            let (Some(st), Some(sd)) = (d.command_buffer(cb), d.sampling()) else {
                return;
            };
            // SAFETY: the app's valid begin info (and inheritance info for secondaries).
            let (simultaneous, inherited) = unsafe { begin_flags(&d, &*info, st.primary) };
            let w = &sd.state.window;
            let (window, quiet, max_draws) = (w.current(), w.quiet(), w.max_draws());
            let mut rec = st.rec.lock();
            rec.restart(st.primary, simultaneous, inherited, window, quiet, max_draws);
            rec.stats_on = sd.state.stats_rotation.carries_now();
            if st.primary {
                rec.perf = sd.state.perf.as_ref().zip(st.family).and_then(|(p, f)| p.group_now(f));
            }
            // SAFETY: the driver began `cb` for the app's call we are in.
            let rc = unsafe { sd.app_recording(cb) };
            rec.on_begin(&sd, &rc, sd.state.level);
        });
    }
    r
}

/// SIMULTANEOUS_USE, and for a secondary that continues a render pass, the views of the
/// subpass it continues (its queries take one slot per view).
///
/// # Safety
/// `info` must be the app's valid begin info.
unsafe fn begin_flags(d: &DeviceState, info: &vk::CommandBufferBeginInfo<'_>, primary: bool) -> (bool, Option<u8>) {
    let simultaneous = info.flags.contains(vk::CommandBufferUsageFlags::SIMULTANEOUS_USE);
    if primary || !info.flags.contains(vk::CommandBufferUsageFlags::RENDER_PASS_CONTINUE) {
        return (simultaneous, None);
    }
    // SAFETY: caller's contract; secondaries continuing a pass must pass inheritance info.
    let Some(inh) = (unsafe { info.p_inheritance_info.as_ref() }) else {
        return (simultaneous, Some(1));
    };
    // SAFETY: the inheritance info's chain is valid.
    let rendering = unsafe {
        crate::dispatch::chain::find(inh.p_next, vk::StructureType::COMMAND_BUFFER_INHERITANCE_RENDERING_INFO)
            as *const vk::CommandBufferInheritanceRenderingInfo<'static>
    };
    // The rendering info counts only for dynamic rendering (no render pass object).
    let views = if rendering.is_null() || inh.render_pass != vk::RenderPass::null() {
        d.samples
            .as_ref()
            .map_or(1, |s| s.subpass_views(inh.render_pass.as_raw(), inh.subpass))
    } else {
        // SAFETY: found by its sType.
        crate::samples::views_of_mask(unsafe { (*rendering).view_mask })
    };
    (simultaneous, Some(views))
}

pub unsafe extern "system" fn end_command_buffer(cb: vk::CommandBuffer) -> vk::Result {
    // SAFETY: `cb` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(cb.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    guarded(&BEGIN, || {
        if let (Some(st), Some(sd)) = (d.command_buffer(cb), d.sampling()) {
            let mut rec = st.rec.lock();
            // SAFETY: the app's `vkEndCommandBuffer` for `cb`, not yet forwarded: still recording.
            let rc = unsafe { sd.app_recording(cb) };
            rec.on_end(&sd, &rc, sd.state.level);
            sd.state.window.note_draws(rec.draws);
            if !rec.stats_blocks.is_empty() {
                st.counts.bump(Counted::StatsRecording);
            }
        }
    });
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().end_command_buffer)(cb) }
}
