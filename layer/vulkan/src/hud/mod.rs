//! The live HUD, drawn into the app's swapchain images at `vkQueuePresentKHR`.
//!
//! At present, for every swapchain of the call (up to [`MAX_SWAPCHAINS`]), one command buffer
//! per swapchain image: when `hud_refresh_ms` has passed, re-render the HUD with Dear ImGui
//! into a cached image, then composite that image onto the presented image with one quad
//! (`LOAD`/`STORE` render pass, `PRESENT_SRC` in and out). All of them go in one submit that
//! waits the app's present semaphores and signals one semaphore of ours per drawn swapchain;
//! the present is forwarded with those instead. Nothing waits on the app's thread: a command
//! buffer is reused only once the fence ticket of its previous submission reads done
//! (`vkGetFenceStatus`), else that frame goes without HUD.
//!
//! With `hud=0` and no `screenshot`, nothing here runs and swapchains are created exactly as
//! the app asks. Any failure means no HUD (one log line) and an unchanged present.

mod fences;
mod gpu;
mod swapchain;

use crate::dispatch::device::Device;
use crate::dispatch::hud_objects::HudSubmit;
use crate::frames::SharedFrameState;
use ash::vk::{self, Handle};
use fences::FencePool;
use framescope_core::dump::Header;
use framescope_core::hud_time;
use framescope_core::sync::{Mutex, RwLock};
use framescope_overlay::controller;
use framescope_overlay::HudOptions;
use gpu::Gpu;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use swapchain::{Desc, FrameCtx, Recorded, SwapchainHud};

/// What the HUD uses of the device's state without owning it: the app's queues and the frame
/// history. Implemented by the device's wiring, which owns both.
pub trait HudHost {
    /// The device's frames: the HUD's data comes from their history.
    fn frames(&self) -> &SharedFrameState;
    /// The family of an app queue; `None` for a queue the app did not fetch through us.
    fn family(&self, queue: vk::Queue) -> Option<u32>;
    /// A queue the app fetched whose family can do graphics (the HUD's fallback when the
    /// present queue cannot).
    fn graphics_queue(&self) -> Option<(vk::Queue, u32)>;
    /// Runs `f` holding the app's submit lock of `queue`.
    fn with_submit_lock(&self, queue: vk::Queue, f: &mut dyn FnMut());
}

/// Swapchains of one present that get the HUD; further ones are presented without it.
pub const MAX_SWAPCHAINS: usize = 8;
use fences::MAX_WAITS;

/// Per-device HUD state.
pub struct DeviceHud {
    opts: HudOptions,
    gpu: OnceLock<Option<Gpu>>,
    /// Shared with the screenshot threads, which wait on the HUD's fences.
    fences: Arc<Mutex<FencePool>>,
    swapchains: RwLock<HashMap<u64, Arc<Mutex<SwapchainHud>>>>,
    logged_setup: AtomicBool,
    logged_queue: AtomicBool,
    logged_submit: AtomicBool,
    logged_fallback: AtomicBool,
    /// Swapchain images the HUD went into, and how many of those had their command buffer
    /// recorded (the others submitted a lone composite's recording again): logged at the end.
    drawn: AtomicU64,
    recorded: AtomicU64,
}

impl DeviceHud {
    pub fn new() -> Self {
        let cfg = framescope_core::settings::get();
        let opts = controller::options(cfg, false, framescope_overlay::mangohud::loaded());
        DeviceHud {
            opts,
            gpu: OnceLock::new(),
            fences: Arc::new(Mutex::new(FencePool::default())),
            swapchains: RwLock::new(HashMap::new()),
            logged_setup: AtomicBool::new(false),
            logged_queue: AtomicBool::new(false),
            logged_submit: AtomicBool::new(false),
            logged_fallback: AtomicBool::new(false),
            drawn: AtomicU64::new(0),
            recorded: AtomicU64::new(0),
        }
    }

    fn gpu(&self, d: &Device) -> Option<&Gpu> {
        self.gpu
            .get_or_init(|| match Gpu::new(d) {
                Ok(g) => Some(g),
                Err(e) => {
                    framescope_core::log::error(format_args!("HUD disabled: cannot create its pipelines: {e:?}"));
                    None
                }
            })
            .as_ref()
    }
}

impl Default for DeviceHud {
    fn default() -> Self {
        Self::new()
    }
}

fn log_once(flag: &AtomicBool, args: std::fmt::Arguments<'_>) {
    if !flag.swap(true, Ordering::Relaxed) {
        framescope_core::log::error(args);
    }
}

/// Whether the HUD path runs at all: HUD on, or a screenshot asked for.
fn active() -> bool {
    controller::active(framescope_core::settings::get())
}

/// The app's swapchain create info with the usage we need added (COLOR_ATTACHMENT to draw,
/// TRANSFER_DST to copy an opaque HUD in, TRANSFER_SRC for a screenshot); `None` when nothing
/// needs changing.
pub fn adjust_create_info<'a>(
    d: &Device,
    hud: &DeviceHud,
    ci: &vk::SwapchainCreateInfoKHR<'a>,
) -> Option<vk::SwapchainCreateInfoKHR<'a>> {
    if !active() {
        return None;
    }
    let c = framescope_core::settings::get();
    let mut copy = *ci;
    if c.hud {
        // Always supported by surfaces (VkSurfaceCapabilitiesKHR::supportedUsageFlags).
        copy.image_usage |= vk::ImageUsageFlags::COLOR_ATTACHMENT;
        if hud.opts.alpha >= 1.0
            && is_bgra(ci.image_format)
            && d.surface_usage(ci.surface).contains(vk::ImageUsageFlags::TRANSFER_DST)
        {
            copy.image_usage |= vk::ImageUsageFlags::TRANSFER_DST;
        }
    }
    if c.screenshot.is_some() {
        copy.image_usage |= vk::ImageUsageFlags::TRANSFER_SRC;
    }
    (copy.image_usage != ci.image_usage).then_some(copy)
}

/// Formats whose bytes are those of the cached HUD image (B8G8R8A8, sRGB-encoded values).
fn is_bgra(format: vk::Format) -> bool {
    matches!(format, vk::Format::B8G8R8A8_UNORM | vk::Format::B8G8R8A8_SRGB)
}

/// A swapchain was created with `ci` (the create info actually used), whose images are shared
/// with `concurrent` families when it names some.
pub fn swapchain_created(
    hud: &DeviceHud,
    handle: vk::SwapchainKHR,
    ci: &vk::SwapchainCreateInfoKHR<'_>,
    concurrent: Option<&[u32]>,
) {
    if !active() {
        return;
    }
    let concurrent = concurrent.map(<[u32]>::to_vec);
    let desc = Desc {
        handle,
        format: ci.image_format,
        extent: [ci.image_extent.width, ci.image_extent.height],
        present_mode: ci.present_mode,
        concurrent,
        drawable: ci.image_usage.contains(vk::ImageUsageFlags::COLOR_ATTACHMENT),
        copyable: ci.image_usage.contains(vk::ImageUsageFlags::TRANSFER_SRC),
        copy_target: ci.image_usage.contains(vk::ImageUsageFlags::TRANSFER_DST) && is_bgra(ci.image_format),
    };
    hud.swapchains.write().insert(
        handle.as_raw(),
        Arc::new(Mutex::new(SwapchainHud::new(desc, &hud.opts))),
    );
}

/// The app destroys a swapchain: wait for our work on it (our fences only), free our objects.
pub fn swapchain_destroyed(d: &Device, hud: &DeviceHud, handle: vk::SwapchainKHR) {
    let Some(sc) = hud.swapchains.write().remove(&handle.as_raw()) else {
        return;
    };
    let mut fences = hud.fences.lock();
    sc.lock().destroy(d, &mut fences);
}

/// The app is about to destroy `sem`: a HUD submission that waited it must complete first.
pub fn semaphore_destroying(d: &Device, hud: &DeviceHud, sem: vk::Semaphore) {
    if !active() || sem == vk::Semaphore::null() {
        return;
    }
    hud.fences.lock().wait_semaphore_users(d, sem);
}

/// The device goes: wait for all our work, free everything, finish screenshot files.
pub fn device_destroyed(d: &Device, hud: &DeviceHud) {
    let all: Vec<_> = hud.swapchains.write().drain().map(|(_, s)| s).collect();
    let mut fences = hud.fences.lock();
    for sc in all {
        sc.lock().destroy(d, &mut fences);
    }
    fences.destroy(d);
    if let Some(Some(g)) = hud.gpu.get() {
        g.destroy();
        framescope_core::log::info(format_args!(
            "HUD: drawn into {} presented images, {} of them recorded anew",
            hud.drawn.load(Ordering::Relaxed),
            hud.recorded.load(Ordering::Relaxed)
        ));
    }
    drop(fences);
    framescope_overlay::screenshot::join_all();
}

/// What the dump header says about the HUD.
pub fn header_extra(d: &Device, h: &mut Header) {
    let c = framescope_core::settings::get();
    h.extra.insert("hud_enabled".into(), c.hud.into());
    let no_graphics: Vec<u32> = d
        .queue_families
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.queue_flags.contains(vk::QueueFlags::GRAPHICS))
        .map(|(i, _)| i as u32)
        .collect();
    // Presents on these families get the HUD drawn on another (graphics) queue the app
    // created, or no HUD when there is none (logged).
    h.extra
        .insert("hud_queue_families_without_graphics".into(), no_graphics.into());
}

/// The present info to forward: a copy of the app's with our semaphores as its waits.
pub struct PresentScratch<'a> {
    pub info: vk::PresentInfoKHR<'a>,
    /// Our submit went in: `info` must be presented (set before anything else can fail).
    pub submitted: bool,
    sems: [vk::Semaphore; MAX_SWAPCHAINS],
}

impl Default for PresentScratch<'_> {
    fn default() -> Self {
        PresentScratch {
            info: vk::PresentInfoKHR::default(),
            submitted: false,
            sems: [vk::Semaphore::null(); MAX_SWAPCHAINS],
        }
    }
}

/// The app's present: its info, to forward a copy of, and its arrays as slices.
pub struct AppPresent<'a> {
    pub info: &'a vk::PresentInfoKHR<'a>,
    pub swapchains: &'a [vk::SwapchainKHR],
    pub indices: &'a [u32],
    pub waits: &'a [vk::Semaphore],
}

/// Draws the HUD for this present. `true`: our submit went in and `scratch.info` must be
/// presented instead of the app's info; `false`: present the app's info unchanged.
pub fn present<'a>(
    d: &Arc<Device>,
    hud: &DeviceHud,
    host: &dyn HudHost,
    frame: u64,
    queue: vk::Queue,
    app: &AppPresent<'a>,
    scratch: &mut PresentScratch<'a>,
) -> bool {
    let Some(plan) = controller::plan(framescope_core::settings::get(), frame) else {
        return false;
    };
    let (info, swapchains, indices) = (app.info, app.swapchains, app.indices);
    let waits = app.waits.len();
    if waits > MAX_WAITS {
        return false;
    }
    let (draw_hud, shot_frame) = (plan.draw, plan.shot);
    let Some(gpu) = hud.gpu(d) else { return false };
    let Some(q) = draw_queue(d, hud, host, queue) else {
        return false;
    };
    let (submit_queue, family, present_family, other) = (q.queue, q.family, q.present_family, q.other);
    let arcs = swapchain_huds(hud, swapchains);
    let now = Instant::now();
    hud_time::lap("lookup");
    let mut fences = hud.fences.lock();
    let frame_ctx = FrameCtx {
        gpu,
        frames: host.frames(),
        opts: &hud.opts,
        draw_hud,
        shot_path: None,
        now,
    };
    let recs = record_all(
        d,
        hud,
        &arcs,
        &mut fences,
        &frame_ctx,
        (family, present_family),
        (shot_frame, frame),
        indices,
    );
    hud_time::lap("recorded");
    let mut cbs = [vk::CommandBuffer::null(); MAX_SWAPCHAINS];
    let mut k = 0;
    for r in recs.iter().flatten() {
        cbs[k] = r.cb;
        scratch.sems[k] = r.semaphore;
        k += 1;
    }
    if k == 0 {
        return false;
    }
    let abort = |recs: &[Option<Recorded>]| {
        for (r, arc) in recs.iter().zip(&arcs) {
            if let (Some(r), Some(arc)) = (r, arc) {
                arc.lock().abort(r);
            }
        }
    };
    let Some((fence, ticket)) = fences.acquire(d) else {
        abort(&recs);
        return false;
    };
    let stages = [vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT | vk::PipelineStageFlags::TRANSFER; MAX_WAITS];
    let submit = HudSubmit {
        waits: app.waits,
        stages: &stages[..waits],
        cbs: &cbs[..k],
        signals: &scratch.sems[..k],
    };
    let mut r = vk::Result::ERROR_UNKNOWN;
    // The present queue is ours for the duration of the app's present call; another queue is
    // guarded by the app's submit lock (below).
    let mut submit_now = || r = d.submit_hud(submit_queue, &submit, fence);
    if other {
        // Another queue of the app: serialise with its submits, which hold this lock.
        host.with_submit_lock(submit_queue, &mut submit_now);
    } else {
        submit_now();
    }
    hud_time::lap("submitted");
    if r != vk::Result::SUCCESS {
        log_once(
            &hud.logged_submit,
            format_args!("HUD skipped: vkQueueSubmit failed: {r:?}"),
        );
        abort(&recs);
        return false;
    }
    // The app's semaphores are consumed by our submit: from here on the present must wait ours.
    scratch.info = *info;
    scratch.info.wait_semaphore_count = k as u32;
    scratch.info.p_wait_semaphores = scratch.sems.as_ptr();
    scratch.submitted = true;
    fences.submitted(ticket, app.waits);
    drop(fences);
    commit_all(hud, &recs, &arcs, ticket);
    if shot_frame {
        collect_shots_async(d, &hud.fences, &arcs);
    }
    true
}

/// The HUD state of each swapchain of the present (`None` where it has none).
fn swapchain_huds(
    hud: &DeviceHud,
    swapchains: &[vk::SwapchainKHR],
) -> [Option<Arc<Mutex<SwapchainHud>>>; MAX_SWAPCHAINS] {
    let mut arcs: [Option<Arc<Mutex<SwapchainHud>>>; MAX_SWAPCHAINS] = Default::default();
    let map = hud.swapchains.read();
    for (slot, sc) in arcs.iter_mut().zip(swapchains) {
        *slot = map.get(&sc.as_raw()).cloned();
    }
    arcs
}

/// Each recorded swapchain's HUD was submitted with `ticket`: its images are in use until
/// that submit's fence signals.
fn commit_all(
    hud: &DeviceHud,
    recs: &[Option<Recorded>; MAX_SWAPCHAINS],
    arcs: &[Option<Arc<Mutex<SwapchainHud>>>; MAX_SWAPCHAINS],
    ticket: fences::Ticket,
) {
    for (r, arc) in recs.iter().zip(arcs) {
        if let (Some(r), Some(arc)) = (r, arc) {
            arc.lock().commit(r, ticket);
            hud.drawn.fetch_add(1, Ordering::Relaxed);
            if r.recorded {
                hud.recorded.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The queue the HUD is drawn on, and its family against the present queue's.
struct DrawQueue {
    queue: vk::Queue,
    family: u32,
    present_family: u32,
    /// Another queue than the present queue (it needs the app's submit lock).
    other: bool,
}

/// The present queue when it can do graphics, else another graphics queue of the app; `None`
/// (said once) when there is none.
fn draw_queue(d: &Device, hud: &DeviceHud, host: &dyn HudHost, queue: vk::Queue) -> Option<DrawQueue> {
    let present_family = host.family(queue)?;
    if d.has_graphics(present_family) {
        return Some(DrawQueue {
            queue,
            family: present_family,
            present_family,
            other: false,
        });
    }
    match host.graphics_queue() {
        Some((gq, gfamily)) => {
            if !hud.logged_fallback.swap(true, Ordering::Relaxed) {
                framescope_core::log::info(format_args!(
                    "present queue family {present_family} cannot do graphics: HUD drawn on a queue of family {gfamily}"
                ));
            }
            Some(DrawQueue {
                queue: gq,
                family: gfamily,
                present_family,
                other: true,
            })
        }
        None => {
            log_once(
                &hud.logged_queue,
                format_args!("no HUD: the present queue cannot do graphics and the app has no graphics queue"),
            );
            None
        }
    }
}

/// Records the HUD of every swapchain of the present that has one (set up on first use);
/// `families` is (the drawing family, the present family), `shot` (a screenshot frame, its
/// index).
#[allow(clippy::too_many_arguments)]
fn record_all(
    d: &Arc<Device>,
    hud: &DeviceHud,
    arcs: &[Option<Arc<Mutex<SwapchainHud>>>; MAX_SWAPCHAINS],
    fences: &mut FencePool,
    base: &FrameCtx<'_>,
    (family, present_family): (u32, u32),
    (shot_frame, frame): (bool, u64),
    indices: &[u32],
) -> [Option<Recorded>; MAX_SWAPCHAINS] {
    let c = framescope_core::settings::get();
    let mut recs: [Option<Recorded>; MAX_SWAPCHAINS] = [None; MAX_SWAPCHAINS];
    for (i, arc) in arcs.iter().enumerate() {
        let Some(arc) = arc else { continue };
        let mut sc = arc.lock();
        if sc.failed {
            continue;
        }
        if family != present_family && !sc.desc.concurrent.as_ref().is_some_and(|f| f.contains(&family)) {
            // Drawing on another family would need queue family ownership transfers.
            log_once(
                &hud.logged_queue,
                format_args!("no HUD: the present queue cannot do graphics and the swapchain is not shared with a graphics family"),
            );
            continue;
        }
        let path = shot_frame.then(|| framescope_overlay::screenshot::process_path(&c.screenshot_path, frame, i));
        let ctx = FrameCtx {
            shot_path: path.as_deref(),
            ..*base
        };
        if let Err(e) = sc.ensure_setup(d, &ctx, family) {
            sc.failed = true;
            log_once(
                &hud.logged_setup,
                format_args!("no HUD on a swapchain: setting it up failed: {e:?}"),
            );
            continue;
        }
        if sc.family() != Some(family) {
            continue;
        }
        match sc.record(d, fences, &ctx, indices[i]) {
            Ok(r) => recs[i] = r,
            Err(e) => log_once(&hud.logged_submit, format_args!("HUD skipped: recording failed: {e:?}")),
        }
    }
    recs
}

/// Polls, on a thread of ours, for the screenshot copies of this present and writes them as
/// soon as the GPU has made them: an app that presents only when its window is exposed
/// (vkd3d-triangle) may not present again for a long time, and the app's thread never waits
/// for the GPU. Gives up after `SHOT_POLLS`; swapchain or device destruction still writes
/// what is left (waiting on our own fences there).
fn collect_shots_async(d: &Arc<Device>, fences: &Arc<Mutex<FencePool>>, arcs: &[Option<Arc<Mutex<SwapchainHud>>>]) {
    const SHOT_POLLS: u32 = 30_000;
    let dev = Arc::clone(d);
    let fences = Arc::clone(fences);
    let arcs: Vec<_> = arcs.iter().flatten().cloned().collect();
    framescope_overlay::screenshot::spawn("framescope-shot", move || {
        for _ in 0..SHOT_POLLS {
            let pending = {
                // Same order as the present path: the fence pool, then the swapchain.
                let mut fences = fences.lock();
                arcs.iter().fold(false, |pending, sc| {
                    let mut sc = sc.lock();
                    sc.collect_shots(&dev, &mut fences, false);
                    pending | sc.has_shots()
                })
            };
            if !pending {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    });
}
