//! The graphics pipeline every draw uses: one for dynamic rendering, or with
//! `--render-pass` one per subpass (identical but for the subpass index).
//!
//! Shaders are committed as SPIR-V so building needs no shader compiler.
//! Regenerate after editing the GLSL (from tests/app/shaders/):
//!   glslangValidator -V tri.vert -o tri.vert.spv && glslangValidator -V color.frag -o color.frag.spv

use std::error::Error;

use ash::vk;

const VERT_SPV: &[u8] = include_bytes!("../shaders/tri.vert.spv");
const FRAG_SPV: &[u8] = include_bytes!("../shaders/color.frag.spv");

/// Mirrors the `Push` block in both shaders.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Push {
    pub color: [f32; 4],
    /// x > 0.5 selects the full-screen triangle.
    pub misc: [f32; 4],
}

impl Push {
    pub fn bytes(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, v) in self.color.iter().chain(self.misc.iter()).enumerate() {
            out[i * 4..i * 4 + 4].copy_from_slice(&v.to_ne_bytes());
        }
        out
    }
}

pub const PUSH_STAGES: vk::ShaderStageFlags =
    vk::ShaderStageFlags::from_raw(vk::ShaderStageFlags::VERTEX.as_raw() | vk::ShaderStageFlags::FRAGMENT.as_raw());

/// What the pipelines are created against.
#[derive(Clone, Copy, Debug)]
pub enum Rendering {
    /// Dynamic rendering with this view mask (0: no multiview).
    Dynamic { view_mask: u32 },
    /// Subpasses `0..subpasses` of a render pass (its view masks apply).
    Pass { pass: vk::RenderPass, subpasses: u32 },
}

pub struct Pipeline {
    device: ash::Device,
    pub layout: vk::PipelineLayout,
    /// One pipeline, or one per subpass with a render pass.
    pipelines: Vec<vk::Pipeline>,
    pub format: vk::Format,
}

fn words(spv: &[u8]) -> Vec<u32> {
    // include_bytes! gives no alignment guarantee, so copy into u32s.
    spv.chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

impl Pipeline {
    pub fn new(device: &ash::Device, format: vk::Format, rendering: Rendering) -> Result<Pipeline, Box<dyn Error>> {
        let vert_code = words(VERT_SPV);
        let frag_code = words(FRAG_SPV);
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(PUSH_STAGES)
            .size(std::mem::size_of::<Push>() as u32)];
        // SAFETY: all create-info structs and the code they point to live across
        // each call; partially created objects are destroyed on every error path.
        unsafe {
            let vert = device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&vert_code), None)?;
            let frag = match device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&frag_code), None)
            {
                Ok(m) => m,
                Err(e) => {
                    device.destroy_shader_module(vert, None);
                    return Err(e.into());
                }
            };
            let layout = device.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&ranges),
                None,
            );
            let result = layout.and_then(|layout| {
                Self::build(device, layout, vert, frag, format, rendering).inspect_err(|_| {
                    device.destroy_pipeline_layout(layout, None);
                })
            });
            device.destroy_shader_module(vert, None);
            device.destroy_shader_module(frag, None);
            let (layout, pipelines) = result?;
            Ok(Pipeline {
                device: device.clone(),
                layout,
                pipelines,
                format,
            })
        }
    }

    /// # Safety
    /// The handles must be live objects of `device`.
    unsafe fn build(
        device: &ash::Device,
        layout: vk::PipelineLayout,
        vert: vk::ShaderModule,
        frag: vk::ShaderModule,
        format: vk::Format,
        rendering: Rendering,
    ) -> Result<(vk::PipelineLayout, Vec<vk::Pipeline>), vk::Result> {
        let stages = [
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::VERTEX)
                .module(vert)
                .name(c"main"),
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::FRAGMENT)
                .module(frag)
                .name(c"main"),
        ];
        let vertex_input = vk::PipelineVertexInputStateCreateInfo::default();
        let assembly =
            vk::PipelineInputAssemblyStateCreateInfo::default().topology(vk::PrimitiveTopology::TRIANGLE_LIST);
        let viewport = vk::PipelineViewportStateCreateInfo::default()
            .viewport_count(1)
            .scissor_count(1);
        let raster = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(vk::CullModeFlags::NONE)
            .line_width(1.0);
        let multisample =
            vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(vk::SampleCountFlags::TYPE_1);
        let blend_attachments =
            [vk::PipelineColorBlendAttachmentState::default().color_write_mask(vk::ColorComponentFlags::RGBA)];
        let blend = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend_attachments);
        let dynamic_states = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
        let dynamic = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic_states);
        let formats = [format];
        let (view_mask, pass, subpasses) = match rendering {
            Rendering::Dynamic { view_mask } => (view_mask, vk::RenderPass::null(), 1),
            Rendering::Pass { pass, subpasses } => (0, pass, subpasses),
        };
        let mut dynamic_rendering = vk::PipelineRenderingCreateInfo::default()
            .color_attachment_formats(&formats)
            .view_mask(view_mask);
        let base = vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vertex_input)
            .input_assembly_state(&assembly)
            .viewport_state(&viewport)
            .rasterization_state(&raster)
            .multisample_state(&multisample)
            .color_blend_state(&blend)
            .dynamic_state(&dynamic)
            .layout(layout);
        let infos: Vec<_> = if pass == vk::RenderPass::null() {
            vec![base.push_next(&mut dynamic_rendering)]
        } else {
            (0..subpasses).map(|i| base.render_pass(pass).subpass(i)).collect()
        };
        // SAFETY: guaranteed by the caller; `infos` and their pointees live across the call.
        let pipelines = unsafe {
            device
                .create_graphics_pipelines(vk::PipelineCache::null(), &infos, None)
                .map_err(|(made, e)| {
                    for p in made.into_iter().filter(|&p| p != vk::Pipeline::null()) {
                        device.destroy_pipeline(p, None);
                    }
                    e
                })?
        };
        Ok((layout, pipelines))
    }

    /// The pipeline for region (= subpass) `region`.
    pub fn for_region(&self, region: usize) -> vk::Pipeline {
        // With dynamic rendering all regions share the one pipeline.
        self.pipelines[region.min(self.pipelines.len() - 1)]
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        // SAFETY: the device is idle at teardown, so no command buffer using
        // the pipeline is pending.
        unsafe {
            for &p in &self.pipelines {
                self.device.destroy_pipeline(p, None);
            }
            self.device.destroy_pipeline_layout(self.layout, None);
        }
    }
}
