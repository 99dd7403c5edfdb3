//! What a frame renders into, per window (or once, headless): the swapchain
//! images themselves, or with `--multiview` a 2-layer image per swapchain
//! image whose layer 0 is copied into it; headless, one offscreen image
//! (2 layers with `--multiview`) per frame in flight. With `--render-pass`,
//! also one framebuffer per rendered image.

use std::error::Error;

use ash::vk;

use crate::context::Gpu;
use crate::headless::{self, Offscreen};
use crate::renderpass::RenderPass;
use crate::swapchain::{Swapchain, Target};

/// Layers of a multiview image: one per view of the view mask 0b11.
pub const MULTIVIEW_LAYERS: u32 = 2;
pub const MULTIVIEW_MASK: u32 = 0b11;

pub struct TargetSet {
    device: ash::Device,
    /// One per swapchain image; empty headless.
    swapchain: Vec<Target>,
    /// The images rendered into when they are not the swapchain's.
    offscreen: Option<Offscreen>,
    /// One per rendered image with `--render-pass`, else empty.
    framebuffers: Vec<vk::Framebuffer>,
}

impl TargetSet {
    /// `count` offscreen images (one per frame in flight).
    pub fn headless(
        gpu: &Gpu,
        count: usize,
        extent: vk::Extent2D,
        multiview: bool,
        pass: Option<&RenderPass>,
    ) -> Result<TargetSet, Box<dyn Error>> {
        let layers = if multiview { MULTIVIEW_LAYERS } else { 1 };
        let images = Offscreen::new(
            gpu,
            count,
            extent,
            headless::FORMAT,
            layers,
            vk::ImageUsageFlags::COLOR_ATTACHMENT,
        )?;
        Self::assemble(gpu, Vec::new(), Some(images), count, pass)
    }

    /// Targets for the current images of `swapchain`.
    pub fn window(
        gpu: &Gpu,
        swapchain: &Swapchain,
        multiview: bool,
        pass: Option<&RenderPass>,
    ) -> Result<TargetSet, Box<dyn Error>> {
        let count = swapchain.images.len();
        let targets = (0..count as u32).map(|i| swapchain.target(i)).collect();
        let images = if multiview {
            Some(Offscreen::new(
                gpu,
                count,
                swapchain.extent,
                swapchain.format,
                MULTIVIEW_LAYERS,
                vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC,
            )?)
        } else {
            None
        };
        Self::assemble(gpu, targets, images, count, pass)
    }

    fn assemble(
        gpu: &Gpu,
        swapchain: Vec<Target>,
        offscreen: Option<Offscreen>,
        count: usize,
        pass: Option<&RenderPass>,
    ) -> Result<TargetSet, Box<dyn Error>> {
        let mut me = TargetSet {
            device: gpu.device.clone(),
            swapchain,
            offscreen,
            framebuffers: Vec::new(),
        };
        if let Some(pass) = pass {
            for i in 0..count {
                let t = me.target(i);
                // Pushed at once so Drop frees them after a partial failure.
                me.framebuffers.push(pass.framebuffer(t.view, t.extent)?);
            }
        }
        Ok(me)
    }

    /// An empty set, standing in while a swapchain is rebuilt.
    pub fn none(device: &ash::Device) -> TargetSet {
        TargetSet {
            device: device.clone(),
            swapchain: Vec::new(),
            offscreen: None,
            framebuffers: Vec::new(),
        }
    }

    /// The target of swapchain image (or, headless, frame in flight) `index`.
    pub fn target(&self, index: usize) -> Target {
        let mut t = match &self.offscreen {
            Some(o) => o.target(index),
            None => self.swapchain[index],
        };
        t.present = self.swapchain.get(index).map(|s| s.image);
        t.framebuffer = self.framebuffers.get(index).copied().unwrap_or_default();
        t
    }
}

impl Drop for TargetSet {
    fn drop(&mut self) {
        // SAFETY: the device is idle at teardown and before swapchain rebuilds.
        // The framebuffers go before the views they name (fields drop after this).
        unsafe {
            for &fb in &self.framebuffers {
                self.device.destroy_framebuffer(fb, None);
            }
        }
    }
}
