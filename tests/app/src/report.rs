//! The app's own present-to-present clock and the `testapp-result` line.

/// CLOCK_MONOTONIC in nanoseconds: the clock framescope's layer uses, so the
/// two measurements of the same present calls can be compared directly.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Start times of vkQueuePresentKHR calls, reduced on the fly.
#[derive(Default, Debug)]
pub struct PresentClock {
    first: Option<u64>,
    last: Option<u64>,
    count: u64,
}

impl PresentClock {
    pub fn record(&mut self, now_ns: u64) {
        self.first.get_or_insert(now_ns);
        self.last = Some(now_ns);
        self.count += 1;
    }

    pub fn intervals(&self) -> u64 {
        self.count.saturating_sub(1)
    }

    /// The mean of consecutive intervals telescopes to (last - first) / n.
    pub fn mean_interval_ns(&self) -> Option<f64> {
        match (self.first, self.last, self.intervals()) {
            (Some(f), Some(l), n) if n > 0 => Some((l - f) as f64 / n as f64),
            _ => None,
        }
    }
}

/// Everything the result line reports; built by the render loop.
#[derive(Debug, Default)]
pub struct Report {
    pub frames: u64,
    pub windows: u32,
    pub draws_per_frame: u64,
    pub vertices_per_frame: u64,
    pub passes_per_frame: u32,
    pub width: u32,
    pub height: u32,
    pub present_mode: &'static str,
    pub scene: &'static str,
    pub threads: u32,
    pub submits_per_frame: u32,
    pub headless: bool,
    pub multiview: bool,
    pub render_pass: bool,
    pub swapchain_rebuilds: u64,
    pub presents: PresentClock,
    /// CPU time spent recording command buffers, all frames (benchmarks of per-draw overhead).
    pub record_ns: u64,
}

impl Report {
    /// Hand-written JSON: every value is a number, bool or fixed identifier.
    pub fn line(&self) -> String {
        let opt = |v: Option<u64>| v.map_or("null".to_string(), |v| v.to_string());
        let mean = self
            .presents
            .mean_interval_ns()
            .map_or("null".to_string(), |m| format!("{m:.1}"));
        format!(
            "testapp-result {{\"frames\":{},\"windows\":{},\"draws_per_frame\":{},\
\"vertices_per_frame\":{},\"passes_per_frame\":{},\"width\":{},\"height\":{},\
\"mean_present_interval_ns\":{},\"present_intervals\":{},\"first_present_ns\":{},\
\"last_present_ns\":{},\"present_mode\":\"{}\",\"scene\":\"{}\",\"threads\":{},\
\"submits_per_frame\":{},\"headless\":{},\"swapchain_rebuilds\":{},\"record_ns\":{},\
\"multiview\":{},\"render_pass\":{}}}",
            self.frames,
            self.windows,
            self.draws_per_frame,
            self.vertices_per_frame,
            self.passes_per_frame,
            self.width,
            self.height,
            mean,
            self.presents.intervals(),
            opt(self.presents.first),
            opt(self.presents.last),
            self.present_mode,
            self.scene,
            self.threads,
            self.submits_per_frame,
            self.headless,
            self.swapchain_rebuilds,
            self.record_ns,
            self.multiview,
            self.render_pass,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_of_intervals() {
        let mut c = PresentClock::default();
        assert_eq!(c.mean_interval_ns(), None);
        c.record(100);
        assert_eq!(c.mean_interval_ns(), None);
        c.record(300);
        c.record(400);
        assert_eq!(c.intervals(), 2);
        assert_eq!(c.mean_interval_ns(), Some(150.0));
    }

    #[test]
    fn line_shape() {
        let r = Report {
            frames: 3,
            present_mode: "fifo",
            scene: "basic",
            ..Report::default()
        };
        let line = r.line();
        assert!(line.starts_with("testapp-result {\"frames\":3,"));
        assert!(line.contains("\"mean_present_interval_ns\":null"));
        assert!(line.contains("\"multiview\":false,\"render_pass\":false}"));
        assert!(line.ends_with('}'));
    }
}
