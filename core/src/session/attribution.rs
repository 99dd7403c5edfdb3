//! Counters attributed after the fact to exactly a frame's or a sample's GPU span.
//!
//! Most counter sources give the newest values over their own window, which a frame copies at
//! its close (see [`crate::session::counters`]). A source whose values are a time series of the whole
//! GPU (NVIDIA PM sampling: one sample a millisecond on the GPU's clock) can do better: once
//! the samples covering a frame's GPU span have arrived, it integrates them over exactly that
//! span, and over each render pass or label long enough to hold several samples. Samples
//! arrive tens of milliseconds after the GPU did the work, so this runs on the dump writer's
//! thread, which holds frames until their samples are in or a bound ([`HOLD_BOUND_NS`])
//! passed, never on the app's.

/// How long the dump writer holds a frame past the end of its window for the samples that
/// cover it. The NVIDIA sampler publishes every 100 ms; a sampler that stops publishing is
/// reported as gone after 2 s, which is also when held frames go out without values.
pub const HOLD_BOUND_NS: u64 = 1_000_000_000;

/// What has arrived, as an [`Attributor`] tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Every sample up to this time (`CLOCK_MONOTONIC` ns) is in.
    Until(u64),
    /// No samples come now (no sampler, or it stopped): frames are not held for them.
    Gone(String),
}

/// A source of counters that can be integrated over any past window. Built by the counter
/// source that owns the counters (on the collector thread) and used on the dump writer's.
pub trait Attributor: Send {
    /// The counter source whose catalogue counters this fills (`pm`).
    fn source(&self) -> &str;

    /// The catalogue names of the counters it fills, in the order [`Attributor::integrate`]
    /// writes them.
    fn counters(&self) -> &[String];

    /// The shortest span that gets its own values: a few sampling intervals, below which a
    /// value is mostly the samples at its edges.
    fn min_span_ns(&self) -> u64;

    /// Takes in the samples that arrived since the last call.
    fn poll(&mut self, now_ns: u64) -> Arrival;

    /// The counters over `[begin_ns, end_ns)` (`CLOCK_MONOTONIC`) into `out` (NaN: no value),
    /// returning the fraction of the window the samples cover (0 to 1).
    fn integrate(&mut self, begin_ns: u64, end_ns: u64, out: &mut [f64]) -> f64;

    /// Samples that end before `t_ns` are no longer needed (windows are asked in order).
    fn forget_before(&mut self, t_ns: u64);

    /// Hands over, once each, the raw samples that arrived since the last call: begin and end
    /// (`CLOCK_MONOTONIC`) and the counters in [`Attributor::counters`] order, for the dump's
    /// `series` lines (GPU counter tracks at sampling resolution in `export --perfetto`).
    fn take_series(&mut self, _out: &mut dyn FnMut(u64, u64, &[f64])) {}
}

/// Most samples one `series` line holds (100 ms at 10 kHz).
pub const SERIES_PER_LINE: usize = 1000;

/// Builds an [`Attributor`] for the writer's thread; `None` when the source cannot give one.
pub type AttributorFactory = Box<dyn Fn() -> Option<Box<dyn Attributor>> + Send + Sync>;

/// What a frame's window was, as the dump says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Over {
    /// The frame's GPU span on the CPU clock (calibrated timestamps).
    GpuSpan,
    /// Its CPU window (previous frame end to this one): the frame had no calibrated GPU span.
    CpuWindow,
}

impl Over {
    pub fn name(self) -> &'static str {
        match self {
            Over::GpuSpan => "gpu_span",
            Over::CpuWindow => "cpu_window",
        }
    }
}

/// The window a frame's attributed counters cover: its GPU span where calibrated, else its
/// CPU window; `None` for a first frame without a GPU span (it has no start).
pub fn frame_window(r: &crate::model::frame::FrameRecord) -> Option<(u64, u64, Over)> {
    match (r.gpu.begin_ns, r.gpu.end_ns) {
        (Some(b), Some(e)) if e > b => Some((b, e, Over::GpuSpan)),
        _ => r
            .cpu_frame_ns
            .map(|d| (r.t_ns.saturating_sub(d), r.t_ns, Over::CpuWindow)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::frame::FrameRecord;

    #[test]
    fn a_frame_is_attributed_over_its_gpu_span_else_its_cpu_window() {
        let mut r = FrameRecord {
            t_ns: 10_000,
            cpu_frame_ns: Some(4_000),
            ..Default::default()
        };
        assert_eq!(frame_window(&r), Some((6_000, 10_000, Over::CpuWindow)));
        r.gpu.begin_ns = Some(7_000);
        r.gpu.end_ns = Some(9_500);
        assert_eq!(frame_window(&r), Some((7_000, 9_500, Over::GpuSpan)));
        r.gpu.end_ns = Some(7_000);
        assert_eq!(
            frame_window(&r),
            Some((6_000, 10_000, Over::CpuWindow)),
            "an empty span is no span"
        );
        r.cpu_frame_ns = None;
        assert_eq!(frame_window(&r), None);
    }
}
