//! The app's pipeline, shader and memory creations, timed into the calling thread's creation
//! tally (`framescope_core::creation`): what a stutter frame spent compiling or allocating.

use ash::vk;
use framescope_core::creation::{add, CreationKind};

timed_hooks! { CREATION;
    create_graphics_pipelines(
        device: vk::Device,
        cache: vk::PipelineCache,
        count: u32,
        infos: *const vk::GraphicsPipelineCreateInfo<'_>,
        alloc: *const vk::AllocationCallbacks<'_>,
        out: *mut vk::Pipeline,
    ) => add, CreationKind::Pipeline, |d| d.fns.fp_v1_0().create_graphics_pipelines;
    create_compute_pipelines(
        device: vk::Device,
        cache: vk::PipelineCache,
        count: u32,
        infos: *const vk::ComputePipelineCreateInfo<'_>,
        alloc: *const vk::AllocationCallbacks<'_>,
        out: *mut vk::Pipeline,
    ) => add, CreationKind::Pipeline, |d| d.fns.fp_v1_0().create_compute_pipelines;
    create_ray_tracing_pipelines_khr(
        device: vk::Device,
        deferred: vk::DeferredOperationKHR,
        cache: vk::PipelineCache,
        count: u32,
        infos: *const vk::RayTracingPipelineCreateInfoKHR<'_>,
        alloc: *const vk::AllocationCallbacks<'_>,
        out: *mut vk::Pipeline,
    ) => add, CreationKind::Pipeline, |d| d.creation_fns.ray_tracing.create_ray_tracing_pipelines_khr;
    create_shader_module(
        device: vk::Device,
        info: *const vk::ShaderModuleCreateInfo<'_>,
        alloc: *const vk::AllocationCallbacks<'_>,
        out: *mut vk::ShaderModule,
    ) => add, CreationKind::Shader, |d| d.fns.fp_v1_0().create_shader_module;
    create_shaders_ext(
        device: vk::Device,
        count: u32,
        infos: *const vk::ShaderCreateInfoEXT<'_>,
        alloc: *const vk::AllocationCallbacks<'_>,
        out: *mut vk::ShaderEXT,
    ) => add, CreationKind::Shader, |d| d.creation_fns.shader_object.create_shaders_ext;
    allocate_memory(
        device: vk::Device,
        info: *const vk::MemoryAllocateInfo<'_>,
        alloc: *const vk::AllocationCallbacks<'_>,
        out: *mut vk::DeviceMemory,
    ) => add, CreationKind::Memory, |d| d.fns.fp_v1_0().allocate_memory;
}
