//! `hooks::present` on the fake driver.

use crate::fake_driver::{Call, FakeDevice};
use ash::vk::{self, Handle};
use std::sync::atomic::Ordering;

fn present(f: &FakeDevice) -> vk::Result {
    let info = vk::PresentInfoKHR::default();
    // SAFETY: a valid (empty) present info for a queue of the fake device.
    unsafe { crate::hooks::present::queue_present(f.queue, &info) }
}

#[test]
fn present_returns_the_drivers_result_unchanged_and_counts_every_present() {
    let f = FakeDevice::new();
    for r in [
        vk::Result::SUBOPTIMAL_KHR,
        vk::Result::ERROR_OUT_OF_DATE_KHR,
        vk::Result::ERROR_SURFACE_LOST_KHR,
        vk::Result::ERROR_DEVICE_LOST,
    ] {
        f.fail_next(r);
        assert_eq!(present(&f), r);
    }
    assert_eq!(present(&f), vk::Result::SUCCESS);
    assert_eq!(f.state.stats.presents.load(Ordering::Relaxed), 5);
    let presents = f.calls().iter().filter(|c| matches!(c, Call::Present { .. })).count();
    assert_eq!(presents, 5);
    assert_eq!(f.state.frames.lock().session.frames_closed(), 5);
}

#[test]
fn a_frame_end_reads_the_submissions_that_retired() {
    let f = FakeDevice::new();
    // Three buffers: one submitted again would have its earlier submission read first.
    let app = f.command_buffers(vk::CommandPool::from_raw(9), vk::CommandBufferLevel::PRIMARY, 3);
    for cb in &app {
        let info = vk::SubmitInfo::default().command_buffers(std::slice::from_ref(cb));
        // SAFETY: a valid submit info for a queue of the fake device.
        let r = unsafe { crate::hooks::queue::queue_submit(f.queue, 1, &info, vk::Fence::null()) };
        assert_eq!(r, vk::Result::SUCCESS);
    }
    let in_flight = || {
        let q = f.state.queue(f.queue).expect("registered");
        let n = q.inner.lock().timing.as_ref().map_or(0, |t| t.in_flight());
        n
    };
    assert_eq!(in_flight(), 3);
    // The fake's queries are always available: the frame end retires all three.
    assert_eq!(present(&f), vk::Result::SUCCESS);
    assert_eq!(in_flight(), 0);
    let q = f.queue.as_raw();
    assert!(f.calls().contains(&Call::Present { queue: q }));
}
