//! Device-level Vulkan objects of the HUD: samplers, layouts, the content pipeline (ImGui lists
//! into the cached RGBA8 image), one composite render pass + pipeline per swapchain format, and
//! how the HUD's buffers and images get their memory. Everything here is created once and
//! immutable after, so any thread may use it; the owners go at device destruction.

use crate::dispatch::device::Device;
use crate::dispatch::vk_calls::{Owners, Shared};
pub use crate::dispatch::vk_objects::color_range;
use crate::dispatch::vk_objects::{DeviceImage, HostBuffer, Pipeline, RenderPass};
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
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
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

/// The render pass and pipeline drawing the HUD over a swapchain image of one format.
pub type Composite = (Shared<vk::RenderPass>, Shared<vk::Pipeline>);

pub struct Gpu {
    mem_props: vk::PhysicalDeviceMemoryProperties,
    pub sampler_linear: Shared<vk::Sampler>,
    pub sampler_nearest: Shared<vk::Sampler>,
    pub set_layout: Shared<vk::DescriptorSetLayout>,
    pub content_layout: Shared<vk::PipelineLayout>,
    pub composite_layout: Shared<vk::PipelineLayout>,
    pub content_pass: Shared<vk::RenderPass>,
    pub content_pipeline: Shared<vk::Pipeline>,
    composite_vs: Shared<vk::ShaderModule>,
    composite_fs: Shared<vk::ShaderModule>,
    composites: Mutex<Vec<(vk::Format, Composite)>>,
    /// Everything above, released at device destruction (any present may use the copies
    /// until then).
    owners: Mutex<Owners>,
}

impl Gpu {
    pub fn new(d: &Device) -> Result<Gpu, vk::Result> {
        let mut owners = Owners::default();
        let imgui_vs = d.create_shader_module(&spirv(include_bytes!("shaders/imgui.vert.spv")))?;
        let imgui_fs = d.create_shader_module(&spirv(include_bytes!("shaders/imgui.frag.spv")))?;
        let composite_vs = owners.keep(d.create_shader_module(&spirv(include_bytes!("shaders/composite.vert.spv")))?);
        let composite_fs = owners.keep(d.create_shader_module(&spirv(include_bytes!("shaders/composite.frag.spv")))?);
        let sampler = |filter: vk::Filter| {
            d.create_sampler(
                &vk::SamplerCreateInfo::default()
                    .mag_filter(filter)
                    .min_filter(filter)
                    .mipmap_mode(vk::SamplerMipmapMode::NEAREST)
                    .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                    .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                    .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                    .max_lod(0.0),
            )
        };
        let sampler_linear = owners.keep(sampler(vk::Filter::LINEAR)?);
        let sampler_nearest = owners.keep(sampler(vk::Filter::NEAREST)?);
        let binding = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::FRAGMENT)];
        let set_layout = owners
            .keep(d.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&binding))?);
        let layouts = [set_layout.handle()];
        let layout = |stages: vk::ShaderStageFlags, size: u32| {
            let push = [vk::PushConstantRange::default().stage_flags(stages).size(size)];
            d.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default()
                    .set_layouts(&layouts)
                    .push_constant_ranges(&push),
            )
        };
        let content_layout = owners.keep(layout(vk::ShaderStageFlags::VERTEX, 16)?);
        let composite_layout = owners.keep(layout(
            vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT,
            std::mem::size_of::<CompositePush>() as u32,
        )?);
        let content_pass = owners.keep(content_render_pass(d)?);
        let content_pipeline = owners.keep(content_pipeline(
            d,
            (imgui_vs.share(), imgui_fs.share()),
            content_layout,
            content_pass,
        )?);
        Ok(Gpu {
            mem_props: d.memory_properties(),
            sampler_linear,
            sampler_nearest,
            set_layout,
            content_layout,
            composite_layout,
            content_pass,
            content_pipeline,
            composite_vs,
            composite_fs,
            composites: Mutex::new(Vec::new()),
            owners: Mutex::new(owners),
        })
    }

    /// Render pass and pipeline drawing the HUD over a swapchain image of `format` (created on
    /// first use for each format and kept until the device goes).
    pub fn composite_for(&self, d: &Device, format: vk::Format) -> Result<Composite, vk::Result> {
        let mut list = self.composites.lock();
        if let Some(&(_, c)) = list.iter().find(|(f, _)| *f == format) {
            return Ok(c);
        }
        let rp = composite_render_pass(d, format)?;
        let vi = vk::PipelineVertexInputStateCreateInfo::default();
        // Premultiplied blending on all four channels, as llvmpipe's blit fast path requires;
        // an opaque target's alpha stays 1 (a + 1 - a).
        let blend = over(vk::BlendFactor::ONE);
        // Constant 0 of composite.frag: whether the target encodes sRGB on write.
        let srgb = vk::Bool32::from(is_srgb(format)).to_ne_bytes();
        let entries = [vk::SpecializationMapEntry {
            constant_id: 0,
            offset: 0,
            size: 4,
        }];
        let spec = vk::SpecializationInfo::default().map_entries(&entries).data(&srgb);
        // An error drops the fresh render pass (unused).
        let p = pipeline(
            d,
            PipelineShape {
                shaders: (self.composite_vs, self.composite_fs),
                vi: &vi,
                topology: vk::PrimitiveTopology::TRIANGLE_STRIP,
                blend,
                layout: self.composite_layout,
                pass: rp.share(),
                fs_spec: Some(&spec),
            },
        )?;
        let mut owners = self.owners.lock();
        let (rp, p) = (owners.keep(rp), owners.keep(p));
        list.push((format, (rp, p)));
        Ok((rp, p))
    }

    /// Index of a memory type allowed by `bits` with `want` properties.
    pub fn memory_type(&self, bits: u32, want: vk::MemoryPropertyFlags) -> Option<u32> {
        (0..self.mem_props.memory_type_count)
            .find(|&i| bits & (1 << i) != 0 && self.mem_props.memory_types[i as usize].property_flags.contains(want))
    }

    /// A mapped buffer of host-visible, coherent memory.
    pub fn host_buffer(&self, d: &Device, size: u64, usage: vk::BufferUsageFlags) -> Result<HostBuffer, vk::Result> {
        d.create_host_buffer(size, usage, |bits| {
            self.memory_type(
                bits,
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
            )
        })
    }

    /// An image with a view, in device-local memory where the device has it for the image.
    pub fn image(
        &self,
        d: &Device,
        extent: [u32; 2],
        format: vk::Format,
        usage: vk::ImageUsageFlags,
    ) -> Result<DeviceImage, vk::Result> {
        d.create_image(extent, format, usage, |bits| {
            self.memory_type(bits, vk::MemoryPropertyFlags::DEVICE_LOCAL)
                .or_else(|| self.memory_type(bits, vk::MemoryPropertyFlags::empty()))
        })
    }

    /// Destroys everything, once, at device destruction; the caller has waited for the HUD's
    /// pending work, and no present uses the copies any more.
    pub fn destroy(&self) {
        self.composites.lock().clear();
        drop(std::mem::take(&mut *self.owners.lock()));
    }
}

/// The pipeline rendering ImGui's draw lists into the cached image.
fn content_pipeline(
    d: &Device,
    shaders: (Shared<vk::ShaderModule>, Shared<vk::ShaderModule>),
    layout: Shared<vk::PipelineLayout>,
    pass: Shared<vk::RenderPass>,
) -> Result<Pipeline, vk::Result> {
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
    // ImGui's colours are straight alpha: the cached image ends up premultiplied.
    let blend = over(vk::BlendFactor::SRC_ALPHA);
    pipeline(
        d,
        PipelineShape {
            shaders,
            vi: &vi,
            topology: vk::PrimitiveTopology::TRIANGLE_LIST,
            blend,
            layout,
            pass,
            fs_spec: None,
        },
    )
}

/// "Over" blending of all four channels, the source's colour scaled by `src_color`.
fn over(src_color: vk::BlendFactor) -> vk::PipelineColorBlendAttachmentState {
    vk::PipelineColorBlendAttachmentState::default()
        .blend_enable(true)
        .src_color_blend_factor(src_color)
        .dst_color_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
        .color_blend_op(vk::BlendOp::ADD)
        .src_alpha_blend_factor(vk::BlendFactor::ONE)
        .dst_alpha_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
        .alpha_blend_op(vk::BlendOp::ADD)
        .color_write_mask(vk::ColorComponentFlags::RGBA)
}

/// What differs between the HUD's two pipelines.
struct PipelineShape<'a> {
    /// Vertex and fragment shader.
    shaders: (Shared<vk::ShaderModule>, Shared<vk::ShaderModule>),
    vi: &'a vk::PipelineVertexInputStateCreateInfo<'a>,
    topology: vk::PrimitiveTopology,
    blend: vk::PipelineColorBlendAttachmentState,
    layout: Shared<vk::PipelineLayout>,
    pass: Shared<vk::RenderPass>,
    fs_spec: Option<&'a vk::SpecializationInfo<'a>>,
}

fn pipeline(d: &Device, shape: PipelineShape<'_>) -> Result<Pipeline, vk::Result> {
    let PipelineShape {
        shaders: (vs, fs),
        vi,
        topology,
        blend,
        layout,
        pass,
        fs_spec,
    } = shape;
    let mut fs_stage = vk::PipelineShaderStageCreateInfo::default()
        .stage(vk::ShaderStageFlags::FRAGMENT)
        .module(fs.handle())
        .name(c"main");
    if let Some(spec) = fs_spec {
        fs_stage = fs_stage.specialization_info(spec);
    }
    let stages = [
        vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::VERTEX)
            .module(vs.handle())
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
        .layout(layout.handle())
        .render_pass(pass.handle())
        .subpass(0);
    d.create_graphics_pipeline(&ci)
}

fn render_pass(
    d: &Device,
    attachment: vk::AttachmentDescription,
    deps: &[vk::SubpassDependency],
) -> Result<RenderPass, vk::Result> {
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
    d.create_render_pass(&ci)
}

/// Clears and renders the cached HUD image, leaving it ready for sampling. The first
/// dependency orders the write after earlier composites' reads of it (same queue).
fn content_render_pass(d: &Device) -> Result<RenderPass, vk::Result> {
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
fn composite_render_pass(d: &Device, format: vk::Format) -> Result<RenderPass, vk::Result> {
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

/// Whether `format` is an sRGB-encoded swapchain format.
pub fn is_srgb(format: vk::Format) -> bool {
    matches!(
        format,
        vk::Format::B8G8R8A8_SRGB | vk::Format::R8G8B8A8_SRGB | vk::Format::A8B8G8R8_SRGB_PACK32
    )
}
