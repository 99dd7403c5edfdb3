//! Offscreen colour images: the targets of `--headless` (standing in for
//! swapchain images), and the 2-layer images `--multiview` renders into.

use std::error::Error;

use ash::vk;

use crate::context::Gpu;
use crate::swapchain::{color_layers, Target};

pub const FORMAT: vk::Format = vk::Format::B8G8R8A8_UNORM;

pub struct Offscreen {
    device: ash::Device,
    images: Vec<(vk::Image, vk::DeviceMemory, vk::ImageView)>,
    extent: vk::Extent2D,
    layers: u32,
}

impl Offscreen {
    /// `count` images (headless: one per frame in flight so consecutive frames
    /// do not share a target). With `layers > 1` the views are 2D_ARRAY views
    /// of every layer.
    pub fn new(
        gpu: &Gpu,
        count: usize,
        extent: vk::Extent2D,
        format: vk::Format,
        layers: u32,
        usage: vk::ImageUsageFlags,
    ) -> Result<Offscreen, Box<dyn Error>> {
        let mut me = Offscreen {
            device: gpu.device.clone(),
            images: Vec::new(),
            extent,
            layers,
        };
        // SAFETY: queries on live handles.
        let mem_props = unsafe { gpu.instance.get_physical_device_memory_properties(gpu.physical) };
        for _ in 0..count {
            let info = vk::ImageCreateInfo::default()
                .image_type(vk::ImageType::TYPE_2D)
                .format(format)
                .extent(vk::Extent3D {
                    width: extent.width,
                    height: extent.height,
                    depth: 1,
                })
                .mip_levels(1)
                .array_layers(layers)
                .samples(vk::SampleCountFlags::TYPE_1)
                .tiling(vk::ImageTiling::OPTIMAL)
                .usage(usage)
                .initial_layout(vk::ImageLayout::UNDEFINED);
            // SAFETY: create-info structs live across the calls; every object is
            // recorded in `me` as soon as it exists so Drop frees it on error.
            unsafe {
                let image = gpu.device.create_image(&info, None)?;
                let req = gpu.device.get_image_memory_requirements(image);
                let Some(type_index) = (0..mem_props.memory_type_count).find(|&i| {
                    req.memory_type_bits & (1 << i) != 0
                        && mem_props.memory_types[i as usize]
                            .property_flags
                            .contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
                }) else {
                    gpu.device.destroy_image(image, None);
                    return Err("no device-local memory for the offscreen image".into());
                };
                let memory = match gpu.device.allocate_memory(
                    &vk::MemoryAllocateInfo::default()
                        .allocation_size(req.size)
                        .memory_type_index(type_index),
                    None,
                ) {
                    Ok(m) => m,
                    Err(e) => {
                        gpu.device.destroy_image(image, None);
                        return Err(e.into());
                    }
                };
                me.images.push((image, memory, vk::ImageView::null()));
                gpu.device.bind_image_memory(image, memory, 0)?;
                let view = gpu.device.create_image_view(
                    &vk::ImageViewCreateInfo::default()
                        .image(image)
                        .view_type(if layers > 1 {
                            vk::ImageViewType::TYPE_2D_ARRAY
                        } else {
                            vk::ImageViewType::TYPE_2D
                        })
                        .format(format)
                        .subresource_range(color_layers(layers)),
                    None,
                )?;
                me.images.last_mut().expect("just pushed").2 = view;
            }
        }
        Ok(me)
    }

    /// The image as a target that is never presented (the caller sets
    /// `present` and `framebuffer` where it has them).
    pub fn target(&self, index: usize) -> Target {
        let (image, _, view) = self.images[index];
        Target {
            image,
            view,
            extent: self.extent,
            layers: self.layers,
            framebuffer: vk::Framebuffer::null(),
            present: None,
        }
    }
}

impl Drop for Offscreen {
    fn drop(&mut self) {
        // SAFETY: the device is idle at teardown; null views are skipped.
        unsafe {
            for &(image, memory, view) in &self.images {
                if view != vk::ImageView::null() {
                    self.device.destroy_image_view(view, None);
                }
                self.device.destroy_image(image, None);
                self.device.free_memory(memory, None);
            }
        }
    }
}
