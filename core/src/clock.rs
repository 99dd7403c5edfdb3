//! The CPU clock every framescope timestamp is on: `CLOCK_MONOTONIC`, in nanoseconds.

/// Current `CLOCK_MONOTONIC` time in nanoseconds (the clock of `t_ns` in the dump).
///
/// `std::time::Instant` is the same clock on Linux but opaque; the dump needs raw values that
/// can be compared with other tools and with Vulkan calibrated timestamps.
pub fn monotonic_now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes into the timespec we pass, which lives on our stack.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_advances_like_instant() {
        let a = monotonic_now_ns();
        let i = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = monotonic_now_ns();
        let elapsed = i.elapsed().as_nanos() as u64;
        assert!(a > 0);
        assert!(b - a >= 20_000_000, "advanced {} ns", b - a);
        // Same clock as Instant: the two measurements of one sleep differ by little.
        assert!((b - a).abs_diff(elapsed) < 5_000_000);
    }
}
