//! The HUD's per-frame policy, written once for both APIs: whether a frame gets the HUD and a
//! screenshot, when the cached content is re-rendered, what it shows, and where it goes. The
//! Vulkan layer and the GL shim implement [`HudRenderer`] (upload the content into their
//! cached image, composite it, read the frame back) and [`HudSource`] (the frame history their
//! HUD shows), and call [`SurfaceHud::frame`] at each present or swap.
//!
//! The content is re-rendered every `hud_refresh_ms`, when the target was resized, and once
//! more as soon as the history has a frame rate: the first content is made before any frame
//! has come out of the assembler ("FPS -"), and at thousands of frames per second a whole
//! refresh period would pass like that.
//!
//! Once the content shows a frame rate, a refresh fills the data on the app's thread and hands
//! the layout to `layout_thread`; the laid-out lists are uploaded at the first frame that finds
//! them done (and the cached image free), so the content shown trails the data by a frame or
//! two and the app's thread no longer runs ImGui every `hud_refresh_ms`. The first contents
//! (before and with the first frame rate) are laid out inline, as is everything without that
//! thread.

use crate::layout_thread::{self, Job, SharedJob, Stage};
use crate::model::{ApiWords, HudData, HudOptions};
use crate::ui::DrawOutput;
use crate::{keys, layout};
use framescope_core::config::{Config, HudPosition};
use framescope_core::sync::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one frame of one surface gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FramePlan {
    /// The HUD is on and not hidden by its key.
    pub draw: bool,
    /// `screenshot=` names this frame.
    pub shot: bool,
}

impl FramePlan {
    /// The plan for frame `frame` under `cfg`; `None` when the frame gets nothing.
    pub fn of(cfg: &Config, frame: u64) -> Option<FramePlan> {
        let plan = FramePlan {
            draw: cfg.hud && keys::visible(),
            shot: cfg.screenshot == Some(frame),
        };
        (plan.draw || plan.shot).then_some(plan)
    }
}

/// The HUD's options in this process: the config's, in GL's words with `gpu_span` (GL's GPU
/// time is one timestamp pair around the frame), and placed in the corner opposite MangoHud's HUD when
/// MangoHud draws in this process and the config leaves the HUD in the default corner (one log
/// line). `mangohud_loaded` is [`crate::mangohud::loaded`] outside tests.
pub fn options(cfg: &Config, gpu_span: bool, mangohud_loaded: bool) -> HudOptions {
    let mut opts = HudOptions {
        api: if gpu_span { ApiWords::GL } else { ApiWords::VULKAN },
        ..HudOptions::from_config(cfg)
    };
    if cfg.hud && opts.position == HudPosition::TopLeft && mangohud_loaded {
        let exe = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default();
        let theirs = crate::mangohud::place(
            &|k| std::env::var(k).ok(),
            // Regular files of at most 64 KiB, opened without blocking (as our own config).
            &|p| framescope_core::config::read_config_file(p).ok(),
            &exe,
        );
        opts.position = theirs.opposite();
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            framescope_core::log::info(format_args!(
                "MangoHud is active and draws its HUD {}: framescope's HUD goes {}, the opposite corner (hud_position chooses another place)",
                theirs.name(),
                HudPosition::NAMES[HudPosition::CORNERS
                    .iter()
                    .position(|c| *c == opts.position)
                    .unwrap_or(0)]
            ))
        });
    }
    opts
}

/// What frame `frame` of a present or swap gets, the one sequence both APIs run there: the
/// key reader is kept alive first (it ends when nobody polls, and the dump's and the frame
/// limit's keys need it with the HUD off), then the plan; `None` when the frame gets nothing.
pub fn plan(cfg: &Config, frame: u64) -> Option<FramePlan> {
    keys::poll_config(cfg);
    FramePlan::of(cfg, frame)
}

/// Whether the HUD path runs at all in this process: the HUD on, or a screenshot asked for.
pub fn active(cfg: &Config) -> bool {
    cfg.hud || cfg.screenshot.is_some()
}

/// Where the HUD's data comes from: the frame history of the device or context.
pub trait HudSource {
    /// Fills `data` for a refresh (history, counters, regions, and what describes the surface).
    fn fill(&self, data: &mut HudData, opts: &HudOptions);
    /// Whether the history has a frame rate yet; must not wait for a lock.
    fn has_fps(&self) -> bool;
}

/// A graphics API's side of the HUD: one cached image of the content, composited over the
/// target at every frame.
pub trait HudRenderer {
    type Error;
    /// Whether the cached content may be rewritten now (the GPU no longer reads it).
    fn content_free(&mut self) -> bool {
        true
    }
    /// Renders `draw` (content of `size` pixels) into the cached image.
    fn upload(&mut self, draw: &DrawOutput, size: [u32; 2]) -> Result<(), Self::Error>;
    /// Composites the cached content (`size` pixels) at `origin` (target pixels, top-left).
    fn composite(&mut self, origin: [i32; 2], size: [u32; 2]) -> Result<(), Self::Error>;
    /// Reads the target back for the screenshot written to `path`.
    fn read_back(&mut self, path: &str) -> Result<(), Self::Error>;
}

/// One frame's input to [`SurfaceHud::frame`].
pub struct FrameInput<'a> {
    pub now: Instant,
    pub opts: &'a HudOptions,
    pub plan: FramePlan,
    /// Where the screenshot goes (with `plan.shot`).
    pub shot_path: Option<&'a str>,
    /// The target's size in pixels (swapchain image, back buffer).
    pub target: [u32; 2],
    /// The ImGui canvas: the largest content the cached image holds.
    pub canvas: [u32; 2],
    /// The target was resized since the last frame: re-render now.
    pub resized: bool,
}

/// What [`SurfaceHud::frame`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameDone {
    /// The content was re-rendered and uploaded.
    pub refreshed: bool,
    /// The content was composited over the target.
    pub composited: bool,
    /// The target was read back for the screenshot.
    pub shot: bool,
    /// ImGui could not lay the HUD out; the previous content (if any) was kept.
    pub ui_failed: bool,
}

/// The HUD of one surface (a swapchain, a GL context's window): its data, its content as laid
/// out, and when that was last refreshed.
pub struct SurfaceHud {
    /// The data to show, the options, and the draw lists laid out from them.
    job: SharedJob,
    /// Lay out on the app's thread (no layout thread, or tests that want it).
    inline: bool,
    /// When the layout in the job was asked for, until its lists are uploaded.
    pending: Option<Instant>,
    /// Resized while a layout was pending: lay out again once it is in.
    stale: bool,
    /// The content shown (or pending) has a frame rate.
    has_fps: bool,
    /// Size of the cached content (pixels); 0 until the first refresh.
    size: [u32; 2],
    last_refresh: Option<Instant>,
}

impl SurfaceHud {
    pub fn new(opts: &HudOptions) -> SurfaceHud {
        Self::with_layout(opts, false)
    }

    /// A HUD laid out on the calling thread (tests of the policy).
    #[cfg(test)]
    fn inline(opts: &HudOptions) -> SurfaceHud {
        Self::with_layout(opts, true)
    }

    fn with_layout(opts: &HudOptions, inline: bool) -> SurfaceHud {
        let mut data = HudData::default();
        // Room for the graphs, so refreshes do not grow them on the app's thread.
        data.frame_graph.reserve(opts.history);
        data.gpu_graph.reserve(opts.history);
        SurfaceHud {
            job: Arc::new(Mutex::new(Job::new(data, opts))),
            inline,
            pending: None,
            stale: false,
            has_fps: false,
            size: [0, 0],
            last_refresh: None,
        }
    }

    /// Sets what the layer knows of the surface (device and driver names, swapchain), at set-up:
    /// it waits for the job, which a later layout may hold.
    pub fn with_data(&self, f: impl FnOnce(&mut HudData)) {
        f(&mut self.job.lock().data);
    }

    /// Whether the content should be re-rendered now.
    pub fn refresh_due(&self, now: Instant, opts: &HudOptions, source: &dyn HudSource) -> bool {
        self.last_refresh
            .is_none_or(|t| now.duration_since(t) >= Duration::from_millis(opts.refresh_ms))
            || (!self.has_fps && source.has_fps())
    }

    /// The content's size, `None` before the first refresh or when it is empty.
    pub fn content_size(&self) -> Option<[u32; 2]> {
        (self.last_refresh.is_some() && self.size[0] > 0 && self.size[1] > 0).then_some(self.size)
    }

    /// Where the content goes on a target of `target` pixels; `None` when nothing of it would
    /// be visible.
    pub fn origin(&self, opts: &HudOptions, target: [u32; 2]) -> Option<[i32; 2]> {
        let size = self.content_size()?;
        let margin = (layout::MARGIN as f32 * opts.scale) as u32;
        let origin = layout::place(opts.position, size, target, margin);
        layout::visible(origin, size, target).map(|_| origin)
    }

    /// The submission that carried the last refresh failed: the cached image's content is
    /// unknown, so it is re-rendered at the next frame and not composited before.
    pub fn forget_content(&mut self) {
        self.last_refresh = None;
        self.size = [0, 0];
    }

    /// Fills the job with this frame's data and queues its layout (or, without the layout
    /// thread, lays it out here). Never waits: a job the layout thread still holds is left for
    /// a later frame.
    fn ask_layout(&mut self, input: &FrameInput<'_>, source: &dyn HudSource, inline: bool) {
        let Some(mut job) = self.job.try_lock() else { return };
        source.fill(&mut job.data, input.opts);
        if job.opts != *input.opts {
            job.opts = input.opts.clone();
        }
        job.canvas = input.canvas;
        job.target = input.target;
        job.stage = Stage::Queued;
        self.has_fps = job.data.fps.is_some();
        self.pending = Some(input.now);
        self.stale = false;
        drop(job);
        if inline || !layout_thread::send(&self.job) {
            self.job.lock().lay_out();
        }
    }

    /// Uploads the layout asked for, once it is done and the cached image is free; never waits.
    fn take_layout<R: HudRenderer>(&mut self, r: &mut R, done: &mut FrameDone) -> Result<(), R::Error> {
        let Some(asked) = self.pending else { return Ok(()) };
        let Some(mut job) = self.job.try_lock() else {
            return Ok(());
        };
        match job.stage {
            Stage::Done(true) => {
                if !r.content_free() {
                    return Ok(());
                }
                job.stage = Stage::Idle;
                self.pending = None;
                self.last_refresh = Some(asked);
                self.size = job.draw.size;
                done.refreshed = true;
                if self.size[0] > 0 && self.size[1] > 0 {
                    r.upload(&job.draw, self.size)?;
                }
            }
            Stage::Done(false) => {
                job.stage = Stage::Idle;
                self.pending = None;
                done.ui_failed = true;
            }
            Stage::Idle | Stage::Queued => {}
        }
        Ok(())
    }

    /// Runs one frame: refresh when due, composite, screenshot.
    pub fn frame<R: HudRenderer>(
        &mut self,
        r: &mut R,
        input: &FrameInput<'_>,
        source: &dyn HudSource,
    ) -> Result<FrameDone, R::Error> {
        let mut done = FrameDone::default();
        if input.plan.draw {
            self.stale |= input.resized;
            // A layout asked for earlier goes in first.
            self.take_layout(r, &mut done)?;
            let due = self.stale || self.refresh_due(input.now, input.opts, source);
            // Until the content shows a frame rate (the first content, and the first with
            // numbers), and after it was forgotten, the layout runs here: those are the frames
            // a screenshot or a look at the HUD right after start would otherwise miss it in.
            let inline = self.inline || !self.has_fps || self.last_refresh.is_none();
            if due && self.pending.is_none() && (!inline || r.content_free()) {
                self.ask_layout(input, source, inline);
                if inline {
                    self.take_layout(r, &mut done)?;
                }
            }
            if let (Some(origin), Some(size)) = (self.origin(input.opts, input.target), self.content_size()) {
                r.composite(origin, size)?;
                done.composited = true;
            }
        }
        if let (true, Some(path)) = (input.plan.shot, input.shot_path) {
            r.read_back(path)?;
            done.shot = true;
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[derive(Default)]
    struct Log {
        uploads: Vec<[u32; 2]>,
        composites: Vec<([i32; 2], [u32; 2])>,
        shots: Vec<String>,
        busy: bool,
    }

    impl HudRenderer for Log {
        type Error = String;
        fn content_free(&mut self) -> bool {
            !self.busy
        }
        fn upload(&mut self, _: &DrawOutput, size: [u32; 2]) -> Result<(), String> {
            self.uploads.push(size);
            Ok(())
        }
        fn composite(&mut self, origin: [i32; 2], size: [u32; 2]) -> Result<(), String> {
            self.composites.push((origin, size));
            Ok(())
        }
        fn read_back(&mut self, path: &str) -> Result<(), String> {
            self.shots.push(path.to_string());
            Ok(())
        }
    }

    struct Source {
        fps: Cell<Option<f64>>,
        fills: Cell<u32>,
    }

    impl HudSource for Source {
        fn fill(&self, data: &mut HudData, _: &HudOptions) {
            self.fills.set(self.fills.get() + 1);
            data.fps = self.fps.get();
        }
        fn has_fps(&self) -> bool {
            self.fps.get().is_some()
        }
    }

    fn opts() -> HudOptions {
        HudOptions {
            refresh_ms: 500,
            position: HudPosition::TopRight,
            ..HudOptions::from_config(&Config::default())
        }
    }

    fn input<'a>(o: &'a HudOptions, now: Instant, plan: FramePlan) -> FrameInput<'a> {
        FrameInput {
            now,
            opts: o,
            plan,
            shot_path: Some("/tmp/shot.png"),
            target: [1280, 720],
            canvas: [1024, 1024],
            resized: false,
        }
    }

    const DRAW: FramePlan = FramePlan {
        draw: true,
        shot: false,
    };

    #[test]
    fn content_is_refreshed_on_the_first_frame_then_every_period_and_composited_every_frame() {
        let o = opts();
        let (mut hud, mut r) = (SurfaceHud::inline(&o), Log::default());
        let src = Source {
            fps: Cell::new(Some(60.0)),
            fills: Cell::new(0),
        };
        let t0 = Instant::now();
        let step = Duration::from_millis(100);
        for i in 0..12u32 {
            hud.frame(&mut r, &input(&o, t0 + step * i, DRAW), &src).unwrap();
        }
        // 0 ms, 500 ms and 1000 ms: three refreshes in 1.1 s; a composite every frame.
        assert_eq!(src.fills.get(), 3);
        assert_eq!(r.uploads.len(), 3);
        assert_eq!(r.composites.len(), 12);
        let (origin, size) = r.composites[0];
        assert!(size[0] > 0 && size[1] > 0);
        // Top right, inside the target with its margin.
        assert_eq!(origin[0] + size[0] as i32, 1280 - layout::MARGIN as i32);
        assert_eq!(origin[1], layout::MARGIN as i32);
    }

    #[test]
    fn once_there_is_a_frame_rate_the_layout_thread_lays_out_and_a_later_frame_uploads() {
        let o = opts();
        let (mut hud, mut r) = (SurfaceHud::new(&o), Log::default());
        let src = Source {
            fps: Cell::new(Some(60.0)),
            fills: Cell::new(0),
        };
        let t0 = Instant::now();
        // The first content is laid out here and uploaded at once.
        assert!(hud.frame(&mut r, &input(&o, t0, DRAW), &src).unwrap().refreshed);
        let here = crate::ui::LAYOUTS.get();
        // A period later: one layout asked for; every frame until it is in only looks whether
        // it is done (the same instant every frame: no further period passes).
        let t1 = t0 + Duration::from_millis(600);
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut frames = 0;
        while r.uploads.len() < 2 {
            assert!(Instant::now() < deadline, "no layout in 20 s");
            let done = hud.frame(&mut r, &input(&o, t1, DRAW), &src).unwrap();
            assert_eq!(done.refreshed, r.uploads.len() == 2);
            assert!(done.composited, "the last content stays on meanwhile");
            frames += 1;
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(src.fills.get(), 2, "one fill for {frames} frames");
        assert_eq!(crate::ui::LAYOUTS.get(), here, "laid out on another thread");
        let later = hud
            .frame(&mut r, &input(&o, t1 + Duration::from_millis(10), DRAW), &src)
            .unwrap();
        assert!(later.composited && !later.refreshed);
    }

    #[test]
    fn content_made_before_the_first_fps_is_replaced_as_soon_as_there_is_one() {
        let o = opts();
        let (mut hud, mut r) = (SurfaceHud::inline(&o), Log::default());
        let src = Source {
            fps: Cell::new(None),
            fills: Cell::new(0),
        };
        let t0 = Instant::now();
        hud.frame(&mut r, &input(&o, t0, DRAW), &src).unwrap();
        hud.frame(&mut r, &input(&o, t0 + Duration::from_millis(1), DRAW), &src)
            .unwrap();
        assert_eq!(src.fills.get(), 1, "no fps yet: nothing new to show");
        src.fps.set(Some(1000.0));
        hud.frame(&mut r, &input(&o, t0 + Duration::from_millis(2), DRAW), &src)
            .unwrap();
        assert_eq!(src.fills.get(), 2, "refreshed at once, not a period later");
        hud.frame(&mut r, &input(&o, t0 + Duration::from_millis(3), DRAW), &src)
            .unwrap();
        assert_eq!(src.fills.get(), 2);
    }

    #[test]
    fn busy_content_waits_a_resize_forces_and_a_failed_submit_forgets() {
        let o = opts();
        let (mut hud, mut r) = (SurfaceHud::inline(&o), Log::default());
        let src = Source {
            fps: Cell::new(Some(60.0)),
            fills: Cell::new(0),
        };
        let t0 = Instant::now();
        r.busy = true;
        let done = hud.frame(&mut r, &input(&o, t0, DRAW), &src).unwrap();
        assert_eq!(
            done,
            FrameDone::default(),
            "no content yet, none rendered, nothing composited"
        );
        r.busy = false;
        assert!(hud.frame(&mut r, &input(&o, t0, DRAW), &src).unwrap().refreshed);
        let mut resized = input(&o, t0 + Duration::from_millis(10), DRAW);
        resized.resized = true;
        assert!(hud.frame(&mut r, &resized, &src).unwrap().refreshed);
        hud.forget_content();
        assert_eq!(hud.content_size(), None);
        let done = hud
            .frame(&mut r, &input(&o, t0 + Duration::from_millis(20), DRAW), &src)
            .unwrap();
        assert!(done.refreshed && done.composited);
    }

    #[test]
    fn a_screenshot_frame_reads_back_with_or_without_the_hud() {
        let o = opts();
        let (mut hud, mut r) = (SurfaceHud::inline(&o), Log::default());
        let src = Source {
            fps: Cell::new(None),
            fills: Cell::new(0),
        };
        let shot_only = FramePlan {
            draw: false,
            shot: true,
        };
        let done = hud.frame(&mut r, &input(&o, Instant::now(), shot_only), &src).unwrap();
        assert_eq!((done.shot, done.refreshed, done.composited), (true, false, false));
        assert_eq!(r.shots, ["/tmp/shot.png"]);
        assert_eq!(src.fills.get(), 0);
    }

    #[test]
    fn a_hud_off_the_target_is_not_composited() {
        let mut o = opts();
        o.position = HudPosition::At(5000, 5000);
        let (mut hud, mut r) = (SurfaceHud::inline(&o), Log::default());
        let src = Source {
            fps: Cell::new(None),
            fills: Cell::new(0),
        };
        let done = hud.frame(&mut r, &input(&o, Instant::now(), DRAW), &src).unwrap();
        assert!(done.refreshed && !done.composited);
    }

    #[test]
    fn the_default_corner_gives_way_to_mangohud_and_a_chosen_one_does_not() {
        let c = Config::default();
        assert_eq!(options(&c, false, false).position, HudPosition::TopLeft);
        let moved = options(&c, true, true);
        assert_ne!(moved.position, HudPosition::TopLeft);
        assert_eq!(moved.api, ApiWords::GL);
        let chosen = Config {
            hud_position: HudPosition::TopRight,
            ..Config::default()
        };
        assert_eq!(options(&chosen, false, true).position, HudPosition::TopRight);
    }

    #[test]
    fn the_plan_follows_the_config_and_the_frame() {
        let mut c = Config {
            hud: false,
            ..Config::default()
        };
        assert_eq!(FramePlan::of(&c, 3), None);
        c.screenshot = Some(3);
        assert_eq!(
            FramePlan::of(&c, 3),
            Some(FramePlan {
                draw: false,
                shot: true
            })
        );
        assert_eq!(FramePlan::of(&c, 4), None);
        assert_eq!(plan(&c, 3), FramePlan::of(&c, 3), "the plan both APIs ask for");
        assert!(active(&c));
        c.screenshot = None;
        assert!(!active(&c));
    }
}
