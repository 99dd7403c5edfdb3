//! The app's pipeline, shader and memory creations, timed into the calling thread's creation
//! tally (`framescope_core::creation`): what a stutter frame spent compiling or allocating.
//! Each forwards unchanged and only then adds its time.

use crate::device_state;
use ash::vk::{self, Handle};
use framescope_core::creation::{self, CreationKind};

pub unsafe extern "system" fn create_graphics_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::GraphicsPipelineCreateInfo<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::Pipeline,
) -> vk::Result {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    creation::timed(CreationKind::Pipeline, || {
        // SAFETY: forwarding the app's arguments unchanged.
        unsafe { (d.fns.fp_v1_0().create_graphics_pipelines)(device, cache, count, infos, alloc, out) }
    })
}

pub unsafe extern "system" fn create_compute_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::ComputePipelineCreateInfo<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::Pipeline,
) -> vk::Result {
    // SAFETY: as above.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    creation::timed(CreationKind::Pipeline, || {
        // SAFETY: forwarding the app's arguments unchanged.
        unsafe { (d.fns.fp_v1_0().create_compute_pipelines)(device, cache, count, infos, alloc, out) }
    })
}

pub unsafe extern "system" fn create_ray_tracing_pipelines_khr(
    device: vk::Device,
    deferred: vk::DeferredOperationKHR,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::RayTracingPipelineCreateInfoKHR<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::Pipeline,
) -> vk::Result {
    // SAFETY: as above.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    creation::timed(CreationKind::Pipeline, || {
        // SAFETY: forwarding the app's arguments unchanged.
        unsafe {
            (d.creation_fns.ray_tracing.create_ray_tracing_pipelines_khr)(
                device, deferred, cache, count, infos, alloc, out,
            )
        }
    })
}

pub unsafe extern "system" fn create_shader_module(
    device: vk::Device,
    info: *const vk::ShaderModuleCreateInfo<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::ShaderModule,
) -> vk::Result {
    // SAFETY: as above.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    creation::timed(CreationKind::Shader, || {
        // SAFETY: forwarding the app's arguments unchanged.
        unsafe { (d.fns.fp_v1_0().create_shader_module)(device, info, alloc, out) }
    })
}

pub unsafe extern "system" fn create_shaders_ext(
    device: vk::Device,
    count: u32,
    infos: *const vk::ShaderCreateInfoEXT<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::ShaderEXT,
) -> vk::Result {
    // SAFETY: as above.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    creation::timed(CreationKind::Shader, || {
        // SAFETY: forwarding the app's arguments unchanged.
        unsafe { (d.creation_fns.shader_object.create_shaders_ext)(device, count, infos, alloc, out) }
    })
}

pub unsafe extern "system" fn allocate_memory(
    device: vk::Device,
    info: *const vk::MemoryAllocateInfo<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::DeviceMemory,
) -> vk::Result {
    // SAFETY: as above.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    creation::timed(CreationKind::Memory, || {
        // SAFETY: forwarding the app's arguments unchanged.
        unsafe { (d.fns.fp_v1_0().allocate_memory)(device, info, alloc, out) }
    })
}
