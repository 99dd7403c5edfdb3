//! Offscreen colour images standing in for swapchain images in `--headless`.

use std::error::Error;

use ash::vk;

use crate::context::Gpu;
use crate::swapchain::{color_range, Target};

pub const FORMAT: vk::Format = vk::Format::B8G8R8A8_UNORM;

pub struct Offscreen {
    device: ash::Device,
    images: Vec<(vk::Image, vk::DeviceMemory, vk::ImageView)>,
    extent: vk::Extent2D,
}

impl Offscreen {
    /// One image per frame in flight so consecutive frames do not share a target.
    pub fn new(gpu: &Gpu, count: usize, extent: vk::Extent2D) -> Result<Offscreen, Box<dyn Error>> {
        let mut me = Offscreen {
            device: gpu.device.clone(),
            images: Vec::new(),
            extent,
        };
        // SAFETY: queries on live handles.
        let mem_props = unsafe { gpu.instance.get_physical_device_memory_properties(gpu.physical) };
        for _ in 0..count {
            let info = vk::ImageCreateInfo::default()
                .image_type(vk::ImageType::TYPE_2D)
                .format(FORMAT)
                .extent(vk::Extent3D {
                    width: extent.width,
                    height: extent.height,
                    depth: 1,
                })
                .mip_levels(1)
                .array_layers(1)
                .samples(vk::SampleCountFlags::TYPE_1)
                .tiling(vk::ImageTiling::OPTIMAL)
                .usage(vk::ImageUsageFlags::COLOR_ATTACHMENT)
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
                        .view_type(vk::ImageViewType::TYPE_2D)
                        .format(FORMAT)
                        .subresource_range(color_range()),
                    None,
                )?;
                me.images.last_mut().expect("just pushed").2 = view;
            }
        }
        Ok(me)
    }

    pub fn target(&self, index: usize) -> Target {
        let (image, _, view) = self.images[index];
        Target {
            image,
            view,
            extent: self.extent,
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
