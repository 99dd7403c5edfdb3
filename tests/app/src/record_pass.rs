//! Command buffer recording with `--render-pass`: the frame is one primary
//! holding, per target, one render pass instance with a subpass per region.
//! Inline, each subpass holds its region's label and draws. With
//! `--secondary` each [`Segment`] becomes a secondary (recorded on the
//! chunk's thread) holding a copy of its region's label and its draws, since
//! a subpass with secondary contents allows nothing but vkCmdExecuteCommands
//! in the primary.

use ash::vk;

use crate::record::{Pool, Recorder};
use crate::scene::{Chunk, Segment, FRAME_LABEL};
use crate::swapchain::Target;
use crate::transitions::finish_frame;

/// The clear colour of the first subpass (the same as dynamic rendering's).
const CLEAR: [vk::ClearValue; 1] = [vk::ClearValue {
    color: vk::ClearColorValue {
        float32: [0.05, 0.05, 0.08, 1.0],
    },
}];

impl Recorder<'_> {
    /// One secondary per segment of `chunk`, in order, each continuing
    /// subpass `seg.region` of its target's framebuffer.
    pub fn pass_secondaries(
        &self,
        pool: &mut Pool,
        chunk: &Chunk,
        targets: &[Target],
    ) -> Result<Vec<vk::CommandBuffer>, vk::Result> {
        chunk
            .segments
            .iter()
            .map(|seg| self.pass_secondary(pool, seg, targets[seg.target]))
            .collect()
    }

    fn pass_secondary(&self, pool: &mut Pool, seg: &Segment, target: Target) -> Result<vk::CommandBuffer, vk::Result> {
        let cb = pool.next(vk::CommandBufferLevel::SECONDARY)?;
        let region = &self.regions[seg.region];
        let inheritance = vk::CommandBufferInheritanceInfo::default()
            .render_pass(self.render_pass)
            .subpass(seg.region as u32)
            .framebuffer(target.framebuffer);
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(self.usage | vk::CommandBufferUsageFlags::RENDER_PASS_CONTINUE)
            .inheritance_info(&inheritance);
        // SAFETY: `cb` is a fresh secondary from the caller's pool, which this
        // thread owns; the pass, framebuffer and pipeline are live; the
        // label is begun and ended within this buffer.
        unsafe {
            self.device.begin_command_buffer(cb, &begin)?;
            self.begin_label(cb, region.label, region.color);
            self.record_draws(cb, seg, target);
            self.end_label(cb);
            self.device.end_command_buffer(cb)?;
        }
        Ok(cb)
    }

    /// The frame's only primary. `secondaries[c][i]` is the secondary of
    /// `plan[c].segments[i]` (from [`Self::pass_secondaries`]); without them
    /// the draws are recorded inline.
    pub fn pass_primary(
        &self,
        pool: &mut Pool,
        plan: &[Chunk],
        secondaries: Option<&[Vec<vk::CommandBuffer>]>,
        targets: &[Target],
    ) -> Result<vk::CommandBuffer, vk::Result> {
        let cb = pool.next(vk::CommandBufferLevel::PRIMARY)?;
        let d = self.device;
        // Every segment of the frame with its secondary, in plan order.
        let segments: Vec<(&Segment, vk::CommandBuffer)> = plan
            .iter()
            .enumerate()
            .flat_map(|(c, chunk)| {
                chunk.segments.iter().enumerate().map(move |(i, seg)| {
                    let secondary = secondaries.map_or(vk::CommandBuffer::null(), |s| s[c][i]);
                    (seg, secondary)
                })
            })
            .collect();
        let contents = if secondaries.is_some() {
            vk::SubpassContents::SECONDARY_COMMAND_BUFFERS
        } else {
            vk::SubpassContents::INLINE
        };
        // SAFETY: `cb` comes from `pool`, which this thread owns exclusively;
        // all handles used below are live for as long as the buffer is.
        unsafe {
            d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default().flags(self.usage))?;
            self.begin_label(cb, FRAME_LABEL, [1.0, 1.0, 1.0, 1.0]);
            for (t, &target) in targets.iter().enumerate() {
                let begin = vk::RenderPassBeginInfo::default()
                    .render_pass(self.render_pass)
                    .framebuffer(target.framebuffer)
                    .render_area(target.extent.into())
                    .clear_values(&CLEAR);
                self.push_before_pass(cb, 0);
                d.cmd_begin_render_pass(cb, &begin, contents);
                for subpass in 0..self.regions.len() {
                    if subpass > 0 {
                        d.cmd_next_subpass(cb, contents);
                    }
                    let here = segments
                        .iter()
                        .filter(|(seg, _)| seg.target == t && seg.region == subpass);
                    if secondaries.is_some() {
                        let buffers: Vec<_> = here.map(|&(_, sec)| sec).collect();
                        if !buffers.is_empty() {
                            d.cmd_execute_commands(cb, &buffers);
                        }
                    } else {
                        for &(seg, _) in here {
                            let region = &self.regions[seg.region];
                            self.begin_label(cb, region.label, region.color);
                            self.record_draws(cb, seg, target);
                            self.end_label(cb);
                        }
                    }
                }
                d.cmd_end_render_pass(cb);
            }
            finish_frame(d, cb, targets);
            self.end_label(cb);
            d.end_command_buffer(cb)?;
        }
        Ok(cb)
    }
}
