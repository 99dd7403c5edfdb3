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

fn clock_ns(clock: libc::clockid_t) -> i128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes into the timespec we pass, which lives on our stack.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0;
    }
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

/// `CLOCK_REALTIME − CLOCK_MONOTONIC` in ns, for putting times on the Unix epoch (NVIDIA PM
/// samples) and frames' times on one clock. A thread preempted between two clock reads would
/// be off by the preemption (milliseconds on a loaded machine, measured in CI): the realtime
/// read is bracketed by two monotonic ones and the tightest of a few brackets kept.
pub fn realtime_offset_ns() -> i128 {
    let mut best = (i128::MAX, 0i128);
    for _ in 0..20 {
        let a = clock_ns(libc::CLOCK_MONOTONIC);
        let r = clock_ns(libc::CLOCK_REALTIME);
        let b = clock_ns(libc::CLOCK_MONOTONIC);
        if b - a < best.0 {
            best = (b - a, r - (a + b) / 2);
        }
        if best.0 < 2_000 {
            break;
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_realtime_offset_maps_monotonic_onto_the_unix_epoch() {
        let off = realtime_offset_ns();
        let real = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i128;
        let mapped = i128::from(monotonic_now_ns()) + off;
        assert!((mapped - real).abs() < 5_000_000, "{mapped} against {real}");
    }

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
