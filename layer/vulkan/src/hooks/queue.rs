//! Queue hooks: queue retrieval, and submission, where our timestamp command buffers are
//! spliced around the app's and the frame's counts are accumulated.

use crate::batches::{AppBatches, Batch, Scratch};
use crate::device_state::{self, DeviceState, QueueInner, QueueState};
use crate::dispatch::device::FrameBoundaryMode;
use crate::hooks::frame_boundary;
use crate::timing::QueueTiming;
use ash::vk::{self, Handle};
use framescope_core::clock::monotonic_now_ns;
use framescope_core::frame::{FrameEnd, FrameRecord, GpuMissing};
use framescope_core::guard::{guarded, Site};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// In-flight submissions on a queue beyond which a submit reads what has retired.
const POLL_AT_SUBMIT: usize = 32;

static SUBMIT: Site = Site::new("vkQueueSubmit");
static SUBMIT2: Site = Site::new("vkQueueSubmit2");
static GET_QUEUE: Site = Site::new("vkGetDeviceQueue");
static BOUNDARY: Site = Site::new("VkFrameBoundaryEXT");

pub unsafe extern "system" fn get_device_queue(device: vk::Device, family: u32, index: u32, out: *mut vk::Queue) {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
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
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return;
    };
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_1().get_device_queue2)(device, info, out) };
    // SAFETY: info is the app's valid struct; the next layer wrote the queue.
    let (q, family) = unsafe { (*out, (*info).queue_family_index) };
    guarded(&GET_QUEUE, || d.register_queue(q, family));
}

/// Per-submit bookkeeping shared by both submit flavours: counts the command buffers into the
/// open frame and takes a timestamp slot. Returns the slot's command buffers and frame.
fn begin_timed_submit(
    d: &DeviceState,
    q: &QueueState,
    inner: &mut QueueInner,
    cbs: impl Iterator<Item = vk::CommandBuffer>,
    timeable: bool,
) -> Option<(vk::CommandBuffer, vk::CommandBuffer, u64, u32)> {
    // gpu_timing=0: no queries of ours; frames close with gpu_missing = disabled.
    if !inner.timing_tried && framescope_core::settings::get().gpu_timing {
        inner.timing_tried = true;
        match QueueTiming::new(d, q.family) {
            Ok(t) => {
                if t.is_some() {
                    framescope_core::log::debug(format_args!("GPU timing on a queue of family {}", q.family));
                }
                inner.timing = t;
            }
            Err(e) => {
                inner.timing_failed = true;
                framescope_core::log::error(format_args!(
                    "cannot set up GPU timing on queue family {}: {e:?}",
                    q.family
                ))
            }
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
            // Timing that could not be set up is `disabled` (dump-schema.md), not a family
            // without timestamps.
            let f = if inner.timing_failed {
                frames.session.assembler().on_untimed_submit(GpuMissing::Disabled)
            } else {
                if frames.session.assembler().gpu_timing() {
                    frames.counts.queues_without_timestamps = frames.counts.queues_without_timestamps.saturating_add(1);
                }
                frames.session.assembler().on_submit()
            };
            frames.retire(f, None);
            None
        }
    }
}

/// Frame-boundary handling of one submit call: whether it ends a frame, and (when we emulate
/// the extension) the app's boundary structs unlinked until the returned guard drops.
fn boundary_prep<'a, B: Batch + 'a>(
    d: &DeviceState,
    batches: impl Iterator<Item = &'a B> + Clone,
) -> (bool, Option<frame_boundary::StrippedSubmits>) {
    if d.augment.frame_boundary == FrameBoundaryMode::Off {
        return (false, None);
    }
    // SAFETY: the batches are the app's (`AppBatches`), their chains valid for this call.
    let ends = batches
        .clone()
        .any(|b| unsafe { frame_boundary::ends_frame(b.p_next()) });
    let stripped = (d.augment.frame_boundary == FrameBoundaryMode::Emulated).then(|| {
        let heads = batches.map(|b| b.p_next_field());
        // SAFETY: as above; the app's structs are restored when the guard drops, before we return.
        unsafe { frame_boundary::StrippedSubmits::new(heads) }
    });
    (ends, stripped)
}

/// A `FRAME_END` boundary closes the frame, unless the device presents (presents end frames).
fn boundary_done(d: &DeviceState, ends: bool) {
    if ends && d.stats.presents.load(Ordering::Relaxed) == 0 {
        guarded(&BOUNDARY, || {
            let mut record = FrameRecord {
                end: FrameEnd::FrameBoundary,
                t_ns: monotonic_now_ns(),
                ..FrameRecord::default()
            };
            record.cpu.waits = framescope_core::waits::take();
            record.cpu.creation = framescope_core::creation::take();
            crate::hooks::present::end_frame(d, record);
        });
    }
}

/// A command buffer submitted again (without SIMULTANEOUS_USE, so the app waited for its
/// previous execution) whose previous results we have not read yet: read them now, before its
/// query slots are reset and rewritten.
fn harvest_before_resubmit(
    d: &DeviceState,
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
fn resolve_samples(
    d: &DeviceState,
    inner: &mut QueueInner,
    cbs: impl Iterator<Item = vk::CommandBuffer>,
    cb_base: u32,
) {
    if d.samples.is_none() {
        return;
    }
    let QueueInner { timing, labels, .. } = inner;
    let Some(pending) = timing.as_mut().and_then(|t| t.last_pending()) else {
        return;
    };
    let perf = d
        .samples
        .as_ref()
        .and_then(|s| s.perf.as_ref())
        .map(|p| (&p.layouts, p.frame()));
    for (k, cb) in cbs.enumerate() {
        if let Some(st) = d.command_buffer(cb) {
            pending.add_command_buffer(&st.rec, cb_base + k as u32, labels, perf);
        }
    }
}

fn submit_failed(d: &DeviceState, inner: &mut QueueInner, frame: u64) {
    if let Some(t) = inner.timing.as_mut() {
        t.cancel_last();
    }
    d.frames.lock().retire(frame, None);
}

/// What the generic path needs of a submit flavour beyond [`Batch`]: its scratch arrays in the
/// queue state (with the timing ring, borrowed together) and its call guard site.
trait Flavour: Batch {
    const SITE: &'static Site;
    fn parts(inner: &mut QueueInner) -> (&mut Option<QueueTiming>, &mut Scratch<Self>);
}

impl Flavour for vk::SubmitInfo<'static> {
    const SITE: &'static Site = &SUBMIT;
    fn parts(inner: &mut QueueInner) -> (&mut Option<QueueTiming>, &mut Scratch<Self>) {
        (&mut inner.timing, &mut inner.submit1)
    }
}

impl Flavour for vk::SubmitInfo2<'static> {
    const SITE: &'static Site = &SUBMIT2;
    fn parts(inner: &mut QueueInner) -> (&mut Option<QueueTiming>, &mut Scratch<Self>) {
        (&mut inner.timing, &mut inner.submit2)
    }
}

/// The next layer's entry point for a flavour.
type Next<B> = unsafe extern "system" fn(vk::Queue, u32, *const B, vk::Fence) -> vk::Result;

/// One submit call of either flavour: our timestamp (and query reset) command buffers are
/// spliced around the app's, the frame's counts accumulated, samples resolved; the call goes
/// down unchanged when any of that is not possible.
fn submit<B: Flavour>(
    d: &DeviceState,
    queue: vk::Queue,
    apps: AppBatches<'_, B>,
    fence: vk::Fence,
    next: Next<B>,
) -> vk::Result {
    d.stats.submits.fetch_add(1, Ordering::Relaxed);
    let (raw, count) = apps.raw();
    let Some(q) = d.queue(queue) else {
        // SAFETY: forwarding the app's arguments.
        return unsafe { next(queue, count, raw, fence) };
    };
    let mut inner = q.inner.lock();
    let (ends_frame, stripped) = boundary_prep(d, apps.batches().iter());
    let prepared = guarded(B::SITE, || {
        if d.samples.is_some() {
            harvest_before_resubmit(d, &q, &mut inner, apps.command_buffers());
        }
        let (begin, end, frame, cb_base) =
            begin_timed_submit(d, &q, &mut inner, apps.command_buffers(), apps.timeable())?;
        resolve_samples(d, &mut inner, apps.command_buffers(), cb_base);
        let (timing, scratch) = B::parts(&mut inner);
        let pending = timing.as_mut().and_then(|t| t.last_pending());
        match pending {
            Some(p) => scratch.splice(&apps, p.reset_buffers(d, d.samples.as_ref(), q.family), begin, end),
            None => scratch.splice(&apps, std::iter::empty(), begin, end),
        }
        Some(frame)
    })
    .flatten();
    let r = match prepared {
        Some(_) => {
            let (_, scratch) = B::parts(&mut inner);
            // SAFETY: the copies differ from the app's batches only in their command buffer
            // arrays, which hold the app's buffers plus ours, all valid for this queue; the
            // arrays live in the scratch, untouched until the call returns.
            unsafe { next(queue, scratch.batches.len() as u32, scratch.batches.as_ptr(), fence) }
        }
        // SAFETY: forwarding the app's arguments.
        None => unsafe { next(queue, count, raw, fence) },
    };
    if let (Some(frame), false) = (prepared, r == vk::Result::SUCCESS) {
        submit_failed(d, &mut inner, frame);
    }
    drop(inner);
    drop(stripped);
    boundary_done(d, ends_frame && r == vk::Result::SUCCESS);
    crate::hooks::fault::seen(d, B::SITE.name, r);
    r
}

pub unsafe extern "system" fn queue_submit(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo<'_>,
    fence: vk::Fence,
) -> vk::Result {
    // SAFETY: `queue` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(queue.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let next: Next<vk::SubmitInfo<'static>> = d.fns.fp_v1_0().queue_submit;
    // SAFETY: Vulkan's contract for this call: `count` valid submit infos with valid arrays and
    // chains, for the duration of the call (the lifetime is a marker; only raw pointers follow).
    let apps = unsafe { AppBatches::new(submits.cast::<vk::SubmitInfo<'static>>(), count) };
    submit(&d, queue, apps, fence, next)
}

unsafe fn submit2_entry(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo2<'_>,
    fence: vk::Fence,
    khr: bool,
) -> vk::Result {
    // SAFETY: `queue` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(queue.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let next: Next<vk::SubmitInfo2<'static>> = if khr {
        d.sync2_fns.queue_submit2_khr
    } else {
        d.fns.fp_v1_3().queue_submit2
    };
    // SAFETY: the caller's: Vulkan's contract for this call, as for vkQueueSubmit.
    let apps = unsafe { AppBatches::new(submits.cast::<vk::SubmitInfo2<'static>>(), count) };
    submit(&d, queue, apps, fence, next)
}

pub unsafe extern "system" fn queue_submit2(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo2<'_>,
    fence: vk::Fence,
) -> vk::Result {
    // SAFETY: the app's arguments of this call.
    unsafe { submit2_entry(queue, count, submits, fence, false) }
}

pub unsafe extern "system" fn queue_submit2_khr(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo2<'_>,
    fence: vk::Fence,
) -> vk::Result {
    // SAFETY: the app's arguments of this call.
    unsafe { submit2_entry(queue, count, submits, fence, true) }
}
