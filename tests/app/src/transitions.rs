//! Image layout transitions, and the end of a frame: every presented target
//! goes to PRESENT_SRC, with `--multiview` after layer 0 of the multiview
//! image has been copied into the swapchain image.

use ash::vk;

use crate::swapchain::{color_layers, Target};

/// How an image is (or was last) used: its layout, and the access and stage
/// that barriers order against.
#[derive(Clone, Copy, Debug)]
pub struct Use {
    pub layout: vk::ImageLayout,
    pub access: vk::AccessFlags,
    pub stage: vk::PipelineStageFlags,
}

impl Use {
    /// Contents discarded. The stage is colour output, where the acquire
    /// semaphore is waited on, so the transition happens after the acquire.
    pub const DISCARD: Use = Use {
        layout: vk::ImageLayout::UNDEFINED,
        access: vk::AccessFlags::empty(),
        stage: vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
    };
    /// Written as a colour attachment.
    pub const ATTACHMENT_WRITTEN: Use = Use {
        layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
        access: vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
        stage: vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
    };
    /// About to be loaded and written as a colour attachment.
    pub const ATTACHMENT: Use = Use {
        layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
        access: vk::AccessFlags::from_raw(
            vk::AccessFlags::COLOR_ATTACHMENT_READ.as_raw() | vk::AccessFlags::COLOR_ATTACHMENT_WRITE.as_raw(),
        ),
        stage: vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
    };
    pub const COPY_SRC: Use = Use {
        layout: vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
        access: vk::AccessFlags::TRANSFER_READ,
        stage: vk::PipelineStageFlags::TRANSFER,
    };
    pub const COPY_DST: Use = Use {
        layout: vk::ImageLayout::TRANSFER_DST_OPTIMAL,
        access: vk::AccessFlags::TRANSFER_WRITE,
        stage: vk::PipelineStageFlags::TRANSFER,
    };
    /// Handed to the presentation engine (ordered by the render-finished semaphore).
    pub const PRESENT: Use = Use {
        layout: vk::ImageLayout::PRESENT_SRC_KHR,
        access: vk::AccessFlags::empty(),
        stage: vk::PipelineStageFlags::BOTTOM_OF_PIPE,
    };
}

/// Transitions layers `0..layers` of `image` from `from` to `to`.
///
/// # Safety
/// `cb` is recording, outside any render pass instance; `image` is live.
pub unsafe fn barrier(device: &ash::Device, cb: vk::CommandBuffer, image: vk::Image, layers: u32, from: Use, to: Use) {
    let barrier = vk::ImageMemoryBarrier::default()
        .image(image)
        .old_layout(from.layout)
        .new_layout(to.layout)
        .src_access_mask(from.access)
        .dst_access_mask(to.access)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .subresource_range(color_layers(layers));
    // SAFETY: guaranteed by the caller; `barrier` lives across the call.
    unsafe {
        device.cmd_pipeline_barrier(
            cb,
            from.stage,
            to.stage,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &[barrier],
        )
    };
}

/// Ends the frame for every target that is presented: a target rendered
/// directly into its swapchain image goes to PRESENT_SRC; a multiview target
/// has layer 0 copied into its swapchain image first.
///
/// # Safety
/// `cb` is recording, outside any render pass instance, after all of the
/// frame's rendering (in submission order); every target was written this frame.
pub unsafe fn finish_frame(device: &ash::Device, cb: vk::CommandBuffer, targets: &[Target]) {
    for t in targets {
        let Some(swap_image) = t.present else { continue };
        // SAFETY: guaranteed by the caller.
        unsafe {
            if swap_image == t.image {
                barrier(device, cb, t.image, 1, Use::ATTACHMENT_WRITTEN, Use::PRESENT);
                continue;
            }
            barrier(device, cb, t.image, t.layers, Use::ATTACHMENT_WRITTEN, Use::COPY_SRC);
            barrier(device, cb, swap_image, 1, Use::DISCARD, Use::COPY_DST);
            let layer0 = vk::ImageSubresourceLayers::default()
                .aspect_mask(vk::ImageAspectFlags::COLOR)
                .layer_count(1);
            let region = vk::ImageCopy::default()
                .src_subresource(layer0)
                .dst_subresource(layer0)
                .extent(vk::Extent3D {
                    width: t.extent.width,
                    height: t.extent.height,
                    depth: 1,
                });
            device.cmd_copy_image(
                cb,
                t.image,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                swap_image,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                &[region],
            );
            barrier(device, cb, swap_image, 1, Use::COPY_DST, Use::PRESENT);
        }
    }
}
