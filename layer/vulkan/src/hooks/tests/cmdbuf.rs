//! `hooks::cmdbuf` on the fake driver.

use crate::fake_driver::FakeDevice;
use crate::recording_cache;
use ash::vk::{self, Handle};

fn tracked(f: &FakeDevice, cb: vk::CommandBuffer) -> Option<bool> {
    f.state.command_buffer(cb).map(|s| s.primary)
}

#[test]
fn command_buffer_state_follows_allocate_free_and_pool_destruction() {
    let f = FakeDevice::new();
    let (p1, p2) = (vk::CommandPool::from_raw(11), vk::CommandPool::from_raw(12));
    let prim = f.command_buffers(p1, vk::CommandBufferLevel::PRIMARY, 2);
    let sec = f.command_buffers(p1, vk::CommandBufferLevel::SECONDARY, 1);
    let other = f.command_buffers(p2, vk::CommandBufferLevel::PRIMARY, 1);
    assert_eq!(tracked(&f, prim[0]), Some(true));
    assert_eq!(tracked(&f, sec[0]), Some(false));
    // The recording cache learns the buffer, and forgets it once freed (the fake's handles
    // stay readable after their free).
    // SAFETY: a command buffer of the fake device.
    let cached = |cb: vk::CommandBuffer| unsafe { recording_cache::with(cb.as_raw(), |_, st| st.is_some()) };
    assert_eq!(cached(prim[0]), Some(true));
    // SAFETY: freeing a buffer the fake device allocated.
    unsafe { crate::hooks::cmdbuf::free_command_buffers(f.device, p1, 1, prim.as_ptr()) };
    assert_eq!(tracked(&f, prim[0]), None);
    assert_eq!(cached(prim[0]), Some(false));
    assert_eq!(tracked(&f, prim[1]), Some(true));
    // SAFETY: destroying a pool of the fake device.
    unsafe { crate::hooks::cmdbuf::destroy_command_pool(f.device, p1, std::ptr::null()) };
    assert_eq!((tracked(&f, prim[1]), tracked(&f, sec[0])), (None, None));
    assert_eq!(tracked(&f, other[0]), Some(true));
}

#[test]
fn a_recorded_buffer_has_its_query_block_reset_first_in_its_submission() {
    let f = FakeDevice::new();
    let cb = f.command_buffers(vk::CommandPool::from_raw(13), vk::CommandBufferLevel::PRIMARY, 1);
    let begin = vk::CommandBufferBeginInfo::default();
    // SAFETY: recording a buffer of the fake device.
    unsafe {
        assert_eq!(
            crate::hooks::cmdbuf::begin_command_buffer(cb[0], &begin),
            vk::Result::SUCCESS
        );
        assert_eq!(crate::hooks::cmdbuf::end_command_buffer(cb[0]), vk::Result::SUCCESS);
    }
    let rec = f.state.command_buffer(cb[0]).expect("tracked").rec.clone();
    // Default config samples render passes and, for primaries, the command buffer.
    assert_eq!(
        rec.lock().events.len(),
        2,
        "begin and end timestamps of the command buffer"
    );
    let info = vk::SubmitInfo::default().command_buffers(&cb);
    // SAFETY: a valid submit of the recorded buffer.
    let r = unsafe { crate::hooks::queue::queue_submit(f.queue, 1, &info, vk::Fence::null()) };
    assert_eq!(r, vk::Result::SUCCESS);
    let calls = f.calls();
    let Some(crate::fake_driver::Call::Submit { batches, .. }) = calls.last() else {
        panic!("no submit: {calls:?}");
    };
    // [reset of the buffer's block, timing begin, the app's buffer, timing end]
    assert_eq!(batches[0].len(), 4, "{batches:?}");
    assert_eq!(batches[0][2], cb[0].as_raw());
}

/// `sample_stats_every` (32 by default): a recording begun in the first frame of each 32
/// takes pipeline statistics, the others do not.
#[test]
fn statistics_are_taken_by_recordings_begun_in_one_frame_of_n() {
    let f = FakeDevice::new();
    let cb = f.command_buffers(vk::CommandPool::from_raw(14), vk::CommandBufferLevel::PRIMARY, 1);
    let every = framescope_core::settings::get().sample_stats_every;
    let begin = vk::CommandBufferBeginInfo::default();
    let mut taken = Vec::new();
    for _ in 0..2 * every {
        // SAFETY: recording a buffer of the fake device.
        unsafe {
            assert_eq!(
                crate::hooks::cmdbuf::begin_command_buffer(cb[0], &begin),
                vk::Result::SUCCESS
            );
            assert_eq!(crate::hooks::cmdbuf::end_command_buffer(cb[0]), vk::Result::SUCCESS);
        }
        taken.push(f.state.command_buffer(cb[0]).expect("tracked").rec.lock().stats_on);
        let info = vk::PresentInfoKHR::default();
        // SAFETY: an empty present on the fake device's queue ends the frame.
        assert_eq!(
            unsafe { crate::hooks::present::queue_present(f.queue, &info) },
            vk::Result::SUCCESS
        );
    }
    let frames: Vec<u64> = (0..2 * every).filter(|&i| taken[i as usize]).collect();
    assert_eq!(frames, [0, every]);
}
