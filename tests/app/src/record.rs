//! Command buffer recording with dynamic rendering: turns a [`Chunk`] into
//! one primary (plus its secondaries with `--secondary`). Runs on the
//! recording threads, so it only touches the pool it is handed. The
//! `--render-pass` variant is in `record_pass.rs`.

use std::ffi::CStr;

use ash::{ext, vk};

use crate::pipeline::{Pipeline, Push, PUSH_STAGES};
use crate::scene::{Chunk, Region, Segment, FRAME_LABEL};
use crate::swapchain::Target;
use crate::transitions::{barrier, finish_frame, Use};

/// A command pool plus the buffers allocated from it, handed out again after
/// each reset instead of being reallocated every frame.
pub struct Pool {
    device: ash::Device,
    pool: vk::CommandPool,
    primaries: Vec<vk::CommandBuffer>,
    secondaries: Vec<vk::CommandBuffer>,
    used_primaries: usize,
    used_secondaries: usize,
}

impl Pool {
    pub fn new(device: &ash::Device, queue_family: u32) -> Result<Pool, vk::Result> {
        let info = vk::CommandPoolCreateInfo::default().queue_family_index(queue_family);
        // SAFETY: live device, `info` outlives the call.
        let pool = unsafe { device.create_command_pool(&info, None)? };
        Ok(Pool {
            device: device.clone(),
            pool,
            primaries: Vec::new(),
            secondaries: Vec::new(),
            used_primaries: 0,
            used_secondaries: 0,
        })
    }

    /// The caller must know that no buffer from this pool is pending.
    pub fn reset(&mut self) -> Result<(), vk::Result> {
        // SAFETY: caller contract above; the pool is only used by one thread.
        unsafe {
            self.device
                .reset_command_pool(self.pool, vk::CommandPoolResetFlags::empty())?
        };
        self.used_primaries = 0;
        self.used_secondaries = 0;
        Ok(())
    }

    pub fn next(&mut self, level: vk::CommandBufferLevel) -> Result<vk::CommandBuffer, vk::Result> {
        let (list, used) = if level == vk::CommandBufferLevel::PRIMARY {
            (&mut self.primaries, &mut self.used_primaries)
        } else {
            (&mut self.secondaries, &mut self.used_secondaries)
        };
        if *used == list.len() {
            let info = vk::CommandBufferAllocateInfo::default()
                .command_pool(self.pool)
                .level(level)
                .command_buffer_count(1);
            // SAFETY: the pool is live and externally synchronised by `&mut self`.
            list.extend(unsafe { self.device.allocate_command_buffers(&info)? });
        }
        *used += 1;
        Ok(list[*used - 1])
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // SAFETY: the device is idle at teardown; destroying the pool frees
        // its command buffers.
        unsafe { self.device.destroy_command_pool(self.pool, None) };
    }
}

/// Everything recording needs that is shared, read-only, by all threads.
pub struct Recorder<'a> {
    pub device: &'a ash::Device,
    pub debug_utils: Option<&'a ext::debug_utils::Device>,
    pub pipeline: &'a Pipeline,
    pub regions: &'a [Region],
    pub secondary: bool,
    pub usage: vk::CommandBufferUsageFlags,
    /// Multiview view mask of every rendering instance (0: none). With a
    /// render pass it is in the pass instead.
    pub view_mask: u32,
    /// With `--render-pass` the pass, else null (dynamic rendering).
    pub render_pass: vk::RenderPass,
    /// Push the region's constants before each rendering instance begins (`--push-first`).
    pub push_first: bool,
}

impl Recorder<'_> {
    pub fn record(&self, pool: &mut Pool, chunk: &Chunk, targets: &[Target]) -> Result<vk::CommandBuffer, vk::Result> {
        let cb = pool.next(vk::CommandBufferLevel::PRIMARY)?;
        let d = self.device;
        // SAFETY: `cb` comes from `pool`, which this thread owns exclusively;
        // all handles used below are live for as long as the buffer is.
        unsafe {
            d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default().flags(self.usage))?;
            if chunk.begins_frame {
                self.begin_label(cb, FRAME_LABEL, [1.0, 1.0, 1.0, 1.0]);
            }
            for seg in &chunk.segments {
                self.record_segment(pool, cb, seg, targets[seg.target])?;
            }
            if chunk.ends_frame {
                finish_frame(d, cb, targets);
                self.end_label(cb);
            }
            d.end_command_buffer(cb)?;
        }
        Ok(cb)
    }

    /// With `--push-first`, region `region`'s push constants, recorded before its rendering
    /// instance begins and before any pipeline is bound in the command buffer.
    ///
    /// # Safety
    /// `cb` is recording, outside a rendering instance.
    pub unsafe fn push_before_pass(&self, cb: vk::CommandBuffer, region: usize) {
        if !self.push_first {
            return;
        }
        let r = &self.regions[region];
        let push = Push {
            color: r.color,
            misc: [if r.fullscreen { 1.0 } else { 0.0 }, 0.0, 0.0, 0.0],
        };
        // SAFETY: guaranteed by the caller; push constants need only a compatible layout.
        unsafe {
            self.device
                .cmd_push_constants(cb, self.pipeline.layout, PUSH_STAGES, 0, &push.bytes())
        };
    }

    /// # Safety
    /// `cb` is in the recording state and owned by the calling thread.
    unsafe fn record_segment(
        &self,
        pool: &mut Pool,
        cb: vk::CommandBuffer,
        seg: &Segment,
        target: Target,
    ) -> Result<(), vk::Result> {
        let region = &self.regions[seg.region];
        // Each rendering instance writes the attachment, so later instances
        // (possibly in later submits) must be ordered after earlier ones.
        let from = if seg.first_use {
            Use::DISCARD
        } else {
            Use::ATTACHMENT_WRITTEN
        };
        let attachments = [vk::RenderingAttachmentInfo::default()
            .image_view(target.view)
            .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
            .load_op(if seg.first_use {
                vk::AttachmentLoadOp::CLEAR
            } else {
                vk::AttachmentLoadOp::LOAD
            })
            .store_op(vk::AttachmentStoreOp::STORE)
            .clear_value(vk::ClearValue {
                color: vk::ClearColorValue {
                    float32: [0.05, 0.05, 0.08, 1.0],
                },
            })];
        let flags = if self.secondary {
            vk::RenderingFlags::CONTENTS_SECONDARY_COMMAND_BUFFERS
        } else {
            vk::RenderingFlags::empty()
        };
        let rendering = vk::RenderingInfo::default()
            .flags(flags)
            .render_area(target.extent.into())
            .layer_count(1)
            .view_mask(self.view_mask)
            .color_attachments(&attachments);
        // SAFETY: guaranteed by the caller.
        unsafe {
            barrier(self.device, cb, target.image, target.layers, from, Use::ATTACHMENT);
            // Labels stay in the primary, outside the rendering instance, so
            // they are legal with secondary-contents rendering too.
            self.begin_label(cb, region.label, region.color);
            self.push_before_pass(cb, seg.region);
            self.device.cmd_begin_rendering(cb, &rendering);
            if self.secondary {
                let secondary = self.record_secondary(pool, seg, target)?;
                self.device.cmd_execute_commands(cb, &[secondary]);
            } else {
                self.record_draws(cb, seg, target);
            }
            self.device.cmd_end_rendering(cb);
            self.end_label(cb);
        }
        Ok(())
    }

    /// # Safety
    /// Same contract as [`Self::record_segment`].
    unsafe fn record_secondary(
        &self,
        pool: &mut Pool,
        seg: &Segment,
        target: Target,
    ) -> Result<vk::CommandBuffer, vk::Result> {
        let cb = pool.next(vk::CommandBufferLevel::SECONDARY)?;
        let formats = [self.pipeline.format];
        let mut rendering = vk::CommandBufferInheritanceRenderingInfo::default()
            .color_attachment_formats(&formats)
            .view_mask(self.view_mask)
            .rasterization_samples(vk::SampleCountFlags::TYPE_1);
        let inheritance = vk::CommandBufferInheritanceInfo::default().push_next(&mut rendering);
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(self.usage | vk::CommandBufferUsageFlags::RENDER_PASS_CONTINUE)
            .inheritance_info(&inheritance);
        // SAFETY: `cb` is a fresh secondary from the caller's pool; the
        // inheritance chain lives across begin.
        unsafe {
            self.device.begin_command_buffer(cb, &begin)?;
            self.record_draws(cb, seg, target);
            self.device.end_command_buffer(cb)?;
        }
        Ok(cb)
    }

    /// # Safety
    /// `cb` is recording, inside (or continuing) a rendering instance on
    /// `target`, or subpass `seg.region` of a render pass instance on it.
    pub unsafe fn record_draws(&self, cb: vk::CommandBuffer, seg: &Segment, target: Target) {
        let region = &self.regions[seg.region];
        let d = self.device;
        let push = Push {
            color: region.color,
            misc: [if region.fullscreen { 1.0 } else { 0.0 }, 0.0, 0.0, 0.0],
        };
        let viewport = vk::Viewport {
            x: 0.0,
            y: 0.0,
            width: target.extent.width as f32,
            height: target.extent.height as f32,
            min_depth: 0.0,
            max_depth: 1.0,
        };
        // SAFETY: guaranteed by the caller.
        unsafe {
            let pipeline = self.pipeline.for_region(seg.region);
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
            d.cmd_set_viewport(cb, 0, &[viewport]);
            let scissor = if region.vertex_only {
                vk::Rect2D {
                    offset: vk::Offset2D { x: 0, y: 0 },
                    extent: vk::Extent2D { width: 1, height: 1 },
                }
            } else {
                target.extent.into()
            };
            d.cmd_set_scissor(cb, 0, &[scissor]);
            d.cmd_push_constants(cb, self.pipeline.layout, PUSH_STAGES, 0, &push.bytes());
            for draw in seg.first_draw..seg.first_draw + seg.draw_count {
                // firstInstance carries the draw index into gl_InstanceIndex.
                d.cmd_draw(cb, region.vertices_per_draw, 1, 0, draw);
            }
        }
    }

    /// # Safety
    /// `cb` is recording.
    pub unsafe fn begin_label(&self, cb: vk::CommandBuffer, name: &str, color: [f32; 4]) {
        let Some(du) = self.debug_utils else { return };
        let mut bytes = name.as_bytes().to_vec();
        bytes.push(0);
        let name = CStr::from_bytes_with_nul(&bytes).expect("label names have no NUL");
        let label = vk::DebugUtilsLabelEXT::default().label_name(name).color(color);
        // SAFETY: guaranteed by the caller; `label` lives across the call.
        unsafe { du.cmd_begin_debug_utils_label(cb, &label) };
    }

    /// # Safety
    /// `cb` is recording and a label is open on the queue's label stack.
    pub unsafe fn end_label(&self, cb: vk::CommandBuffer) {
        if let Some(du) = self.debug_utils {
            // SAFETY: guaranteed by the caller.
            unsafe { du.cmd_end_debug_utils_label(cb) };
        }
    }
}
