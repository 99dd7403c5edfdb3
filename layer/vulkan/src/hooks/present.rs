//! Presentation hooks: swapchain lifetime and vkQueuePresentKHR, where a frame ends.

use crate::device_state::{self, DeviceState};
use crate::dispatch::chain;
use crate::dispatch::device::FrameBoundaryMode;
use crate::display::AppPresentIds;
use crate::hooks::frame_boundary::StrippedSubmits;
use ash::vk::{self, Handle};
use framescope_core::clock::monotonic_now_ns;
use framescope_core::dump::{Api, DeviceInfo, DumpWriter, Header, Unavailable};
use framescope_core::frame::{FrameEnd, FrameRecord, SwapchainInfo};
use framescope_core::guard::{guarded, Site};
use std::ffi::c_void;
use std::sync::atomic::Ordering;

static PRESENT: Site = Site::new("vkQueuePresentKHR");
static CREATE_SWAPCHAIN: Site = Site::new("vkCreateSwapchainKHR");
static HUD_PRESENT: Site = Site::new("vkQueuePresentKHR (HUD)");
static DESTROY_SWAPCHAIN: Site = Site::new("vkDestroySwapchainKHR");
static DESTROY_SEMAPHORE: Site = Site::new("vkDestroySemaphore");
static PRESENT_WAIT: Site = Site::new("vkQueuePresentKHR (present_wait, present_timing)");

/// Calibration drifts slowly; refreshing it every so many frames is plenty.
const RECALIBRATE_EVERY: u64 = 256;

pub unsafe extern "system" fn queue_present(queue: vk::Queue, info: *const vk::PresentInfoKHR<'_>) -> vk::Result {
    // SAFETY: `queue` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(queue.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    // The frame limiter (`fps_limit`), outside every lock of ours, before the frame's end is
    // read: the frame ends when the limiter lets its present go.
    guarded(&PRESENT, || {
        framescope_core::pacing::pace(framescope_overlay::keys::fps_presses())
    });
    let closed = guarded(&PRESENT, || {
        let t_ns = monotonic_now_ns();
        d.stats.presents.fetch_add(1, Ordering::Relaxed);
        framescope_core::guard::maybe_panic("present");
        // SAFETY: the app's present info is valid for this call.
        let first = unsafe { first_swapchain(info) };
        let swapchain = first.and_then(|s| d.swapchain(s));
        let mut record = FrameRecord {
            end: FrameEnd::Present,
            swapchain,
            t_ns,
            ..FrameRecord::default()
        };
        record.cpu.waits = framescope_core::waits::take();
        record.cpu.creation = framescope_core::creation::take();
        let frame = end_frame(&d, record);
        if let Some(s) = first {
            crate::display_x11::presented(s, frame, t_ns);
        }
        frame
    });
    // A frame boundary on a present adds nothing (the present ends the frame), but when we
    // emulate the extension the layers below must not see its struct.
    let _stripped = (d.augment.frame_boundary == FrameBoundaryMode::Emulated && !info.is_null())
        // SAFETY: the app's present info, valid for this call; restored when the guard drops.
        .then(|| unsafe {
            StrippedSubmits::new(std::iter::once(std::ptr::addr_of!((*info).p_next) as *mut *mut c_void))
        });
    // --- HUD: draw over the presented images; on success present with our
    // semaphores instead of the app's (which our submit waited).
    let mut hud = crate::hud::PresentScratch::default();
    let hud_time = framescope_core::hud_time::start();
    if !info.is_null() {
        guarded(&HUD_PRESENT, || {
            let frame = d.stats.presents.load(Ordering::Relaxed).saturating_sub(1);
            // SAFETY: the app's present info and its arrays, valid for this call.
            match unsafe { app_present(&*info) } {
                Some(app) => crate::hud::present(&d.dev, &d.hud, &*d, frame, queue, &app, &mut hud),
                None => false,
            }
        });
    }
    hud_time.stop();
    let info = if hud.submitted {
        &hud.info as *const vk::PresentInfoKHR<'_>
    } else {
        info
    };
    // --- end HUD ---
    if let Some(frame) = closed {
        // Right before the call down: the driver commits the surface inside it.
        // SAFETY: the present info passed down, valid for this call.
        let swapchain = unsafe { first_swapchain(info) };
        guarded(&PRESENT, || crate::display_wayland::before_present(swapchain, frame));
    }
    // present_wait: our present ids in front of the chain (stack structs; `ids` stays put
    // until the call returns, `with_ids` points into it).
    // SAFETY: the present info going down: null or valid for this call, with its arrays.
    let going = unsafe { info.as_ref() };
    let mut ids = d.present_wait.as_ref().zip(going).and_then(|(pw, i)| {
        // SAFETY: as above.
        let (swapchains, app) = unsafe { (swapchains_of(i), app_present_ids(i)) };
        guarded(&PRESENT_WAIT, || pw.ids_for(swapchains, &app))
    });
    let with_ids = ids.as_mut().zip(going).and_then(|(ids, i)| ids.chain_onto(i));
    let down = with_ids.as_ref().map_or(info, |c| c as *const vk::PresentInfoKHR<'_>);
    // present_timing: VkPresentId2KHR and VkPresentTimingsInfoEXT in front, likewise; the ids
    // it sees are those going down (present_wait's where it added them).
    // SAFETY: the present info going down (the app's, or our copy chaining our ids in front
    // of the app's chain), valid for this call.
    let going = unsafe { down.as_ref() };
    let mut timing = d.present_timing.as_ref().zip(going).and_then(|(pt, i)| {
        // SAFETY: as above.
        let (swapchains, app) = unsafe { (swapchains_of(i), app_present_ids(i)) };
        guarded(&PRESENT_WAIT, || pt.timing_for(swapchains, &app))
    });
    let with_timing = timing.as_mut().zip(going).and_then(|(t, i)| t.chain_onto(i));
    let down = with_timing
        .as_ref()
        .map_or(down, |c| c as *const vk::PresentInfoKHR<'_>);
    // SAFETY: forwarding the app's arguments (or their copy with our semaphores or ids).
    let r = unsafe { (d.swapchain_fns.queue_present_khr)(queue, down) };
    if let (Some(pt), Some(t)) = (d.present_timing.as_ref(), timing.as_ref()) {
        let returned = monotonic_now_ns();
        guarded(&PRESENT_WAIT, || pt.presented(t, r, closed, returned));
    }
    if let Some(frame) = closed {
        let returned = monotonic_now_ns();
        guarded(&PRESENT, || d.frames.lock().present_returned(frame, returned));
        if let (Some(pw), Some(ids)) = (d.present_wait.as_ref(), ids.as_ref()) {
            if matches!(r, vk::Result::SUCCESS | vk::Result::SUBOPTIMAL_KHR) {
                guarded(&PRESENT_WAIT, || pw.presented(ids, frame, returned));
            }
        }
    }
    crate::hooks::fault::seen(&d, "vkQueuePresentKHR", r);
    r
}

/// The swapchains of a present.
///
/// # Safety
/// `info` is a valid present info, its array valid for the returned lifetime.
unsafe fn swapchains_of<'a>(info: &vk::PresentInfoKHR<'a>) -> &'a [vk::SwapchainKHR] {
    if info.swapchain_count == 0 || info.p_swapchains.is_null() {
        return &[];
    }
    // SAFETY: the caller's contract: swapchain_count handles.
    unsafe { std::slice::from_raw_parts(info.p_swapchains, info.swapchain_count as usize) }
}

/// The present ids the app chains onto a present (`VkPresentIdKHR`, `VkPresentId2KHR`, which
/// share a layout: sType, pNext, swapchainCount, pPresentIds).
///
/// # Safety
/// `info` is a valid present info whose chain and arrays are valid for the returned lifetime.
unsafe fn app_present_ids<'a>(info: &vk::PresentInfoKHR<'a>) -> AppPresentIds<'a> {
    use crate::dispatch::present_timing_abi::{PresentId2, ST_PRESENT_ID_2};
    let ids = |s_type| {
        // SAFETY: the caller's contract; a struct found by sType is of that type.
        let p = unsafe { chain::find(info.p_next, s_type) } as *const PresentId2;
        // SAFETY: as above.
        let p = unsafe { p.as_ref() }?;
        let ids = (!p.p_present_ids.is_null() && p.swapchain_count > 0)
            // SAFETY: its array has swapchainCount ids (VUID-VkPresentIdKHR-swapchainCount-04998).
            .then(|| unsafe { std::slice::from_raw_parts(p.p_present_ids, p.swapchain_count as usize) });
        Some(ids)
    };
    let id = ids(vk::StructureType::PRESENT_ID_KHR);
    AppPresentIds {
        id_chained: id.is_some(),
        id: id.flatten(),
        id2: ids(ST_PRESENT_ID_2).flatten(),
    }
}

/// # Safety
/// `info` must be null or a valid present info.
unsafe fn first_swapchain(info: *const vk::PresentInfoKHR<'_>) -> Option<vk::SwapchainKHR> {
    // SAFETY: caller's contract.
    let info = unsafe { info.as_ref()? };
    if info.swapchain_count == 0 || info.p_swapchains.is_null() {
        return None;
    }
    // SAFETY: swapchain_count >= 1 valid handles.
    Some(unsafe { *info.p_swapchains })
}

/// Closes the open frame: reads what retired, emits complete frames to the dump; the closed
/// frame's index.
pub fn end_frame(d: &DeviceState, record: FrameRecord) -> u64 {
    framescope_core::alloc_count::on_frame_end();
    let mut frames = d.frames.lock();
    if frames.session.frames_closed().is_multiple_of(RECALIBRATE_EVERY) {
        let offset = d.calibration_offset_ns();
        frames.session.assembler().set_calibration(offset);
        frames.calibration = offset;
    }
    d.poll_retired(&mut frames);
    if let Some(s) = d.samples.as_ref() {
        s.stats_rotation.end_frame();
        if let Some(p) = &s.perf {
            p.end_frame();
        }
    }
    let window = d
        .samples
        .as_ref()
        .filter(|s| s.level == crate::samples::Level::Draw)
        .map(|s| &s.window);
    frames.close(record, window, d.count_commands)
}

/// Starts the process's dump for this device if the config asks for one and no other device
/// has it; called at device creation so the dump's clock origin precedes the first frame.
pub fn start_dump(d: &DeviceState) {
    let mut frames = d.frames.lock();
    frames.session.set_driver_groups(&d.driver_groups);
    let board = frames.session.counters().cloned();
    frames.session.ensure_dump(|| {
        let mut h = header(d);
        h.counter_board = board;
        DumpWriter::from_config(framescope_core::settings::get(), h)
    });
}

fn header(d: &DeviceState) -> Header {
    let p = &d.properties;
    let mut h = Header::new(Api::Vulkan);
    h.command_counts = d.count_commands;
    let mut info = DeviceInfo {
        name: d.name(),
        vendor_id: p.vendor_id,
        device_id: p.device_id,
        driver_version_raw: p.driver_version,
        api_version_raw: p.api_version,
        ..DeviceInfo::default()
    };
    if let Some((name, drv_info)) = d.driver_properties() {
        info.driver_name = Some(name);
        info.driver_info = Some(drv_info);
    }
    info.extra
        .insert("device_type".into(), format!("{:?}", p.device_type).into());
    h.device = Some(info);
    h.timestamp_period = Some(f64::from(p.limits.timestamp_period));
    let no_ts: Vec<u32> = d
        .queue_families
        .iter()
        .enumerate()
        .filter(|(_, f)| f.timestamp_valid_bits == 0)
        .map(|(i, _)| i as u32)
        .collect();
    h.extra.insert("queue_families_without_timestamps".into(), no_ts.into());
    h.extra
        .insert("device_create_fallback".into(), d.augment.fell_back.into());
    h.extra
        .insert("calibrated_timestamps".into(), d.calibrated_fns.is_some().into());
    h.extra
        .insert("layers_above".into(), crate::layers_above::layers_above().into());
    if !d.augment.driver_counters.is_empty() {
        let list: Vec<serde_json::Value> = d.augment.driver_counters.iter().map(|c| c.to_json()).collect();
        h.extra.insert("performance_counters".into(), list.into());
    }
    crate::hud::header_extra(d, &mut h);
    h.driver_groups = d.driver_groups.clone();
    if let Some(why) = &d.driver_counters_off {
        h.unavailable.push(Unavailable {
            source: "vk_performance_query".into(),
            reason: why.clone(),
        });
    }
    for (source, reason) in &d.augment.unavailable {
        h.unavailable.push(Unavailable {
            source: source.clone(),
            reason: reason.clone(),
        });
    }
    h
}

pub unsafe extern "system" fn create_swapchain(
    device: vk::Device,
    ci: *const vk::SwapchainCreateInfoKHR<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::SwapchainKHR,
) -> vk::Result {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    // --- HUD: a copy of the create info with the image usage the HUD needs; if the
    // driver refuses it, the app's own create info.
    let mut adjusted = if ci.is_null() {
        None
    } else {
        // SAFETY: the app's valid create info.
        guarded(&CREATE_SWAPCHAIN, || {
            crate::hud::adjust_create_info(&d, &d.hud, unsafe { &*ci })
        })
        .flatten()
    };
    // A retired swapchain must not be waited on (VUID-vkWaitForPresentKHR-swapchain-04997).
    if let Some(pw) = d.present_wait.as_ref().filter(|_| !ci.is_null()) {
        // SAFETY: the app's valid create info.
        let old = unsafe { (*ci).old_swapchain };
        if old != vk::SwapchainKHR::null() {
            guarded(&CREATE_SWAPCHAIN, || pw.swapchain_ending(old, false));
        }
    }
    // present_timing: its flags on (a copy of) the create info where the surface supports it.
    // SAFETY: null or the app's valid create info.
    let app_ci = unsafe { ci.as_ref() };
    let timing = guarded(&CREATE_SWAPCHAIN, || {
        crate::display::present_timing::plan_for(&d.dev, d.present_timing.as_ref(), app_ci, &mut adjusted)
    })
    .flatten();
    let mut used = ci;
    let mut r = vk::Result::ERROR_INITIALIZATION_FAILED;
    if let Some(a) = adjusted.as_ref() {
        // SAFETY: the app's arguments with a create info differing only in imageUsage (and
        // present_timing's flags).
        r = unsafe { (d.swapchain_fns.create_swapchain_khr)(device, a, alloc, out) };
        if r == vk::Result::SUCCESS {
            used = a;
        }
    }
    if r != vk::Result::SUCCESS {
        // SAFETY: forwarding the app's arguments.
        r = unsafe { (d.swapchain_fns.create_swapchain_khr)(device, ci, alloc, out) };
    }
    // --- end HUD ---
    let timing = timing.filter(|_| used != ci);
    if r == vk::Result::SUCCESS {
        guarded(&CREATE_SWAPCHAIN, || {
            d.stats.swapchains_created.fetch_add(1, Ordering::Relaxed);
            // SAFETY: success: *out is the new swapchain and ci the app's valid create info.
            let (handle, ci) = unsafe { (*out, &*ci) };
            // SAFETY: `used` is the create info the swapchain was made from (the app's, or our
            // copy of it with the same arrays).
            let used = unsafe { &*used };
            // SAFETY: as above.
            let concurrent = unsafe { concurrent_families(used) };
            crate::hud::swapchain_created(&d.hud, handle, used, concurrent);
            // One display-time source a swapchain: present_timing where it runs.
            let timed = timing
                .is_some_and(|stage| crate::display::present_timing::created(d.present_timing.as_ref(), handle, stage));
            if let Some(pw) = d.present_wait.as_ref().filter(|_| !timed) {
                pw.swapchain_created(handle);
            }
            d.add_swapchain(
                handle,
                SwapchainInfo {
                    handle: handle.as_raw(),
                    width: ci.image_extent.width,
                    height: ci.image_extent.height,
                    format: ci.image_format.as_raw(),
                    present_mode: ci.present_mode.as_raw(),
                },
            );
            let feed = std::sync::Arc::clone(d.frames.lock().session.display());
            // A better source of the device covers it: X11 Present and Wayland presentation
            // stay off for it.
            let covered = crate::display::present_wait_covers(d.present_wait.as_ref(), handle)
                || crate::display::present_timing_covers(d.present_timing.as_ref(), handle);
            crate::display_x11::swapchain_created(&feed, handle, ci.surface, covered);
            crate::display_wayland::swapchain_created(&feed, handle, ci.surface, covered);
        });
    }
    r
}

pub unsafe extern "system" fn destroy_swapchain(
    device: vk::Device,
    swapchain: vk::SwapchainKHR,
    alloc: *const vk::AllocationCallbacks<'_>,
) {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    if let Some(d) = unsafe { device_state::lookup(device.as_raw()) } {
        d.remove_swapchain(swapchain);
        // No wait may be in flight on it when it goes: at most one wait call's timeout.
        if let Some(pw) = d.present_wait.as_ref() {
            guarded(&DESTROY_SWAPCHAIN, || pw.swapchain_ending(swapchain, true));
        }
        if let Some(pt) = d.present_timing.as_ref() {
            guarded(&DESTROY_SWAPCHAIN, || pt.swapchain_ending(swapchain, true));
        }
        guarded(&DESTROY_SWAPCHAIN, || {
            crate::display_x11::swapchain_destroyed(swapchain)
        });
        guarded(&DESTROY_SWAPCHAIN, || {
            crate::display_wayland::swapchain_destroyed(swapchain)
        });
        // HUD: waits for our own work on it, then frees our objects.
        guarded(&DESTROY_SWAPCHAIN, || {
            crate::hud::swapchain_destroyed(&d, &d.hud, swapchain)
        });
        // SAFETY: forwarding the app's arguments.
        unsafe { (d.swapchain_fns.destroy_swapchain_khr)(device, swapchain, alloc) };
    }
}

/// The HUD's submit waits the app's present semaphores, so the app's destroying one must wait
/// for that submit (VUID-vkDestroySemaphore-semaphore-01137); see `hud::fences`.
pub unsafe extern "system" fn destroy_semaphore(
    device: vk::Device,
    semaphore: vk::Semaphore,
    alloc: *const vk::AllocationCallbacks<'_>,
) {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    if let Some(d) = unsafe { device_state::lookup(device.as_raw()) } {
        guarded(&DESTROY_SEMAPHORE, || {
            crate::hud::semaphore_destroying(&d, &d.hud, semaphore)
        });
        // SAFETY: forwarding the app's arguments.
        unsafe { (d.fns.fp_v1_0().destroy_semaphore)(device, semaphore, alloc) };
    }
}

/// The app's present as slices; `None` when the arrays are missing (no swapchain, or null
/// where a count says some).
///
/// # Safety
/// `info` is the app's present info, its arrays valid for `'a` with the counts it gives.
unsafe fn app_present<'a>(info: &'a vk::PresentInfoKHR<'a>) -> Option<crate::hud::AppPresent<'a>> {
    let n = info.swapchain_count as usize;
    let waits = info.wait_semaphore_count as usize;
    if n == 0 || info.p_swapchains.is_null() || info.p_image_indices.is_null() {
        return None;
    }
    if waits > 0 && info.p_wait_semaphores.is_null() {
        return None;
    }
    // SAFETY: the caller's: each non-null array holds its count of items for 'a.
    unsafe {
        Some(crate::hud::AppPresent {
            info,
            swapchains: std::slice::from_raw_parts(info.p_swapchains, n),
            indices: std::slice::from_raw_parts(info.p_image_indices, n),
            waits: if waits == 0 {
                &[]
            } else {
                std::slice::from_raw_parts(info.p_wait_semaphores, waits)
            },
        })
    }
}

/// The queue families a create info shares its images with (`CONCURRENT`); `None` otherwise.
///
/// # Safety
/// `ci` is the app's create info, its family array valid with the count it gives.
unsafe fn concurrent_families<'a>(ci: &'a vk::SwapchainCreateInfoKHR<'_>) -> Option<&'a [u32]> {
    (ci.image_sharing_mode == vk::SharingMode::CONCURRENT && !ci.p_queue_family_indices.is_null()).then(|| {
        // SAFETY: the caller's: CONCURRENT swapchains list queue_family_index_count families.
        unsafe { std::slice::from_raw_parts(ci.p_queue_family_indices, ci.queue_family_index_count as usize) }
    })
}
