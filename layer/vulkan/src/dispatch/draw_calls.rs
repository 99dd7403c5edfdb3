//! The drawing and copying commands the HUD records, as methods of a [`Recorder`] (a command
//! buffer of ours between begin and end). The objects named are framescope's own, alive while
//! the recording may run (their owners go only after the buffer's fence), or the app's
//! presented image, alive while its swapchain is (`vk_calls`' invariant).

use super::vk_calls::{Recorder, Shared};
use super::vk_objects::HostBuffer;
use ash::vk;

impl Recorder<'_> {
    /// Begins a render pass with inline contents; `info` names a render pass and framebuffer
    /// of ours.
    pub fn cmd_begin_render_pass(&self, info: &vk::RenderPassBeginInfo<'_>) {
        // SAFETY: a recording buffer (the token) and a typed begin info naming live objects.
        unsafe {
            self.fns
                .cmd_begin_render_pass(self.cb, info, vk::SubpassContents::INLINE)
        }
    }

    pub fn cmd_end_render_pass(&self) {
        // SAFETY: a recording buffer inside the render pass its caller began.
        unsafe { self.fns.cmd_end_render_pass(self.cb) }
    }

    pub fn cmd_bind_graphics_pipeline(&self, pipeline: Shared<vk::Pipeline>) {
        // SAFETY: a recording buffer and a live pipeline of ours.
        unsafe {
            self.fns
                .cmd_bind_pipeline(self.cb, vk::PipelineBindPoint::GRAPHICS, pipeline.handle())
        }
    }

    pub fn cmd_set_viewport(&self, viewport: vk::Viewport) {
        // SAFETY: a recording buffer; one viewport (the pipelines' viewport count).
        unsafe { self.fns.cmd_set_viewport(self.cb, 0, &[viewport]) }
    }

    pub fn cmd_set_scissor(&self, scissor: vk::Rect2D) {
        // SAFETY: a recording buffer; one scissor (the pipelines' scissor count).
        unsafe { self.fns.cmd_set_scissor(self.cb, 0, &[scissor]) }
    }

    /// Binds `set` as set 0 of `layout` for graphics.
    pub fn cmd_bind_descriptor_set(&self, layout: Shared<vk::PipelineLayout>, set: vk::DescriptorSet) {
        // SAFETY: a recording buffer; a live layout and a set of ours allocated for it.
        unsafe {
            self.fns.cmd_bind_descriptor_sets(
                self.cb,
                vk::PipelineBindPoint::GRAPHICS,
                layout.handle(),
                0,
                &[set],
                &[],
            )
        }
    }

    /// `bytes` at offset 0 of `layout`'s push constant range for `stages`.
    pub fn cmd_push_constants(&self, layout: Shared<vk::PipelineLayout>, stages: vk::ShaderStageFlags, bytes: &[u8]) {
        // SAFETY: a recording buffer and a live layout of ours; ash passes the slice's length.
        unsafe { self.fns.cmd_push_constants(self.cb, layout.handle(), stages, 0, bytes) }
    }

    pub fn cmd_bind_vertex_buffer(&self, buffer: &HostBuffer) {
        // SAFETY: a recording buffer and a live buffer of ours.
        unsafe { self.fns.cmd_bind_vertex_buffers(self.cb, 0, &[buffer.handle()], &[0]) }
    }

    pub fn cmd_bind_index_buffer_u16(&self, buffer: &HostBuffer) {
        // SAFETY: a recording buffer and a live buffer of ours.
        unsafe {
            self.fns
                .cmd_bind_index_buffer(self.cb, buffer.handle(), 0, vk::IndexType::UINT16)
        }
    }

    pub fn cmd_draw_indexed(&self, index_count: u32, first_index: u32, vertex_offset: i32) {
        // SAFETY: a recording buffer inside a render pass with a pipeline bound (caller).
        unsafe {
            self.fns
                .cmd_draw_indexed(self.cb, index_count, 1, first_index, vertex_offset, 0)
        }
    }

    pub fn cmd_draw(&self, vertex_count: u32) {
        // SAFETY: a recording buffer inside a render pass with a pipeline bound (caller).
        unsafe { self.fns.cmd_draw(self.cb, vertex_count, 1, 0, 0) }
    }

    /// Image and buffer barriers from `src` to `dst` stages, outside a render pass.
    pub fn cmd_barriers(
        &self,
        (src, dst): (vk::PipelineStageFlags, vk::PipelineStageFlags),
        buffers: &[vk::BufferMemoryBarrier<'_>],
        images: &[vk::ImageMemoryBarrier<'_>],
    ) {
        // SAFETY: a recording buffer; typed barriers naming live buffers and images.
        unsafe {
            self.fns
                .cmd_pipeline_barrier(self.cb, src, dst, vk::DependencyFlags::empty(), &[], buffers, images)
        }
    }

    /// Copies between two images in TRANSFER_SRC / TRANSFER_DST_OPTIMAL.
    pub fn cmd_copy_image(&self, src: vk::Image, dst: vk::Image, regions: &[vk::ImageCopy]) {
        // SAFETY: a recording buffer outside a render pass; live images in the named layouts
        // (the caller's barriers put them there).
        unsafe {
            self.fns.cmd_copy_image(
                self.cb,
                src,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                dst,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                regions,
            )
        }
    }

    /// Copies an image in TRANSFER_SRC_OPTIMAL into `dst`; the regions lie inside both.
    pub fn cmd_copy_image_to_buffer(&self, src: vk::Image, dst: &HostBuffer, regions: &[vk::BufferImageCopy]) {
        // SAFETY: a recording buffer outside a render pass; a live image in the named layout
        // and a live buffer of ours.
        unsafe {
            self.fns.cmd_copy_image_to_buffer(
                self.cb,
                src,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                dst.handle(),
                regions,
            )
        }
    }

    /// Copies `src` into an image in TRANSFER_DST_OPTIMAL; the regions lie inside both.
    pub fn cmd_copy_buffer_to_image(&self, src: &HostBuffer, dst: vk::Image, regions: &[vk::BufferImageCopy]) {
        // SAFETY: a recording buffer outside a render pass; a live buffer of ours and a live
        // image in the named layout.
        unsafe {
            self.fns.cmd_copy_buffer_to_image(
                self.cb,
                src.handle(),
                dst,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                regions,
            )
        }
    }
}
