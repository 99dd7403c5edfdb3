//! The frame loop: acquire, record (or reuse), submit, present.

use std::collections::HashMap;
use std::error::Error;

use ash::vk;

use crate::args::Args;
use crate::context::Gpu;
use crate::headless;
use crate::pipeline::{Pipeline, Rendering};
use crate::record::{Pool, Recorder};
use crate::renderpass::RenderPass;
use crate::report::{monotonic_ns, Report};
use crate::scene::{self, Chunk, Region};
use crate::submit::{submit_frame, SubmitSync};
use crate::swapchain::{Swapchain, Target};
use crate::targets::{TargetSet, MULTIVIEW_MASK};
use crate::window::Windows;

const FRAMES_IN_FLIGHT: usize = 2;
/// Submissions `--burst` adds at once: past the 16 slots a queue's timing ring once started
/// with, within the 64 it starts with now.
const BURST: usize = 24;

/// Per frame-in-flight synchronisation.
struct FrameSync {
    device: ash::Device,
    fences: Vec<vk::Fence>,
    /// [frame in flight][window]
    acquired: Vec<Vec<vk::Semaphore>>,
}

impl FrameSync {
    fn new(device: &ash::Device, windows: usize) -> Result<FrameSync, vk::Result> {
        let mut me = FrameSync {
            device: device.clone(),
            fences: Vec::new(),
            acquired: Vec::new(),
        };
        // SAFETY: live device; objects are tracked in `me` at once so Drop
        // cleans up after a partial failure.
        unsafe {
            for _ in 0..FRAMES_IN_FLIGHT {
                // Signalled so the first wait on each slot returns at once.
                me.fences.push(device.create_fence(
                    &vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED),
                    None,
                )?);
                me.acquired.push(Vec::new());
                for _ in 0..windows {
                    let s = device.create_semaphore(&vk::SemaphoreCreateInfo::default(), None)?;
                    me.acquired.last_mut().expect("just pushed").push(s);
                }
            }
        }
        Ok(me)
    }
}

impl Drop for FrameSync {
    fn drop(&mut self) {
        // SAFETY: the device is idle at teardown.
        unsafe {
            for &f in &self.fences {
                self.device.destroy_fence(f, None);
            }
            for &s in self.acquired.iter().flatten() {
                self.device.destroy_semaphore(s, None);
            }
        }
    }
}

/// Owns every Vulkan object. Field order is destruction order: children
/// before the device, surfaces before the X windows.
pub struct App {
    args: Args,
    regions: Vec<Region>,
    plan: Vec<Chunk>,
    /// Recorded command buffers by (frame in flight, image index per window),
    /// only with `--reuse`; they live in `pools` and are freed with them.
    reused: HashMap<(usize, Vec<u32>), Vec<vk::CommandBuffer>>,
    /// [frame in flight][thread]
    pools: Vec<Vec<Pool>>,
    /// With `--burst`: the pool of the empty, SIMULTANEOUS_USE command buffer submitted then.
    burst: Option<(Pool, vk::CommandBuffer)>,
    sync: FrameSync,
    /// One per window, or one headless. Emptied before the swapchains go.
    targets: Vec<TargetSet>,
    swapchains: Vec<Swapchain>,
    pipeline: Pipeline,
    /// With `--pipeline-every`: the pipelines made mid-run (never drawn with).
    extra_pipelines: Vec<Pipeline>,
    /// With `--render-pass`; dropped after the pipelines and framebuffers made from it.
    render_pass: Option<RenderPass>,
    gpu: Gpu,
    windows: Option<Windows>,
    report: Report,
}

impl App {
    pub fn new(args: &Args) -> Result<App, Box<dyn Error>> {
        let windows = if args.headless {
            None
        } else {
            Some(Windows::open(args.windows, args.width, args.height)?)
        };
        let gpu = Gpu::new(windows.is_some(), args.labels, args.frame_boundary, args.multiview)?;
        let size = vk::Extent2D {
            width: args.width,
            height: args.height,
        };
        let mut swapchains: Vec<Swapchain> = Vec::new();
        // With multiview the swapchain images only receive a copy.
        let usage = if args.multiview {
            vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_DST
        } else {
            vk::ImageUsageFlags::COLOR_ATTACHMENT
        };
        if let Some(w) = &windows {
            for &handle in w.handles() {
                let format = swapchains
                    .first()
                    .map(|s| s.format)
                    .or(args.srgb.then_some(vk::Format::B8G8R8A8_SRGB));
                match Swapchain::new(&gpu, w.display(), handle, size, args.present_mode, format, usage) {
                    Ok(s) => swapchains.push(s),
                    Err(e) => {
                        for s in &mut swapchains {
                            s.destroy(&gpu);
                        }
                        return Err(e);
                    }
                }
            }
        }
        // From here on App's Drop (which needs swapchains inside App) cleans up.
        let format = swapchains.first().map_or(headless::FORMAT, |s| s.format);
        let regions = scene::regions(args);
        let (render_pass, pipeline) = match Self::make_pipeline(&gpu.device, format, args, regions.len()) {
            Ok(p) => p,
            Err(e) => {
                for s in &mut swapchains {
                    s.destroy(&gpu);
                }
                return Err(e);
            }
        };
        let sync = FrameSync::new(&gpu.device, swapchains.len());
        let mut pools = Vec::new();
        for _ in 0..FRAMES_IN_FLIGHT {
            let per_thread: Result<Vec<Pool>, vk::Result> = (0..args.threads)
                .map(|_| Pool::new(&gpu.device, gpu.queue_family))
                .collect();
            pools.push(per_thread);
        }
        let targets = swapchains.len().max(1);
        let chunks = args.threads.max(args.submits) as usize;
        let plan = scene::plan(&regions, targets, chunks, args.threads as usize);
        let passes = if args.resubmit_twice { 2 } else { 1 };
        let report = Report {
            windows: if args.headless { 0 } else { args.windows },
            draws_per_frame: scene::draws_per_target(&regions) * targets as u64 * passes,
            vertices_per_frame: scene::vertices_per_target(&regions) * targets as u64 * passes,
            passes_per_frame: passes as u32,
            width: args.width,
            height: args.height,
            present_mode: present_mode_name(swapchains.first().map(|s| s.present_mode)),
            scene: args.scene.name(),
            threads: args.threads,
            submits_per_frame: args.submits * passes as u32,
            headless: args.headless,
            multiview: args.multiview,
            render_pass: args.render_pass,
            cmd_draw_owner: crate::report::owner_of(gpu.device.fp_v1_0().cmd_draw as *const libc::c_void),
            ..Report::default()
        };
        // Assemble first so that any later error drops a complete App.
        let mut app = App {
            args: args.clone(),
            regions,
            plan,
            reused: HashMap::new(),
            pools: Vec::new(),
            burst: None,
            sync: FrameSync {
                device: gpu.device.clone(),
                fences: Vec::new(),
                acquired: Vec::new(),
            },
            targets: Vec::new(),
            swapchains,
            pipeline,
            extra_pipelines: Vec::new(),
            render_pass,
            gpu,
            windows,
            report,
        };
        // The pools made so far go in before any `?`: dropped after `app`, they would be
        // destroyed on a destroyed device (a crash on the error path, seen with fence creation
        // refused).
        let mut pools_failed = None;
        for p in pools {
            match p {
                Ok(p) => app.pools.push(p),
                Err(e) => pools_failed = pools_failed.or(Some(e)),
            }
        }
        app.sync = sync?;
        let pass = app.render_pass.as_ref();
        if args.headless {
            let set = TargetSet::headless(&app.gpu, FRAMES_IN_FLIGHT, size, args.multiview, pass)?;
            app.targets.push(set);
        }
        for s in &app.swapchains {
            let set = TargetSet::window(&app.gpu, s, args.multiview, pass)?;
            app.targets.push(set);
        }
        if let Some(e) = pools_failed {
            return Err(e.into());
        }
        if args.burst.is_some() {
            let mut pool = Pool::new(&app.gpu.device, app.gpu.queue_family)?;
            let cb = pool.next(vk::CommandBufferLevel::PRIMARY)?;
            let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::SIMULTANEOUS_USE);
            // SAFETY: a fresh primary of our own pool, recorded once, empty.
            unsafe {
                app.gpu.device.begin_command_buffer(cb, &begin)?;
                app.gpu.device.end_command_buffer(cb)?;
            }
            app.burst = Some((pool, cb));
        }
        Ok(app)
    }

    /// The render pass (with `--render-pass`) and the pipelines drawing in it.
    fn make_pipeline(
        device: &ash::Device,
        format: vk::Format,
        args: &Args,
        regions: usize,
    ) -> Result<(Option<RenderPass>, Pipeline), Box<dyn Error>> {
        let view_mask = if args.multiview { MULTIVIEW_MASK } else { 0 };
        if !args.render_pass {
            let pipeline = Pipeline::new(device, format, Rendering::Dynamic { view_mask })?;
            return Ok((None, pipeline));
        }
        let pass = RenderPass::new(device, format, regions, view_mask)?;
        let rendering = Rendering::Pass {
            pass: pass.pass,
            subpasses: regions as u32,
        };
        let pipeline = Pipeline::new(device, format, rendering)?;
        Ok((Some(pass), pipeline))
    }

    pub fn run(mut self) -> Result<Report, Box<dyn Error>> {
        let mut frame: u64 = 0;
        while frame < u64::from(self.args.frames) {
            if self.frame(frame)? {
                frame += 1;
                if self.args.sleep_ms > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(u64::from(self.args.sleep_ms)));
                }
            }
        }
        self.report.frames = frame;
        self.report.thread_cpu_ns = crate::report::thread_cpu_ns();
        // SAFETY: live device; everything is torn down (in Drop) only after this.
        unsafe { self.gpu.device.device_wait_idle()? };
        Ok(std::mem::take(&mut self.report))
    }

    /// Renders one frame; false when there was nothing to render into.
    fn frame(&mut self, frame: u64) -> Result<bool, Box<dyn Error>> {
        let fif = (frame % FRAMES_IN_FLIGHT as u64) as usize;
        let every = u64::from(self.args.pipeline_every);
        if every > 0 && frame > 0 && frame.is_multiple_of(every) {
            let p = Pipeline::new(
                &self.gpu.device,
                self.pipeline.format,
                Rendering::Dynamic { view_mask: 0 },
            )?;
            self.extra_pipelines.push(p);
        }
        self.poll_windows();
        let fence = self.sync.fences[fif];
        // SAFETY: the fence is live; waiting bounds the CPU to 2 frames ahead
        // and makes this slot's pools and semaphores free for reuse.
        unsafe { self.gpu.device.wait_for_fences(&[fence], true, u64::MAX)? };
        if self.swapchains.iter().any(|s| s.needs_rebuild) {
            self.rebuild_swapchains()?;
            if self.swapchains.iter().any(|s| s.needs_rebuild) {
                // Zero-area window: nothing to present until it grows again.
                std::thread::sleep(std::time::Duration::from_millis(10));
                return Ok(false);
            }
        }
        let indices = self.acquire(fif)?;
        let targets: Vec<Target> = if self.args.headless {
            vec![self.targets[0].target(fif)]
        } else {
            self.targets
                .iter()
                .zip(&indices)
                .map(|(t, &i)| t.target(i as usize))
                .collect()
        };
        if let (Some((_, cb)), Some(at)) = (&self.burst, self.args.burst) {
            if frame == u64::from(at) {
                let cbs = [*cb];
                let submit = [vk::SubmitInfo::default().command_buffers(&cbs)];
                for _ in 0..BURST {
                    // SAFETY: live queue, only this thread submits; the buffer is
                    // SIMULTANEOUS_USE, so it may be pending many times.
                    unsafe {
                        self.gpu
                            .device
                            .queue_submit(self.gpu.queue, &submit, vk::Fence::null())?
                    };
                }
            }
        }
        let record_start = monotonic_ns();
        let cbs = self.command_buffers(fif, &indices, &targets)?;
        self.report.record_ns += monotonic_ns() - record_start;
        let render_finished: Vec<vk::Semaphore> = self
            .swapchains
            .iter()
            .zip(&indices)
            .map(|(s, &i)| s.render_finished[i as usize])
            .collect();
        if self.args.submit_threads {
            crate::submit::submit_tail(&self.gpu.device, self.gpu.queue, fence, &self.args, frame)?;
            return Ok(true);
        }
        submit_frame(
            &self.gpu.device,
            self.gpu.queue,
            &cbs,
            &SubmitSync {
                wait: &self.sync.acquired[fif],
                signal: &render_finished,
                fence,
            },
            &self.args,
            frame,
        )?;
        if !self.swapchains.is_empty() {
            self.present(&indices, &render_finished)?;
            if self.args.recreate_semaphores {
                self.recreate_semaphores(fence, &indices)?;
            }
        }
        Ok(true)
    }

    fn poll_windows(&mut self) {
        let Some(w) = &mut self.windows else { return };
        for r in w.poll() {
            let s = &mut self.swapchains[r.index];
            s.window_size = vk::Extent2D {
                width: r.width,
                height: r.height,
            };
            if s.window_size != s.extent {
                s.needs_rebuild = true;
            }
        }
    }

    fn rebuild_swapchains(&mut self) -> Result<(), Box<dyn Error>> {
        // SAFETY: live device. Idle is required before retiring swapchain
        // images that recorded command buffers still reference.
        unsafe { self.gpu.device.device_wait_idle()? };
        for (s, t) in self.swapchains.iter_mut().zip(&mut self.targets) {
            if !s.needs_rebuild {
                continue;
            }
            // Framebuffers and multiview images follow the old images: free them first.
            *t = TargetSet::none(&self.gpu.device);
            s.rebuild(&self.gpu)?;
            self.report.swapchain_rebuilds += 1;
            if !s.needs_rebuild {
                *t = TargetSet::window(&self.gpu, s, self.args.multiview, self.render_pass.as_ref())?;
            }
        }
        // Recorded buffers name the old image views.
        self.reused.clear();
        for pool in self.pools.iter_mut().flatten() {
            pool.reset()?;
        }
        Ok(())
    }

    fn acquire(&mut self, fif: usize) -> Result<Vec<u32>, Box<dyn Error>> {
        let mut indices = Vec::with_capacity(self.swapchains.len());
        for k in 0..self.swapchains.len() {
            loop {
                let swap_fn = self.gpu.swapchain.as_ref().expect("windowed gpu");
                // SAFETY: live swapchain; this slot's semaphore is unsignalled
                // because the fence wait covered the submit that waited on it.
                let r = unsafe {
                    swap_fn.acquire_next_image(
                        self.swapchains[k].swapchain,
                        u64::MAX,
                        self.sync.acquired[fif][k],
                        vk::Fence::null(),
                    )
                };
                match r {
                    Ok((index, suboptimal)) => {
                        // Still usable: present this frame, rebuild before the next.
                        self.swapchains[k].needs_rebuild |= suboptimal;
                        indices.push(index);
                        break;
                    }
                    Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => {
                        self.swapchains[k].needs_rebuild = true;
                        self.rebuild_swapchains()?;
                        if self.swapchains[k].needs_rebuild {
                            return Err("window lost its area while acquiring".into());
                        }
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(indices)
    }

    fn command_buffers(
        &mut self,
        fif: usize,
        indices: &[u32],
        targets: &[Target],
    ) -> Result<Vec<vk::CommandBuffer>, Box<dyn Error>> {
        let key = (fif, indices.to_vec());
        if self.args.reuse {
            if let Some(cbs) = self.reused.get(&key) {
                return Ok(cbs.clone());
            }
        } else {
            for pool in &mut self.pools[fif] {
                pool.reset()?;
            }
        }
        let usage = if !self.args.reuse {
            vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT
        } else if self.args.simultaneous {
            vk::CommandBufferUsageFlags::SIMULTANEOUS_USE
        } else {
            vk::CommandBufferUsageFlags::empty()
        };
        let recorder = Recorder {
            device: &self.gpu.device,
            debug_utils: self.gpu.debug_utils.as_ref(),
            pipeline: &self.pipeline,
            regions: &self.regions,
            secondary: self.args.secondary,
            usage,
            view_mask: if self.args.multiview { MULTIVIEW_MASK } else { 0 },
            render_pass: self.render_pass.as_ref().map_or(vk::RenderPass::null(), |p| p.pass),
            push_first: self.args.push_first,
        };
        let pools = &mut self.pools[fif];
        let plan = &self.plan;
        let submit_lock = std::sync::Mutex::new(());
        let (device, queue, args) = (&self.gpu.device, self.gpu.queue, &self.args);
        let cbs = if self.render_pass.is_none() {
            record_parallel(pools, plan, |pool, chunk| {
                let cb = recorder.record(pool, chunk, targets)?;
                if args.submit_threads {
                    crate::submit::submit_from_thread(device, queue, &submit_lock, &[cb], args)?;
                }
                Ok(cb)
            })?
        } else if self.args.secondary {
            // One primary; the secondaries are recorded on the threads first.
            let secondaries = record_parallel(pools, plan, |pool, chunk| {
                recorder.pass_secondaries(pool, chunk, targets)
            })?;
            vec![recorder.pass_primary(&mut pools[0], plan, Some(&secondaries), targets)?]
        } else {
            // --threads 1 and --submits 1 (checked by args): one chunk.
            vec![recorder.pass_primary(&mut pools[0], plan, None, targets)?]
        };
        if self.args.reuse {
            self.reused.insert(key, cbs.clone());
        }
        Ok(cbs)
    }

    /// libplacebo's pattern: once the fence of the frame's own submit signalled, the
    /// semaphores it signalled are destroyed; the present's wait on them needs no more
    /// (a present's wait cannot be tracked, VK_EXT_swapchain_maintenance1 aside).
    fn recreate_semaphores(&mut self, fence: vk::Fence, indices: &[u32]) -> Result<(), Box<dyn Error>> {
        let device = &self.gpu.device;
        // SAFETY: live fence of this frame's submit.
        unsafe { device.wait_for_fences(&[fence], true, u64::MAX)? };
        for (s, &i) in self.swapchains.iter_mut().zip(indices) {
            let slot = &mut s.render_finished[i as usize];
            // SAFETY: the only submission that used the semaphore (this frame's, signalling
            // it) has completed; the present waited it.
            unsafe {
                device.destroy_semaphore(*slot, None);
                *slot = device.create_semaphore(&vk::SemaphoreCreateInfo::default(), None)?;
            }
        }
        Ok(())
    }

    fn present(&mut self, indices: &[u32], render_finished: &[vk::Semaphore]) -> Result<(), Box<dyn Error>> {
        let chains: Vec<vk::SwapchainKHR> = self.swapchains.iter().map(|s| s.swapchain).collect();
        let mut results = vec![vk::Result::SUCCESS; chains.len()];
        let info = vk::PresentInfoKHR::default()
            .wait_semaphores(render_finished)
            .swapchains(&chains)
            .image_indices(indices)
            .results(&mut results);
        let swap_fn = self.gpu.swapchain.as_ref().expect("windowed gpu");
        // Taken as late as possible: the layer times the same call's entry.
        self.report.presents.record(monotonic_ns());
        // SAFETY: every array in `info` lives across the call; each image was
        // acquired this frame and its render-finished semaphore is signalled
        // by this frame's last submit.
        let r = unsafe { swap_fn.queue_present(self.gpu.queue, &info) };
        match r {
            Ok(_) | Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => {}
            Err(e) => return Err(e.into()),
        }
        for (s, r) in self.swapchains.iter_mut().zip(&results) {
            match *r {
                vk::Result::SUCCESS => {}
                vk::Result::SUBOPTIMAL_KHR | vk::Result::ERROR_OUT_OF_DATE_KHR => s.needs_rebuild = true,
                e => return Err(e.into()),
            }
        }
        Ok(())
    }
}

/// Records every chunk with `record`, each on its assigned thread with that
/// thread's pool, and returns the results (primaries, or with a render pass
/// each chunk's secondaries) in plan order.
fn record_parallel<T: Send>(
    pools: &mut [Pool],
    plan: &[Chunk],
    record: impl Fn(&mut Pool, &Chunk) -> Result<T, vk::Result> + Sync,
) -> Result<Vec<T>, vk::Result> {
    let record_thread = |thread: usize, pool: &mut Pool| {
        plan.iter()
            .enumerate()
            .filter(|(_, c)| c.thread == thread)
            .map(|(i, c)| record(pool, c).map(|cb| (i, cb)))
            .collect::<Result<Vec<_>, vk::Result>>()
    };
    let mut recorded: Vec<(usize, T)> = if pools.len() == 1 {
        record_thread(0, &mut pools[0])?
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = pools
                .iter_mut()
                .enumerate()
                .map(|(t, pool)| scope.spawn(move || record_thread(t, pool)))
                .collect();
            let mut all = Vec::new();
            for h in handles {
                all.extend(h.join().expect("recording thread panicked")?);
            }
            Ok::<_, vk::Result>(all)
        })?
    };
    recorded.sort_by_key(|(i, _)| *i);
    Ok(recorded.into_iter().map(|(_, cb)| cb).collect())
}

fn present_mode_name(mode: Option<vk::PresentModeKHR>) -> &'static str {
    match mode {
        None => "none",
        Some(vk::PresentModeKHR::IMMEDIATE) => "immediate",
        Some(vk::PresentModeKHR::MAILBOX) => "mailbox",
        Some(vk::PresentModeKHR::FIFO) => "fifo",
        Some(vk::PresentModeKHR::FIFO_RELAXED) => "fifo_relaxed",
        Some(_) => "other",
    }
}

impl Drop for App {
    fn drop(&mut self) {
        // SAFETY: live device. Nothing may be destroyed while in use, whether
        // we got here by finishing or by an error.
        unsafe {
            let _ = self.gpu.device.device_wait_idle();
        }
        // Framebuffers and multiview images first: they name swapchain images.
        self.targets.clear();
        // Swapchains need the Gpu to be destroyed, so they cannot drop
        // themselves; every other field drops after this, in declaration order.
        for s in &mut self.swapchains {
            s.destroy(&self.gpu);
        }
    }
}
