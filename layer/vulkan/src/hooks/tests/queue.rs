//! `hooks::queue` on the fake driver.

use crate::fake_driver::{Call, FakeDevice};
use ash::vk::{self, Handle};

fn submit1(f: &FakeDevice, batches: &[&[vk::CommandBuffer]]) -> vk::Result {
    let infos: Vec<_> = batches
        .iter()
        .map(|cbs| vk::SubmitInfo::default().command_buffers(cbs))
        .collect();
    // SAFETY: valid submit infos for a queue of the fake device.
    unsafe { crate::hooks::queue::queue_submit(f.queue, infos.len() as u32, infos.as_ptr(), vk::Fence::null()) }
}

fn submit2(f: &FakeDevice, batches: &[&[vk::CommandBuffer]]) -> vk::Result {
    let cb_infos: Vec<Vec<_>> = batches
        .iter()
        .map(|cbs| {
            cbs.iter()
                .map(|&c| vk::CommandBufferSubmitInfo::default().command_buffer(c))
                .collect()
        })
        .collect();
    let infos: Vec<_> = cb_infos
        .iter()
        .map(|c| vk::SubmitInfo2::default().command_buffer_infos(c))
        .collect();
    // SAFETY: valid submit infos for a queue of the fake device.
    unsafe { crate::hooks::queue::queue_submit2(f.queue, infos.len() as u32, infos.as_ptr(), vk::Fence::null()) }
}

fn raw(cbs: &[vk::CommandBuffer]) -> Vec<u64> {
    cbs.iter().map(|c| c.as_raw()).collect()
}

fn submitted(f: &FakeDevice) -> Vec<Vec<Vec<u64>>> {
    f.calls()
        .into_iter()
        .filter_map(|c| match c {
            Call::Submit { batches, .. } => Some(batches),
            Call::Present { .. } => None,
        })
        .collect()
}

fn in_flight(f: &FakeDevice) -> usize {
    let q = f.state.queue(f.queue).expect("the queue is registered");
    let inner = q.inner.lock();
    inner.timing.as_ref().map_or(0, |t| t.in_flight())
}

/// Both flavours: our begin timestamp buffer first in the first batch, the end one last in
/// the last, the app's buffers in between in their order.
#[test]
fn both_flavours_splice_timing_around_the_apps_buffers() {
    for flavour in [
        submit1 as fn(&FakeDevice, &[&[vk::CommandBuffer]]) -> vk::Result,
        submit2,
    ] {
        let f = FakeDevice::new();
        let app = f.command_buffers(vk::CommandPool::from_raw(7), vk::CommandBufferLevel::PRIMARY, 3);
        assert_eq!(flavour(&f, &[&app[..2], &app[2..]]), vk::Result::SUCCESS);
        let s = submitted(&f);
        assert_eq!(s.len(), 1, "{s:?}");
        let (first, last) = (&s[0][0], &s[0][1]);
        assert_eq!(first.len(), 3, "{first:?}");
        assert_eq!(&first[1..], &raw(&app[..2])[..]);
        assert_eq!(last.len(), 2, "{last:?}");
        assert_eq!(last[0], app[2].as_raw());
        let (begin, end) = (first[0], last[1]);
        assert!(begin != end && !raw(&app).contains(&begin) && !raw(&app).contains(&end));
        assert_eq!(in_flight(&f), 1);
    }
}

#[test]
fn a_failed_submit_returns_the_drivers_result_and_gives_its_slot_back() {
    let f = FakeDevice::new();
    let app = f.command_buffers(vk::CommandPool::from_raw(7), vk::CommandBufferLevel::PRIMARY, 1);
    f.fail_next(vk::Result::ERROR_DEVICE_LOST);
    assert_eq!(submit1(&f, &[&app]), vk::Result::ERROR_DEVICE_LOST);
    assert_eq!(in_flight(&f), 0);
    f.fail_next(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
    assert_eq!(submit2(&f, &[&app]), vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
    assert_eq!(in_flight(&f), 0);
    assert_eq!(submit1(&f, &[&app]), vk::Result::SUCCESS);
    assert_eq!(in_flight(&f), 1);
}

#[test]
fn a_lost_device_is_reported_once() {
    use crate::device_state::{FAULT_DEVICE_LOST, FAULT_SURFACE_LOST};
    use std::sync::atomic::Ordering;
    let f = FakeDevice::new();
    let app = f.command_buffers(vk::CommandPool::from_raw(7), vk::CommandBufferLevel::PRIMARY, 1);
    assert_eq!(submit1(&f, &[&app]), vk::Result::SUCCESS);
    assert_eq!(f.state.stats.faults.load(Ordering::Acquire), 0);
    f.fail_next(vk::Result::ERROR_DEVICE_LOST);
    assert_eq!(submit1(&f, &[&app]), vk::Result::ERROR_DEVICE_LOST, "the app's result");
    assert_eq!(f.state.stats.faults.load(Ordering::Acquire), FAULT_DEVICE_LOST);
    // Out-of-memory is the app's to handle, not a fault of the measurement.
    f.fail_next(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
    assert_eq!(submit2(&f, &[&app]), vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
    assert_eq!(f.state.stats.faults.load(Ordering::Acquire), FAULT_DEVICE_LOST);
    f.fail_next(vk::Result::ERROR_DEVICE_LOST);
    assert_eq!(submit2(&f, &[&app]), vk::Result::ERROR_DEVICE_LOST);
    assert_eq!(
        f.state.stats.faults.load(Ordering::Acquire) & FAULT_SURFACE_LOST,
        0,
        "a second loss adds nothing"
    );
}

#[test]
fn a_submit_without_command_buffers_goes_down_as_the_app_made_it() {
    let f = FakeDevice::new();
    assert_eq!(submit1(&f, &[&[]]), vk::Result::SUCCESS);
    // SAFETY: a zero-batch submit is valid (it only signals the fence).
    let r = unsafe { crate::hooks::queue::queue_submit(f.queue, 0, std::ptr::null(), vk::Fence::null()) };
    assert_eq!(r, vk::Result::SUCCESS);
    let expected: Vec<Vec<Vec<u64>>> = vec![vec![vec![]], vec![]];
    assert_eq!(submitted(&f), expected);
    assert_eq!(in_flight(&f), 0);
    let frames = f.state.frames.lock();
    assert_eq!(frames.counts.submits, 2);
    assert_eq!(frames.counts.command_buffers, 0);
}

#[test]
fn submits_count_into_the_open_frame() {
    let f = FakeDevice::new();
    let app = f.command_buffers(vk::CommandPool::from_raw(7), vk::CommandBufferLevel::PRIMARY, 3);
    assert_eq!(submit1(&f, &[&app[..1], &app[1..]]), vk::Result::SUCCESS);
    assert_eq!(submit2(&f, &[&app[..1]]), vk::Result::SUCCESS);
    let frames = f.state.frames.lock();
    assert_eq!((frames.counts.submits, frames.counts.command_buffers), (2, 4));
}
