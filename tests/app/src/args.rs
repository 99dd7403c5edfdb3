//! Command-line options, parsed by hand so the app needs no extra crates.

use std::fmt;

pub const HELP: &str = "\
framescope-testapp: a small Vulkan app with known, configurable work per frame,
used by framescope's integration tests.

USAGE: framescope-testapp [OPTIONS]

OPTIONS:
  --frames N            render and present N frames, then exit 0 [default: 100]
  --width W             window / offscreen width in pixels [default: 500]
  --height H            window / offscreen height in pixels [default: 500]
  --windows K           K windows, one swapchain each, presented together in
                        one vkQueuePresentKHR call [default: 1]
  --present-mode M      immediate | mailbox | fifo | fifo_relaxed
                        [default: immediate; falls back to fifo if unsupported]
  --draws N             draws per frame (per window), 3 vertices each, scene
                        `basic`; draws per pass in scene `passes` [default: 10]
  --scene S             basic | regions | passes [default: basic]. `regions` is the
                        known-answer scene: labels Frame > Shadows (10 draws x
                        300 vertices), Main (100 draws x 36 vertices), Post (one
                        full-screen triangle, W*H fragments). Implies --labels.
                        `passes`: labels Pixels (N full-screen triangles on top
                        of each other) and Vertices (N draws x 30000 vertices,
                        scissored to one pixel), one rendering instance each,
                        for per-pass hardware counters. Implies --labels.
  --threads T           record each frame's command buffers on T threads, one
                        command pool per thread per frame in flight [default: 1]
  --secondary           record draws into secondary command buffers executed
                        from the primaries with vkCmdExecuteCommands
  --labels              wrap work in VK_EXT_debug_utils labels
  --reuse               record command buffers once per (frame in flight,
                        swapchain image) and resubmit them without re-recording
  --simultaneous        use SIMULTANEOUS_USE on reused command buffers
                        (implies --reuse)
  --resubmit-twice      submit the frame's command buffers twice per frame
                        (implies --reuse; waits for the queue between the two
                        submissions unless --simultaneous)
  --submits S           split each frame's work into S vkQueueSubmit calls
                        [default: 1]
  --submit2             use vkQueueSubmit2 instead of vkQueueSubmit
  --submit-threads      each recording thread (--threads) submits its own command
                        buffers to the one queue as soon as they are recorded,
                        under the app's queue lock; the frame's fence (and frame
                        boundary) goes in one empty submit after them. Needs
                        --headless; not with --reuse or --render-pass
  --headless            no window or swapchain: render into an offscreen image;
                        a frame is one loop iteration, nothing is presented
  --srgb                swapchains in B8G8R8A8_SRGB (default: B8G8R8A8_UNORM)
  --frame-boundary      enable VK_EXT_frame_boundary and mark each frame's last
                        submit with VkFrameBoundaryEXT(FRAME_END)
  --multiview           render with multiview (view mask 0b11) into a 2-layer
                        image, then copy layer 0 to the swapchain image
  --render-pass         VkRenderPass + VkFramebuffer instead of dynamic
                        rendering: one render pass per window per frame, one
                        subpass per region. Needs --secondary with --threads > 1;
                        not with --submits > 1
  --push-first          push the region's constants before each rendering
                        instance begins (valid: push constants need a layout,
                        not a bound pipeline), as vkd3d does with its root
                        constants and push descriptors
  --burst F             at frame F, before the frame's own work, submit an empty
                        command buffer 24 times without waiting: a sudden lag
                        of the GPU deeper than any before it
  --recreate-semaphores after each present, wait for the frame's fence, then
                        destroy the presented images' render-finished semaphores
                        and create new ones, as libplacebo (mpv) does: valid,
                        since the app's own submissions using them are done
  --sleep-ms MS         sleep MS milliseconds after each frame: a nearly idle GPU
                        [default: 0]
  --pipeline-every N    create one more graphics pipeline (with its two shader
                        modules) at the start of every Nth frame, as a game
                        compiling on first use does; not with --render-pass
  --lifecycle N         create and destroy everything (instance, device, windows or
                        offscreen targets) N times, running the frames each time,
                        as launchers and translation layers probing devices do;
                        prints `testapp-lifecycle {\"cycles\":N,\"rss_kib\":[A,B],
                        \"fds\":[C,D]}` (after half of the cycles, at the
                        end) before the result line
  --parallel K          with --lifecycle and --headless: each cycle runs K apps at
                        once, each on a thread of its own with its own instance
                        and device, recording and submitting [default: 1]
  -h, --help            print this help

OUTPUT: one stdout line at exit:
  testapp-result {\"frames\":..,\"draws_per_frame\":..,\"vertices_per_frame\":..,
  \"width\":..,\"height\":..,\"mean_present_interval_ns\":..,\"present_intervals\":..,...}
";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PresentMode {
    Immediate,
    Mailbox,
    Fifo,
    FifoRelaxed,
}

impl PresentMode {
    pub fn name(self) -> &'static str {
        match self {
            PresentMode::Immediate => "immediate",
            PresentMode::Mailbox => "mailbox",
            PresentMode::Fifo => "fifo",
            PresentMode::FifoRelaxed => "fifo_relaxed",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SceneKind {
    Basic,
    Regions,
    /// A pixel-heavy pass (`Pixels`: `--draws` full-screen triangles on top of each other)
    /// and a vertex-only one (`Vertices`: `--draws` draws of 30 000 vertices each, scissored
    /// to one pixel), for per-pass hardware counters.
    Passes,
}

impl SceneKind {
    pub fn name(self) -> &'static str {
        match self {
            SceneKind::Basic => "basic",
            SceneKind::Regions => "regions",
            SceneKind::Passes => "passes",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    pub frames: u32,
    pub width: u32,
    pub height: u32,
    pub windows: u32,
    pub present_mode: PresentMode,
    pub draws: u32,
    pub scene: SceneKind,
    pub threads: u32,
    pub secondary: bool,
    pub labels: bool,
    pub reuse: bool,
    pub simultaneous: bool,
    pub resubmit_twice: bool,
    pub submits: u32,
    pub submit2: bool,
    pub submit_threads: bool,
    pub frame_boundary: bool,
    pub headless: bool,
    /// Swapchains in B8G8R8A8_SRGB (else B8G8R8A8_UNORM where offered).
    pub srgb: bool,
    /// Render with view mask 0b11 into 2-layer images.
    pub multiview: bool,
    /// VkRenderPass objects, one subpass per region, instead of dynamic rendering.
    pub render_pass: bool,
    /// vkCmdPushConstants before each rendering instance begins, with no pipeline bound yet.
    pub push_first: bool,
    /// Frame at which 24 extra submissions go in at once.
    pub burst: Option<u32>,
    /// Destroy and recreate the present semaphores after each frame's fence signals.
    pub recreate_semaphores: bool,
    /// Milliseconds slept after each frame.
    pub sleep_ms: u32,
    /// `--pipeline-every N`: a new pipeline at the start of every Nth frame (0: none).
    pub pipeline_every: u32,
    /// Create and destroy everything this many times (0: once, no report).
    pub lifecycle: u32,
    /// Apps run at once in each lifecycle cycle, each on its own thread and device.
    pub parallel: u32,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            frames: 100,
            width: 500,
            height: 500,
            windows: 1,
            present_mode: PresentMode::Immediate,
            draws: 10,
            scene: SceneKind::Basic,
            threads: 1,
            secondary: false,
            labels: false,
            reuse: false,
            simultaneous: false,
            resubmit_twice: false,
            submits: 1,
            submit2: false,
            submit_threads: false,
            frame_boundary: false,
            headless: false,
            srgb: false,
            multiview: false,
            render_pass: false,
            push_first: false,
            burst: None,
            recreate_semaphores: false,
            sleep_ms: 0,
            pipeline_every: 0,
            lifecycle: 0,
            parallel: 1,
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum ParseOutcome {
    Run(Args),
    Help,
}

#[derive(Debug, PartialEq, Eq)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (see --help)", self.0)
    }
}

impl std::error::Error for ArgError {}

fn number(flag: &str, value: Option<String>, min: u32) -> Result<u32, ArgError> {
    let value = value.ok_or_else(|| ArgError(format!("{flag} needs a value")))?;
    let n: u32 = value
        .parse()
        .map_err(|_| ArgError(format!("{flag}: `{value}` is not a number")))?;
    if n < min {
        return Err(ArgError(format!("{flag} must be at least {min}")));
    }
    Ok(n)
}

pub fn parse<I: IntoIterator<Item = String>>(argv: I) -> Result<ParseOutcome, ArgError> {
    let mut args = Args::default();
    let mut draws_given = false;
    let mut it = argv.into_iter();
    while let Some(arg) = it.next() {
        // Accept `--flag=value` as well as `--flag value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = || inline.clone().or_else(|| it.next());
        match flag.as_str() {
            "-h" | "--help" => return Ok(ParseOutcome::Help),
            "--frames" => args.frames = number(&flag, value(), 0)?,
            "--width" => args.width = number(&flag, value(), 1)?,
            "--height" => args.height = number(&flag, value(), 1)?,
            "--windows" => args.windows = number(&flag, value(), 1)?,
            "--draws" => {
                args.draws = number(&flag, value(), 1)?;
                draws_given = true;
            }
            "--threads" => args.threads = number(&flag, value(), 1)?,
            "--submits" => args.submits = number(&flag, value(), 1)?,
            "--present-mode" => {
                args.present_mode = match value().as_deref() {
                    Some("immediate") => PresentMode::Immediate,
                    Some("mailbox") => PresentMode::Mailbox,
                    Some("fifo") => PresentMode::Fifo,
                    Some("fifo_relaxed") => PresentMode::FifoRelaxed,
                    other => return Err(ArgError(format!("--present-mode: bad value {other:?}"))),
                }
            }
            "--scene" => {
                args.scene = match value().as_deref() {
                    Some("basic") => SceneKind::Basic,
                    Some("regions") => SceneKind::Regions,
                    Some("passes") => SceneKind::Passes,
                    other => return Err(ArgError(format!("--scene: bad value {other:?}"))),
                }
            }
            "--secondary" => args.secondary = true,
            "--labels" => args.labels = true,
            "--reuse" => args.reuse = true,
            "--simultaneous" => args.simultaneous = true,
            "--resubmit-twice" => args.resubmit_twice = true,
            "--submit2" => args.submit2 = true,
            "--submit-threads" => args.submit_threads = true,
            "--headless" => args.headless = true,
            "--srgb" => args.srgb = true,
            "--frame-boundary" => args.frame_boundary = true,
            "--multiview" => args.multiview = true,
            "--render-pass" => args.render_pass = true,
            "--push-first" => args.push_first = true,
            "--recreate-semaphores" => args.recreate_semaphores = true,
            "--sleep-ms" => args.sleep_ms = number(&flag, value(), 0)?,
            "--pipeline-every" => args.pipeline_every = number(&flag, value(), 1)?,
            "--burst" => args.burst = Some(number(&flag, value(), 0)?),
            "--lifecycle" => args.lifecycle = number(&flag, value(), 1)?,
            "--parallel" => args.parallel = number(&flag, value(), 1)?,
            _ => return Err(ArgError(format!("unknown argument `{arg}`"))),
        }
        if inline.is_some() && !takes_value(&flag) {
            return Err(ArgError(format!("{flag} takes no value")));
        }
    }
    if args.scene == SceneKind::Regions {
        if draws_given {
            return Err(ArgError(
                "--draws cannot be combined with --scene regions (its draw counts are fixed)".into(),
            ));
        }
        // The regions are only meaningful to the profiler through their labels.
        args.labels = true;
    }
    if args.scene == SceneKind::Passes {
        args.labels = true;
    }
    // Resubmitting is impossible with ONE_TIME_SUBMIT buffers, so both imply reuse.
    if args.simultaneous || args.resubmit_twice {
        args.reuse = true;
    }
    // Windows from several threads would need Xlib's thread support; offscreen is enough to
    // have several devices at once.
    if args.parallel > 1 && (args.lifecycle == 0 || !args.headless) {
        return Err(ArgError("--parallel needs --lifecycle and --headless".into()));
    }
    // The frame's submits carry no semaphores then: nothing orders them against an acquire.
    if args.submit_threads && (!args.headless || args.reuse || args.render_pass) {
        return Err(ArgError(
            "--submit-threads needs --headless and cannot be combined with --reuse or --render-pass".into(),
        ));
    }
    if args.headless && args.windows != 1 {
        return Err(ArgError("--windows cannot be combined with --headless".into()));
    }
    // A render pass instance lives in one primary command buffer, so the frame
    // cannot be cut into several primaries.
    if args.render_pass && args.threads > 1 && !args.secondary {
        return Err(ArgError(
            "--render-pass with --threads > 1 needs --secondary (a render pass cannot span primaries)".into(),
        ));
    }
    if args.render_pass && args.pipeline_every > 0 {
        return Err(ArgError(
            "--pipeline-every cannot be combined with --render-pass".into(),
        ));
    }
    if args.render_pass && args.submits > 1 {
        return Err(ArgError(
            "--render-pass cannot be combined with --submits > 1 (one primary per frame)".into(),
        ));
    }
    Ok(ParseOutcome::Run(args))
}

fn takes_value(flag: &str) -> bool {
    matches!(
        flag,
        "--frames"
            | "--sleep-ms"
            | "--pipeline-every"
            | "--burst"
            | "--lifecycle"
            | "--parallel"
            | "--width"
            | "--height"
            | "--windows"
            | "--draws"
            | "--threads"
            | "--submits"
            | "--present-mode"
            | "--scene"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(list: &[&str]) -> Result<ParseOutcome, ArgError> {
        parse(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn defaults() {
        assert_eq!(run(&[]), Ok(ParseOutcome::Run(Args::default())));
    }

    #[test]
    fn values_and_implications() {
        let ParseOutcome::Run(a) = run(&[
            "--frames=5",
            "--threads",
            "4",
            "--scene",
            "regions",
            "--resubmit-twice",
            "--present-mode",
            "fifo_relaxed",
        ])
        .unwrap() else {
            panic!("expected Run");
        };
        assert_eq!(a.frames, 5);
        assert_eq!(a.threads, 4);
        assert!(a.labels && a.reuse);
        assert_eq!(a.present_mode, PresentMode::FifoRelaxed);
    }

    #[test]
    fn multiview_render_pass() {
        let ParseOutcome::Run(a) = run(&[
            "--scene",
            "regions",
            "--multiview",
            "--render-pass",
            "--threads",
            "4",
            "--secondary",
        ])
        .unwrap() else {
            panic!("expected Run");
        };
        assert!(a.multiview && a.render_pass && a.secondary);
    }

    #[test]
    fn push_first_and_burst() {
        let ParseOutcome::Run(a) = run(&["--push-first", "--burst", "150"]).unwrap() else {
            panic!("expected Run");
        };
        assert!(a.push_first);
        assert_eq!(a.burst, Some(150));
        assert!(run(&["--burst"]).is_err());
        assert!(run(&["--push-first=1"]).is_err());
    }

    #[test]
    fn errors() {
        assert!(run(&["--bogus"]).is_err());
        assert!(run(&["--threads", "0"]).is_err());
        assert!(run(&["--frames"]).is_err());
        assert!(run(&["--labels=1"]).is_err());
        assert!(run(&["--scene", "regions", "--draws", "3"]).is_err());
        assert!(run(&["--render-pass", "--threads", "2"]).is_err());
        assert!(run(&["--render-pass", "--submits", "2"]).is_err());
        assert!(run(&["--multiview=1"]).is_err());
        assert_eq!(run(&["--help"]), Ok(ParseOutcome::Help));
    }
}
