//! Device-level Vulkan objects of the HUD: samplers, layouts, the content pipeline (ImGui lists
//! into the cached RGBA8 image), one composite render pass + pipeline per swapchain format, and
//! small helpers for buffers and images. Everything here is created once and immutable after,
//! so any thread may use it.

use crate::dispatch::device::Device;
use ash::vk;
use framescope_core::sync::Mutex;

/// Format of the cached HUD image (the colours ImGui produces are sRGB-encoded values, kept
/// as they are; the composite decodes them for *_SRGB targets). BGRA because llvmpipe only
/// composites from BGRA images on its blit fast path (see composite.frag); every device
/// supports it for sampling, attachments and blending.
pub const CONTENT_FORMAT: vk::Format = vk::Format::B8G8R8A8_UNORM;

/// Push constants of the composite shaders: NDC rectangle, the HUD's extent in the cached
/// image's texture coordinates, sRGB flag.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CompositePush {
    pub rect: [f32; 4],
    pub uv_max: [f32; 2],
    pub srgb: u32,
    pub pad: u32,
}

fn spirv(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub struct Gpu {
    pub mem_props: vk::PhysicalDeviceMemoryProperties,
    pub sampler_linear: vk::Sampler,
    pub sampler_nearest: vk::Sampler,
    pub set_layout: vk::DescriptorSetLayout,
    pub content_layout: vk::PipelineLayout,
    pub composite_layout: vk::PipelineLayout,
    pub content_pass: vk::RenderPass,
    pub content_pipeline: vk::Pipeline,
    composite_vs: vk::ShaderModule,
    composite_fs: vk::ShaderModule,
    /// (swapchain format, render pass, pipeline).
    composites: Mutex<Vec<(vk::Format, vk::RenderPass, vk::Pipeline)>>,
}

impl Gpu {
    pub fn new(d: &Device) -> Result<Gpu, vk::Result> {
        // SAFETY: the device's physical device is valid.
        let mem_props = unsafe { d.instance.fns.get_physical_device_memory_properties(d.physical) };
        let sources: [&[u8]; 4] = [
            include_bytes!("shaders/imgui.vert.spv"),
            include_bytes!("shaders/imgui.frag.spv"),
            include_bytes!("shaders/composite.vert.spv"),
            include_bytes!("shaders/composite.frag.spv"),
        ];
        let mut modules = [vk::ShaderModule::null(); 4];
        for (i, bytes) in sources.iter().enumerate() {
            let code = spirv(bytes);
            let ci = vk::ShaderModuleCreateInfo::default().code(&code);
            // SAFETY: valid SPIR-V compiled from hud/shaders/*.{vert,frag}.
            match unsafe { d.fns.create_shader_module(&ci, None) } {
                Ok(m) => modules[i] = m,
                Err(e) => {
                    for m in modules {
                        // SAFETY: modules we created (null ones are ignored), used by nothing.
                        unsafe { d.fns.destroy_shader_module(m, None) };
                    }
                    return Err(e);
                }
            }
        }
        let [imgui_vs, imgui_fs, composite_vs, composite_fs] = modules;
        let mut gpu = Gpu {
            mem_props,
            sampler_linear: vk::Sampler::null(),
            sampler_nearest: vk::Sampler::null(),
            set_layout: vk::DescriptorSetLayout::null(),
            content_layout: vk::PipelineLayout::null(),
            composite_layout: vk::PipelineLayout::null(),
            content_pass: vk::RenderPass::null(),
            content_pipeline: vk::Pipeline::null(),
            composite_vs,
            composite_fs,
            composites: Mutex::new(Vec::new()),
        };
        let r = gpu.build(d, imgui_vs, imgui_fs);
        // SAFETY: the ImGui modules were only needed to create the one pipeline.
        unsafe {
            d.fns.destroy_shader_module(imgui_vs, None);
            d.fns.destroy_shader_module(imgui_fs, None);
        }
        match r {
            Ok(()) => Ok(gpu),
            Err(e) => {
                // Null handles of what was not made yet are ignored.
                gpu.destroy(d);
                Err(e)
            }
        }
    }

    fn build(&mut self, d: &Device, imgui_vs: vk::ShaderModule, imgui_fs: vk::ShaderModule) -> Result<(), vk::Result> {
        let f = &d.fns;
        let sampler = |filter: vk::Filter| {
            let ci = vk::SamplerCreateInfo::default()
                .mag_filter(filter)
                .min_filter(filter)
                .mipmap_mode(vk::SamplerMipmapMode::NEAREST)
                .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                .max_lod(0.0);
            // SAFETY: valid create info.
            unsafe { f.create_sampler(&ci, None) }
        };
        self.sampler_linear = sampler(vk::Filter::LINEAR)?;
        self.sampler_nearest = sampler(vk::Filter::NEAREST)?;
        let binding = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::FRAGMENT)];
        // SAFETY: valid create info.
        self.set_layout = unsafe {
            f.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&binding), None)
        }?;
        let layouts = [self.set_layout];
        let push = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::VERTEX)
            .size(16)];
        // SAFETY: valid create info.
        self.content_layout = unsafe {
            f.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default()
                    .set_layouts(&layouts)
                    .push_constant_ranges(&push),
                None,
            )
        }?;
        let push = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT)
            .size(std::mem::size_of::<CompositePush>() as u32)];
        // SAFETY: valid create info.
        self.composite_layout = unsafe {
            f.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default()
                    .set_layouts(&layouts)
                    .push_constant_ranges(&push),
                None,
            )
        }?;
        self.content_pass = content_render_pass(d)?;
        let stride = std::mem::size_of::<framescope_overlay::DrawVert>() as u32;
        let bindings = [vk::VertexInputBindingDescription::default()
            .binding(0)
            .stride(stride)
            .input_rate(vk::VertexInputRate::VERTEX)];
        let attrs = [
            vk::VertexInputAttributeDescription::default()
                .location(0)
                .format(vk::Format::R32G32_SFLOAT)
                .offset(0),
            vk::VertexInputAttributeDescription::default()
                .location(1)
                .format(vk::Format::R32G32_SFLOAT)
                .offset(8),
            vk::VertexInputAttributeDescription::default()
                .location(2)
                .format(vk::Format::R8G8B8A8_UNORM)
                .offset(16),
        ];
        let vi = vk::PipelineVertexInputStateCreateInfo::default()
            .vertex_binding_descriptions(&bindings)
            .vertex_attribute_descriptions(&attrs);
        let blend = vk::PipelineColorBlendAttachmentState::default()
            .blend_enable(true)
            .src_color_blend_factor(vk::BlendFactor::SRC_ALPHA)
            .dst_color_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
            .color_blend_op(vk::BlendOp::ADD)
            .src_alpha_blend_factor(vk::BlendFactor::ONE)
            .dst_alpha_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
            .alpha_blend_op(vk::BlendOp::ADD)
            .color_write_mask(vk::ColorComponentFlags::RGBA);
        self.content_pipeline = pipeline(
            d,
            imgui_vs,
            imgui_fs,
            &vi,
            vk::PrimitiveTopology::TRIANGLE_LIST,
            blend,
            self.content_layout,
            self.content_pass,
            None,
        )?;
        Ok(())
    }

    /// Render pass and pipeline drawing the HUD over a swapchain image of `format` (created on
    /// first use for each format and kept until the device goes).
    pub fn composite_for(&self, d: &Device, format: vk::Format) -> Result<(vk::RenderPass, vk::Pipeline), vk::Result> {
        let mut list = self.composites.lock();
        if let Some(&(_, rp, p)) = list.iter().find(|(f, _, _)| *f == format) {
            return Ok((rp, p));
        }
        let rp = composite_render_pass(d, format)?;
        let vi = vk::PipelineVertexInputStateCreateInfo::default();
        let blend = vk::PipelineColorBlendAttachmentState::default()
            .blend_enable(true)
            .src_color_blend_factor(vk::BlendFactor::ONE)
            .dst_color_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
            .color_blend_op(vk::BlendOp::ADD)
            .src_alpha_blend_factor(vk::BlendFactor::ONE)
            .dst_alpha_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
            .alpha_blend_op(vk::BlendOp::ADD)
            // Premultiplied blending on all four channels, as llvmpipe's blit fast path
            // requires; an opaque target's alpha stays 1 (a + 1 - a).
            .color_write_mask(vk::ColorComponentFlags::RGBA);
        // Constant 0 of composite.frag: whether the target encodes sRGB on write.
        let srgb = vk::Bool32::from(is_srgb(format)).to_ne_bytes();
        let entries = [vk::SpecializationMapEntry {
            constant_id: 0,
            offset: 0,
            size: 4,
        }];
        let spec = vk::SpecializationInfo::default().map_entries(&entries).data(&srgb);
        let p = match pipeline(
            d,
            self.composite_vs,
            self.composite_fs,
            &vi,
            vk::PrimitiveTopology::TRIANGLE_STRIP,
            blend,
            self.composite_layout,
            rp,
            Some(&spec),
        ) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: the render pass was just created and is unused.
                unsafe { d.fns.destroy_render_pass(rp, None) };
                return Err(e);
            }
        };
        list.push((format, rp, p));
        Ok((rp, p))
    }

    /// Index of a memory type allowed by `bits` with `want` properties.
    pub fn memory_type(&self, bits: u32, want: vk::MemoryPropertyFlags) -> Option<u32> {
        (0..self.mem_props.memory_type_count)
            .find(|&i| bits & (1 << i) != 0 && self.mem_props.memory_types[i as usize].property_flags.contains(want))
    }

    /// Destroys everything, once, at device destruction; the caller has waited for the HUD's
    /// pending work. Null handles (of what was never made) are ignored.
    pub fn destroy(&self, d: &Device) {
        let f = &d.fns;
        // SAFETY: objects of this device, unused by pending work (caller's contract).
        unsafe {
            for (_, rp, p) in self.composites.lock().drain(..) {
                f.destroy_pipeline(p, None);
                f.destroy_render_pass(rp, None);
            }
            f.destroy_pipeline(self.content_pipeline, None);
            f.destroy_render_pass(self.content_pass, None);
            f.destroy_pipeline_layout(self.composite_layout, None);
            f.destroy_pipeline_layout(self.content_layout, None);
            f.destroy_descriptor_set_layout(self.set_layout, None);
            f.destroy_sampler(self.sampler_nearest, None);
            f.destroy_sampler(self.sampler_linear, None);
            f.destroy_shader_module(self.composite_vs, None);
            f.destroy_shader_module(self.composite_fs, None);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn pipeline(
    d: &Device,
    vs: vk::ShaderModule,
    fs: vk::ShaderModule,
    vi: &vk::PipelineVertexInputStateCreateInfo<'_>,
    topology: vk::PrimitiveTopology,
    blend: vk::PipelineColorBlendAttachmentState,
    layout: vk::PipelineLayout,
    pass: vk::RenderPass,
    fs_spec: Option<&vk::SpecializationInfo<'_>>,
) -> Result<vk::Pipeline, vk::Result> {
    let mut fs_stage = vk::PipelineShaderStageCreateInfo::default()
        .stage(vk::ShaderStageFlags::FRAGMENT)
        .module(fs)
        .name(c"main");
    if let Some(spec) = fs_spec {
        fs_stage = fs_stage.specialization_info(spec);
    }
    let stages = [
        vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::VERTEX)
            .module(vs)
            .name(c"main"),
        fs_stage,
    ];
    let ia = vk::PipelineInputAssemblyStateCreateInfo::default().topology(topology);
    let vp = vk::PipelineViewportStateCreateInfo::default()
        .viewport_count(1)
        .scissor_count(1);
    let rs = vk::PipelineRasterizationStateCreateInfo::default()
        .polygon_mode(vk::PolygonMode::FILL)
        .cull_mode(vk::CullModeFlags::NONE)
        .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
        .line_width(1.0);
    let ms = vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(vk::SampleCountFlags::TYPE_1);
    let ds = vk::PipelineDepthStencilStateCreateInfo::default();
    let attachments = [blend];
    let cb = vk::PipelineColorBlendStateCreateInfo::default().attachments(&attachments);
    let dynamic = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
    let dy = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic);
    let ci = vk::GraphicsPipelineCreateInfo::default()
        .stages(&stages)
        .vertex_input_state(vi)
        .input_assembly_state(&ia)
        .viewport_state(&vp)
        .rasterization_state(&rs)
        .multisample_state(&ms)
        .depth_stencil_state(&ds)
        .color_blend_state(&cb)
        .dynamic_state(&dy)
        .layout(layout)
        .render_pass(pass)
        .subpass(0);
    // SAFETY: valid create info whose referenced objects are alive.
    unsafe { d.fns.create_graphics_pipelines(vk::PipelineCache::null(), &[ci], None) }
        .map(|v| v[0])
        .map_err(|(_, e)| e)
}

fn render_pass(
    d: &Device,
    attachment: vk::AttachmentDescription,
    deps: &[vk::SubpassDependency],
) -> Result<vk::RenderPass, vk::Result> {
    let color = [vk::AttachmentReference::default()
        .attachment(0)
        .layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)];
    let subpass = [vk::SubpassDescription::default()
        .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
        .color_attachments(&color)];
    let attachments = [attachment];
    let ci = vk::RenderPassCreateInfo::default()
        .attachments(&attachments)
        .subpasses(&subpass)
        .dependencies(deps);
    // SAFETY: valid create info.
    unsafe { d.fns.create_render_pass(&ci, None) }
}

/// Clears and renders the cached HUD image, leaving it ready for sampling. The first
/// dependency orders the write after earlier composites' reads of it (same queue).
fn content_render_pass(d: &Device) -> Result<vk::RenderPass, vk::Result> {
    let att = vk::AttachmentDescription::default()
        .format(CONTENT_FORMAT)
        .samples(vk::SampleCountFlags::TYPE_1)
        .load_op(vk::AttachmentLoadOp::CLEAR)
        .store_op(vk::AttachmentStoreOp::STORE)
        .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
        .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
        .initial_layout(vk::ImageLayout::UNDEFINED)
        .final_layout(vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL);
    let deps = [
        vk::SubpassDependency::default()
            .src_subpass(vk::SUBPASS_EXTERNAL)
            .dst_subpass(0)
            .src_stage_mask(vk::PipelineStageFlags::FRAGMENT_SHADER)
            .dst_stage_mask(vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT)
            .src_access_mask(vk::AccessFlags::empty())
            .dst_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE | vk::AccessFlags::COLOR_ATTACHMENT_READ),
        vk::SubpassDependency::default()
            .src_subpass(0)
            .dst_subpass(vk::SUBPASS_EXTERNAL)
            .src_stage_mask(vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT)
            .dst_stage_mask(vk::PipelineStageFlags::FRAGMENT_SHADER)
            .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
            .dst_access_mask(vk::AccessFlags::SHADER_READ),
    ];
    render_pass(d, att, &deps)
}

/// Loads the presented image, draws over it and leaves it ready to present. The wait on the
/// app's semaphores is at COLOR_ATTACHMENT_OUTPUT, which the first dependency chains to.
fn composite_render_pass(d: &Device, format: vk::Format) -> Result<vk::RenderPass, vk::Result> {
    let att = vk::AttachmentDescription::default()
        .format(format)
        .samples(vk::SampleCountFlags::TYPE_1)
        .load_op(vk::AttachmentLoadOp::LOAD)
        .store_op(vk::AttachmentStoreOp::STORE)
        .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
        .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
        .initial_layout(vk::ImageLayout::PRESENT_SRC_KHR)
        .final_layout(vk::ImageLayout::PRESENT_SRC_KHR);
    let deps = [
        vk::SubpassDependency::default()
            .src_subpass(vk::SUBPASS_EXTERNAL)
            .dst_subpass(0)
            .src_stage_mask(vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT)
            .dst_stage_mask(vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT)
            .src_access_mask(vk::AccessFlags::empty())
            .dst_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE | vk::AccessFlags::COLOR_ATTACHMENT_READ),
        vk::SubpassDependency::default()
            .src_subpass(0)
            .dst_subpass(vk::SUBPASS_EXTERNAL)
            .src_stage_mask(vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT)
            .dst_stage_mask(vk::PipelineStageFlags::TRANSFER)
            .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
            .dst_access_mask(vk::AccessFlags::TRANSFER_READ),
    ];
    render_pass(d, att, &deps)
}

/// A buffer with its memory, optionally persistently mapped.
pub struct Buffer {
    pub buffer: vk::Buffer,
    pub memory: vk::DeviceMemory,
    pub size: u64,
    pub mapped: *mut u8,
}

// SAFETY: the mapping is plain host memory; the owner serialises access (swapchain mutex).
unsafe impl Send for Buffer {}

impl Buffer {
    pub fn null() -> Buffer {
        Buffer {
            buffer: vk::Buffer::null(),
            memory: vk::DeviceMemory::null(),
            size: 0,
            mapped: std::ptr::null_mut(),
        }
    }

    /// A host-visible, coherent, mapped buffer.
    pub fn host(d: &Device, gpu: &Gpu, size: u64, usage: vk::BufferUsageFlags) -> Result<Buffer, vk::Result> {
        let f = &d.fns;
        let ci = vk::BufferCreateInfo::default()
            .size(size.max(16))
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: valid create info.
        let buffer = unsafe { f.create_buffer(&ci, None) }?;
        let mut b = Buffer {
            buffer,
            memory: vk::DeviceMemory::null(),
            size: size.max(16),
            mapped: std::ptr::null_mut(),
        };
        // SAFETY: a buffer we just created.
        let req = unsafe { f.get_buffer_memory_requirements(buffer) };
        let r = (|| {
            let ty = gpu
                .memory_type(
                    req.memory_type_bits,
                    vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
                )
                .ok_or(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)?;
            let ai = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(ty);
            // SAFETY: valid allocate info; the memory is bound to our buffer only.
            unsafe {
                b.memory = f.allocate_memory(&ai, None)?;
                f.bind_buffer_memory(buffer, b.memory, 0)?;
                b.mapped = f.map_memory(b.memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())? as *mut u8;
            }
            Ok(())
        })();
        match r {
            Ok(()) => Ok(b),
            Err(e) => {
                b.destroy(d);
                Err(e)
            }
        }
    }

    /// Frees the buffer; the caller knows no pending work uses it.
    pub fn destroy(&mut self, d: &Device) {
        // SAFETY: our objects; unmapping is implied by freeing; null handles are ignored.
        unsafe {
            d.fns.destroy_buffer(self.buffer, None);
            d.fns.free_memory(self.memory, None);
        }
        *self = Buffer::null();
    }
}

/// A 2D image with memory and a view.
pub struct Image {
    pub image: vk::Image,
    pub memory: vk::DeviceMemory,
    pub view: vk::ImageView,
}

impl Image {
    pub fn null() -> Image {
        Image {
            image: vk::Image::null(),
            memory: vk::DeviceMemory::null(),
            view: vk::ImageView::null(),
        }
    }

    pub fn new(
        d: &Device,
        gpu: &Gpu,
        extent: [u32; 2],
        format: vk::Format,
        usage: vk::ImageUsageFlags,
    ) -> Result<Image, vk::Result> {
        let f = &d.fns;
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
        let mut img = Image::null();
        let r = (|| {
            // SAFETY: valid create info; memory bound once; the view matches the image.
            unsafe {
                img.image = f.create_image(&ci, None)?;
                let req = f.get_image_memory_requirements(img.image);
                let ty = gpu
                    .memory_type(req.memory_type_bits, vk::MemoryPropertyFlags::DEVICE_LOCAL)
                    .or_else(|| gpu.memory_type(req.memory_type_bits, vk::MemoryPropertyFlags::empty()))
                    .ok_or(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)?;
                let ai = vk::MemoryAllocateInfo::default()
                    .allocation_size(req.size)
                    .memory_type_index(ty);
                img.memory = f.allocate_memory(&ai, None)?;
                f.bind_image_memory(img.image, img.memory, 0)?;
                img.view = create_view(d, img.image, format)?;
            }
            Ok(())
        })();
        match r {
            Ok(()) => Ok(img),
            Err(e) => {
                img.destroy(d);
                Err(e)
            }
        }
    }

    pub fn destroy(&mut self, d: &Device) {
        // SAFETY: our objects, unused by pending work (caller's contract); nulls are ignored.
        unsafe {
            d.fns.destroy_image_view(self.view, None);
            d.fns.destroy_image(self.image, None);
            d.fns.free_memory(self.memory, None);
        }
        *self = Image::null();
    }
}

pub fn create_view(d: &Device, image: vk::Image, format: vk::Format) -> Result<vk::ImageView, vk::Result> {
    let ci = vk::ImageViewCreateInfo::default()
        .image(image)
        .view_type(vk::ImageViewType::TYPE_2D)
        .format(format)
        .subresource_range(color_range());
    // SAFETY: a valid image of this device with a compatible format.
    unsafe { d.fns.create_image_view(&ci, None) }
}

pub fn color_range() -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    }
}

/// Whether `format` is an sRGB-encoded swapchain format.
pub fn is_srgb(format: vk::Format) -> bool {
    matches!(
        format,
        vk::Format::B8G8R8A8_SRGB | vk::Format::R8G8B8A8_SRGB | vk::Format::A8B8G8R8_SRGB_PACK32
    )
}
