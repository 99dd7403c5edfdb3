//! The app's pipeline, shader and memory creations, timed into the calling thread's creation
//! tally (`framescope_core::creation`): what a stutter frame spent compiling or allocating.
//!
//! Pipeline creations also ask the driver for its own account
//! (`VK_EXT_pipeline_creation_feedback`, core in 1.3): where the app chained no
//! `VkPipelineCreationFeedbackCreateInfo`, the driver gets copies of the app's create infos,
//! each with one of ours in front of the app's own chain (the app's structs are never
//! written); where the app chained one, its own feedback is read after the call. Per pipeline
//! created with valid feedback, its driver-measured duration and whether it was a hit in the
//! app's pipeline cache go into the tally. Up to [`ON_STACK`] create infos per call are copied
//! on the stack; a larger batch allocates (creation calls are not per frame in steady state).

use crate::device_state::{self, DeviceState};
use ash::vk::{self, Handle};
use framescope_core::creation::{add, add_feedback, CreationKind, PipelineFeedback};
use framescope_core::guard::{guarded, Site};
use std::ffi::c_void;

timed_hooks! { CREATION;
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

static PIPELINES: Site = Site::new("pipeline creation feedback");

/// Create infos per call copied on the stack (most calls create one pipeline).
pub const ON_STACK: usize = 8;

/// A pipeline create info whose chain can take a `VkPipelineCreationFeedbackCreateInfo`.
trait PipelineInfo: Copy + Default {
    fn next(&self) -> *const c_void;
    fn set_next(&mut self, p: *const c_void);
}

macro_rules! pipeline_info {
    ($($t:ty),*) => {$(
        impl PipelineInfo for $t {
            fn next(&self) -> *const c_void {
                self.p_next
            }
            fn set_next(&mut self, p: *const c_void) {
                self.p_next = p;
            }
        }
    )*};
}
pipeline_info!(
    vk::GraphicsPipelineCreateInfo<'static>,
    vk::ComputePipelineCreateInfo<'static>,
    vk::RayTracingPipelineCreateInfoKHR<'static>
);

pub unsafe extern "system" fn create_graphics_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::GraphicsPipelineCreateInfo<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::Pipeline,
) -> vk::Result {
    // SAFETY: a dispatchable handle the app passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let next = d.fns.fp_v1_0().create_graphics_pipelines;
    // SAFETY: the app's arguments of this call; `call` forwards them, with `infos` or copies
    // of it, to the next layer.
    unsafe {
        with_feedback(&d, true, count, infos.cast(), out, |i| {
            next(device, cache, count, i, alloc, out)
        })
    }
}

pub unsafe extern "system" fn create_compute_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::ComputePipelineCreateInfo<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::Pipeline,
) -> vk::Result {
    // SAFETY: a dispatchable handle the app passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let next = d.fns.fp_v1_0().create_compute_pipelines;
    // SAFETY: as for graphics pipelines.
    unsafe {
        with_feedback(&d, true, count, infos.cast(), out, |i| {
            next(device, cache, count, i, alloc, out)
        })
    }
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
    // SAFETY: a dispatchable handle the app passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let next = d.creation_fns.ray_tracing.create_ray_tracing_pipelines_khr;
    // A deferred creation may write its feedback after this call returns, when our structs
    // are gone: only a creation that completes within the call gets ours.
    let now = deferred == vk::DeferredOperationKHR::null();
    // SAFETY: as for graphics pipelines.
    unsafe {
        with_feedback(&d, now, count, infos.cast(), out, |i| {
            next(device, deferred, cache, count, i, alloc, out)
        })
    }
}

/// Runs the creating `call` with the app's `infos`, or with copies carrying our feedback
/// structs, times it as one pipeline creation, and adds the driver's feedback of the pipelines
/// it made.
///
/// # Safety
/// `infos` and `out` are the app's `count` create infos (valid chains) and pipeline array of
/// this call; `call` forwards its argument in place of `infos`, the rest unchanged.
unsafe fn with_feedback<T: PipelineInfo>(
    d: &DeviceState,
    complete_in_call: bool,
    count: u32,
    infos: *const T,
    out: *mut vk::Pipeline,
    call: impl FnOnce(*const T) -> vk::Result,
) -> vk::Result {
    let n = count as usize;
    if !d.pipeline_feedback || !complete_in_call || n == 0 || infos.is_null() || out.is_null() {
        let t0 = framescope_core::clock::monotonic_now_ns();
        let r = call(infos);
        let t1 = framescope_core::clock::monotonic_now_ns();
        guarded(&PIPELINES, || add(CreationKind::Pipeline, t1.saturating_sub(t0)));
        return r;
    }
    let mut stack = Feedback::<T, ON_STACK>::default();
    let mut heap = None;
    let mut fb = if n <= ON_STACK {
        stack.as_mut(n)
    } else {
        heap.insert(HeapFeedback::<T>::new(n)).as_mut()
    };
    // SAFETY: the caller's contract; the slices have n entries and stay in place (not moved)
    // until after the call and the read below.
    let prepared = guarded(&PIPELINES, || unsafe { fb.prepare(infos) }).is_some();
    let t0 = framescope_core::clock::monotonic_now_ns();
    let r = call(if prepared { fb.copies.as_ptr() } else { infos });
    let t1 = framescope_core::clock::monotonic_now_ns();
    guarded(&PIPELINES, || {
        add(CreationKind::Pipeline, t1.saturating_sub(t0));
        if prepared {
            // SAFETY: `out` has n entries, each written by the driver (a pipeline, or null
            // for one that failed); the feedback pointers are ours or the app's, valid.
            add_feedback(unsafe { fb.read(out) });
        }
    });
    r
}

/// The copies handed down, our feedback structs, and where each pipeline's feedback is read.
struct Slots<'a, T> {
    copies: &'a mut [T],
    ours: &'a mut [vk::PipelineCreationFeedbackCreateInfo<'static>],
    results: &'a mut [vk::PipelineCreationFeedback],
    read: &'a mut [*const vk::PipelineCreationFeedback],
}

impl<T: PipelineInfo> Slots<'_, T> {
    /// Fills the copies from the app's `infos`.
    ///
    /// # Safety
    /// `infos` has `self.copies.len()` valid create infos; `self` is not moved until the
    /// call that uses the copies returns.
    unsafe fn prepare(&mut self, infos: *const T) {
        // Raw pointers only from here: the driver writes `results` through them.
        let results = self.results.as_mut_ptr();
        let ours = self.ours.as_mut_ptr();
        for i in 0..self.copies.len() {
            // SAFETY: i < count.
            let app = unsafe { *infos.add(i) };
            self.copies[i] = app;
            // SAFETY: the app's chain is valid.
            let theirs = unsafe {
                crate::dispatch::chain::find(app.next(), vk::StructureType::PIPELINE_CREATION_FEEDBACK_CREATE_INFO)
            } as *const vk::PipelineCreationFeedbackCreateInfo<'static>;
            if theirs.is_null() {
                // SAFETY: i < len of both arrays, which outlive the call.
                unsafe {
                    results.add(i).write(vk::PipelineCreationFeedback::default());
                    // Pipeline feedback only: no per-stage array (a count of 0 is valid, and
                    // the stage count differs by pipeline type).
                    ours.add(i).write(vk::PipelineCreationFeedbackCreateInfo {
                        p_next: app.next(),
                        p_pipeline_creation_feedback: results.add(i),
                        ..Default::default()
                    });
                    self.copies[i].set_next(ours.add(i).cast());
                    self.read[i] = results.add(i);
                }
            } else {
                // The app's own: the driver writes it, we only read it afterwards.
                // SAFETY: found by its sType in a valid chain.
                self.read[i] = unsafe { (*theirs).p_pipeline_creation_feedback };
            }
        }
    }

    /// The feedback of the pipelines made.
    ///
    /// # Safety
    /// `out` has `self.read.len()` entries written by the creating call; each `read` pointer
    /// is null or valid.
    unsafe fn read(&self, out: *const vk::Pipeline) -> PipelineFeedback {
        let mut fb = PipelineFeedback::default();
        for (i, &p) in self.read.iter().enumerate() {
            // SAFETY: the caller's contract.
            if p.is_null() || unsafe { *out.add(i) } == vk::Pipeline::null() {
                continue;
            }
            // SAFETY: the caller's contract.
            let f = unsafe { *p };
            if f.flags.contains(vk::PipelineCreationFeedbackFlags::VALID) {
                let hit = f
                    .flags
                    .contains(vk::PipelineCreationFeedbackFlags::APPLICATION_PIPELINE_CACHE_HIT);
                fb.add(f.duration, hit);
            }
        }
        fb
    }
}

struct Feedback<T, const N: usize> {
    copies: [T; N],
    ours: [vk::PipelineCreationFeedbackCreateInfo<'static>; N],
    results: [vk::PipelineCreationFeedback; N],
    read: [*const vk::PipelineCreationFeedback; N],
}

impl<T: PipelineInfo, const N: usize> Default for Feedback<T, N> {
    fn default() -> Self {
        Feedback {
            copies: [T::default(); N],
            ours: [vk::PipelineCreationFeedbackCreateInfo::default(); N],
            results: [vk::PipelineCreationFeedback::default(); N],
            read: [std::ptr::null(); N],
        }
    }
}

impl<T: PipelineInfo, const N: usize> Feedback<T, N> {
    fn as_mut(&mut self, n: usize) -> Slots<'_, T> {
        Slots {
            copies: &mut self.copies[..n],
            ours: &mut self.ours[..n],
            results: &mut self.results[..n],
            read: &mut self.read[..n],
        }
    }
}

struct HeapFeedback<T> {
    copies: Vec<T>,
    ours: Vec<vk::PipelineCreationFeedbackCreateInfo<'static>>,
    results: Vec<vk::PipelineCreationFeedback>,
    read: Vec<*const vk::PipelineCreationFeedback>,
}

impl<T: PipelineInfo> HeapFeedback<T> {
    fn new(n: usize) -> Self {
        HeapFeedback {
            copies: vec![T::default(); n],
            ours: vec![vk::PipelineCreationFeedbackCreateInfo::default(); n],
            results: vec![vk::PipelineCreationFeedback::default(); n],
            read: vec![std::ptr::null(); n],
        }
    }

    fn as_mut(&mut self) -> Slots<'_, T> {
        Slots {
            copies: &mut self.copies,
            ours: &mut self.ours,
            results: &mut self.results,
            read: &mut self.read,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a driver does with the chain it is handed: writes the pipeline feedback it finds.
    ///
    /// # Safety
    /// `info`'s chain is valid; a feedback struct in it points at a writable feedback.
    unsafe fn drive(
        info: &vk::GraphicsPipelineCreateInfo<'static>,
        duration: u64,
        flags: vk::PipelineCreationFeedbackFlags,
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            let ci =
                crate::dispatch::chain::find(info.p_next, vk::StructureType::PIPELINE_CREATION_FEEDBACK_CREATE_INFO)
                    as *const vk::PipelineCreationFeedbackCreateInfo<'static>;
            assert!(!ci.is_null(), "no feedback struct reached the driver");
            *(*ci).p_pipeline_creation_feedback = vk::PipelineCreationFeedback { flags, duration };
        }
    }

    #[test]
    fn ours_goes_in_front_of_the_apps_chain_and_the_apps_own_is_read() {
        use vk::PipelineCreationFeedbackFlags as F;
        // The app's chain of the first info: some struct of its own; the second chains its own
        // feedback struct behind one.
        let other = vk::PipelineRenderingCreateInfo::default();
        let mut theirs = vk::PipelineCreationFeedback::default();
        let mut stage = [vk::PipelineCreationFeedback::default(); 2];
        let their_ci = vk::PipelineCreationFeedbackCreateInfo {
            p_pipeline_creation_feedback: &mut theirs,
            pipeline_stage_creation_feedback_count: 2,
            p_pipeline_stage_creation_feedbacks: stage.as_mut_ptr(),
            ..Default::default()
        };
        let other2 = vk::PipelineRenderingCreateInfo {
            p_next: std::ptr::addr_of!(their_ci).cast(),
            ..Default::default()
        };
        let app = [
            vk::GraphicsPipelineCreateInfo {
                p_next: std::ptr::addr_of!(other).cast(),
                ..Default::default()
            },
            vk::GraphicsPipelineCreateInfo {
                p_next: std::ptr::addr_of!(other2).cast(),
                ..Default::default()
            },
            vk::GraphicsPipelineCreateInfo::default(),
        ];
        let before: Vec<*const c_void> = app.iter().map(|i| i.p_next).collect();
        let mut fb = Feedback::<vk::GraphicsPipelineCreateInfo<'static>, ON_STACK>::default();
        let mut slots = fb.as_mut(app.len());
        // SAFETY: three valid infos; `fb` stays in place.
        unsafe { slots.prepare(app.as_ptr()) };
        // The app's infos are untouched; the copies lead to the app's chains.
        assert_eq!(app.iter().map(|i| i.p_next).collect::<Vec<_>>(), before);
        // SAFETY: the copies' chains start with ours, then the app's.
        unsafe {
            let ours = slots.copies[0].p_next as *const vk::PipelineCreationFeedbackCreateInfo<'static>;
            assert_eq!(
                (*ours).s_type,
                vk::StructureType::PIPELINE_CREATION_FEEDBACK_CREATE_INFO
            );
            assert_eq!((*ours).p_next, before[0]);
            assert_eq!((*ours).pipeline_stage_creation_feedback_count, 0);
        }
        assert_eq!(
            slots.copies[1].p_next, before[1],
            "the app chained its own: nothing added"
        );
        // SAFETY: the chains are valid and their feedback structs writable.
        unsafe {
            drive(&slots.copies[0], 3_000, F::VALID);
            drive(&slots.copies[1], 5_000, F::VALID | F::APPLICATION_PIPELINE_CACHE_HIT);
            drive(&slots.copies[2], 7_000, F::empty());
        }
        assert_eq!(theirs.duration, 5_000, "the driver wrote the app's own struct");
        let out = [
            vk::Pipeline::from_raw(1),
            vk::Pipeline::from_raw(2),
            vk::Pipeline::from_raw(3),
        ];
        // SAFETY: three pipelines; the feedback pointers are valid.
        let got = unsafe { slots.read(out.as_ptr()) };
        // The third's feedback is not marked valid.
        assert_eq!(
            got,
            PipelineFeedback {
                count: 2,
                driver_ns: 8_000,
                cache_hits: 1
            }
        );
        let failed = [
            vk::Pipeline::null(),
            vk::Pipeline::from_raw(2),
            vk::Pipeline::from_raw(3),
        ];
        // SAFETY: as above.
        let got = unsafe { slots.read(failed.as_ptr()) };
        assert_eq!(
            got,
            PipelineFeedback {
                count: 1,
                driver_ns: 5_000,
                cache_hits: 1
            }
        );
    }
}
