//! Queue submission: one frame's primaries spread over `--submits` calls of
//! vkQueueSubmit or vkQueueSubmit2, optionally all of it twice.

use ash::vk;

use crate::args::Args;

pub struct SubmitSync<'a> {
    /// Waited on by the frame's first submit (acquire semaphores).
    pub wait: &'a [vk::Semaphore],
    /// Signalled by the frame's last submit (render-finished semaphores).
    pub signal: &'a [vk::Semaphore],
    /// Signalled by the frame's last submit.
    pub fence: vk::Fence,
}

pub fn submit_frame(
    device: &ash::Device,
    queue: vk::Queue,
    cbs: &[vk::CommandBuffer],
    sync: &SubmitSync,
    args: &Args,
    frame_id: u64,
) -> Result<(), vk::Result> {
    let passes = if args.resubmit_twice { 2 } else { 1 };
    let groups = args.submits as usize;
    // SAFETY: the caller waited on `fence` for this frame slot.
    unsafe { device.reset_fences(&[sync.fence])? };
    for pass in 0..passes {
        if pass > 0 && !args.simultaneous {
            // Without SIMULTANEOUS_USE a buffer may not be pending twice.
            // SAFETY: live queue, externally synchronised by the single render thread.
            unsafe { device.queue_wait_idle(queue)? };
        }
        for g in 0..groups {
            let slice = &cbs[g * cbs.len() / groups..(g + 1) * cbs.len() / groups];
            let first = pass == 0 && g == 0;
            let last = pass + 1 == passes && g + 1 == groups;
            let wait: &[vk::Semaphore] = if first { sync.wait } else { &[] };
            let signal: &[vk::Semaphore] = if last { sync.signal } else { &[] };
            let fence = if last { sync.fence } else { vk::Fence::null() };
            let boundary = (last && args.frame_boundary).then_some(frame_id);
            if args.submit2 {
                submit2(device, queue, slice, wait, signal, fence, boundary)?;
            } else {
                submit1(device, queue, slice, wait, signal, fence, boundary)?;
            }
        }
    }
    Ok(())
}

/// One thread's command buffers, submitted as soon as recorded (`--submit-threads`): no
/// semaphores, no fence; `lock` is the app's queue lock (Vulkan: queue access externally
/// synchronised).
pub fn submit_from_thread(
    device: &ash::Device,
    queue: vk::Queue,
    lock: &std::sync::Mutex<()>,
    cbs: &[vk::CommandBuffer],
    args: &Args,
) -> Result<(), vk::Result> {
    let _held = lock.lock().unwrap_or_else(|e| e.into_inner());
    if args.submit2 {
        submit2(device, queue, cbs, &[], &[], vk::Fence::null(), None)
    } else {
        submit1(device, queue, cbs, &[], &[], vk::Fence::null(), None)
    }
}

/// After the threads' submits (`--submit-threads`): an empty submit with the frame's fence
/// (and frame boundary), which signals once everything submitted before it is done.
pub fn submit_tail(
    device: &ash::Device,
    queue: vk::Queue,
    fence: vk::Fence,
    args: &Args,
    frame_id: u64,
) -> Result<(), vk::Result> {
    // SAFETY: the caller waited on `fence` for this frame slot.
    unsafe { device.reset_fences(&[fence])? };
    let boundary = args.frame_boundary.then_some(frame_id);
    if args.submit2 {
        submit2(device, queue, &[], &[], &[], fence, boundary)
    } else {
        submit1(device, queue, &[], &[], &[], fence, boundary)
    }
}

fn submit1(
    device: &ash::Device,
    queue: vk::Queue,
    cbs: &[vk::CommandBuffer],
    wait: &[vk::Semaphore],
    signal: &[vk::Semaphore],
    fence: vk::Fence,
    boundary: Option<u64>,
) -> Result<(), vk::Result> {
    // VK_EXT_frame_boundary: the frame's last submit says that the frame ends there.
    let mut frame_end = boundary.map(|id| {
        vk::FrameBoundaryEXT::default()
            .flags(vk::FrameBoundaryFlagsEXT::FRAME_END)
            .frame_id(id)
    });
    // The first barrier of each target runs at colour output, so waiting
    // for the acquire there lets earlier stages start right away.
    let stages = vec![vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT; wait.len()];
    let mut info = vk::SubmitInfo::default()
        .wait_semaphores(wait)
        .wait_dst_stage_mask(&stages)
        .command_buffers(cbs)
        .signal_semaphores(signal);
    if let Some(fb) = frame_end.as_mut() {
        info = info.push_next(fb);
    }
    // SAFETY: all arrays live across the call; the buffers are executable and
    // either not pending or SIMULTANEOUS_USE (see submit_frame).
    unsafe { device.queue_submit(queue, &[info], fence) }
}

fn submit2(
    device: &ash::Device,
    queue: vk::Queue,
    cbs: &[vk::CommandBuffer],
    wait: &[vk::Semaphore],
    signal: &[vk::Semaphore],
    fence: vk::Fence,
    boundary: Option<u64>,
) -> Result<(), vk::Result> {
    // VK_EXT_frame_boundary: the frame's last submit says that the frame ends there.
    let mut frame_end = boundary.map(|id| {
        vk::FrameBoundaryEXT::default()
            .flags(vk::FrameBoundaryFlagsEXT::FRAME_END)
            .frame_id(id)
    });
    let waits: Vec<_> = wait
        .iter()
        .map(|&s| {
            vk::SemaphoreSubmitInfo::default()
                .semaphore(s)
                .stage_mask(vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT)
        })
        .collect();
    let signals: Vec<_> = signal
        .iter()
        .map(|&s| {
            vk::SemaphoreSubmitInfo::default()
                .semaphore(s)
                .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
        })
        .collect();
    let buffers: Vec<_> = cbs
        .iter()
        .map(|&cb| vk::CommandBufferSubmitInfo::default().command_buffer(cb))
        .collect();
    let mut info = vk::SubmitInfo2::default()
        .wait_semaphore_infos(&waits)
        .command_buffer_infos(&buffers)
        .signal_semaphore_infos(&signals);
    if let Some(fb) = frame_end.as_mut() {
        info = info.push_next(fb);
    }
    // SAFETY: as for submit1; synchronization2 is enabled at device creation.
    unsafe { device.queue_submit2(queue, &[info], fence) }
}
