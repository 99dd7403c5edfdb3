//! The next layer's pointers of the commands the hooks wrap, loaded once per device: the
//! counted commands (draws, dispatches, trace-rays, passes, binds, barriers) and the extension
//! commands sampling forwards to.
//!
//! [`counted_commands!`] is the one list of counted commands, with what each counts and what
//! it samples: it builds [`CmdFns`] here and the counting hooks in `hooks::commands`, which
//! resolve the counting and sampling expressions where they are expanded.

use ash::vk;
use std::ffi::CStr;

/// Invokes macro `$m` with every counted command: `hook, vkName: fn(args) => counted, sampled;`.
macro_rules! counted_commands {
    ($m:ident) => {
        $m! {
        cmd_draw, vkCmdDraw: fn(a: u32, b: u32, c: u32, e: u32) => Counted::Draw(Dr::Draw), |_: &DeviceState| draw(Dr::Draw, a, 0, b, false);
        cmd_draw_indexed, vkCmdDrawIndexed: fn(a: u32, b: u32, c: u32, e: i32, f: u32) => Counted::Draw(Dr::DrawIndexed), |_: &DeviceState| draw(Dr::DrawIndexed, 0, a, b, false);
        cmd_draw_indirect, vkCmdDrawIndirect: fn(b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32) => Counted::Draw(Dr::DrawIndirect), |_: &DeviceState| draw(Dr::DrawIndirect, 0, 0, 0, true);
        cmd_draw_indexed_indirect, vkCmdDrawIndexedIndirect: fn(b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32) => Counted::Draw(Dr::DrawIndexedIndirect), |_: &DeviceState| draw(Dr::DrawIndexedIndirect, 0, 0, 0, true);
        cmd_draw_indirect_count, vkCmdDrawIndirectCount: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawIndirectCount), |_: &DeviceState| draw(Dr::DrawIndirectCount, 0, 0, 0, true);
        cmd_draw_indirect_count_khr, vkCmdDrawIndirectCountKHR: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawIndirectCount), |_: &DeviceState| draw(Dr::DrawIndirectCount, 0, 0, 0, true);
        cmd_draw_indirect_count_amd, vkCmdDrawIndirectCountAMD: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawIndirectCount), |_: &DeviceState| draw(Dr::DrawIndirectCount, 0, 0, 0, true);
        cmd_draw_indexed_indirect_count, vkCmdDrawIndexedIndirectCount: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawIndexedIndirectCount), |_: &DeviceState| draw(Dr::DrawIndexedIndirectCount, 0, 0, 0, true);
        cmd_draw_indexed_indirect_count_khr, vkCmdDrawIndexedIndirectCountKHR: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawIndexedIndirectCount), |_: &DeviceState| draw(Dr::DrawIndexedIndirectCount, 0, 0, 0, true);
        cmd_draw_indexed_indirect_count_amd, vkCmdDrawIndexedIndirectCountAMD: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawIndexedIndirectCount), |_: &DeviceState| draw(Dr::DrawIndexedIndirectCount, 0, 0, 0, true);
        cmd_draw_multi_ext, vkCmdDrawMultiEXT: fn(n: u32, p: *const vk::MultiDrawInfoEXT, i: u32, f: u32, s: u32) => Counted::Draw(Dr::DrawMulti), |_: &DeviceState| draw(Dr::DrawMulti, 0, 0, 0, false);
        cmd_draw_multi_indexed_ext, vkCmdDrawMultiIndexedEXT: fn(n: u32, p: *const vk::MultiDrawIndexedInfoEXT, i: u32, f: u32, s: u32, o: *const i32) => Counted::Draw(Dr::DrawMultiIndexed), |_: &DeviceState| draw(Dr::DrawMultiIndexed, 0, 0, 0, false);
        cmd_draw_mesh_tasks_ext, vkCmdDrawMeshTasksEXT: fn(x: u32, y: u32, z: u32) => Counted::Draw(Dr::DrawMeshTasks), |_: &DeviceState| draw(Dr::DrawMeshTasks, 0, 0, 0, false);
        cmd_draw_mesh_tasks_nv, vkCmdDrawMeshTasksNV: fn(n: u32, f: u32) => Counted::Draw(Dr::DrawMeshTasks), |_: &DeviceState| draw(Dr::DrawMeshTasks, 0, 0, 0, false);
        cmd_draw_mesh_tasks_indirect_ext, vkCmdDrawMeshTasksIndirectEXT: fn(b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32) => Counted::Draw(Dr::DrawMeshTasksIndirect), |_: &DeviceState| draw(Dr::DrawMeshTasksIndirect, 0, 0, 0, true);
        cmd_draw_mesh_tasks_indirect_nv, vkCmdDrawMeshTasksIndirectNV: fn(b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32) => Counted::Draw(Dr::DrawMeshTasksIndirect), |_: &DeviceState| draw(Dr::DrawMeshTasksIndirect, 0, 0, 0, true);
        cmd_draw_mesh_tasks_indirect_count_ext, vkCmdDrawMeshTasksIndirectCountEXT: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawMeshTasksIndirectCount), |_: &DeviceState| draw(Dr::DrawMeshTasksIndirectCount, 0, 0, 0, true);
        cmd_draw_mesh_tasks_indirect_count_nv, vkCmdDrawMeshTasksIndirectCountNV: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawMeshTasksIndirectCount), |_: &DeviceState| draw(Dr::DrawMeshTasksIndirectCount, 0, 0, 0, true);
        cmd_dispatch, vkCmdDispatch: fn(x: u32, y: u32, z: u32) => Counted::Dispatch(Dk::Direct), |_: &DeviceState| dispatch();
        cmd_dispatch_indirect, vkCmdDispatchIndirect: fn(b: vk::Buffer, o: vk::DeviceSize) => Counted::Dispatch(Dk::Indirect), |_: &DeviceState| dispatch();
        cmd_dispatch_base, vkCmdDispatchBase: fn(bx: u32, by: u32, bz: u32, x: u32, y: u32, z: u32) => Counted::Dispatch(Dk::Base), |_: &DeviceState| dispatch();
        cmd_dispatch_base_khr, vkCmdDispatchBaseKHR: fn(bx: u32, by: u32, bz: u32, x: u32, y: u32, z: u32) => Counted::Dispatch(Dk::Base), |_: &DeviceState| dispatch();
        cmd_trace_rays_khr, vkCmdTraceRaysKHR: fn(a: *const vk::StridedDeviceAddressRegionKHR, b: *const vk::StridedDeviceAddressRegionKHR, c: *const vk::StridedDeviceAddressRegionKHR, e: *const vk::StridedDeviceAddressRegionKHR, w: u32, h: u32, dd: u32) => Counted::TraceRays, |_: &DeviceState| trace_rays();
        cmd_trace_rays_indirect_khr, vkCmdTraceRaysIndirectKHR: fn(a: *const vk::StridedDeviceAddressRegionKHR, b: *const vk::StridedDeviceAddressRegionKHR, c: *const vk::StridedDeviceAddressRegionKHR, e: *const vk::StridedDeviceAddressRegionKHR, addr: vk::DeviceAddress) => Counted::TraceRays, |_: &DeviceState| trace_rays();
        cmd_trace_rays_indirect2_khr, vkCmdTraceRaysIndirect2KHR: fn(addr: vk::DeviceAddress) => Counted::TraceRays, |_: &DeviceState| trace_rays();
        cmd_begin_render_pass, vkCmdBeginRenderPass: fn(i: *const vk::RenderPassBeginInfo<'static>, c: vk::SubpassContents) => Counted::RenderPass, |d: &DeviceState| pass1(d, i, c);
        cmd_begin_render_pass2, vkCmdBeginRenderPass2: fn(i: *const vk::RenderPassBeginInfo<'static>, s: *const vk::SubpassBeginInfo<'static>) => Counted::RenderPass, |d: &DeviceState| pass2(d, i, s);
        cmd_begin_render_pass2_khr, vkCmdBeginRenderPass2KHR: fn(i: *const vk::RenderPassBeginInfo<'static>, s: *const vk::SubpassBeginInfo<'static>) => Counted::RenderPass, |d: &DeviceState| pass2(d, i, s);
        cmd_begin_rendering, vkCmdBeginRendering: fn(i: *const vk::RenderingInfo<'static>) => Counted::RenderPass, |_: &DeviceState| rendering(i);
        cmd_begin_rendering_khr, vkCmdBeginRenderingKHR: fn(i: *const vk::RenderingInfo<'static>) => Counted::RenderPass, |_: &DeviceState| rendering(i);
        cmd_bind_pipeline, vkCmdBindPipeline: fn(bp: vk::PipelineBindPoint, p: vk::Pipeline) => Counted::PipelineBind, |d: &DeviceState| sample_hooks::pipeline_bind(d, bp, p);
        cmd_pipeline_barrier, vkCmdPipelineBarrier: fn(s: vk::PipelineStageFlags, t: vk::PipelineStageFlags, f: vk::DependencyFlags, mc: u32, m: *const vk::MemoryBarrier<'static>, bc: u32, b: *const vk::BufferMemoryBarrier<'static>, ic: u32, im: *const vk::ImageMemoryBarrier<'static>) => Counted::Barrier, |_: &DeviceState| Sampled::None;
        cmd_pipeline_barrier2, vkCmdPipelineBarrier2: fn(i: *const vk::DependencyInfo<'static>) => Counted::Barrier, |_: &DeviceState| Sampled::None;
        cmd_pipeline_barrier2_khr, vkCmdPipelineBarrier2KHR: fn(i: *const vk::DependencyInfo<'static>) => Counted::Barrier, |_: &DeviceState| Sampled::None;
        }
    };
}
pub(crate) use counted_commands;

macro_rules! cmd_fns {
    ($( $hook:ident, $slot:ident : fn($($arg:ident : $ty:ty),*) => $what:expr, $sampled:expr; )*) => {
        /// Next-layer pointers of every counting hook, loaded once per device.
        #[allow(non_snake_case)]
        pub struct CmdFns {
            $( pub $slot: Option<unsafe extern "system" fn(vk::CommandBuffer $(, $ty)*)>, )*
        }

        impl CmdFns {
            pub fn load(mut load: impl FnMut(&CStr) -> vk::PFN_vkVoidFunction) -> Self {
                CmdFns {
                    $( $slot: load(&std::ffi::CString::new(stringify!($slot)).expect("name"))
                        // SAFETY: the next layer returned this command for this name, so it has
                        // the signature the name implies.
                        .map(|f| unsafe { std::mem::transmute::<unsafe extern "system" fn(), unsafe extern "system" fn(vk::CommandBuffer $(, $ty)*)>(f) }), )*
                }
            }
        }
    };
}
counted_commands!(cmd_fns);

/// Extension entry points sampling forwards to (null when the app did not enable them).
pub struct SampleFns {
    pub end_render_pass2_khr: Option<unsafe extern "system" fn(vk::CommandBuffer, *const vk::SubpassEndInfo<'_>)>,
    pub end_rendering_khr: Option<unsafe extern "system" fn(vk::CommandBuffer)>,
    pub next_subpass2_khr: Option<vk::PFN_vkCmdNextSubpass2>,
    pub create_render_pass2_khr: Option<vk::PFN_vkCreateRenderPass2>,
    pub begin_label: Option<vk::PFN_vkCmdBeginDebugUtilsLabelEXT>,
    pub end_label: Option<vk::PFN_vkCmdEndDebugUtilsLabelEXT>,
}

impl SampleFns {
    pub fn load(mut load: impl FnMut(&CStr) -> vk::PFN_vkVoidFunction) -> Self {
        macro_rules! get {
            ($name:literal) => {
                // SAFETY: the next layer returned this command for this name, so it has the
                // signature the name implies.
                load($name).map(|f| unsafe { std::mem::transmute::<unsafe extern "system" fn(), _>(f) })
            };
        }
        SampleFns {
            end_render_pass2_khr: get!(c"vkCmdEndRenderPass2KHR"),
            end_rendering_khr: get!(c"vkCmdEndRenderingKHR"),
            next_subpass2_khr: get!(c"vkCmdNextSubpass2KHR"),
            create_render_pass2_khr: get!(c"vkCreateRenderPass2KHR"),
            begin_label: get!(c"vkCmdBeginDebugUtilsLabelEXT"),
            end_label: get!(c"vkCmdEndDebugUtilsLabelEXT"),
        }
    }
}
