//! The HUD's content laid out on a thread of framescope's own. A refresh lays the HUD out
//! with Dear ImGui, about 270 k instructions (vkcube on lavapipe): on the app's thread that was
//! a 250 µs frame every `hud_refresh_ms` at 60 fps, a spike in the very frame times the HUD
//! shows. The app's thread now fills the data into the surface's [`Job`], queues it, and
//! uploads the laid-out lists at a later frame; it never waits for the layout: the job is only
//! ever taken with `try_lock`, and the queue is a bounded channel sent to without blocking.
//!
//! One thread per library (each layer links its own copy), started at the first refresh, kept
//! for the life of the process, with the library pinned so the Vulkan loader's unloading of
//! the layer cannot pull the code from under it.

use crate::model::{HudData, HudOptions};
use crate::ui::{self, DrawOutput};
use framescope_core::sync::Mutex;
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};

/// Jobs queued at most (one per surface at a time: far more than any app has surfaces).
const QUEUE: usize = 64;

/// Where a job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Nothing asked (or the last result taken).
    Idle,
    /// Queued for the layout thread.
    Queued,
    /// Laid out: `true` when ImGui laid it out, `false` when it could not.
    Done(bool),
}

/// One surface's layout: its data and options in, its draw lists out.
pub struct Job {
    pub data: HudData,
    pub opts: HudOptions,
    pub canvas: [u32; 2],
    pub target: [u32; 2],
    pub draw: DrawOutput,
    pub stage: Stage,
}

impl Job {
    pub fn new(data: HudData, opts: &HudOptions) -> Job {
        Job {
            data,
            opts: opts.clone(),
            canvas: [0, 0],
            target: [0, 0],
            draw: DrawOutput::default(),
            stage: Stage::Idle,
        }
    }

    /// Lays the job out here, on the calling thread.
    pub fn lay_out(&mut self) {
        let ok = ui::render(&self.data, &self.opts, self.canvas, self.target, &mut self.draw).is_ok();
        self.stage = Stage::Done(ok);
    }
}

pub type SharedJob = Arc<Mutex<Job>>;

/// The layout thread's queue; `None` when the thread could not start (said once).
fn queue() -> Option<&'static SyncSender<SharedJob>> {
    static TX: OnceLock<Option<SyncSender<SharedJob>>> = OnceLock::new();
    TX.get_or_init(|| {
        let start = || -> Result<SyncSender<SharedJob>, String> {
            // A test binary is an executable, never unloaded (and not dlopen-able by name).
            #[cfg(not(test))]
            crate::keys::pin_this_library()?;
            let (tx, rx) = sync_channel::<SharedJob>(QUEUE);
            std::thread::Builder::new()
                .name("framescope-hud".into())
                .spawn(move || {
                    framescope_core::alloc_count::mark_own_thread();
                    while let Ok(job) = rx.recv() {
                        let mut j = job.lock();
                        if j.stage == Stage::Queued {
                            // ImGui code must not unwind into the thread's start; `ui` leaves
                            // its context unusable after a panic, and every later job reads
                            // as not laid out.
                            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| j.lay_out())).is_err() {
                                j.stage = Stage::Done(false);
                            }
                        }
                    }
                })
                .map_err(|e| format!("cannot start the HUD's layout thread: {e}"))?;
            Ok(tx)
        };
        match start() {
            Ok(tx) => Some(tx),
            Err(why) => {
                framescope_core::log::info(format_args!("{why}: the HUD is laid out on the app's thread"));
                None
            }
        }
    })
    .as_ref()
}

/// Queues `job` (already `Queued`) for the layout thread; `false` when there is none or its
/// queue is full: the caller lays the job out itself.
pub fn send(job: &SharedJob) -> bool {
    match queue().map(|tx| tx.try_send(Arc::clone(job))) {
        Some(Ok(())) => true,
        Some(Err(TrySendError::Full(_) | TrySendError::Disconnected(_))) | None => false,
    }
}
