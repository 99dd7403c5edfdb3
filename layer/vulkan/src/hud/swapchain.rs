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
use super::gpu::{self, CompositePush, Gpu};
use crate::dispatch::device::Device;
use crate::dispatch::vk_calls::{CommandPool, PoolBuffer, Recorder, Shared};
use crate::dispatch::vk_objects::{DescriptorPool, DeviceImage, Framebuffer, HostBuffer, ImageView, Semaphore};
use crate::frames::SharedFrameState;
use ash::vk::{self, Handle};
use framescope_core::frame::SwapchainInfo;
use framescope_overlay::controller::{FrameInput, FramePlan, HudRenderer, HudSource, SurfaceHud};
use framescope_overlay::screenshot::PixelOrder;
use framescope_overlay::{layout, DrawOutput, HudData, HudOptions};
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
    /// The app's presented image (alive while its swapchain is).
    image: vk::Image,
    /// Where the HUD is drawn: the framebuffer of a view of `image` (drop order: framebuffer,
    /// then view).
    target: Option<(Framebuffer, ImageView)>,
    cb: PoolBuffer,
    semaphore: Semaphore,
    ticket: Option<Ticket>,
    /// The command buffer holds exactly one composite, at this place, and can be submitted
    /// again for another.
    composites: Option<Place>,
}

/// Where the cached HUD goes on the image: origin and size in pixels.
type Place = ([i32; 2], [u32; 2]);

struct Shot {
    buffer: HostBuffer,
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

/// What a swapchain's HUD owns. Fields drop in order: the image slots, then the pool (its
/// command buffers with it), then the drawing objects.
struct Setup {
    family: u32,
    slots: Vec<ImageSlot>,
    /// Held for its `Drop` (which frees the slots' command buffers).
    _pool: CommandPool,
    /// `None` when the HUD is not drawn here (screenshots only).
    draw: Option<Drawing>,
    content_ticket: Option<Ticket>,
}

/// The objects of a swapchain the HUD is drawn on. Fields drop in order: descriptor pool
/// (its sets with it), framebuffer, then the images and buffers.
struct Drawing {
    render_pass: Shared<vk::RenderPass>,
    pipeline: Shared<vk::Pipeline>,
    /// Held for its `Drop` (which frees the sets).
    _desc_pool: DescriptorPool,
    font_set: vk::DescriptorSet,
    content_set: vk::DescriptorSet,
    content_fb: Framebuffer,
    font: DeviceImage,
    font_size: [u32; 2],
    font_staging: HostBuffer,
    font_uploaded: bool,
    content: DeviceImage,
    canvas: [u32; 2],
    /// Grown on demand (replaced when a refresh needs more).
    vbuf: Option<HostBuffer>,
    ibuf: Option<HostBuffer>,
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

    /// Creates the per-image objects and (when drawing) the cached image, font and buffers;
    /// on failure, what was made is dropped.
    pub fn ensure_setup(&mut self, d: &Device, ctx: &FrameCtx<'_>, family: u32) -> Result<(), vk::Result> {
        if self.setup.is_none() {
            self.setup = Some(self.build(d, ctx, family)?);
        }
        Ok(())
    }

    fn build(&self, d: &Device, ctx: &FrameCtx<'_>, family: u32) -> Result<Setup, vk::Result> {
        let pool = d.create_command_pool_with(family, vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER)?;
        let images = d.swapchain_images(self.desc.handle)?;
        // Only used under this swapchain's lock (the pool's external synchronization).
        let cbs = d.allocate_command_buffers(&pool, images.len() as u32)?;
        let composite = if ctx.draw_hud && self.desc.drawable {
            Some(ctx.gpu.composite_for(d, self.desc.format)?)
        } else {
            None
        };
        let mut slots = Vec::with_capacity(images.len());
        for (&image, &cb) in images.iter().zip(&cbs) {
            let target = match composite {
                Some((rp, _)) => {
                    let view = d.create_view(image, self.desc.format)?;
                    let fb = framebuffer(d, rp, &view, self.desc.extent)?;
                    Some((fb, view))
                }
                None => None,
            };
            slots.push(ImageSlot {
                image,
                target,
                cb,
                semaphore: d.create_semaphore()?,
                ticket: None,
                composites: None,
            });
        }
        let draw = match composite {
            Some(rp_pipeline) => Some(build_drawing(d, ctx, rp_pipeline)?),
            None => None,
        };
        Ok(Setup {
            family,
            slots,
            _pool: pool,
            draw,
            content_ticket: None,
        })
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
        let (cb, target) = (slot.cb, slot.image);
        let drawing = ctx.draw_hud && s.draw.is_some();
        let shot = ctx.shot_path.is_some() && self.desc.copyable;
        if !drawing && !shot {
            return Ok(None);
        }
        let mut rec = Recorded {
            cb: cb.handle(),
            semaphore: slot.semaphore.handle(),
            image,
            ..Recorded::default()
        };
        let font_due = drawing && s.draw.as_ref().is_some_and(|w| !w.font_uploaded);
        // A screenshot's copy goes after the composite, and the font's upload before it: those
        // frames record.
        let reusable = if shot || font_due { None } else { slot.composites };
        let canvas = s.draw.as_ref().map_or([0, 0], |w| w.canvas);
        let input = FrameInput {
            now: ctx.now,
            opts: ctx.opts,
            plan: FramePlan { draw: drawing, shot },
            shot_path: ctx.shot_path,
            target: self.desc.extent,
            canvas,
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
            cb,
            cmd: None,
            target,
            reusable,
            reused: false,
        };
        let r = recorder
            .font_upload(font_due)
            .and_then(|()| self.surface.frame(&mut recorder, &input, &source));
        let (cmd, reused) = (recorder.cmd.take(), recorder.reused);
        // A failure after the begin (an allocation for a grown HUD, under memory pressure)
        // would leave the command buffer recording: it is ended either way, so the image's next
        // frame can begin it again (VUID-vkBeginCommandBuffer-commandBuffer-00049).
        let ended = cmd.map(Recorder::end);
        let done = r?;
        rec.refreshed = done.refreshed;
        match ended {
            Some(end) => end?,
            // Nothing to draw (an empty HUD): the present goes as the app made it.
            None if !reused => return Ok(None),
            None => {}
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
            if let Some(w) = s.draw.as_mut() {
                w.font_uploaded = true;
            }
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
    pub fn abort(&mut self, rec: &Recorded) {
        if self.setup.is_some() && rec.refreshed {
            // Re-render next frame; the content image's state is unknown.
            self.surface.forget_content();
        }
        if rec.shot {
            self.shots.pop();
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
            let sh = self.shots.swap_remove(i);
            if sh.ticket.is_some() {
                // The copy into the buffer has completed (its ticket is done).
                let len = (sh.width as usize) * (sh.height as usize) * 4;
                let pixels = sh.buffer.read(len).to_vec();
                framescope_overlay::screenshot::write_async(
                    sh.path,
                    sh.width,
                    sh.height,
                    sh.width as usize * 4,
                    sh.order,
                    pixels,
                );
            }
        }
    }

    /// Waits for our pending work on this swapchain and destroys everything.
    pub fn destroy(&mut self, d: &Device, fences: &mut FencePool) {
        self.collect_shots(d, fences, true);
        if let Some(s) = self.setup.take() {
            for slot in &s.slots {
                if let Some(t) = slot.ticket {
                    fences.wait(d, t);
                }
            }
            if let Some(t) = s.content_ticket {
                fences.wait(d, t);
            }
            drop(s);
        }
    }
}

/// A framebuffer of render pass `rp` over one view of `extent`.
fn framebuffer(
    d: &Device,
    rp: Shared<vk::RenderPass>,
    view: &ImageView,
    extent: [u32; 2],
) -> Result<Framebuffer, vk::Result> {
    let views = [view.handle()];
    d.create_framebuffer(
        &vk::FramebufferCreateInfo::default()
            .render_pass(rp.handle())
            .attachments(&views)
            .width(extent[0])
            .height(extent[1])
            .layers(1),
    )
}

/// The font atlas, the cached HUD image (with its framebuffer) and their descriptor sets, for
/// a swapchain the HUD is drawn on.
fn build_drawing(
    d: &Device,
    ctx: &FrameCtx<'_>,
    (render_pass, pipeline): (Shared<vk::RenderPass>, Shared<vk::Pipeline>),
) -> Result<Drawing, vk::Result> {
    let gpu = ctx.gpu;
    let atlas = framescope_overlay::ui::font_atlas(ctx.opts).map_err(|_| vk::Result::ERROR_INITIALIZATION_FAILED)?;
    let font_size = [atlas.width, atlas.height];
    let font = gpu.image(
        d,
        font_size,
        vk::Format::R8G8B8A8_UNORM,
        vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST,
    )?;
    let mut font_staging = gpu.host_buffer(d, atlas.pixels.len() as u64, vk::BufferUsageFlags::TRANSFER_SRC)?;
    font_staging.write(&atlas.pixels);
    let side = (1024.0 * ctx.opts.scale.max(1.0)).min(4096.0) as u32;
    let canvas = [side, side];
    let content = gpu.image(
        d,
        canvas,
        gpu::CONTENT_FORMAT,
        vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_SRC,
    )?;
    let views = [content.view()];
    let content_fb = d.create_framebuffer(
        &vk::FramebufferCreateInfo::default()
            .render_pass(gpu.content_pass.handle())
            .attachments(&views)
            .width(canvas[0])
            .height(canvas[1])
            .layers(1),
    )?;
    let (desc_pool, font_set, content_set) = descriptors(d, gpu, &font, &content)?;
    Ok(Drawing {
        render_pass,
        pipeline,
        _desc_pool: desc_pool,
        font_set,
        content_set,
        content_fb,
        font,
        font_size,
        font_staging,
        font_uploaded: false,
        content,
        canvas,
        vbuf: None,
        ibuf: None,
    })
}

/// The descriptor sets of the font and the cached HUD image, in a pool of their own.
fn descriptors(
    d: &Device,
    gpu: &Gpu,
    font: &DeviceImage,
    content: &DeviceImage,
) -> Result<(DescriptorPool, vk::DescriptorSet, vk::DescriptorSet), vk::Result> {
    let sizes = [vk::DescriptorPoolSize {
        ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
        descriptor_count: 2,
    }];
    let pool = d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(2).pool_sizes(&sizes))?;
    let sets = d.allocate_descriptor_sets(&pool, &[gpu.set_layout, gpu.set_layout])?;
    let (font_set, content_set) = (sets[0], sets[1]);
    let font_info = [vk::DescriptorImageInfo {
        sampler: gpu.sampler_linear.handle(),
        image_view: font.view(),
        image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
    }];
    let content_info = [vk::DescriptorImageInfo {
        sampler: gpu.sampler_nearest.handle(),
        image_view: content.view(),
        image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
    }];
    d.update_descriptor_sets(&[
        vk::WriteDescriptorSet::default()
            .dst_set(font_set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .image_info(&font_info),
        vk::WriteDescriptorSet::default()
            .dst_set(content_set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .image_info(&content_info),
    ]);
    Ok((pool, font_set, content_set))
}

/// A barrier moving `image`'s colour subresource from one layout to another.
fn image_barrier(
    image: vk::Image,
    (old, new): (vk::ImageLayout, vk::ImageLayout),
    (src, dst): (vk::AccessFlags, vk::AccessFlags),
) -> vk::ImageMemoryBarrier<'static> {
    vk::ImageMemoryBarrier::default()
        .old_layout(old)
        .new_layout(new)
        .src_access_mask(src)
        .dst_access_mask(dst)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(gpu::color_range())
}

/// The single colour layer of a 2D image, for copies.
const COLOR_LAYER: vk::ImageSubresourceLayers = vk::ImageSubresourceLayers {
    aspect_mask: vk::ImageAspectFlags::COLOR,
    mip_level: 0,
    base_array_layer: 0,
    layer_count: 1,
};

fn record_font_upload(cmd: &Recorder<'_>, w: &Drawing) {
    use vk::AccessFlags as A;
    use vk::ImageLayout as L;
    use vk::PipelineStageFlags as P;
    cmd.cmd_barriers(
        (P::TOP_OF_PIPE, P::TRANSFER),
        &[],
        &[image_barrier(
            w.font.image(),
            (L::UNDEFINED, L::TRANSFER_DST_OPTIMAL),
            (A::empty(), A::TRANSFER_WRITE),
        )],
    );
    let region = [vk::BufferImageCopy::default()
        .image_subresource(COLOR_LAYER)
        .image_extent(vk::Extent3D {
            width: w.font_size[0],
            height: w.font_size[1],
            depth: 1,
        })];
    cmd.cmd_copy_buffer_to_image(&w.font_staging, w.font.image(), &region);
    cmd.cmd_barriers(
        (P::TRANSFER, P::FRAGMENT_SHADER),
        &[],
        &[image_barrier(
            w.font.image(),
            (L::TRANSFER_DST_OPTIMAL, L::SHADER_READ_ONLY_OPTIMAL),
            (A::TRANSFER_WRITE, A::SHADER_READ),
        )],
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

/// One frame of the HUD on one swapchain image, recorded into that image's command buffer.
struct FrameRecorder<'a> {
    d: &'a Device,
    ctx: &'a FrameCtx<'a>,
    s: &'a mut Setup,
    desc: &'a Desc,
    fences: &'a mut FencePool,
    shots: &'a mut Vec<Shot>,
    rec: &'a mut Recorded,
    cb: PoolBuffer,
    /// The image's command buffer, once this frame began recording it.
    cmd: Option<Recorder<'a>>,
    /// The presented image.
    target: vk::Image,
    /// Where the image's command buffer composites, when that is all it holds and this frame
    /// may submit it again.
    reusable: Option<Place>,
    /// This frame submits the last recording again.
    reused: bool,
}

impl<'a> FrameRecorder<'a> {
    /// Begins this frame's recording of the image's command buffer, once. What the buffer held
    /// before is gone from then on, even if the submission fails.
    fn begin(&mut self) -> Result<(), vk::Result> {
        if self.cmd.is_some() {
            return Ok(());
        }
        if let Some(slot) = self.s.slots.get_mut(self.rec.image as usize) {
            slot.composites = None;
        }
        // Not ONE_TIME_SUBMIT: a lone composite is submitted again at later presents of the
        // image. The buffer is not pending (its ticket is done) and its pool allows a reset.
        self.cmd = Some(self.d.begin(self.cb, vk::CommandBufferUsageFlags::empty())?);
        self.rec.recorded = true;
        Ok(())
    }

    /// The font atlas's first upload, before anything samples it.
    fn font_upload(&mut self, due: bool) -> Result<(), vk::Result> {
        if !due {
            return Ok(());
        }
        self.begin()?;
        if let (Some(cmd), Some(w)) = (&self.cmd, &self.s.draw) {
            record_font_upload(cmd, w);
            self.rec.font = true;
        }
        Ok(())
    }
}

impl HudRenderer for FrameRecorder<'_> {
    type Error = vk::Result;

    fn content_free(&mut self) -> bool {
        self.s.content_ticket.is_none_or(|t| self.fences.is_done(self.d, t))
    }

    fn upload(&mut self, draw: &DrawOutput, size: [u32; 2]) -> Result<(), vk::Result> {
        self.begin()?;
        let (Some(cmd), Some(w)) = (&self.cmd, self.s.draw.as_mut()) else {
            return Ok(());
        };
        upload(self.d, self.ctx.gpu, w, cmd, draw, size)
    }

    fn composite(&mut self, origin: [i32; 2], size: [u32; 2]) -> Result<(), vk::Result> {
        let place = (origin, size);
        if !self.rec.recorded && self.reusable == Some(place) {
            self.reused = true;
            return Ok(());
        }
        let alone = !self.rec.recorded;
        self.begin()?;
        self.rec.composites = alone.then_some(place);
        let (Some(cmd), Some(w)) = (&self.cmd, &self.s.draw) else {
            return Ok(());
        };
        if self.desc.copy_target && self.ctx.opts.alpha >= 1.0 {
            composite_copy(cmd, w, self.desc, self.target, place);
        } else if let Some((fb, _)) = self
            .s
            .slots
            .get(self.rec.image as usize)
            .and_then(|s| s.target.as_ref())
        {
            composite(cmd, self.ctx.gpu, w, self.desc, fb, place);
        }
        Ok(())
    }

    fn read_back(&mut self, path: &str) -> Result<(), vk::Result> {
        // Screenshot frames never reuse a recording (`record`).
        debug_assert!(!self.reused);
        self.begin()?;
        self.rec.composites = None;
        let Some(cmd) = &self.cmd else { return Ok(()) };
        match record_shot(self.d, self.ctx.gpu, self.desc, cmd, self.target, path) {
            Ok(sh) => {
                self.shots.push(sh);
                self.rec.shot = true;
            }
            Err(e) => framescope_core::log::error(format_args!("screenshot {path}: cannot read back the image: {e:?}")),
        }
        Ok(())
    }
}

/// `buf` when it holds `bytes`, else a new one of the next power of two (the old one is free:
/// the last refresh's ticket is done).
fn grown<'b>(
    d: &Device,
    gpu: &Gpu,
    buf: &'b mut Option<HostBuffer>,
    bytes: &[u8],
    usage: vk::BufferUsageFlags,
) -> Result<&'b mut HostBuffer, vk::Result> {
    let len = bytes.len() as u64;
    if buf.as_ref().is_none_or(|b| b.size() < len) {
        *buf = None;
        *buf = Some(gpu.host_buffer(d, len.next_power_of_two(), usage)?);
    }
    let b = buf.as_mut().ok_or(vk::Result::ERROR_OUT_OF_HOST_MEMORY)?;
    b.write(bytes);
    Ok(b)
}

/// Records the rendering of the HUD's draw lists (`size` pixels of content) into the cached
/// image; the buffers are free (the content ticket is done).
fn upload(
    d: &Device,
    gpu: &Gpu,
    w: &mut Drawing,
    cmd: &Recorder<'_>,
    draw: &DrawOutput,
    size: [u32; 2],
) -> Result<(), vk::Result> {
    grown(
        d,
        gpu,
        &mut w.vbuf,
        bytemuck::cast_slice(&draw.vertices),
        vk::BufferUsageFlags::VERTEX_BUFFER,
    )?;
    grown(
        d,
        gpu,
        &mut w.ibuf,
        bytemuck::cast_slice(&draw.indices),
        vk::BufferUsageFlags::INDEX_BUFFER,
    )?;
    let (Some(vbuf), Some(ibuf)) = (&w.vbuf, &w.ibuf) else {
        return Ok(());
    };
    let [width, height] = size;
    let clear = [vk::ClearValue {
        color: vk::ClearColorValue { float32: [0.0; 4] },
    }];
    let area = vk::Rect2D {
        offset: vk::Offset2D { x: 0, y: 0 },
        extent: vk::Extent2D { width, height },
    };
    let canvas = [w.canvas[0] as f32, w.canvas[1] as f32];
    let push: [f32; 4] = [2.0 / canvas[0], 2.0 / canvas[1], -1.0, -1.0];
    cmd.cmd_begin_render_pass(
        &vk::RenderPassBeginInfo::default()
            .render_pass(gpu.content_pass.handle())
            .framebuffer(w.content_fb.handle())
            .render_area(area)
            .clear_values(&clear),
    );
    cmd.cmd_bind_graphics_pipeline(gpu.content_pipeline);
    cmd.cmd_set_viewport(vk::Viewport {
        x: 0.0,
        y: 0.0,
        width: canvas[0],
        height: canvas[1],
        min_depth: 0.0,
        max_depth: 1.0,
    });
    cmd.cmd_bind_descriptor_set(gpu.content_layout, w.font_set);
    cmd.cmd_push_constants(
        gpu.content_layout,
        vk::ShaderStageFlags::VERTEX,
        bytemuck::cast_slice(&push),
    );
    cmd.cmd_bind_vertex_buffer(vbuf);
    cmd.cmd_bind_index_buffer_u16(ibuf);
    for c in &draw.cmds {
        let x0 = c.clip[0].max(0.0);
        let y0 = c.clip[1].max(0.0);
        let x1 = c.clip[2].min(width as f32);
        let y1 = c.clip[3].min(height as f32);
        if x1 <= x0 || y1 <= y0 || c.count == 0 {
            continue;
        }
        cmd.cmd_set_scissor(vk::Rect2D {
            offset: vk::Offset2D {
                x: x0 as i32,
                y: y0 as i32,
            },
            extent: vk::Extent2D {
                width: (x1 - x0).ceil() as u32,
                height: (y1 - y0).ceil() as u32,
            },
        });
        cmd.cmd_draw_indexed(c.count, c.first_index, c.vertex_offset as i32);
    }
    cmd.cmd_end_render_pass();
    Ok(())
}

/// Draws the cached HUD over the presented image (whose framebuffer is `fb`) with one quad.
fn composite(cmd: &Recorder<'_>, gpu: &Gpu, w: &Drawing, desc: &Desc, fb: &Framebuffer, (origin, size): Place) {
    let target = desc.extent;
    let Some((x, y, vw, vh)) = layout::visible(origin, size, target) else {
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
        uv_max: [size[0] as f32 / w.canvas[0] as f32, size[1] as f32 / w.canvas[1] as f32],
        srgb: u32::from(gpu::is_srgb(desc.format)),
        pad: 0,
    };
    let area = vk::Rect2D {
        offset: vk::Offset2D {
            x: x as i32,
            y: y as i32,
        },
        extent: vk::Extent2D { width: vw, height: vh },
    };
    // The framebuffer is of this image; the descriptor set of our cached image, in
    // SHADER_READ_ONLY_OPTIMAL after its render pass.
    cmd.cmd_begin_render_pass(
        &vk::RenderPassBeginInfo::default()
            .render_pass(w.render_pass.handle())
            .framebuffer(fb.handle())
            .render_area(area),
    );
    cmd.cmd_bind_graphics_pipeline(w.pipeline);
    cmd.cmd_set_viewport(vk::Viewport {
        x: 0.0,
        y: 0.0,
        width: tw,
        height: th,
        min_depth: 0.0,
        max_depth: 1.0,
    });
    cmd.cmd_set_scissor(area);
    cmd.cmd_bind_descriptor_set(gpu.composite_layout, w.content_set);
    cmd.cmd_push_constants(
        gpu.composite_layout,
        vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT,
        bytemuck::bytes_of(&push),
    );
    cmd.cmd_draw(4);
    cmd.cmd_end_render_pass();
}

/// Composites an opaque HUD (`hud_alpha=1`) with a copy instead of a draw: every pixel of the
/// cached HUD is opaque, so blending would give the same bytes. A copy is a row memcpy on
/// software drivers, where a blended quad runs a fragment shader on every HUD pixel (on
/// llvmpipe ~2M instructions per frame for a 300x200 HUD, more than the app's own frame), and
/// a DMA on GPUs. The cached image holds sRGB-encoded BGRA values, which is what a B8G8R8A8
/// image stores whether its view is UNORM or SRGB, so the raw copy is exact for both.
fn composite_copy(cmd: &Recorder<'_>, w: &Drawing, desc: &Desc, target: vk::Image, (origin, size): Place) {
    let Some((x, y, vw, vh)) = layout::visible(origin, size, desc.extent) else {
        return;
    };
    use vk::AccessFlags as A;
    use vk::ImageLayout as L;
    use vk::PipelineStageFlags as P;
    let content = w.content.image();
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
            content,
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
            content,
            (L::TRANSFER_SRC_OPTIMAL, L::SHADER_READ_ONLY_OPTIMAL),
            (A::empty(), A::empty()),
        ),
    ];
    let region = [vk::ImageCopy {
        src_subresource: COLOR_LAYER,
        src_offset: vk::Offset3D {
            x: x as i32 - origin[0],
            y: y as i32 - origin[1],
            z: 0,
        },
        dst_subresource: COLOR_LAYER,
        dst_offset: vk::Offset3D {
            x: x as i32,
            y: y as i32,
            z: 0,
        },
        extent: vk::Extent3D {
            width: vw,
            height: vh,
            depth: 1,
        },
    }];
    cmd.cmd_barriers((P::COLOR_ATTACHMENT_OUTPUT | P::TRANSFER, P::TRANSFER), &[], &before);
    cmd.cmd_copy_image(content, target, &region);
    cmd.cmd_barriers((P::TRANSFER, P::BOTTOM_OF_PIPE), &[], &after);
}

/// Copies the presented image into a new host-visible buffer (one-off, screenshot frame only).
fn record_shot(
    d: &Device,
    gpu: &Gpu,
    desc: &Desc,
    cmd: &Recorder<'_>,
    image: vk::Image,
    path: &str,
) -> Result<Shot, vk::Result> {
    let order = match desc.format {
        vk::Format::B8G8R8A8_UNORM | vk::Format::B8G8R8A8_SRGB => PixelOrder::Bgra,
        vk::Format::R8G8B8A8_UNORM | vk::Format::R8G8B8A8_SRGB | vk::Format::A8B8G8R8_UNORM_PACK32 => PixelOrder::Rgba,
        _ => return Err(vk::Result::ERROR_FORMAT_NOT_SUPPORTED),
    };
    let [w, h] = desc.extent;
    let buffer = gpu.host_buffer(d, u64::from(w) * u64::from(h) * 4, vk::BufferUsageFlags::TRANSFER_DST)?;
    use vk::AccessFlags as A;
    use vk::ImageLayout as L;
    use vk::PipelineStageFlags as P;
    cmd.cmd_barriers(
        (P::COLOR_ATTACHMENT_OUTPUT, P::TRANSFER),
        &[],
        &[image_barrier(
            image,
            (L::PRESENT_SRC_KHR, L::TRANSFER_SRC_OPTIMAL),
            (A::COLOR_ATTACHMENT_WRITE, A::TRANSFER_READ),
        )],
    );
    let region = [vk::BufferImageCopy::default()
        .image_subresource(COLOR_LAYER)
        .image_extent(vk::Extent3D {
            width: w,
            height: h,
            depth: 1,
        })];
    // The buffer holds w*h*4 bytes, the image's size in a 4-byte format (above).
    cmd.cmd_copy_image_to_buffer(image, &buffer, &region);
    cmd.cmd_barriers(
        (P::TRANSFER, P::BOTTOM_OF_PIPE),
        &[],
        &[image_barrier(
            image,
            (L::TRANSFER_SRC_OPTIMAL, L::PRESENT_SRC_KHR),
            (A::TRANSFER_READ, A::empty()),
        )],
    );
    // The host reads the buffer after the fence: make the copy visible to host reads.
    let host = [vk::BufferMemoryBarrier::default()
        .src_access_mask(A::TRANSFER_WRITE)
        .dst_access_mask(A::HOST_READ)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .buffer(buffer.handle())
        .offset(0)
        .size(vk::WHOLE_SIZE)];
    cmd.cmd_barriers((P::TRANSFER, P::HOST), &host, &[]);
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
