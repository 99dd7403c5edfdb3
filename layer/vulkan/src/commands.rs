//! Recording-time hooks: per-command-buffer counts of draws (by kind), dispatches, trace-rays,
//! render passes, pipeline binds and barriers. Counts live in the command buffer's own state
//! (atomics, no lock on the recording path) and are added into the frame at each submit, so a
//! command buffer submitted N times counts N times.

use crate::device::{self, Device};
use crate::recording_cache;
use crate::samples::hooks::{self as sample_hooks, BindPoint, Sampled};
use crate::samples::recording::{Event, PassStart};
use crate::samples::Level;
use ash::vk::{self, Handle};
use framescope_core::frame::{DispatchKind, DrawKind, FrameCounts};
use framescope_core::sample::DrawParams;
use std::sync::atomic::{AtomicU32, Ordering};

/// What one recording of a command buffer contains.
#[derive(Default)]
pub struct CmdCounts {
    draws: [AtomicU32; DrawKind::COUNT],
    dispatches: [AtomicU32; DispatchKind::COUNT],
    trace_rays: AtomicU32,
    render_passes: AtomicU32,
    pipeline_binds: AtomicU32,
    barriers: AtomicU32,
    /// Draws that got a timestamp sample (`samples=draw`, within the draw window).
    draws_timed: AtomicU32,
}

#[derive(Clone, Copy)]
pub enum Counted {
    Draw(DrawKind),
    Dispatch(DispatchKind),
    TraceRays,
    RenderPass,
    PipelineBind,
    Barrier,
    TimedDraw,
}

impl Counted {
    /// Whether a command of this kind samples anything below `samples=draw`. Draws, dispatches,
    /// trace-rays and barriers do not, so their hooks skip the sampling path there: measured
    /// with callgrind on lavapipe, that path (building the draw's parameters, the call into
    /// `around`) was a third of a draw hook's instructions at the default level.
    pub const fn samples_below_draw_level(self) -> bool {
        !matches!(
            self,
            Counted::Draw(_) | Counted::Dispatch(_) | Counted::TraceRays | Counted::Barrier
        )
    }
}

impl CmdCounts {
    pub fn reset(&self) {
        for a in self.draws.iter().chain(&self.dispatches) {
            a.store(0, Ordering::Relaxed);
        }
        for a in [
            &self.trace_rays,
            &self.render_passes,
            &self.pipeline_binds,
            &self.barriers,
            &self.draws_timed,
        ] {
            a.store(0, Ordering::Relaxed);
        }
    }

    fn cell(&self, what: Counted) -> &AtomicU32 {
        match what {
            Counted::Draw(k) => &self.draws[k as usize],
            Counted::Dispatch(k) => &self.dispatches[k as usize],
            Counted::TraceRays => &self.trace_rays,
            Counted::RenderPass => &self.render_passes,
            Counted::PipelineBind => &self.pipeline_binds,
            Counted::Barrier => &self.barriers,
            Counted::TimedDraw => &self.draws_timed,
        }
    }

    /// One more command of a kind. A load and a store, not a read-modify-write: only the
    /// thread recording the buffer writes its counts (external synchronisation), and they are
    /// read once recording has ended.
    pub fn bump(&self, what: Counted) {
        let c = self.cell(what);
        c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    /// Adds another recording's counts (a secondary executed from this primary).
    pub fn absorb(&self, other: &CmdCounts) {
        for (a, b) in self
            .draws
            .iter()
            .zip(&other.draws)
            .chain(self.dispatches.iter().zip(&other.dispatches))
        {
            a.fetch_add(b.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        for (a, b) in [
            (&self.trace_rays, &other.trace_rays),
            (&self.render_passes, &other.render_passes),
            (&self.pipeline_binds, &other.pipeline_binds),
            (&self.barriers, &other.barriers),
            (&self.draws_timed, &other.draws_timed),
        ] {
            a.fetch_add(b.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    pub fn add_to(&self, f: &mut FrameCounts) {
        for (i, a) in self.draws.iter().enumerate() {
            f.draws.0[i] = f.draws.0[i].saturating_add(a.load(Ordering::Relaxed));
        }
        for (i, a) in self.dispatches.iter().enumerate() {
            f.dispatches.0[i] = f.dispatches.0[i].saturating_add(a.load(Ordering::Relaxed));
        }
        f.trace_rays = f.trace_rays.saturating_add(self.trace_rays.load(Ordering::Relaxed));
        f.render_passes = f
            .render_passes
            .saturating_add(self.render_passes.load(Ordering::Relaxed));
        f.pipeline_binds = f
            .pipeline_binds
            .saturating_add(self.pipeline_binds.load(Ordering::Relaxed));
        f.barriers = f.barriers.saturating_add(self.barriers.load(Ordering::Relaxed));
        f.draws_timed = f.draws_timed.saturating_add(self.draws_timed.load(Ordering::Relaxed));
    }
}

fn draw(kind: DrawKind, vertex_count: u32, index_count: u32, instance_count: u32, indirect: bool) -> Sampled {
    Sampled::Draw(
        DrawParams {
            kind: Some(kind),
            vertex_count,
            index_count,
            instance_count,
            indirect,
            pipeline: 0,
        },
        BindPoint::Graphics,
    )
}

fn dispatch() -> Sampled {
    Sampled::Draw(DrawParams::default(), BindPoint::Compute)
}

fn trace_rays() -> Sampled {
    Sampled::Draw(DrawParams::default(), BindPoint::RayTracing)
}

fn pass(d: &Device, rp: vk::RenderPass, contents: vk::SubpassContents) -> Sampled {
    Sampled::PassBegin(PassStart {
        secondary_contents: contents == vk::SubpassContents::SECONDARY_COMMAND_BUFFERS,
        views: sample_hooks::subpass_views(d, rp.as_raw(), 0),
        render_pass: rp.as_raw(),
    })
}

/// # Safety
/// `i` must be the app's valid render pass begin info.
unsafe fn pass1(d: &Device, i: *const vk::RenderPassBeginInfo<'_>, contents: vk::SubpassContents) -> Sampled {
    // SAFETY: caller's contract.
    pass(d, unsafe { (*i).render_pass }, contents)
}

/// # Safety
/// `i` and `s` must be the app's valid structs.
unsafe fn pass2(d: &Device, i: *const vk::RenderPassBeginInfo<'_>, s: *const vk::SubpassBeginInfo<'_>) -> Sampled {
    // SAFETY: caller's contract.
    unsafe { pass(d, (*i).render_pass, (*s).contents) }
}

/// # Safety
/// `i` must be the app's valid rendering info.
unsafe fn rendering(i: *const vk::RenderingInfo<'_>) -> Sampled {
    // SAFETY: caller's contract.
    let i = unsafe { &*i };
    let split = vk::RenderingFlags::SUSPENDING | vk::RenderingFlags::RESUMING;
    Sampled::PassBegin(PassStart {
        secondary_contents: i.flags.contains(vk::RenderingFlags::CONTENTS_SECONDARY_COMMAND_BUFFERS)
            || i.flags.intersects(split),
        views: sample_hooks::views_of_mask(i.view_mask),
        render_pass: 0,
    })
}

/// Defines a hook that counts `$what` and forwards to the next layer's `$slot` pointer.
macro_rules! counting_hooks {
    ($( $hook:ident, $slot:ident : fn($($arg:ident : $ty:ty),*) => $what:expr, $sampled:expr; )*) => {
        /// Next-layer pointers of every counting hook, loaded once per device.
        #[allow(non_snake_case)]
        pub struct CmdFns {
            $( pub $slot: Option<unsafe extern "system" fn(vk::CommandBuffer $(, $ty)*)>, )*
        }

        impl CmdFns {
            pub fn load(mut load: impl FnMut(&std::ffi::CStr) -> vk::PFN_vkVoidFunction) -> Self {
                CmdFns {
                    $( $slot: load(&std::ffi::CString::new(stringify!($slot)).expect("name"))
                        // SAFETY: the next layer returned this command for this name, so it has
                        // the signature the name implies.
                        .map(|f| unsafe { std::mem::transmute::<unsafe extern "system" fn(), unsafe extern "system" fn(vk::CommandBuffer $(, $ty)*)>(f) }), )*
                }
            }
        }

        $(
            pub unsafe extern "system" fn $hook(cb: vk::CommandBuffer $(, $arg: $ty)*) {
                recording_cache::with(cb.as_raw(), |d, st| {
                    let Some(f) = d.cmd_fns.$slot else { return };
                    if let Some(s) = st {
                        s.counts.bump($what);
                    }
                    match (st, d.samples.as_ref()) {
                        (Some(st), Some(s)) if s.level >= Level::Draw || $what.samples_below_draw_level() => {
                            #[allow(unused_unsafe)]
                            let sampled: Sampled = unsafe { ($sampled)(d) };
                            // SAFETY: forwarding the app's arguments to the next layer.
                            sample_hooks::around(d, st, cb, sampled, || unsafe { f(cb $(, $arg)*) });
                        }
                        // SAFETY: forwarding the app's arguments to the next layer.
                        _ => unsafe { f(cb $(, $arg)*) },
                    }
                });
            }
        )*

        /// What the counting hook for a command name counts, if there is one.
        pub fn counted_by(name: &[u8]) -> Option<Counted> {
            $(
                if name == stringify!($slot).as_bytes() {
                    return Some($what);
                }
            )*
            None
        }

        /// Our hook for a command name, if it is one of the counting hooks.
        pub fn hook_for(name: &[u8]) -> vk::PFN_vkVoidFunction {
            $(
                if name == stringify!($slot).as_bytes() {
                    let f: unsafe extern "system" fn(vk::CommandBuffer $(, $ty)*) = $hook;
                    // SAFETY: PFN representations are identical; the caller casts back by name.
                    return Some(unsafe { std::mem::transmute::<unsafe extern "system" fn(vk::CommandBuffer $(, $ty)*), unsafe extern "system" fn()>(f) });
                }
            )*
            None
        }
    };
}

use DispatchKind as Dk;
use DrawKind as Dr;

counting_hooks! {
    cmd_draw, vkCmdDraw: fn(a: u32, b: u32, c: u32, e: u32) => Counted::Draw(Dr::Draw), |_: &Device| draw(Dr::Draw, a, 0, b, false);
    cmd_draw_indexed, vkCmdDrawIndexed: fn(a: u32, b: u32, c: u32, e: i32, f: u32) => Counted::Draw(Dr::DrawIndexed), |_: &Device| draw(Dr::DrawIndexed, 0, a, b, false);
    cmd_draw_indirect, vkCmdDrawIndirect: fn(b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32) => Counted::Draw(Dr::DrawIndirect), |_: &Device| draw(Dr::DrawIndirect, 0, 0, 0, true);
    cmd_draw_indexed_indirect, vkCmdDrawIndexedIndirect: fn(b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32) => Counted::Draw(Dr::DrawIndexedIndirect), |_: &Device| draw(Dr::DrawIndexedIndirect, 0, 0, 0, true);
    cmd_draw_indirect_count, vkCmdDrawIndirectCount: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawIndirectCount), |_: &Device| draw(Dr::DrawIndirectCount, 0, 0, 0, true);
    cmd_draw_indirect_count_khr, vkCmdDrawIndirectCountKHR: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawIndirectCount), |_: &Device| draw(Dr::DrawIndirectCount, 0, 0, 0, true);
    cmd_draw_indirect_count_amd, vkCmdDrawIndirectCountAMD: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawIndirectCount), |_: &Device| draw(Dr::DrawIndirectCount, 0, 0, 0, true);
    cmd_draw_indexed_indirect_count, vkCmdDrawIndexedIndirectCount: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawIndexedIndirectCount), |_: &Device| draw(Dr::DrawIndexedIndirectCount, 0, 0, 0, true);
    cmd_draw_indexed_indirect_count_khr, vkCmdDrawIndexedIndirectCountKHR: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawIndexedIndirectCount), |_: &Device| draw(Dr::DrawIndexedIndirectCount, 0, 0, 0, true);
    cmd_draw_indexed_indirect_count_amd, vkCmdDrawIndexedIndirectCountAMD: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawIndexedIndirectCount), |_: &Device| draw(Dr::DrawIndexedIndirectCount, 0, 0, 0, true);
    cmd_draw_multi_ext, vkCmdDrawMultiEXT: fn(n: u32, p: *const vk::MultiDrawInfoEXT, i: u32, f: u32, s: u32) => Counted::Draw(Dr::DrawMulti), |_: &Device| draw(Dr::DrawMulti, 0, 0, 0, false);
    cmd_draw_multi_indexed_ext, vkCmdDrawMultiIndexedEXT: fn(n: u32, p: *const vk::MultiDrawIndexedInfoEXT, i: u32, f: u32, s: u32, o: *const i32) => Counted::Draw(Dr::DrawMultiIndexed), |_: &Device| draw(Dr::DrawMultiIndexed, 0, 0, 0, false);
    cmd_draw_mesh_tasks_ext, vkCmdDrawMeshTasksEXT: fn(x: u32, y: u32, z: u32) => Counted::Draw(Dr::DrawMeshTasks), |_: &Device| draw(Dr::DrawMeshTasks, 0, 0, 0, false);
    cmd_draw_mesh_tasks_nv, vkCmdDrawMeshTasksNV: fn(n: u32, f: u32) => Counted::Draw(Dr::DrawMeshTasks), |_: &Device| draw(Dr::DrawMeshTasks, 0, 0, 0, false);
    cmd_draw_mesh_tasks_indirect_ext, vkCmdDrawMeshTasksIndirectEXT: fn(b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32) => Counted::Draw(Dr::DrawMeshTasksIndirect), |_: &Device| draw(Dr::DrawMeshTasksIndirect, 0, 0, 0, true);
    cmd_draw_mesh_tasks_indirect_nv, vkCmdDrawMeshTasksIndirectNV: fn(b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32) => Counted::Draw(Dr::DrawMeshTasksIndirect), |_: &Device| draw(Dr::DrawMeshTasksIndirect, 0, 0, 0, true);
    cmd_draw_mesh_tasks_indirect_count_ext, vkCmdDrawMeshTasksIndirectCountEXT: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawMeshTasksIndirectCount), |_: &Device| draw(Dr::DrawMeshTasksIndirectCount, 0, 0, 0, true);
    cmd_draw_mesh_tasks_indirect_count_nv, vkCmdDrawMeshTasksIndirectCountNV: fn(b: vk::Buffer, o: vk::DeviceSize, cb2: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Counted::Draw(Dr::DrawMeshTasksIndirectCount), |_: &Device| draw(Dr::DrawMeshTasksIndirectCount, 0, 0, 0, true);
    cmd_dispatch, vkCmdDispatch: fn(x: u32, y: u32, z: u32) => Counted::Dispatch(Dk::Direct), |_: &Device| dispatch();
    cmd_dispatch_indirect, vkCmdDispatchIndirect: fn(b: vk::Buffer, o: vk::DeviceSize) => Counted::Dispatch(Dk::Indirect), |_: &Device| dispatch();
    cmd_dispatch_base, vkCmdDispatchBase: fn(bx: u32, by: u32, bz: u32, x: u32, y: u32, z: u32) => Counted::Dispatch(Dk::Base), |_: &Device| dispatch();
    cmd_dispatch_base_khr, vkCmdDispatchBaseKHR: fn(bx: u32, by: u32, bz: u32, x: u32, y: u32, z: u32) => Counted::Dispatch(Dk::Base), |_: &Device| dispatch();
    cmd_trace_rays_khr, vkCmdTraceRaysKHR: fn(a: *const vk::StridedDeviceAddressRegionKHR, b: *const vk::StridedDeviceAddressRegionKHR, c: *const vk::StridedDeviceAddressRegionKHR, e: *const vk::StridedDeviceAddressRegionKHR, w: u32, h: u32, dd: u32) => Counted::TraceRays, |_: &Device| trace_rays();
    cmd_trace_rays_indirect_khr, vkCmdTraceRaysIndirectKHR: fn(a: *const vk::StridedDeviceAddressRegionKHR, b: *const vk::StridedDeviceAddressRegionKHR, c: *const vk::StridedDeviceAddressRegionKHR, e: *const vk::StridedDeviceAddressRegionKHR, addr: vk::DeviceAddress) => Counted::TraceRays, |_: &Device| trace_rays();
    cmd_trace_rays_indirect2_khr, vkCmdTraceRaysIndirect2KHR: fn(addr: vk::DeviceAddress) => Counted::TraceRays, |_: &Device| trace_rays();
    cmd_begin_render_pass, vkCmdBeginRenderPass: fn(i: *const vk::RenderPassBeginInfo<'static>, c: vk::SubpassContents) => Counted::RenderPass, |d: &Device| pass1(d, i, c);
    cmd_begin_render_pass2, vkCmdBeginRenderPass2: fn(i: *const vk::RenderPassBeginInfo<'static>, s: *const vk::SubpassBeginInfo<'static>) => Counted::RenderPass, |d: &Device| pass2(d, i, s);
    cmd_begin_render_pass2_khr, vkCmdBeginRenderPass2KHR: fn(i: *const vk::RenderPassBeginInfo<'static>, s: *const vk::SubpassBeginInfo<'static>) => Counted::RenderPass, |d: &Device| pass2(d, i, s);
    cmd_begin_rendering, vkCmdBeginRendering: fn(i: *const vk::RenderingInfo<'static>) => Counted::RenderPass, |_: &Device| rendering(i);
    cmd_begin_rendering_khr, vkCmdBeginRenderingKHR: fn(i: *const vk::RenderingInfo<'static>) => Counted::RenderPass, |_: &Device| rendering(i);
    cmd_bind_pipeline, vkCmdBindPipeline: fn(bp: vk::PipelineBindPoint, p: vk::Pipeline) => Counted::PipelineBind, |d: &Device| sample_hooks::pipeline_bind(d, bp, p);
    cmd_pipeline_barrier, vkCmdPipelineBarrier: fn(s: vk::PipelineStageFlags, t: vk::PipelineStageFlags, f: vk::DependencyFlags, mc: u32, m: *const vk::MemoryBarrier<'static>, bc: u32, b: *const vk::BufferMemoryBarrier<'static>, ic: u32, im: *const vk::ImageMemoryBarrier<'static>) => Counted::Barrier, |_: &Device| Sampled::None;
    cmd_pipeline_barrier2, vkCmdPipelineBarrier2: fn(i: *const vk::DependencyInfo<'static>) => Counted::Barrier, |_: &Device| Sampled::None;
    cmd_pipeline_barrier2_khr, vkCmdPipelineBarrier2KHR: fn(i: *const vk::DependencyInfo<'static>) => Counted::Barrier, |_: &Device| Sampled::None;
}

/// Whether the app gets the next layer's command for `name` instead of our counting hook:
/// the device does not count commands and sampling needs nothing from this one. Draws,
/// dispatches, trace-rays and barriers sample nothing below draw level (and draw level counts);
/// a pipeline bind matters only where our statistics wait for one.
pub fn passed_through(d: &Device, name: &[u8]) -> bool {
    if d.count_commands {
        return false;
    }
    match counted_by(name) {
        Some(Counted::PipelineBind) => !d
            .samples
            .as_ref()
            .is_some_and(|s| s.stats_after_bind && s.stats.is_some()),
        Some(c) => !c.samples_below_draw_level(),
        None => false,
    }
}

/// Secondaries' counts join the primary that executes them.
pub unsafe extern "system" fn cmd_execute_commands(
    cb: vk::CommandBuffer,
    n: u32,
    secondaries: *const vk::CommandBuffer,
) {
    let Some(d) = device::lookup(cb.as_raw()) else { return };
    if let (Some(primary), false) = (d.command_buffer(cb), secondaries.is_null()) {
        // SAFETY: the app passes n valid secondary handles.
        for &s in unsafe { std::slice::from_raw_parts(secondaries, n as usize) } {
            if let Some(sec) = d.command_buffer(s) {
                primary.counts.absorb(&sec.counts);
                if d.samples.is_some() {
                    primary.rec.lock().events.push(Event::Execute(sec));
                }
            }
        }
    }
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().cmd_execute_commands)(cb, n, secondaries) }
}
