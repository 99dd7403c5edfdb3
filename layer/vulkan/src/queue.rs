//! Queue hooks: queue retrieval, and submission, where our timestamp command buffers are
//! spliced around the app's and the frame's counts are accumulated.

use crate::device::{self, Device, FrameBoundaryMode, QueueInner, QueueState};
use crate::frame_boundary;
use crate::guard::{guarded, Site};
use crate::timing::QueueTiming;
use ash::vk::{self, Handle};
use framescope_core::clock::monotonic_now_ns;
use framescope_core::frame::{FrameEnd, FrameRecord};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// In-flight submissions on a queue beyond which a submit reads what has retired.
const POLL_AT_SUBMIT: usize = 32;

static SUBMIT: Site = Site::new("vkQueueSubmit");
static SUBMIT2: Site = Site::new("vkQueueSubmit2");
static GET_QUEUE: Site = Site::new("vkGetDeviceQueue");
static BOUNDARY: Site = Site::new("VkFrameBoundaryEXT");

pub unsafe extern "system" fn get_device_queue(device: vk::Device, family: u32, index: u32, out: *mut vk::Queue) {
    let Some(d) = device::lookup(device.as_raw()) else {
        return;
    };
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().get_device_queue)(device, family, index, out) };
    // SAFETY: the next layer wrote the queue.
    let q = unsafe { *out };
    guarded(&GET_QUEUE, || d.register_queue(q, family));
}

pub unsafe extern "system" fn get_device_queue2(
    device: vk::Device,
    info: *const vk::DeviceQueueInfo2<'_>,
    out: *mut vk::Queue,
) {
    let Some(d) = device::lookup(device.as_raw()) else {
        return;
    };
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_1().get_device_queue2)(device, info, out) };
    // SAFETY: info is the app's valid struct; the next layer wrote the queue.
    let (q, family) = unsafe { (*out, (*info).queue_family_index) };
    guarded(&GET_QUEUE, || d.register_queue(q, family));
}

/// Whether a submit's pNext chain holds something our extra command buffers would break:
/// per-command-buffer device masks, or a protected submit.
///
/// # Safety
/// `p_next` must be a valid pNext chain.
unsafe fn untimeable_chain(mut p: *const c_void) -> bool {
    while !p.is_null() {
        // SAFETY: every chain element starts with VkBaseInStructure.
        let base = unsafe { &*(p as *const vk::BaseInStructure<'_>) };
        // SAFETY (inside): the sType says which struct it is.
        let protected = base.s_type == vk::StructureType::PROTECTED_SUBMIT_INFO
            && unsafe { (*(p as *const vk::ProtectedSubmitInfo<'_>)).protected_submit } != 0;
        if base.s_type == vk::StructureType::DEVICE_GROUP_SUBMIT_INFO || protected {
            return true;
        }
        p = base.p_next as *const c_void;
    }
    false
}

/// Per-submit bookkeeping shared by both submit flavours: counts the command buffers into the
/// open frame and takes a timestamp slot. Returns the slot's command buffers and frame.
fn begin_timed_submit(
    d: &Device,
    q: &QueueState,
    inner: &mut QueueInner,
    cbs: impl Iterator<Item = vk::CommandBuffer>,
    timeable: bool,
) -> Option<(vk::CommandBuffer, vk::CommandBuffer, u64, u32)> {
    // gpu_timing=0: no queries of ours; frames close with gpu_missing = disabled.
    if !inner.timing_tried && crate::settings::get().gpu_timing {
        inner.timing_tried = true;
        match QueueTiming::new(d, q.family) {
            Ok(t) => {
                if t.is_some() {
                    crate::log::debug(format_args!("GPU timing on a queue of family {}", q.family));
                }
                inner.timing = t;
            }
            Err(e) => crate::log::error(format_args!(
                "cannot set up GPU timing on queue family {}: {e:?}",
                q.family
            )),
        }
    }
    let mut frames = d.frames.lock();
    // Results are normally read at frame ends; an app that neither presents nor marks frame
    // boundaries would otherwise never give back its timing slots and query blocks.
    if inner.timing.as_ref().is_some_and(|t| t.in_flight() >= POLL_AT_SUBMIT) {
        d.poll_queue(inner, &mut frames);
    }
    let counts = &mut frames.counts;
    counts.submits = counts.submits.saturating_add(1);
    let cb_base = counts.command_buffers;
    let mut any = false;
    for cb in cbs {
        any = true;
        counts.command_buffers = counts.command_buffers.saturating_add(1);
        if let Some(s) = d.command_buffer(cb) {
            s.counts.add_to(counts);
        }
    }
    if !any || !timeable {
        return None;
    }
    let frame = frames.session.assembler().open_frame();
    match inner.timing.as_mut() {
        Some(t) => {
            let (b, e, _) = t.acquire(d, frame)?;
            frames.session.assembler().on_submit();
            Some((b, e, frame, cb_base))
        }
        None => {
            // A family without timestamps (or gpu_timing=0): the submission retires at once,
            // without a time.
            if frames.session.assembler().gpu_timing() {
                frames.counts.queues_without_timestamps = frames.counts.queues_without_timestamps.saturating_add(1);
            }
            let f = frames.session.assembler().on_submit();
            frames.retire(f, None);
            None
        }
    }
}

/// Frame-boundary handling of one submit call: whether it ends a frame, and (when we emulate
/// the extension) the app's boundary structs unlinked until the returned guard drops.
fn boundary_prep<'a>(
    d: &Device,
    heads: impl Iterator<Item = &'a *const c_void> + Clone,
) -> (bool, Option<frame_boundary::StrippedSubmits>) {
    if d.augment.frame_boundary == FrameBoundaryMode::Off {
        return (false, None);
    }
    // SAFETY: the heads are pNext fields of the app's submit infos, valid for this call.
    let ends = heads.clone().any(|&h| unsafe { frame_boundary::ends_frame(h) });
    let stripped = (d.augment.frame_boundary == FrameBoundaryMode::Emulated).then(|| {
        let heads = heads.map(|h| h as *const *const c_void as *mut *mut c_void);
        // SAFETY: as above; the app's structs are restored when the guard drops, before we return.
        unsafe { frame_boundary::StrippedSubmits::new(heads) }
    });
    (ends, stripped)
}

/// A `FRAME_END` boundary closes the frame, unless the device presents (presents end frames).
fn boundary_done(d: &Device, ends: bool) {
    if ends && d.stats.presents.load(Ordering::Relaxed) == 0 {
        guarded(&BOUNDARY, || {
            let record = FrameRecord {
                end: FrameEnd::FrameBoundary,
                t_ns: monotonic_now_ns(),
                ..FrameRecord::default()
            };
            crate::present::end_frame(d, record);
        });
    }
}

/// A command buffer submitted again (without SIMULTANEOUS_USE, so the app waited for its
/// previous execution) whose previous results we have not read yet: read them now, before its
/// query slots are reset and rewritten.
fn harvest_before_resubmit(
    d: &Device,
    q: &Arc<QueueState>,
    inner: &mut QueueInner,
    cbs: impl Iterator<Item = vk::CommandBuffer>,
) {
    let unread = cbs.filter_map(|cb| d.command_buffer(cb)).any(|st| {
        let rec = st.rec.lock();
        !rec.simultaneous && rec.submits > rec.read
    });
    if !unread {
        return;
    }
    let mut frames = d.frames.lock();
    d.poll_queue(inner, &mut frames);
    d.for_each_queue(|other| {
        if !Arc::ptr_eq(other, q) {
            if let Some(mut o) = other.inner.try_lock() {
                d.poll_queue(&mut o, &mut frames);
            }
        }
    });
}

/// Resolves the submission's command buffers into pending samples (with the queue's labels).
fn resolve_samples(d: &Device, inner: &mut QueueInner, cbs: impl Iterator<Item = vk::CommandBuffer>, cb_base: u32) {
    if d.samples.is_none() {
        return;
    }
    let QueueInner { timing, labels, .. } = inner;
    let Some(pending) = timing.as_mut().and_then(|t| t.last_pending()) else {
        return;
    };
    for (k, cb) in cbs.enumerate() {
        if let Some(st) = d.command_buffer(cb) {
            pending.add_command_buffer(&st, cb_base + k as u32, labels);
        }
    }
}

fn submit_failed(d: &Device, inner: &mut QueueInner, frame: u64) {
    if let Some(t) = inner.timing.as_mut() {
        t.cancel_last();
    }
    d.frames.lock().retire(frame, None);
}

pub unsafe extern "system" fn queue_submit(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo<'_>,
    fence: vk::Fence,
) -> vk::Result {
    let Some(d) = device::lookup(queue.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let next = d.fns.fp_v1_0().queue_submit;
    d.stats.submits.fetch_add(1, Ordering::Relaxed);
    let Some(q) = d.queue(queue) else {
        // SAFETY: forwarding the app's arguments.
        return unsafe { next(queue, count, submits, fence) };
    };
    let mut inner = q.inner.lock();
    let apps: &[vk::SubmitInfo<'_>] =
        // SAFETY: the app passes `count` valid submit infos.
        if count == 0 || submits.is_null() { &[] } else { unsafe { std::slice::from_raw_parts(submits, count as usize) } };
    let (ends_frame, stripped) = boundary_prep(&d, apps.iter().map(|s| &s.p_next));
    let prepared = guarded(&SUBMIT, || {
        // SAFETY: the app's chains and command buffer arrays are valid for this call.
        let timeable = apps.iter().all(|s| unsafe { !untimeable_chain(s.p_next) });
        let cbs = || {
            apps.iter()
                .flat_map(|s| app_cbs(s.p_command_buffers, s.command_buffer_count).iter().copied())
        };
        if d.samples.is_some() {
            harvest_before_resubmit(&d, &q, &mut inner, cbs());
        }
        let (begin, end, frame, cb_base) = begin_timed_submit(&d, &q, &mut inner, cbs(), timeable)?;
        let inner = &mut *inner;
        resolve_samples(&d, inner, cbs(), cb_base);
        inner.cbs.clear();
        inner.ranges.clear();
        for (i, s) in apps.iter().enumerate() {
            let start = inner.cbs.len();
            if i == 0 {
                if let Some(p) = inner.timing.as_mut().and_then(|t| t.last_pending()) {
                    inner.cbs.extend(p.reset_buffers(&d, q.family));
                }
                inner.cbs.push(begin);
            }
            inner
                .cbs
                .extend_from_slice(app_cbs(s.p_command_buffers, s.command_buffer_count));
            if i + 1 == apps.len() {
                inner.cbs.push(end);
            }
            inner.ranges.push((start, inner.cbs.len() - start));
        }
        inner.submits.clear();
        for (s, &(start, n)) in apps.iter().zip(&inner.ranges) {
            let mut copy: vk::SubmitInfo<'static> = unsafe_extend_lifetime(*s);
            copy.p_command_buffers = inner.cbs[start..].as_ptr();
            copy.command_buffer_count = n as u32;
            inner.submits.push(copy);
        }
        Some(frame)
    })
    .flatten();
    let r = match prepared {
        // SAFETY: the copies differ from the app's only in their command buffer arrays, which
        // hold the app's buffers plus our two, all valid for this queue.
        Some(_) => unsafe { next(queue, inner.submits.len() as u32, inner.submits.as_ptr(), fence) },
        // SAFETY: forwarding the app's arguments.
        None => unsafe { next(queue, count, submits, fence) },
    };
    if let (Some(frame), false) = (prepared, r == vk::Result::SUCCESS) {
        submit_failed(&d, &mut inner, frame);
    }
    drop(inner);
    drop(stripped);
    boundary_done(&d, ends_frame && r == vk::Result::SUCCESS);
    r
}

fn submit2_impl(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo2<'_>,
    fence: vk::Fence,
    khr: bool,
) -> vk::Result {
    let Some(d) = device::lookup(queue.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let next = if khr {
        d.sync2_fns.queue_submit2_khr
    } else {
        d.fns.fp_v1_3().queue_submit2
    };
    d.stats.submits.fetch_add(1, Ordering::Relaxed);
    let Some(q) = d.queue(queue) else {
        // SAFETY: forwarding the app's arguments.
        return unsafe { next(queue, count, submits, fence) };
    };
    let mut inner = q.inner.lock();
    let apps: &[vk::SubmitInfo2<'_>] =
        // SAFETY: the app passes `count` valid submit infos.
        if count == 0 || submits.is_null() { &[] } else { unsafe { std::slice::from_raw_parts(submits, count as usize) } };
    let (ends_frame, stripped) = boundary_prep(&d, apps.iter().map(|s| &s.p_next));
    let prepared = guarded(&SUBMIT2, || {
        // SAFETY: the app's chains and arrays are valid for this call.
        let timeable = apps.iter().all(|s| unsafe { !untimeable_chain(s.p_next) });
        let cbs = || {
            apps.iter().flat_map(|s| {
                app_cbs(s.p_command_buffer_infos, s.command_buffer_info_count)
                    .iter()
                    .map(|i| i.command_buffer)
            })
        };
        if d.samples.is_some() {
            harvest_before_resubmit(&d, &q, &mut inner, cbs());
        }
        let (begin, end, frame, cb_base) = begin_timed_submit(&d, &q, &mut inner, cbs(), timeable)?;
        let inner = &mut *inner;
        resolve_samples(&d, inner, cbs(), cb_base);
        let ours = |cb| vk::CommandBufferSubmitInfo::default().command_buffer(cb);
        inner.cb_infos.clear();
        inner.ranges.clear();
        for (i, s) in apps.iter().enumerate() {
            let start = inner.cb_infos.len();
            if i == 0 {
                if let Some(p) = inner.timing.as_mut().and_then(|t| t.last_pending()) {
                    inner.cb_infos.extend(p.reset_buffers(&d, q.family).map(ours));
                }
                inner.cb_infos.push(ours(begin));
            }
            for info in app_cbs(s.p_command_buffer_infos, s.command_buffer_info_count) {
                inner.cb_infos.push(unsafe_extend_lifetime(*info));
            }
            if i + 1 == apps.len() {
                inner.cb_infos.push(ours(end));
            }
            inner.ranges.push((start, inner.cb_infos.len() - start));
        }
        inner.submits2.clear();
        for (s, &(start, n)) in apps.iter().zip(&inner.ranges) {
            let mut copy: vk::SubmitInfo2<'static> = unsafe_extend_lifetime(*s);
            copy.p_command_buffer_infos = inner.cb_infos[start..].as_ptr();
            copy.command_buffer_info_count = n as u32;
            inner.submits2.push(copy);
        }
        Some(frame)
    })
    .flatten();
    let r = match prepared {
        // SAFETY: as for vkQueueSubmit: only the command buffer arrays differ.
        Some(_) => unsafe { next(queue, inner.submits2.len() as u32, inner.submits2.as_ptr(), fence) },
        // SAFETY: forwarding the app's arguments.
        None => unsafe { next(queue, count, submits, fence) },
    };
    if let (Some(frame), false) = (prepared, r == vk::Result::SUCCESS) {
        submit_failed(&d, &mut inner, frame);
    }
    drop(inner);
    drop(stripped);
    boundary_done(&d, ends_frame && r == vk::Result::SUCCESS);
    r
}

pub unsafe extern "system" fn queue_submit2(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo2<'_>,
    fence: vk::Fence,
) -> vk::Result {
    submit2_impl(queue, count, submits, fence, false)
}

pub unsafe extern "system" fn queue_submit2_khr(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo2<'_>,
    fence: vk::Fence,
) -> vk::Result {
    submit2_impl(queue, count, submits, fence, true)
}

/// The app's array as a slice (empty when null).
fn app_cbs<'a, T>(p: *const T, n: u32) -> &'a [T] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        // SAFETY: Vulkan's contract: `n` valid elements at `p` for the duration of the call.
        unsafe { std::slice::from_raw_parts(p, n as usize) }
    }
}

/// Stores a copy of an app struct in our reusable scratch arrays. Its pointers still point at
/// the app's data, which is only valid during this call; the scratch is rebuilt every call.
fn unsafe_extend_lifetime<T: Copy, U>(v: T) -> U {
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<U>());
    // SAFETY: T and U are the same Vulkan struct differing only in a lifetime parameter.
    unsafe { std::mem::transmute_copy(&v) }
}
