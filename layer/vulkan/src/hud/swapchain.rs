//! Per-swapchain HUD state and the command buffer recorded at each present.
//!
//! Per swapchain image: a view, a framebuffer, a command buffer and the semaphore the present
//! waits. Per swapchain: the cached HUD image (re-rendered only every `hud_refresh_ms`), its
//! vertex/index buffers and the font texture. A command buffer is reused only when the ticket
//! of its last submission is done (checked, never waited); otherwise that frame goes without
//! HUD. A frame that only composites the cached HUD where the image's command buffer already
//! composites it submits that recording again instead of recording it anew (most frames: the
//! content changes every `hud_refresh_ms`): the recording is what the app's thread paid for
//! most on a driver that records in software.

use super::fences::{FencePool, Ticket};
use super::gpu::{self, Buffer, CompositePush, Gpu, Image};
use crate::dispatch::device::Device;
use crate::frames::SharedFrameState;
use ash::vk::{self, Handle};
use framescope_core::frame::SwapchainInfo;
use framescope_overlay::controller::{FrameInput, FramePlan, HudRenderer, HudSource, SurfaceHud};
use framescope_overlay::screenshot::PixelOrder;
use framescope_overlay::{layout, DrawOutput, DrawVert, HudData, HudOptions};
use std::time::Instant;

/// What the app asked for, and what we added.
#[derive(Clone, Debug)]
pub struct Desc {
    pub handle: vk::SwapchainKHR,
    pub format: vk::Format,
    pub extent: [u32; 2],
    pub present_mode: vk::PresentModeKHR,
    /// `None`: EXCLUSIVE sharing; else the CONCURRENT families.
    pub concurrent: Option<Vec<u32>>,
    /// COLOR_ATTACHMENT usage (ours or the app's): the HUD can be drawn.
    pub drawable: bool,
    /// TRANSFER_SRC usage: screenshots can be read back.
    pub copyable: bool,
    /// TRANSFER_DST usage and a BGRA format: an opaque HUD can be copied in (see
    /// [`composite_copy`]).
    pub copy_target: bool,
}

struct ImageSlot {
    image: vk::Image,
    view: vk::ImageView,
    framebuffer: vk::Framebuffer,
    cb: vk::CommandBuffer,
    semaphore: vk::Semaphore,
    ticket: Option<Ticket>,
    /// The command buffer holds exactly one composite, at this place, and can be submitted
    /// again for another.
    composites: Option<Place>,
}

/// Where the cached HUD goes on the image: origin and size in pixels.
type Place = ([i32; 2], [u32; 2]);

struct Shot {
    buffer: Buffer,
    ticket: Option<Ticket>,
    width: u32,
    height: u32,
    order: PixelOrder,
    path: String,
}

/// What a recording did, to be committed once its submission went in.
#[derive(Clone, Copy, Debug, Default)]
pub struct Recorded {
    pub cb: vk::CommandBuffer,
    pub semaphore: vk::Semaphore,
    image: u32,
    refreshed: bool,
    font: bool,
    shot: bool,
    /// The command buffer was recorded this frame (else its last recording is submitted
    /// again).
    pub recorded: bool,
    /// What a recording of this frame holds, when it is one composite alone.
    composites: Option<Place>,
}

struct Setup {
    family: u32,
    pool: vk::CommandPool,
    slots: Vec<ImageSlot>,
    render_pass: vk::RenderPass,
    pipeline: vk::Pipeline,
    desc_pool: vk::DescriptorPool,
    font_set: vk::DescriptorSet,
    content_set: vk::DescriptorSet,
    font: Image,
    font_size: [u32; 2],
    font_staging: Buffer,
    font_uploaded: bool,
    content: Image,
    content_fb: vk::Framebuffer,
    canvas: [u32; 2],
    vbuf: Buffer,
    ibuf: Buffer,
    content_ticket: Option<Ticket>,
}

pub struct SwapchainHud {
    pub desc: Desc,
    setup: Option<Setup>,
    /// Setup failed: no HUD on this swapchain (logged once).
    pub failed: bool,
    shots: Vec<Shot>,
    /// What the HUD shows here and when it was refreshed (the overlay's per-frame policy).
    surface: SurfaceHud,
}

/// What the present hands the recording.
pub struct FrameCtx<'a> {
    pub gpu: &'a Gpu,
    /// The device's frames: the HUD's data comes from their history.
    pub frames: &'a SharedFrameState,
    pub opts: &'a HudOptions,
    pub draw_hud: bool,
    /// Save this image as PNG to this path.
    pub shot_path: Option<&'a str>,
    pub now: Instant,
}

impl SwapchainHud {
    pub fn new(desc: Desc, opts: &HudOptions) -> Self {
        let surface = SurfaceHud::new(opts);
        surface.with_data(|d| d.swapchain = Some(info_of(&desc)));
        SwapchainHud {
            desc,
            setup: None,
            failed: false,
            shots: Vec::new(),
            surface,
        }
    }

    /// Family the command buffers belong to, once set up.
    pub fn family(&self) -> Option<u32> {
        self.setup.as_ref().map(|s| s.family)
    }

    /// Creates the per-image objects and (when drawing) the cached image, font and buffers.
    pub fn ensure_setup(&mut self, d: &Device, ctx: &FrameCtx<'_>, family: u32) -> Result<(), vk::Result> {
        if self.setup.is_some() {
            return Ok(());
        }
        let mut s = Setup {
            family,
            pool: vk::CommandPool::null(),
            slots: Vec::new(),
            render_pass: vk::RenderPass::null(),
            pipeline: vk::Pipeline::null(),
            desc_pool: vk::DescriptorPool::null(),
            font_set: vk::DescriptorSet::null(),
            content_set: vk::DescriptorSet::null(),
            font: Image::null(),
            font_size: [0, 0],
            font_staging: Buffer::null(),
            font_uploaded: false,
            content: Image::null(),
            content_fb: vk::Framebuffer::null(),
            canvas: [0, 0],
            vbuf: Buffer::null(),
            ibuf: Buffer::null(),
            content_ticket: None,
        };
        let r = self.build(d, ctx, &mut s);
        if let Err(e) = r {
            destroy_setup(d, &mut s);
            return Err(e);
        }
        self.setup = Some(s);
        Ok(())
    }

    fn build(&self, d: &Device, ctx: &FrameCtx<'_>, s: &mut Setup) -> Result<(), vk::Result> {
        let f = &d.fns;
        let gpu = ctx.gpu;
        let pool_ci = vk::CommandPoolCreateInfo::default()
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER)
            .queue_family_index(s.family);
        // SAFETY: valid create info.
        s.pool = unsafe { f.create_command_pool(&pool_ci, None) }?;
        // SAFETY: the swapchain is alive (we are in a present that names it).
        let images = unsafe { get_images(d, self.desc.handle) }?;
        let ai = vk::CommandBufferAllocateInfo::default()
            .command_pool(s.pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(images.len() as u32);
        // SAFETY: our pool; only used under this swapchain's lock.
        let cbs = unsafe { f.allocate_command_buffers(&ai) }?;
        for &cb in &cbs {
            if !d.stamp_loader_data(cb) {
                return Err(vk::Result::ERROR_INITIALIZATION_FAILED);
            }
        }
        if ctx.draw_hud && self.desc.drawable {
            let (rp, p) = gpu.composite_for(d, self.desc.format)?;
            s.render_pass = rp;
            s.pipeline = p;
        }
        for (&image, &cb) in images.iter().zip(&cbs) {
            let mut slot = ImageSlot {
                image,
                view: vk::ImageView::null(),
                framebuffer: vk::Framebuffer::null(),
                cb,
                semaphore: vk::Semaphore::null(),
                ticket: None,
                composites: None,
            };
            // SAFETY: valid create info.
            slot.semaphore = unsafe { f.create_semaphore(&vk::SemaphoreCreateInfo::default(), None) }?;
            s.slots.push(slot);
            let slot = s.slots.last_mut().expect("just pushed");
            if s.render_pass != vk::RenderPass::null() {
                slot.view = gpu::create_view(d, image, self.desc.format)?;
                let views = [slot.view];
                let ci = vk::FramebufferCreateInfo::default()
                    .render_pass(s.render_pass)
                    .attachments(&views)
                    .width(self.desc.extent[0])
                    .height(self.desc.extent[1])
                    .layers(1);
                // SAFETY: valid create info with a view of this swapchain's image.
                slot.framebuffer = unsafe { f.create_framebuffer(&ci, None) }?;
            }
        }
        if s.render_pass == vk::RenderPass::null() {
            return Ok(());
        }
        self.build_content(d, ctx, s)?;
        build_descriptors(d, gpu, s)
    }

    /// The font atlas and the cached HUD image (with its framebuffer), for a swapchain the HUD
    /// is drawn on.
    fn build_content(&self, d: &Device, ctx: &FrameCtx<'_>, s: &mut Setup) -> Result<(), vk::Result> {
        let f = &d.fns;
        let gpu = ctx.gpu;
        // The font and the cached HUD image.
        let atlas =
            framescope_overlay::ui::font_atlas(ctx.opts).map_err(|_| vk::Result::ERROR_INITIALIZATION_FAILED)?;
        s.font_size = [atlas.width, atlas.height];
        s.font = Image::new(
            d,
            gpu,
            s.font_size,
            vk::Format::R8G8B8A8_UNORM,
            vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST,
        )?;
        s.font_staging = Buffer::host(d, gpu, atlas.pixels.len() as u64, vk::BufferUsageFlags::TRANSFER_SRC)?;
        // SAFETY: the mapping holds at least pixels.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(atlas.pixels.as_ptr(), s.font_staging.mapped, atlas.pixels.len()) };
        let side = (1024.0 * ctx.opts.scale.max(1.0)).min(4096.0) as u32;
        s.canvas = [side, side];
        s.content = Image::new(
            d,
            gpu,
            s.canvas,
            gpu::CONTENT_FORMAT,
            vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_SRC,
        )?;
        let views = [s.content.view];
        let ci = vk::FramebufferCreateInfo::default()
            .render_pass(gpu.content_pass)
            .attachments(&views)
            .width(s.canvas[0])
            .height(s.canvas[1])
            .layers(1);
        // SAFETY: valid create info.
        s.content_fb = unsafe { f.create_framebuffer(&ci, None) }?;
        Ok(())
    }

    /// Records this frame's command buffer for swapchain image `image`: re-renders the cached
    /// HUD when due, composites it, and copies the image for a screenshot. `Ok(None)`: nothing
    /// to do, or the image's previous command buffer is still pending (no HUD this frame).
    pub fn record(
        &mut self,
        d: &Device,
        fences: &mut FencePool,
        ctx: &FrameCtx<'_>,
        image: u32,
    ) -> Result<Option<Recorded>, vk::Result> {
        self.collect_shots(d, fences, false);
        let Some(s) = self.setup.as_mut() else { return Ok(None) };
        let Some(slot) = s.slots.get(image as usize) else {
            return Ok(None);
        };
        if let Some(t) = slot.ticket {
            if !fences.is_done(d, t) {
                return Ok(None);
            }
        }
        let (cb, semaphore, target) = (slot.cb, slot.semaphore, slot.image);
        let drawing = ctx.draw_hud && s.render_pass != vk::RenderPass::null();
        let shot = ctx.shot_path.is_some() && self.desc.copyable;
        if !drawing && !shot {
            return Ok(None);
        }
        let f = &d.fns;
        let mut rec = Recorded {
            cb,
            semaphore,
            image,
            ..Recorded::default()
        };
        // A screenshot's copy goes after the composite, and the font's upload before it: those
        // frames record.
        let reusable = if shot || (drawing && !s.font_uploaded) {
            None
        } else {
            slot.composites
        };
        if drawing && !s.font_uploaded {
            begin(d, s, &mut rec)?;
            record_font_upload(d, s, cb);
            rec.font = true;
        }
        let input = FrameInput {
            now: ctx.now,
            opts: ctx.opts,
            plan: FramePlan { draw: drawing, shot },
            shot_path: ctx.shot_path,
            target: self.desc.extent,
            canvas: s.canvas,
            resized: false,
        };
        let source = FrameSource { d, frames: ctx.frames };
        let mut recorder = FrameRecorder {
            d,
            ctx,
            s,
            desc: &self.desc,
            fences,
            shots: &mut self.shots,
            rec: &mut rec,
            target,
            reusable,
            reused: false,
        };
        let done = match self.surface.frame(&mut recorder, &input, &source) {
            Ok(done) => done,
            Err(e) => {
                if rec.recorded {
                    // A failure after the begin (an allocation for a grown HUD, under memory
                    // pressure) leaves the command buffer recording: end it, so the image's next
                    // frame can begin it again (VUID-vkBeginCommandBuffer-commandBuffer-00049).
                    // SAFETY: recording state, begun in this frame.
                    let _ = unsafe { f.end_command_buffer(cb) };
                }
                return Err(e);
            }
        };
        let reused = recorder.reused;
        rec.refreshed = done.refreshed;
        if rec.recorded {
            // SAFETY: recording state, begun in this frame.
            unsafe { f.end_command_buffer(cb) }?;
        } else if !reused {
            // Nothing to draw (an empty HUD): the present goes as the app made it.
            return Ok(None);
        }
        Ok(Some(rec))
    }

    /// The submission holding `rec` went in with `ticket`.
    pub fn commit(&mut self, rec: &Recorded, ticket: Ticket) {
        let Some(s) = self.setup.as_mut() else { return };
        if let Some(slot) = s.slots.get_mut(rec.image as usize) {
            slot.ticket = Some(ticket);
            if rec.recorded {
                slot.composites = rec.composites;
            }
        }
        if rec.font {
            s.font_uploaded = true;
        }
        if rec.refreshed {
            s.content_ticket = Some(ticket);
        }
        if rec.shot {
            if let Some(sh) = self.shots.last_mut() {
                sh.ticket = Some(ticket);
            }
        }
    }

    /// The submission holding `rec` failed: forget what it would have done.
    pub fn abort(&mut self, d: &Device, rec: &Recorded) {
        if self.setup.is_some() && rec.refreshed {
            // Re-render next frame; the content image's state is unknown.
            self.surface.forget_content();
        }
        if rec.shot {
            if let Some(mut sh) = self.shots.pop() {
                sh.buffer.destroy(d);
            }
        }
    }

    /// Screenshots read back but not yet written.
    pub fn has_shots(&self) -> bool {
        !self.shots.is_empty()
    }

    /// Writes finished screenshots (the PNG encoding runs on its own thread). With `wait`, also
    /// waits for pending ones (destruction only).
    pub fn collect_shots(&mut self, d: &Device, fences: &mut FencePool, wait: bool) {
        let mut i = 0;
        while i < self.shots.len() {
            let done = match self.shots[i].ticket {
                Some(t) if wait => {
                    fences.wait(d, t);
                    true
                }
                Some(t) => fences.is_done(d, t),
                None => true,
            };
            if !done {
                i += 1;
                continue;
            }
            let mut sh = self.shots.swap_remove(i);
            if sh.ticket.is_some() {
                let len = (sh.width as usize) * (sh.height as usize) * 4;
                // SAFETY: the copy into the mapped, coherent buffer has completed (ticket done);
                // it holds width*height*4 bytes.
                let pixels = unsafe { std::slice::from_raw_parts(sh.buffer.mapped, len) }.to_vec();
                framescope_overlay::screenshot::write_async(
                    sh.path.clone(),
                    sh.width,
                    sh.height,
                    sh.width as usize * 4,
                    sh.order,
                    pixels,
                );
            }
            sh.buffer.destroy(d);
        }
    }

    /// Waits for our pending work on this swapchain and destroys everything.
    pub fn destroy(&mut self, d: &Device, fences: &mut FencePool) {
        self.collect_shots(d, fences, true);
        if let Some(mut s) = self.setup.take() {
            for slot in &s.slots {
                if let Some(t) = slot.ticket {
                    fences.wait(d, t);
                }
            }
            if let Some(t) = s.content_ticket {
                fences.wait(d, t);
            }
            destroy_setup(d, &mut s);
        }
    }
}

/// # Safety
/// `sc` must be a live swapchain of `d`.
unsafe fn get_images(d: &Device, sc: vk::SwapchainKHR) -> Result<Vec<vk::Image>, vk::Result> {
    let get = d.swapchain_fns.get_swapchain_images_khr;
    let mut n = 0u32;
    // SAFETY: caller's contract; count query then fill.
    unsafe {
        get(d.handle, sc, &mut n, std::ptr::null_mut()).result()?;
        let mut v = vec![vk::Image::null(); n as usize];
        get(d.handle, sc, &mut n, v.as_mut_ptr()).result()?;
        v.truncate(n as usize);
        Ok(v)
    }
}

fn destroy_setup(d: &Device, s: &mut Setup) {
    let f = &d.fns;
    // SAFETY: objects of ours; the caller has waited for every submission using them; null
    // handles are ignored. Destroying the pools frees their command buffers and sets.
    unsafe {
        for slot in s.slots.drain(..) {
            f.destroy_framebuffer(slot.framebuffer, None);
            f.destroy_image_view(slot.view, None);
            f.destroy_semaphore(slot.semaphore, None);
        }
        f.destroy_command_pool(s.pool, None);
        f.destroy_framebuffer(s.content_fb, None);
        f.destroy_descriptor_pool(s.desc_pool, None);
    }
    s.content.destroy(d);
    s.font.destroy(d);
    s.font_staging.destroy(d);
    s.vbuf.destroy(d);
    s.ibuf.destroy(d);
}

fn barrier(
    d: &Device,
    cb: vk::CommandBuffer,
    image: vk::Image,
    (old, new): (vk::ImageLayout, vk::ImageLayout),
    (src_stage, src_access): (vk::PipelineStageFlags, vk::AccessFlags),
    (dst_stage, dst_access): (vk::PipelineStageFlags, vk::AccessFlags),
) {
    let b = [vk::ImageMemoryBarrier::default()
        .old_layout(old)
        .new_layout(new)
        .src_access_mask(src_access)
        .dst_access_mask(dst_access)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(gpu::color_range())];
    // SAFETY: recording into our command buffer, outside a render pass.
    unsafe {
        d.fns
            .cmd_pipeline_barrier(cb, src_stage, dst_stage, vk::DependencyFlags::empty(), &[], &[], &b)
    };
}

fn record_font_upload(d: &Device, s: &Setup, cb: vk::CommandBuffer) {
    barrier(
        d,
        cb,
        s.font.image,
        (vk::ImageLayout::UNDEFINED, vk::ImageLayout::TRANSFER_DST_OPTIMAL),
        (vk::PipelineStageFlags::TOP_OF_PIPE, vk::AccessFlags::empty()),
        (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
    );
    let region = [vk::BufferImageCopy::default()
        .image_subresource(vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: 0,
            base_array_layer: 0,
            layer_count: 1,
        })
        .image_extent(vk::Extent3D {
            width: s.font_size[0],
            height: s.font_size[1],
            depth: 1,
        })];
    // SAFETY: staging buffer and font image of ours, in the layouts set just above.
    unsafe {
        d.fns.cmd_copy_buffer_to_image(
            cb,
            s.font_staging.buffer,
            s.font.image,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            &region,
        )
    };
    barrier(
        d,
        cb,
        s.font.image,
        (
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
        ),
        (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
        (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ),
    );
}

/// The Vulkan HUD's data: the device's frame history, and the device's names.
struct FrameSource<'a> {
    d: &'a Device,
    frames: &'a SharedFrameState,
}

impl HudSource for FrameSource<'_> {
    fn fill(&self, data: &mut HudData, opts: &HudOptions) {
        data.fill_from(&self.frames.lock().session, opts);
        if data.device.is_empty() {
            data.device = self.d.name();
            if let Some((name, info)) = self.d.driver_properties() {
                data.driver = format!("{name}  {info}");
            }
        }
    }

    /// Never waits for the frame lock.
    fn has_fps(&self) -> bool {
        self.frames
            .try_lock()
            .is_some_and(|f| f.session.history().is_some_and(|h| h.fps(1_000_000_000).is_some()))
    }
}

/// Begins this frame's recording of `rec`'s command buffer, once. What the buffer held before
/// is gone from then on, even if the submission fails.
fn begin(d: &Device, s: &mut Setup, rec: &mut Recorded) -> Result<(), vk::Result> {
    if rec.recorded {
        return Ok(());
    }
    if let Some(slot) = s.slots.get_mut(rec.image as usize) {
        slot.composites = None;
    }
    // Not ONE_TIME_SUBMIT: a lone composite is submitted again at later presents of the image.
    let bi = vk::CommandBufferBeginInfo::default();
    // SAFETY: our command buffer, not pending (its ticket is done); the pool allows reset.
    unsafe { d.fns.begin_command_buffer(rec.cb, &bi) }?;
    rec.recorded = true;
    Ok(())
}

/// One frame of the HUD on one swapchain image, recorded into that image's command buffer.
struct FrameRecorder<'a> {
    d: &'a Device,
    ctx: &'a FrameCtx<'a>,
    s: &'a mut Setup,
    desc: &'a Desc,
    fences: &'a mut FencePool,
    shots: &'a mut Vec<Shot>,
    rec: &'a mut Recorded,
    /// The presented image.
    target: vk::Image,
    /// Where the image's command buffer composites, when that is all it holds and this frame
    /// may submit it again.
    reusable: Option<Place>,
    /// This frame submits the last recording again.
    reused: bool,
}

impl HudRenderer for FrameRecorder<'_> {
    type Error = vk::Result;

    fn content_free(&mut self) -> bool {
        self.s.content_ticket.is_none_or(|t| self.fences.is_done(self.d, t))
    }

    fn upload(&mut self, draw: &DrawOutput, size: [u32; 2]) -> Result<(), vk::Result> {
        begin(self.d, self.s, self.rec)?;
        upload(self.d, self.ctx, self.s, self.rec.cb, draw, size)
    }

    fn composite(&mut self, origin: [i32; 2], size: [u32; 2]) -> Result<(), vk::Result> {
        let place = (origin, size);
        if !self.rec.recorded && self.reusable == Some(place) {
            self.reused = true;
            return Ok(());
        }
        let alone = !self.rec.recorded;
        begin(self.d, self.s, self.rec)?;
        self.rec.composites = alone.then_some(place);
        if self.desc.copy_target && self.ctx.opts.alpha >= 1.0 {
            composite_copy(self, origin, size);
        } else {
            composite(self, origin, size);
        }
        Ok(())
    }

    fn read_back(&mut self, path: &str) -> Result<(), vk::Result> {
        // Screenshot frames never reuse a recording (`record`).
        debug_assert!(!self.reused);
        begin(self.d, self.s, self.rec)?;
        self.rec.composites = None;
        match record_shot(self.d, self.ctx.gpu, self.desc, self.rec.cb, self.target, path) {
            Ok(sh) => {
                self.shots.push(sh);
                self.rec.shot = true;
            }
            Err(e) => framescope_core::log::error(format_args!("screenshot {path}: cannot read back the image: {e:?}")),
        }
        Ok(())
    }
}

/// Records the rendering of the HUD's draw lists (`size` pixels of content) into the cached
/// image; the buffers are free (the content ticket is done).
fn upload(
    d: &Device,
    ctx: &FrameCtx<'_>,
    s: &mut Setup,
    cb: vk::CommandBuffer,
    draw: &DrawOutput,
    size: [u32; 2],
) -> Result<(), vk::Result> {
    let vbytes = (draw.vertices.len() * std::mem::size_of::<DrawVert>()) as u64;
    let ibytes = (draw.indices.len() * 2) as u64;
    // The buffers are free (the last refresh's ticket is done): grow by replacing them.
    if vbytes > s.vbuf.size {
        s.vbuf.destroy(d);
        s.vbuf = Buffer::host(
            d,
            ctx.gpu,
            vbytes.next_power_of_two(),
            vk::BufferUsageFlags::VERTEX_BUFFER,
        )?;
    }
    if ibytes > s.ibuf.size {
        s.ibuf.destroy(d);
        s.ibuf = Buffer::host(
            d,
            ctx.gpu,
            ibytes.next_power_of_two(),
            vk::BufferUsageFlags::INDEX_BUFFER,
        )?;
    }
    // SAFETY: both mappings are at least as large as the bytes copied; no pending work reads
    // them (their last use is done).
    unsafe {
        std::ptr::copy_nonoverlapping(draw.vertices.as_ptr().cast::<u8>(), s.vbuf.mapped, vbytes as usize);
        std::ptr::copy_nonoverlapping(draw.indices.as_ptr().cast::<u8>(), s.ibuf.mapped, ibytes as usize);
    }
    let f = &d.fns;
    let [w, h] = size;
    let clear = [vk::ClearValue {
        color: vk::ClearColorValue { float32: [0.0; 4] },
    }];
    let area = vk::Rect2D {
        offset: vk::Offset2D { x: 0, y: 0 },
        extent: vk::Extent2D { width: w, height: h },
    };
    let rp = vk::RenderPassBeginInfo::default()
        .render_pass(ctx.gpu.content_pass)
        .framebuffer(s.content_fb)
        .render_area(area)
        .clear_values(&clear);
    let canvas = [s.canvas[0] as f32, s.canvas[1] as f32];
    let push: [f32; 4] = [2.0 / canvas[0], 2.0 / canvas[1], -1.0, -1.0];
    let mut push_bytes = [0u8; 16];
    for (i, v) in push.iter().enumerate() {
        push_bytes[i * 4..i * 4 + 4].copy_from_slice(&v.to_ne_bytes());
    }
    // SAFETY: recording into our command buffer with objects of ours that outlive it.
    unsafe {
        f.cmd_begin_render_pass(cb, &rp, vk::SubpassContents::INLINE);
        f.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, ctx.gpu.content_pipeline);
        f.cmd_set_viewport(
            cb,
            0,
            &[vk::Viewport {
                x: 0.0,
                y: 0.0,
                width: canvas[0],
                height: canvas[1],
                min_depth: 0.0,
                max_depth: 1.0,
            }],
        );
        f.cmd_bind_descriptor_sets(
            cb,
            vk::PipelineBindPoint::GRAPHICS,
            ctx.gpu.content_layout,
            0,
            &[s.font_set],
            &[],
        );
        f.cmd_push_constants(cb, ctx.gpu.content_layout, vk::ShaderStageFlags::VERTEX, 0, &push_bytes);
        f.cmd_bind_vertex_buffers(cb, 0, &[s.vbuf.buffer], &[0]);
        f.cmd_bind_index_buffer(cb, s.ibuf.buffer, 0, vk::IndexType::UINT16);
        for c in &draw.cmds {
            let x0 = c.clip[0].max(0.0);
            let y0 = c.clip[1].max(0.0);
            let x1 = c.clip[2].min(w as f32);
            let y1 = c.clip[3].min(h as f32);
            if x1 <= x0 || y1 <= y0 || c.count == 0 {
                continue;
            }
            f.cmd_set_scissor(
                cb,
                0,
                &[vk::Rect2D {
                    offset: vk::Offset2D {
                        x: x0 as i32,
                        y: y0 as i32,
                    },
                    extent: vk::Extent2D {
                        width: (x1 - x0).ceil() as u32,
                        height: (y1 - y0).ceil() as u32,
                    },
                }],
            );
            f.cmd_draw_indexed(cb, c.count, 1, c.first_index, c.vertex_offset as i32, 0);
        }
        f.cmd_end_render_pass(cb);
    }
    Ok(())
}

/// Draws the cached HUD over swapchain image `image` with one quad.
fn composite(r: &FrameRecorder<'_>, origin: [i32; 2], size: [u32; 2]) {
    let (d, ctx, s, desc, cb, image) = (r.d, r.ctx, &*r.s, r.desc, r.rec.cb, r.rec.image);
    let target = desc.extent;
    let Some((x, y, w, h)) = layout::visible(origin, size, target) else {
        return;
    };
    let (tw, th) = (target[0] as f32, target[1] as f32);
    let ndc = |px: i32, size: f32| 2.0 * px as f32 / size - 1.0;
    let push = CompositePush {
        rect: [
            ndc(origin[0], tw),
            ndc(origin[1], th),
            ndc(origin[0] + size[0] as i32, tw),
            ndc(origin[1] + size[1] as i32, th),
        ],
        uv_max: [size[0] as f32 / s.canvas[0] as f32, size[1] as f32 / s.canvas[1] as f32],
        srgb: u32::from(gpu::is_srgb(desc.format)),
        pad: 0,
    };
    let mut bytes = [0u8; std::mem::size_of::<CompositePush>()];
    for (i, v) in push.rect.iter().enumerate() {
        bytes[i * 4..i * 4 + 4].copy_from_slice(&v.to_ne_bytes());
    }
    bytes[16..20].copy_from_slice(&push.uv_max[0].to_ne_bytes());
    bytes[20..24].copy_from_slice(&push.uv_max[1].to_ne_bytes());
    bytes[24..28].copy_from_slice(&push.srgb.to_ne_bytes());
    let area = vk::Rect2D {
        offset: vk::Offset2D {
            x: x as i32,
            y: y as i32,
        },
        extent: vk::Extent2D { width: w, height: h },
    };
    let rp = vk::RenderPassBeginInfo::default()
        .render_pass(s.render_pass)
        .framebuffer(s.slots[image as usize].framebuffer)
        .render_area(area);
    let f = &d.fns;
    // SAFETY: recording into our command buffer; the framebuffer is of this image, the
    // descriptor set of our cached image (SHADER_READ_ONLY_OPTIMAL after its render pass).
    unsafe {
        f.cmd_begin_render_pass(cb, &rp, vk::SubpassContents::INLINE);
        f.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, s.pipeline);
        f.cmd_set_viewport(
            cb,
            0,
            &[vk::Viewport {
                x: 0.0,
                y: 0.0,
                width: tw,
                height: th,
                min_depth: 0.0,
                max_depth: 1.0,
            }],
        );
        f.cmd_set_scissor(cb, 0, &[area]);
        f.cmd_bind_descriptor_sets(
            cb,
            vk::PipelineBindPoint::GRAPHICS,
            ctx.gpu.composite_layout,
            0,
            &[s.content_set],
            &[],
        );
        f.cmd_push_constants(
            cb,
            ctx.gpu.composite_layout,
            vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT,
            0,
            &bytes,
        );
        f.cmd_draw(cb, 4, 1, 0, 0);
        f.cmd_end_render_pass(cb);
    }
}

/// Composites an opaque HUD (`hud_alpha=1`) with a copy instead of a draw: every pixel of the
/// cached HUD is opaque, so blending would give the same bytes. A copy is a row memcpy on
/// software drivers, where a blended quad runs a fragment shader on every HUD pixel (on
/// llvmpipe ~2M instructions per frame for a 300x200 HUD, more than the app's own frame), and
/// a DMA on GPUs. The cached image holds sRGB-encoded BGRA values, which is what a B8G8R8A8
/// image stores whether its view is UNORM or SRGB, so the raw copy is exact for both.
fn composite_copy(r: &FrameRecorder<'_>, origin: [i32; 2], size: [u32; 2]) {
    let (d, s, desc, cb, target) = (r.d, &*r.s, r.desc, r.rec.cb, r.target);
    let Some((x, y, w, h)) = layout::visible(origin, size, desc.extent) else {
        return;
    };
    let image_barrier = |image, (old, new), (src, dst)| {
        vk::ImageMemoryBarrier::default()
            .old_layout(old)
            .new_layout(new)
            .src_access_mask(src)
            .dst_access_mask(dst)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .image(image)
            .subresource_range(gpu::color_range())
    };
    use vk::AccessFlags as A;
    use vk::ImageLayout as L;
    use vk::PipelineStageFlags as P;
    // The app's writes to the presented image reach us through the present semaphores, waited
    // at COLOR_ATTACHMENT_OUTPUT | TRANSFER; the cached image was written by a render pass
    // (this or an earlier submission).
    let before = [
        image_barrier(
            target,
            (L::PRESENT_SRC_KHR, L::TRANSFER_DST_OPTIMAL),
            (A::empty(), A::TRANSFER_WRITE),
        ),
        image_barrier(
            s.content.image,
            (L::SHADER_READ_ONLY_OPTIMAL, L::TRANSFER_SRC_OPTIMAL),
            (A::COLOR_ATTACHMENT_WRITE, A::TRANSFER_READ),
        ),
    ];
    let after = [
        image_barrier(
            target,
            (L::TRANSFER_DST_OPTIMAL, L::PRESENT_SRC_KHR),
            (A::TRANSFER_WRITE, A::empty()),
        ),
        image_barrier(
            s.content.image,
            (L::TRANSFER_SRC_OPTIMAL, L::SHADER_READ_ONLY_OPTIMAL),
            (A::empty(), A::empty()),
        ),
    ];
    let layers = vk::ImageSubresourceLayers {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        mip_level: 0,
        base_array_layer: 0,
        layer_count: 1,
    };
    let region = [vk::ImageCopy {
        src_subresource: layers,
        src_offset: vk::Offset3D {
            x: x as i32 - origin[0],
            y: y as i32 - origin[1],
            z: 0,
        },
        dst_subresource: layers,
        dst_offset: vk::Offset3D {
            x: x as i32,
            y: y as i32,
            z: 0,
        },
        extent: vk::Extent3D {
            width: w,
            height: h,
            depth: 1,
        },
    }];
    let f = &d.fns;
    // SAFETY: recording into our command buffer outside any render pass; both images are ours
    // or the presented one, in the layouts named; the region lies inside both.
    unsafe {
        f.cmd_pipeline_barrier(
            cb,
            P::COLOR_ATTACHMENT_OUTPUT | P::TRANSFER,
            P::TRANSFER,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &before,
        );
        f.cmd_copy_image(
            cb,
            s.content.image,
            L::TRANSFER_SRC_OPTIMAL,
            target,
            L::TRANSFER_DST_OPTIMAL,
            &region,
        );
        f.cmd_pipeline_barrier(
            cb,
            P::TRANSFER,
            P::BOTTOM_OF_PIPE,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &after,
        );
    }
}

/// Copies the presented image into a new host-visible buffer (one-off, screenshot frame only).
fn record_shot(
    d: &Device,
    gpu: &Gpu,
    desc: &Desc,
    cb: vk::CommandBuffer,
    image: vk::Image,
    path: &str,
) -> Result<Shot, vk::Result> {
    let order = match desc.format {
        vk::Format::B8G8R8A8_UNORM | vk::Format::B8G8R8A8_SRGB => PixelOrder::Bgra,
        vk::Format::R8G8B8A8_UNORM | vk::Format::R8G8B8A8_SRGB | vk::Format::A8B8G8R8_UNORM_PACK32 => PixelOrder::Rgba,
        _ => return Err(vk::Result::ERROR_FORMAT_NOT_SUPPORTED),
    };
    let [w, h] = desc.extent;
    let buffer = Buffer::host(
        d,
        gpu,
        u64::from(w) * u64::from(h) * 4,
        vk::BufferUsageFlags::TRANSFER_DST,
    )?;
    barrier(
        d,
        cb,
        image,
        (vk::ImageLayout::PRESENT_SRC_KHR, vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
        (
            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
            vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
        ),
        (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
    );
    let region = [vk::BufferImageCopy::default()
        .image_subresource(vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: 0,
            base_array_layer: 0,
            layer_count: 1,
        })
        .image_extent(vk::Extent3D {
            width: w,
            height: h,
            depth: 1,
        })];
    // SAFETY: the image is in TRANSFER_SRC_OPTIMAL (barrier above), the buffer holds w*h*4.
    unsafe {
        d.fns
            .cmd_copy_image_to_buffer(cb, image, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, buffer.buffer, &region)
    };
    barrier(
        d,
        cb,
        image,
        (vk::ImageLayout::TRANSFER_SRC_OPTIMAL, vk::ImageLayout::PRESENT_SRC_KHR),
        (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
        (vk::PipelineStageFlags::BOTTOM_OF_PIPE, vk::AccessFlags::empty()),
    );
    // The host reads the buffer after the fence: make the copy visible to host reads.
    let host = [vk::BufferMemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
        .dst_access_mask(vk::AccessFlags::HOST_READ)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .buffer(buffer.buffer)
        .offset(0)
        .size(vk::WHOLE_SIZE)];
    // SAFETY: recording into our command buffer, outside a render pass.
    unsafe {
        d.fns.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::HOST,
            vk::DependencyFlags::empty(),
            &[],
            &host,
            &[],
        )
    };
    Ok(Shot {
        buffer,
        ticket: None,
        width: w,
        height: h,
        order,
        path: path.to_string(),
    })
}

/// The swapchain as the dump and the HUD describe it.
fn info_of(desc: &Desc) -> SwapchainInfo {
    SwapchainInfo {
        handle: desc.handle.as_raw(),
        width: desc.extent[0],
        height: desc.extent[1],
        format: desc.format.as_raw(),
        present_mode: desc.present_mode.as_raw(),
    }
}

/// The descriptor sets of the font and the cached HUD image.
fn build_descriptors(d: &Device, gpu: &Gpu, s: &mut Setup) -> Result<(), vk::Result> {
    let f = &d.fns;
    let sizes = [vk::DescriptorPoolSize {
        ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
        descriptor_count: 2,
    }];
    let ci = vk::DescriptorPoolCreateInfo::default().max_sets(2).pool_sizes(&sizes);
    // SAFETY: valid create info.
    s.desc_pool = unsafe { f.create_descriptor_pool(&ci, None) }?;
    let layouts = [gpu.set_layout, gpu.set_layout];
    let ai = vk::DescriptorSetAllocateInfo::default()
        .descriptor_pool(s.desc_pool)
        .set_layouts(&layouts);
    // SAFETY: the pool has room for exactly these two sets.
    let sets = unsafe { f.allocate_descriptor_sets(&ai) }?;
    s.font_set = sets[0];
    s.content_set = sets[1];
    let font_info = [vk::DescriptorImageInfo {
        sampler: gpu.sampler_linear,
        image_view: s.font.view,
        image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
    }];
    let content_info = [vk::DescriptorImageInfo {
        sampler: gpu.sampler_nearest,
        image_view: s.content.view,
        image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
    }];
    let writes = [
        vk::WriteDescriptorSet::default()
            .dst_set(s.font_set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .image_info(&font_info),
        vk::WriteDescriptorSet::default()
            .dst_set(s.content_set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .image_info(&content_info),
    ];
    // SAFETY: fresh sets, not in use.
    unsafe { f.update_descriptor_sets(&writes, &[]) };
    Ok(())
}
