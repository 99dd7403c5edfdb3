//! The HUD in GL and GLES windows, drawn at every swap of a measured context, and `screenshot=`.
//!
//! [`before_swap`] runs after the frame's end timestamp was written and its CPU part closed,
//! before the real swap, on the thread that swaps, with the app's context current; what it
//! draws lands in the frame about to be presented and is not part of the frame's GPU time. As
//! the Vulkan HUD does, it re-renders the HUD's content (the overlay crate's ImGui lists) into a
//! cached texture only every `hud_refresh_ms` (or when the window's size changed), and
//! composites that texture onto the back buffer at every swap: an opaque HUD (`hud_alpha=1`,
//! the default) with one `glBlitFramebuffer` where the context has it (GL 3.0,
//! `GL_ARB_framebuffer_object`, GLES 3.0), the back buffer is single-sampled and does not
//! encode sRGB on every write; otherwise (translucent HUDs, GLES 2, ...) with one blended quad.
//! `state` saves and restores every piece of GL state touched, so the app cannot tell.
//!
//! Per context (keyed by window system and context handle): the capabilities, the context's
//! entry points (its one `GlFns` table, shared with the frame code), and the GL objects of
//! `renderer`, created on the first swap that draws. At context destruction (the
//! `glXDestroyContext`/`eglDestroyContext` hooks, before the real call): when the context is
//! current on the destroying thread, its GL objects are deleted; otherwise they
//! are left to the driver, which frees them with the context (the textures, buffers and
//! programs outlive it only when the app shares objects with another context), and only the
//! CPU side is dropped: making the context current to free them would change the app's
//! bindings. A failure (no entry point, a shader that does not compile, an incomplete
//! framebuffer, a panic) means no HUD on that context and one log line; the app's state is
//! restored either way.
//!
//! Steady state allocates nothing on the app's thread and never waits for the GPU: the only
//! `glReadPixels` is the screenshot frame's.
//!
//! `FRAMESCOPE_GL_HUD_CHECK=1` (tests) re-reads the state after each HUD and logs any
//! difference, checks `glGetError` (consuming the app's pending errors, so only for tests), and
//! checks with `glIs*` that a destroyed context's objects are gone.

mod caps;
mod fns;
mod renderer;
mod shaders;
mod state;

use crate::frames::{self, HudSlot};
use crate::gl::GlFns;
use crate::winsys::{self, Target, WinSys};
use caps::Caps;
use fns::Fns;
use framescope_core::guard::{self, guarded, Site};
use framescope_core::hud_time;
use framescope_core::{log, settings};
use framescope_overlay::controller::{self, FrameInput, FramePlan, HudRenderer, HudSource, SurfaceHud};
use framescope_overlay::screenshot::{self, PixelOrder};
use framescope_overlay::{ui, DrawOutput, HudData, HudOptions, SurfaceInfo};
use renderer::{Placement, Renderer};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// What the HUD gets at each swap.
pub struct SwapInfo<'a> {
    pub ws: WinSys,
    /// The current context's handle (`GLXContext` or `EGLContext`).
    pub context: usize,
    /// Index of the frame that this swap ends (the dump's `frame`).
    pub frame: u64,
    pub target: Target,
    /// The context's entry points (loaded once with the context, see `gl`).
    pub gl: &'a Arc<GlFns>,
    /// The context's HUD, kept with the rest of its state by `frames`.
    pub hud: &'a HudSlot,
}

static DRAW: Site = Site::new("GL HUD");

fn opts() -> &'static HudOptions {
    static OPTS: OnceLock<HudOptions> = OnceLock::new();
    // GL's GPU time is one timestamp pair around the frame (the dump's `gpu_time: span`).
    OPTS.get_or_init(|| controller::options(settings::get(), true, framescope_overlay::mangohud::loaded()))
}

fn check_mode() -> bool {
    static CHECK: OnceLock<bool> = OnceLock::new();
    *CHECK.get_or_init(|| std::env::var("FRAMESCOPE_GL_HUD_CHECK").is_ok_and(|v| v == "1"))
}

/// One context's HUD.
struct ContextHud {
    ws: WinSys,
    key: usize,
    fns: Arc<Fns>,
    caps: Caps,
    renderer: Option<Renderer>,
    /// No HUD drawing here any more (logged once); screenshots still work.
    broken: bool,
    /// What the HUD shows here and when it was refreshed (the overlay's per-frame policy).
    surface: SurfaceHud,
    /// The drawable's size, re-read when the app's viewport or the swapped drawable changes,
    /// and at every refresh.
    size: [u32; 2],
    last_viewport: [f32; 4],
    last_drawable: usize,
    /// Composite with a copy (opaque HUD, see [`copy_path`]).
    copy: bool,
    /// A copy was refused (multisampled window) and the quad used instead (logged once).
    copy_refused: bool,
    /// The screenshot frame's readback, until its fence signals.
    pending_shot: Option<PendingShot>,
}

/// Whether an opaque HUD is composited with a copy on this context: on llvmpipe (`renderer`),
/// where the copy is one `memcpy` per row (see `renderer`), when the context has
/// `glBlitFramebuffer` and its back buffer does not encode sRGB on every write (a blit would
/// encode the cached, already encoded values again; the quad decodes them first). Elsewhere
/// the quad: on NVIDIA's GL driver (580.159.04) the blit and the state restored after it cost
/// the app's thread 53–69 µs a frame against 31–34 µs for the quad (median of 20 000 frames,
/// three runs each, docs/hardware-verification.md).
fn copy_path(o: &HudOptions, c: &Caps, renderer: &str) -> bool {
    o.alpha >= 1.0 && c.blit && !c.srgb_target && renderer.starts_with("llvmpipe")
}

/// A screenshot: read back (RGBA8 rows, bottom-up), or being read into a buffer of ours.
enum Shot {
    Pixels {
        pixels: Vec<u8>,
        size: [u32; 2],
        path: String,
    },
    Pending(PendingShot),
}

/// A screenshot read back into a pixel pack buffer, waiting for its fence.
struct PendingShot {
    pbo: u32,
    sync: fns::Fence,
    size: [u32; 2],
    frame: u64,
    path: String,
}

/// How long a context's destruction waits for a screenshot's readback still in flight: the app
/// is tearing the context down (its driver waits for the GPU there anyway), and a readback
/// normally finished frames ago.
const DESTROY_WAIT_NS: u64 = 1_000_000_000;

/// Encodes and writes a screenshot on a thread of framescope's (joined with the other
/// screenshot threads, within one bound, at exit), so the app's thread never waits for the
/// encoder or the file.
fn write_later(path: String, size: [u32; 2], pixels: Vec<u8>) {
    screenshot::spawn("framescope-png", move || write_png(&path, size, &pixels));
}

enum Slot {
    Ready(Box<ContextHud>),
    /// The context lacks what the HUD needs (logged once).
    Unusable,
}

/// Contexts with a HUD set up, for the log at their destruction.
static LIVE: AtomicUsize = AtomicUsize::new(0);

fn ws_name(ws: WinSys) -> &'static str {
    ws.name()
}

/// Draws the HUD into the frame about to be presented, and writes the screenshot of this frame
/// when `screenshot=` names it. Runs at every swap that closed a measured frame.
pub fn before_swap(info: &SwapInfo<'_>) {
    let Some(plan) = controller::plan(settings::get(), info.frame) else {
        return;
    };
    // The HUD goes into the current draw surface; a swap of another one is left alone.
    if winsys::current_drawable(info.ws) != info.target.drawable() {
        return;
    }
    let mut cell = info.hud.lock();
    let slot = cell.get_or_insert_with(|| {
        let s = Slot::setup(info.ws, info.context, info.gl);
        LIVE.fetch_add(1, Ordering::Relaxed);
        Box::new(s)
    });
    let Some(Slot::Ready(h)) = slot.downcast_mut::<Slot>() else {
        return;
    };
    hud_time::lap("lookup");
    match h.frame(info, plan) {
        Some(Shot::Pixels { pixels, size, path }) => write_later(path, size, pixels),
        Some(Shot::Pending(p)) => h.pending_shot = Some(p),
        None => {}
    }
}

/// After the real swap of a context whose HUD is `hud`: fetches a screenshot whose readback has
/// finished (the swap just flushed it), without waiting for one that has not; later swaps try
/// again.
pub fn after_swap(hud: &HudSlot) {
    if settings::get().screenshot.is_none() {
        return;
    }
    let mut cell = hud.lock();
    if let Some(Slot::Ready(h)) = cell.as_mut().and_then(|s| s.downcast_mut::<Slot>()) {
        h.poll_shot(0);
    }
}

/// The app destroys context `key`, whose HUD is `hud` (before the real destroy).
pub fn context_destroyed(ws: WinSys, key: usize, hud: HudSlot) {
    let Some(mut slot) = hud.lock().take() else { return };
    let live = LIVE.fetch_sub(1, Ordering::Relaxed).saturating_sub(1);
    let Some(Slot::Ready(h)) = slot.downcast_mut::<Slot>() else {
        return;
    };
    let current = winsys::current_context(ws) == key;
    if current {
        h.poll_shot(DESTROY_WAIT_NS);
    }
    if let Some(p) = h.pending_shot.take() {
        log::error(format_args!(
            "screenshot of frame {}: its readback did not finish before the context was destroyed",
            p.frame
        ));
    }
    let Some(r) = h.renderer.as_mut() else { return };
    if current {
        let (deleted, left) = r.destroy(&h.fns, check_mode());
        log::debug(format_args!(
            "GL HUD freed on {} context {key:#x}: {deleted} GL objects deleted{}; {live} HUD contexts left",
            ws_name(ws),
            match left {
                Some(n) => format!(" ({n} still alive)"),
                None => String::new(),
            },
        ));
    } else {
        log::debug(format_args!(
            "GL HUD freed on {} context {key:#x}: not current, its GL objects go with the context; {live} HUD contexts left",
            ws_name(ws),
        ));
    }
}

impl Slot {
    /// Checks the current context's entry points (`gl`) and reads what it supports.
    fn setup(ws: WinSys, key: usize, gl: &Arc<GlFns>) -> Slot {
        let version = gl.string(fns::VERSION);
        let (_, major, _) = crate::gl::parse_version(&version);
        if major < 2 {
            // OpenGL 1.x and OpenGL ES 1.x (fixed function): nothing to draw with.
            log::error(format_args!(
                "no HUD on a {} context: it is '{version}', the HUD needs OpenGL 2.0 or OpenGL ES 2.0",
                ws_name(ws)
            ));
            return Slot::Unusable;
        }
        // GLES 2 contexts have the `OES` vertex array functions in their table (see
        // `GlFns::load`).
        if let Some(name) = gl.missing_required() {
            log::error(format_args!(
                "no HUD on a {} context: it has no {}",
                ws_name(ws),
                name.to_string_lossy()
            ));
            return Slot::Unusable;
        }
        let fns = gl.clone();
        let caps = Caps::read(&fns);
        let surface = SurfaceHud::new(opts());
        let renderer = fns.string(fns::RENDERER);
        let copy = copy_path(opts(), &caps, &renderer);
        surface.with_data(|d| {
            d.device = renderer;
            d.driver = fns.string(fns::VERSION);
        });
        Slot::Ready(Box::new(ContextHud {
            ws,
            key,
            fns,
            renderer: None,
            broken: false,
            surface,
            size: [0, 0],
            last_viewport: [0.0; 4],
            last_drawable: 0,
            copy,
            copy_refused: false,
            pending_shot: None,
            caps,
        }))
    }
}

impl ContextHud {
    fn fail(&mut self, why: std::fmt::Arguments<'_>) {
        if !self.broken {
            self.broken = true;
            log::error(format_args!("no HUD on a {} context: {why}", ws_name(self.ws)));
        }
    }

    /// Draws this swap's HUD and/or reads the screenshot.
    fn frame(&mut self, info: &SwapInfo<'_>, plan: FramePlan) -> Option<Shot> {
        let (draw, shot) = (plan.draw, plan.shot);
        if draw && !self.broken && !self.caps.drawable {
            self.fail(format_args!(
                "it has no framebuffer objects (OpenGL 3.0 or GL_ARB_framebuffer_object)"
            ));
        }
        if draw && !self.broken && !self.caps.double_buffered {
            self.fail(format_args!("its window is single-buffered"));
        }
        let draw = draw && !self.broken;
        if !draw && !shot {
            return None;
        }
        let before = check_mode().then(|| {
            drain_errors(&self.fns);
            state::snapshot(&self.fns, &self.caps)
        });
        let mut saved = state::capture(&self.fns, &self.caps);
        if state::must_skip(&self.fns, &self.caps, &saved) {
            state::leave(&self.fns, &saved);
            return None;
        }
        state::prepare(&self.fns, &self.caps, &saved);
        hud_time::lap("state saved");
        let out = guarded(&DRAW, || self.draw(info, &mut saved, draw, shot));
        hud_time::lap("drawn");
        state::restore(&self.fns, &self.caps, &saved);
        hud_time::lap("state restored");
        if let Some(before) = before {
            self.check(&before);
        }
        match out {
            Some(Ok(px)) => px,
            Some(Err(e)) => {
                self.fail(format_args!("{e}"));
                None
            }
            None => {
                // The panic was logged by the guard; the state is back to the app's.
                self.broken = true;
                None
            }
        }
    }

    fn draw(
        &mut self,
        info: &SwapInfo<'_>,
        s: &mut state::Saved,
        draw: bool,
        shot: bool,
    ) -> Result<Option<Shot>, String> {
        let f = &self.fns;
        let c = &self.caps;
        let now = Instant::now();
        let o = opts();
        let source = GlSource {
            ws: info.ws,
            size: self.size,
        };
        // The drawable's size is re-read when the content is due anyway, and when the app's
        // viewport or the swapped drawable changed (a resize shows there first).
        let due = self.surface.refresh_due(now, o, &source);
        let mut resized = false;
        let moved = s.viewport != self.last_viewport || info.target.drawable() != self.last_drawable;
        if self.size == [0, 0] || due || moved {
            if let Some(size) = winsys::drawable_size(info.ws, &info.target) {
                resized = size != self.size;
                self.size = size;
            }
        }
        self.last_viewport = s.viewport;
        self.last_drawable = info.target.drawable();
        if self.size[0] == 0 || self.size[1] == 0 {
            return Ok(None);
        }
        if draw && self.renderer.is_none() {
            let atlas = ui::font_atlas(o).map_err(|_| "the ImGui context is unusable".to_string())?;
            let r = Renderer::new(f, c, s, &atlas, o.scale)?;
            log::debug(format_args!(
                "GL HUD set up on {} context {:#x}: {}, canvas {} {}, composited with a {}",
                ws_name(self.ws),
                self.key,
                c.describe(),
                r.canvas,
                if r.bgra { "BGRA" } else { "RGBA" },
                if self.copy { "copy" } else { "quad" },
            ));
            self.renderer = Some(r);
        }
        let canvas = self.renderer.as_ref().map_or(0, |r| r.canvas);
        let shot_path = shot.then(|| screenshot::process_path(&settings::get().screenshot_path, info.frame, 0));
        let input = FrameInput {
            now,
            opts: o,
            plan: FramePlan { draw, shot },
            shot_path: shot_path.as_deref(),
            target: self.size,
            canvas: [canvas, canvas],
            resized,
        };
        let source = GlSource {
            size: self.size,
            ..source
        };
        let mut frame = GlFrame {
            f,
            c,
            s,
            renderer: self.renderer.as_mut(),
            flip: c.clip_control && f.int(fns::CLIP_ORIGIN) == fns::UPPER_LEFT,
            target: self.size,
            drawable: info.target.drawable(),
            copy: self.copy,
            copy_refused: &mut self.copy_refused,
            ws: self.ws,
            key: self.key,
            frame: info.frame,
            async_shot: c.async_readback && c.pixel_buffers,
            shot: None,
        };
        let done = self.surface.frame(&mut frame, &input, &source)?;
        if done.ui_failed {
            return Err("the ImGui context is unusable".to_string());
        }
        // Tests: a panic with the app's state changed must still leave it restored.
        guard::maybe_panic("gl_hud");
        Ok(frame.shot)
    }

    /// Fetches the pending screenshot once its fence has signalled (waiting at most
    /// `timeout_ns`) and hands it to a writer thread. The context is current.
    fn poll_shot(&mut self, timeout_ns: u64) {
        let Some(p) = self.pending_shot.take() else { return };
        match self.fns.signalled(&p.sync, timeout_ns) {
            Some(false) => self.pending_shot = Some(p),
            Some(true) => {
                let len = p.size[0] as usize * p.size[1] as usize * 4;
                match renderer::fetch(&self.fns, p.pbo, p.sync, len) {
                    Some(px) => {
                        log::debug(format_args!(
                            "screenshot of frame {} read back without waiting; written on framescope's thread",
                            p.frame
                        ));
                        write_later(p.path, p.size, px);
                    }
                    None => log::error(format_args!("screenshot of frame {}: cannot map its buffer", p.frame)),
                }
            }
            None => {
                log::error(format_args!(
                    "screenshot of frame {}: waiting for its readback failed",
                    p.frame
                ));
                self.fns.delete_buffer(p.pbo);
                self.fns.delete_fence(p.sync);
            }
        }
    }

    /// The self-check: the state after the HUD equals the state before, and GL raised no error.
    fn check(&self, before: &state::Snapshot) {
        let err = self.fns.get_error();
        let after = state::snapshot(&self.fns, &self.caps);
        if err != fns::NO_ERROR {
            log::error(format_args!(
                "GL HUD check: GL error 0x{err:04X} on a {} context",
                ws_name(self.ws)
            ));
        }
        if after != *before {
            log::error(format_args!(
                "GL HUD check: state changed on a {} context:\nbefore {before:?}\nafter  {after:?}",
                ws_name(self.ws)
            ));
        }
    }
}

/// The GL HUD's data: the process's frame history, and the back buffer it goes on.
struct GlSource {
    ws: WinSys,
    size: [u32; 2],
}

impl HudSource for GlSource {
    fn fill(&self, data: &mut HudData, opts: &HudOptions) {
        frames::hud_data(data, opts);
        data.surface = Some(SurfaceInfo {
            width: self.size[0],
            height: self.size[1],
            kind: match self.ws {
                WinSys::Glx => "GLX back buffer",
                WinSys::Egl => "EGL back buffer",
            },
        });
    }

    fn has_fps(&self) -> bool {
        frames::history_has_fps()
    }
}

/// One swap of the GL HUD, with the app's state saved (`s`) and the HUD's prepared.
struct GlFrame<'a> {
    f: &'a Fns,
    c: &'a Caps,
    s: &'a mut state::Saved,
    /// `None` only on a screenshot-only frame (no HUD drawn here).
    renderer: Option<&'a mut Renderer>,
    /// The window's origin is at the top (`glClipControl`).
    flip: bool,
    target: [u32; 2],
    drawable: usize,
    /// Composite with a copy (opaque HUD, see [`copy_path`]).
    copy: bool,
    copy_refused: &'a mut bool,
    ws: WinSys,
    key: usize,
    frame: u64,
    /// Read the screenshot back into a buffer of ours, fetched at a later swap.
    async_shot: bool,
    shot: Option<Shot>,
}

impl HudRenderer for GlFrame<'_> {
    type Error = String;

    fn upload(&mut self, draw: &DrawOutput, size: [u32; 2]) -> Result<(), String> {
        let r = self.renderer.as_deref_mut().ok_or("no renderer")?;
        r.refresh(self.f, self.c, self.s, draw, size, self.flip);
        Ok(())
    }

    fn composite(&mut self, origin: [i32; 2], size: [u32; 2]) -> Result<(), String> {
        let (f, c) = (self.f, self.c);
        let r = self.renderer.as_deref_mut().ok_or("no renderer")?;
        let at = Placement {
            target: self.target,
            origin,
            size,
            flip: self.flip,
        };
        let copied = self.copy && r.composite_copy(f, c, self.s, &at, self.drawable);
        if !copied {
            if self.copy && !*self.copy_refused {
                *self.copy_refused = true;
                log::debug(format_args!(
                    "GL HUD on {} context {:#x}: the window is multisampled, composited with a quad",
                    ws_name(self.ws),
                    self.key
                ));
            }
            r.composite(f, c, self.s, &at);
        }
        Ok(())
    }

    fn read_back(&mut self, path: &str) -> Result<(), String> {
        let (f, c, size) = (self.f, self.c, self.target);
        self.shot = if self.async_shot {
            renderer::read_back_async(f, c, self.s, size).map(|(pbo, sync)| {
                Shot::Pending(PendingShot {
                    pbo,
                    sync,
                    size,
                    frame: self.frame,
                    path: path.to_string(),
                })
            })
        } else {
            renderer::read_back(f, c, self.s, size).map(|pixels| Shot::Pixels {
                pixels,
                size,
                path: path.to_string(),
            })
        };
        Ok(())
    }
}

/// Consumes pending GL errors (check mode only).
fn drain_errors(f: &Fns) {
    for _ in 0..16 {
        if f.get_error() == fns::NO_ERROR {
            break;
        }
    }
}

/// Writes the screenshot (rows bottom-up from `glReadPixels`) as PNG, top row first.
fn write_png(path: &str, size: [u32; 2], px: &[u8]) {
    let row = size[0] as usize * 4;
    let mut top_down = Vec::with_capacity(px.len());
    for r in px.chunks_exact(row).rev() {
        top_down.extend_from_slice(r);
    }
    match screenshot::write_png(
        std::path::Path::new(path),
        size[0],
        size[1],
        row,
        PixelOrder::Rgba,
        &top_down,
    ) {
        Ok(written) => log::info(format_args!("screenshot written to {}", written.display())),
        Err(e) => log::error(format_args!("screenshot {path}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::{copy_path, Caps};
    use framescope_core::config::Config;
    use framescope_overlay::model::HudOptions;

    #[test]
    fn an_opaque_hud_is_copied_on_llvmpipe_only() {
        let opaque = HudOptions::from_config(&Config::default());
        assert_eq!(opaque.alpha, 1.0);
        let caps = Caps {
            blit: true,
            ..Caps::default()
        };
        assert!(copy_path(&opaque, &caps, "llvmpipe (LLVM 15.0.6, 256 bits)"));
        assert!(!copy_path(&opaque, &caps, "NVIDIA H100 80GB HBM3/PCIe/SSE2"));
        assert!(!copy_path(&opaque, &caps, "zink (llvmpipe (LLVM 15.0.6, 256 bits))"));
        let translucent = HudOptions {
            alpha: 0.6,
            ..opaque.clone()
        };
        assert!(!copy_path(&translucent, &caps, "llvmpipe (LLVM 15.0.6, 256 bits)"));
        let srgb = Caps {
            srgb_target: true,
            ..caps
        };
        assert!(!copy_path(&opaque, &srgb, "llvmpipe (LLVM 15.0.6, 256 bits)"));
    }
}
