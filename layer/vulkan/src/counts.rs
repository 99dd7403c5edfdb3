//! What one recording of a command buffer contains: draws (by kind), dispatches, trace-rays,
//! render passes, pipeline binds and barriers. Atomics, no lock on the recording path; added
//! into the frame at each submit.

use framescope_core::frame::{DispatchKind, DrawKind, FrameCounts};
use std::sync::atomic::{AtomicU32, Ordering};

/// What one recording of a command buffer contains.
#[derive(Default)]
pub struct CmdCounts {
    draws: [AtomicU32; DrawKind::COUNT],
    dispatches: [AtomicU32; DispatchKind::COUNT],
    trace_rays: AtomicU32,
    render_passes: AtomicU32,
    pipeline_binds: AtomicU32,
    barriers: AtomicU32,
    /// Draws that got a timestamp sample (`samples=draw`, within the draw window).
    draws_timed: AtomicU32,
    /// 1 when the recording took pipeline statistics (`sample_stats_every`).
    stats_recording: AtomicU32,
}

#[derive(Clone, Copy)]
pub enum Counted {
    Draw(DrawKind),
    Dispatch(DispatchKind),
    TraceRays,
    RenderPass,
    PipelineBind,
    Barrier,
    TimedDraw,
    /// The recording took pipeline statistics.
    StatsRecording,
}

impl Counted {
    /// Whether a command of this kind samples anything below `samples=draw`. Draws, dispatches,
    /// trace-rays and barriers do not, so their hooks skip the sampling path there: measured
    /// with callgrind on lavapipe, that path (building the draw's parameters, the call into
    /// `around`) was a third of a draw hook's instructions at the default level.
    pub const fn samples_below_draw_level(self) -> bool {
        !matches!(
            self,
            Counted::Draw(_) | Counted::Dispatch(_) | Counted::TraceRays | Counted::Barrier
        )
    }
}

impl CmdCounts {
    pub fn reset(&self) {
        for a in self.draws.iter().chain(&self.dispatches) {
            a.store(0, Ordering::Relaxed);
        }
        for a in [
            &self.trace_rays,
            &self.render_passes,
            &self.pipeline_binds,
            &self.barriers,
            &self.draws_timed,
            &self.stats_recording,
        ] {
            a.store(0, Ordering::Relaxed);
        }
    }

    fn cell(&self, what: Counted) -> &AtomicU32 {
        match what {
            Counted::Draw(k) => &self.draws[k as usize],
            Counted::Dispatch(k) => &self.dispatches[k as usize],
            Counted::TraceRays => &self.trace_rays,
            Counted::RenderPass => &self.render_passes,
            Counted::PipelineBind => &self.pipeline_binds,
            Counted::Barrier => &self.barriers,
            Counted::TimedDraw => &self.draws_timed,
            Counted::StatsRecording => &self.stats_recording,
        }
    }

    /// One more command of a kind. A load and a store, not a read-modify-write: only the
    /// thread recording the buffer writes its counts (external synchronisation), and they are
    /// read once recording has ended.
    pub fn bump(&self, what: Counted) {
        let c = self.cell(what);
        c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    /// Adds another recording's counts (a secondary executed from this primary).
    pub fn absorb(&self, other: &CmdCounts) {
        for (a, b) in self
            .draws
            .iter()
            .zip(&other.draws)
            .chain(self.dispatches.iter().zip(&other.dispatches))
        {
            a.fetch_add(b.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        for (a, b) in [
            (&self.trace_rays, &other.trace_rays),
            (&self.render_passes, &other.render_passes),
            (&self.pipeline_binds, &other.pipeline_binds),
            (&self.barriers, &other.barriers),
            (&self.draws_timed, &other.draws_timed),
            (&self.stats_recording, &other.stats_recording),
        ] {
            a.fetch_add(b.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    pub fn add_to(&self, f: &mut FrameCounts) {
        for (i, a) in self.draws.iter().enumerate() {
            f.draws.0[i] = f.draws.0[i].saturating_add(a.load(Ordering::Relaxed));
        }
        for (i, a) in self.dispatches.iter().enumerate() {
            f.dispatches.0[i] = f.dispatches.0[i].saturating_add(a.load(Ordering::Relaxed));
        }
        f.trace_rays = f.trace_rays.saturating_add(self.trace_rays.load(Ordering::Relaxed));
        f.render_passes = f
            .render_passes
            .saturating_add(self.render_passes.load(Ordering::Relaxed));
        f.pipeline_binds = f
            .pipeline_binds
            .saturating_add(self.pipeline_binds.load(Ordering::Relaxed));
        f.barriers = f.barriers.saturating_add(self.barriers.load(Ordering::Relaxed));
        f.draws_timed = f.draws_timed.saturating_add(self.draws_timed.load(Ordering::Relaxed));
        f.stats_command_buffers = f
            .stats_command_buffers
            .saturating_add(self.stats_recording.load(Ordering::Relaxed).min(1));
    }
}
