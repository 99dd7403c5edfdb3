//! Safe creation of the objects the HUD draws with: shader modules, samplers, layouts, render
//! passes, pipelines, framebuffers, views, semaphores, descriptors, and memory-backed buffers
//! and images. Each comes back as an [`Owned`] (destroyed when dropped) or a pair of owners.
//!
//! Create infos are ash's typed builders, so their pointers are valid for the call; the
//! handles inside them are framescope's own (from an owner that outlives the call) or the
//! app's presented image from [`Device::swapchain_images`] — the same invariant as
//! `vk_calls`.

use super::device::Device;
use super::vk_calls::{Owned, Shared};
use ash::prelude::VkResult;
use ash::vk;

pub type ShaderModule = Owned<vk::ShaderModule>;
pub type Sampler = Owned<vk::Sampler>;
pub type DescriptorSetLayout = Owned<vk::DescriptorSetLayout>;
pub type PipelineLayout = Owned<vk::PipelineLayout>;
pub type RenderPass = Owned<vk::RenderPass>;
pub type Pipeline = Owned<vk::Pipeline>;
pub type Framebuffer = Owned<vk::Framebuffer>;
pub type ImageView = Owned<vk::ImageView>;
pub type Semaphore = Owned<vk::Semaphore>;
pub type DescriptorPool = Owned<vk::DescriptorPool>;

impl Device {
    /// The memory types of the device's physical device.
    pub fn memory_properties(&self) -> vk::PhysicalDeviceMemoryProperties {
        // SAFETY: the device's physical device is a live handle of its instance.
        unsafe { self.instance.fns.get_physical_device_memory_properties(self.physical) }
    }

    /// A shader module from SPIR-V words.
    pub fn create_shader_module(&self, code: &[u32]) -> VkResult<ShaderModule> {
        let ci = vk::ShaderModuleCreateInfo::default().code(code);
        // SAFETY: a typed create info for this live device; the driver validates SPIR-V only
        // in the validation layer, so callers pass modules compiled from our own sources.
        let m = unsafe { self.fns.create_shader_module(&ci, None) }?;
        Ok(self.owned(m, self.fns.fp_v1_0().destroy_shader_module))
    }

    pub fn create_sampler(&self, ci: &vk::SamplerCreateInfo<'_>) -> VkResult<Sampler> {
        // SAFETY: a typed create info for this live device.
        let s = unsafe { self.fns.create_sampler(ci, None) }?;
        Ok(self.owned(s, self.fns.fp_v1_0().destroy_sampler))
    }

    pub fn create_descriptor_set_layout(
        &self,
        ci: &vk::DescriptorSetLayoutCreateInfo<'_>,
    ) -> VkResult<DescriptorSetLayout> {
        // SAFETY: a typed create info for this live device.
        let l = unsafe { self.fns.create_descriptor_set_layout(ci, None) }?;
        Ok(self.owned(l, self.fns.fp_v1_0().destroy_descriptor_set_layout))
    }

    /// `ci` names set layouts of ours (module invariant).
    pub fn create_pipeline_layout(&self, ci: &vk::PipelineLayoutCreateInfo<'_>) -> VkResult<PipelineLayout> {
        // SAFETY: a typed create info for this live device naming live layouts of ours.
        let l = unsafe { self.fns.create_pipeline_layout(ci, None) }?;
        Ok(self.owned(l, self.fns.fp_v1_0().destroy_pipeline_layout))
    }

    pub fn create_render_pass(&self, ci: &vk::RenderPassCreateInfo<'_>) -> VkResult<RenderPass> {
        // SAFETY: a typed create info for this live device.
        let rp = unsafe { self.fns.create_render_pass(ci, None) }?;
        Ok(self.owned(rp, self.fns.fp_v1_0().destroy_render_pass))
    }

    /// One graphics pipeline; `ci` names shader modules, a layout and a render pass of ours.
    pub fn create_graphics_pipeline(&self, ci: &vk::GraphicsPipelineCreateInfo<'_>) -> VkResult<Pipeline> {
        // SAFETY: a typed create info for this live device naming live objects of ours; one
        // create info gives one pipeline.
        let v = unsafe {
            self.fns
                .create_graphics_pipelines(vk::PipelineCache::null(), std::slice::from_ref(ci), None)
        }
        .map_err(|(_, e)| e)?;
        Ok(self.owned(v[0], self.fns.fp_v1_0().destroy_pipeline))
    }

    /// `ci` names a render pass and views of ours or of the app's presented images.
    pub fn create_framebuffer(&self, ci: &vk::FramebufferCreateInfo<'_>) -> VkResult<Framebuffer> {
        // SAFETY: a typed create info for this live device naming live objects (invariant).
        let fb = unsafe { self.fns.create_framebuffer(ci, None) }?;
        Ok(self.owned(fb, self.fns.fp_v1_0().destroy_framebuffer))
    }

    /// A 2D colour view of `image` (ours, or the app's presented image) in `format`.
    pub fn create_view(&self, image: vk::Image, format: vk::Format) -> VkResult<ImageView> {
        let ci = vk::ImageViewCreateInfo::default()
            .image(image)
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(format)
            .subresource_range(color_range());
        // SAFETY: a live image (module invariant) with a format of its own.
        let v = unsafe { self.fns.create_image_view(&ci, None) }?;
        Ok(self.owned(v, self.fns.fp_v1_0().destroy_image_view))
    }

    pub fn create_semaphore(&self) -> VkResult<Semaphore> {
        // SAFETY: a default create info for this live device.
        let s = unsafe { self.fns.create_semaphore(&vk::SemaphoreCreateInfo::default(), None) }?;
        Ok(self.owned(s, self.fns.fp_v1_0().destroy_semaphore))
    }

    pub fn create_descriptor_pool(&self, ci: &vk::DescriptorPoolCreateInfo<'_>) -> VkResult<DescriptorPool> {
        // SAFETY: a typed create info for this live device.
        let p = unsafe { self.fns.create_descriptor_pool(ci, None) }?;
        Ok(self.owned(p, self.fns.fp_v1_0().destroy_descriptor_pool))
    }

    /// One set per layout of `layouts` from `pool`; the sets are freed with the pool.
    pub fn allocate_descriptor_sets(
        &self,
        pool: &DescriptorPool,
        layouts: &[Shared<vk::DescriptorSetLayout>],
    ) -> VkResult<Vec<vk::DescriptorSet>> {
        let raw: Vec<vk::DescriptorSetLayout> = layouts.iter().map(|l| l.handle()).collect();
        let ai = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(pool.handle())
            .set_layouts(&raw);
        // SAFETY: a live pool and live layouts of ours on this device.
        unsafe { self.fns.allocate_descriptor_sets(&ai) }
    }

    /// Points each set of `writes` at an image; the sets are fresh ones of ours, unused by
    /// any pending command buffer (Vulkan forbids updating a set in use).
    pub fn update_descriptor_sets(&self, writes: &[vk::WriteDescriptorSet<'_>]) {
        // SAFETY: typed writes naming live sets, views and samplers of ours (invariant).
        unsafe { self.fns.update_descriptor_sets(writes, &[]) }
    }

    /// Dedicated memory of a type `pick` chooses among those `req` allows.
    fn memory_for(
        &self,
        req: vk::MemoryRequirements,
        pick: impl Fn(u32) -> Option<u32>,
    ) -> VkResult<Owned<vk::DeviceMemory>> {
        let ty = pick(req.memory_type_bits).ok_or(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)?;
        let ai = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(ty);
        // SAFETY: a typed allocate info for this live device.
        let m = unsafe { self.fns.allocate_memory(&ai, None) }?;
        Ok(self.owned(m, self.fns.fp_v1_0().free_memory))
    }

    /// A buffer of at least `size` bytes in host-visible, coherent memory, mapped for its
    /// whole life; `pick` chooses the memory type from the allowed bits.
    pub fn create_host_buffer(
        &self,
        size: u64,
        usage: vk::BufferUsageFlags,
        pick: impl Fn(u32) -> Option<u32>,
    ) -> VkResult<HostBuffer> {
        let size = size.max(16);
        let ci = vk::BufferCreateInfo::default()
            .size(size)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: a typed create info for this live device.
        let b = unsafe { self.fns.create_buffer(&ci, None) }?;
        let buffer = self.owned(b, self.fns.fp_v1_0().destroy_buffer);
        // SAFETY: a buffer we just created.
        let req = unsafe { self.fns.get_buffer_memory_requirements(b) };
        let memory = self.memory_for(req, pick)?;
        // SAFETY: fresh memory bound once to our fresh buffer at offset 0 (the requirement's
        // size covers the buffer), then mapped whole; host-visible by `pick`'s choice.
        let mapped = unsafe {
            self.fns.bind_buffer_memory(b, memory.handle(), 0)?;
            self.fns
                .map_memory(memory.handle(), 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())?
        };
        if mapped.is_null() || req.size < size {
            return Err(vk::Result::ERROR_MEMORY_MAP_FAILED);
        }
        Ok(HostBuffer {
            buffer,
            _memory: memory,
            size,
            mapped: mapped.cast(),
        })
    }

    /// A 2D, single-sampled, optimally tiled image with its own memory of a type `pick`
    /// chooses, and a view of it.
    pub fn create_image(
        &self,
        extent: [u32; 2],
        format: vk::Format,
        usage: vk::ImageUsageFlags,
        pick: impl Fn(u32) -> Option<u32>,
    ) -> VkResult<DeviceImage> {
        let ci = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(format)
            .extent(vk::Extent3D {
                width: extent[0],
                height: extent[1],
                depth: 1,
            })
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        // SAFETY: a typed create info for this live device.
        let i = unsafe { self.fns.create_image(&ci, None) }?;
        let image = self.owned(i, self.fns.fp_v1_0().destroy_image);
        // SAFETY: an image we just created.
        let req = unsafe { self.fns.get_image_memory_requirements(i) };
        let memory = self.memory_for(req, pick)?;
        // SAFETY: fresh memory of the required size bound once to our fresh image.
        unsafe { self.fns.bind_image_memory(i, memory.handle(), 0) }?;
        let view = self.create_view(i, format)?;
        Ok(DeviceImage {
            view,
            image,
            _memory: memory,
        })
    }
}

/// A buffer bound to host-visible, coherent memory that stays mapped while it lives. Fields
/// drop in order: the buffer, then its memory (freeing unmaps it).
pub struct HostBuffer {
    buffer: Owned<vk::Buffer>,
    /// Held for its `Drop`.
    _memory: Owned<vk::DeviceMemory>,
    size: u64,
    mapped: *mut u8,
}

// SAFETY: the mapping is plain host memory owned with the buffer; `&self` methods only read
// it and `&mut self` methods write it, so Rust's borrow rules serialise access. The GPU's
// access is ordered by the caller's fences (the methods say when).
unsafe impl Send for HostBuffer {}

impl HostBuffer {
    pub fn handle(&self) -> vk::Buffer {
        self.buffer.handle()
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Copies `bytes` to the start of the buffer; `false` (nothing written) when they do not
    /// fit. The caller knows no pending GPU work reads the buffer.
    pub fn write(&mut self, bytes: &[u8]) -> bool {
        if bytes.len() as u64 > self.size {
            return false;
        }
        // SAFETY: the mapping is `size` bytes long, at least `bytes.len()`, and not aliased
        // by a Rust reference (`&mut self`).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.mapped, bytes.len()) };
        true
    }

    /// The first `len` bytes (clamped to the size); the caller knows the GPU's writes to them
    /// are done (the fence of their submission signalled).
    pub fn read(&self, len: usize) -> &[u8] {
        let len = len.min(self.size as usize);
        // SAFETY: the mapping holds `size` initialised bytes (host-visible memory is readable
        // from the map) and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.mapped, len) }
    }
}

/// An image with its own memory and a colour view. Fields drop in order: view, image, memory.
pub struct DeviceImage {
    view: ImageView,
    image: Owned<vk::Image>,
    /// Held for its `Drop`.
    _memory: Owned<vk::DeviceMemory>,
}

impl DeviceImage {
    pub fn image(&self) -> vk::Image {
        self.image.handle()
    }

    pub fn view(&self) -> vk::ImageView {
        self.view.handle()
    }
}

/// The single colour mip level and layer of the images framescope makes or draws on.
pub fn color_range() -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    }
}
