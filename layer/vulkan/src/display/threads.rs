//! What the display-time sources' threads share.

/// Joins a display thread at device destruction, waiting at most `cap` (`JoinHandle` has no
/// timed join: polled; never per frame); one line when it does not return, and it is left.
pub(crate) fn join_bounded(t: std::thread::JoinHandle<()>, cap: std::time::Duration, what: &str) {
    let deadline = std::time::Instant::now() + cap;
    while !t.is_finished() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    if t.is_finished() {
        let _ = t.join();
    } else {
        framescope_core::log::error(format_args!(
            "{what} did not return within {} s; leaving it",
            cap.as_secs()
        ));
    }
}
