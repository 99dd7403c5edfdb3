//! The `--render-pass` objects: one VkRenderPass with a subpass per region,
//! all writing the same colour attachment, and the framebuffers for it.

use ash::vk;

/// Colour attachment 0 in COLOR_ATTACHMENT_OPTIMAL, the only one of every subpass.
const COLOR_REF: [vk::AttachmentReference; 1] = [vk::AttachmentReference {
    attachment: 0,
    layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
}];

pub struct RenderPass {
    device: ash::Device,
    pub pass: vk::RenderPass,
}

impl RenderPass {
    /// `subpasses` subpasses in a chain; the first clears the attachment
    /// (from UNDEFINED), the last stores it and leaves it in
    /// COLOR_ATTACHMENT_OPTIMAL, where the frame's final barriers expect it.
    /// A non-zero `view_mask` goes to every subpass through
    /// VkRenderPassMultiviewCreateInfo (vkCreateRenderPass, not RenderPass2).
    pub fn new(
        device: &ash::Device,
        format: vk::Format,
        subpasses: usize,
        view_mask: u32,
    ) -> Result<RenderPass, vk::Result> {
        let attachments = [vk::AttachmentDescription::default()
            .format(format)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
            .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .final_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)];
        let descriptions: Vec<_> = (0..subpasses)
            .map(|_| {
                vk::SubpassDescription::default()
                    .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
                    .color_attachments(&COLOR_REF)
            })
            .collect();
        let output = vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT;
        let read_write = vk::AccessFlags::COLOR_ATTACHMENT_READ | vk::AccessFlags::COLOR_ATTACHMENT_WRITE;
        // The clear waits where the acquire semaphore is waited on (colour
        // output), as the first barrier of the dynamic-rendering path does.
        let mut dependencies = vec![vk::SubpassDependency::default()
            .src_subpass(vk::SUBPASS_EXTERNAL)
            .dst_subpass(0)
            .src_stage_mask(output)
            .dst_stage_mask(output)
            .dst_access_mask(read_write)];
        // Each subpass draws over what the previous one wrote.
        for s in 1..subpasses as u32 {
            dependencies.push(
                vk::SubpassDependency::default()
                    .src_subpass(s - 1)
                    .dst_subpass(s)
                    .src_stage_mask(output)
                    .dst_stage_mask(output)
                    .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
                    .dst_access_mask(read_write)
                    .dependency_flags(vk::DependencyFlags::BY_REGION),
            );
        }
        let view_masks = vec![view_mask; subpasses];
        let mut multiview = vk::RenderPassMultiviewCreateInfo::default().view_masks(&view_masks);
        let mut info = vk::RenderPassCreateInfo::default()
            .attachments(&attachments)
            .subpasses(&descriptions)
            .dependencies(&dependencies);
        if view_mask != 0 {
            info = info.push_next(&mut multiview);
        }
        // SAFETY: live device; `info` and everything it points to live across the call.
        let pass = unsafe { device.create_render_pass(&info, None)? };
        Ok(RenderPass {
            device: device.clone(),
            pass,
        })
    }

    /// A framebuffer of `view` (with multiview, a 2D_ARRAY view of every
    /// layer; the framebuffer itself then has one layer, as the spec requires).
    pub fn framebuffer(&self, view: vk::ImageView, extent: vk::Extent2D) -> Result<vk::Framebuffer, vk::Result> {
        let views = [view];
        let info = vk::FramebufferCreateInfo::default()
            .render_pass(self.pass)
            .attachments(&views)
            .width(extent.width)
            .height(extent.height)
            .layers(1);
        // SAFETY: live device, pass and view; `info` lives across the call.
        unsafe { self.device.create_framebuffer(&info, None) }
    }
}

impl Drop for RenderPass {
    fn drop(&mut self) {
        // SAFETY: the device is idle at teardown; pipelines and framebuffers
        // made from the pass are dropped before it (see App's field order).
        unsafe { self.device.destroy_render_pass(self.pass, None) };
    }
}
