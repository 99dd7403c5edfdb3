//! Safe calls for the Vulkan commands framescope makes on objects of its own, so that the
//! features above need no `unsafe`: the unsafe blocks of those calls are here, each with the
//! reason it holds.
//!
//! The invariant every call rests on: an [`Owned`] handle was created by framescope on the
//! device whose function table it carries, and stays alive while the owner lives (its `Drop`
//! destroys it). A [`PoolBuffer`] comes only from [`Device::allocate_command_buffers`] on an
//! owned pool; a [`Recorder`] proves its command buffer is between begin and end, so the
//! `cmd_*` calls on it are valid. The owners of a device are released in `vkDestroyDevice`
//! before the call goes down (`hooks::create`), after the GPU is idle for them.

use super::device::Device;
use super::instance::Instance;
use ash::prelude::VkResult;
use ash::vk::{self, Handle};

/// The shape of every `vkDestroy*` / `vkFree*` of a non-dispatchable device child.
pub(super) type DestroyFn<H> = unsafe extern "system" fn(vk::Device, H, *const vk::AllocationCallbacks<'_>);

/// A Vulkan object framescope created on one device; dropping it destroys it there.
pub struct Owned<H: Handle + Copy> {
    device: vk::Device,
    handle: H,
    destroy: DestroyFn<H>,
}

impl<H: Handle + Copy> Drop for Owned<H> {
    fn drop(&mut self) {
        // SAFETY: `handle` was created on `device` by us (the constructors below are the only
        // ones) and is dropped once; its users released it first (module invariant).
        unsafe { (self.destroy)(self.device, self.handle, std::ptr::null()) }
    }
}

impl<H: Handle + Copy> Owned<H> {
    /// The raw handle, for a call of the driver's that names it (a submit's fence).
    pub fn handle(&self) -> H {
        self.handle
    }

    /// A copy for the objects that use the handle while the owner lives.
    pub fn share(&self) -> Shared<H> {
        Shared(self.handle)
    }
}

/// A copy of an [`Owned`] handle, held by objects that share one object (the blocks of a
/// query pool, the pool of a timing ring). Owners are released only in `vkDestroyDevice`,
/// after every holder of a copy is done with it, so a copy names a live object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shared<H>(H);

impl<H: Copy> Shared<H> {
    pub fn handle(self) -> H {
        self.0
    }
}

/// Owners kept together and released at once, at device destruction, while their users hold
/// [`Shared`] copies (the HUD's pipelines, which any thread's present may use). Released in
/// reverse order of keeping, so an object goes before what it was made from.
#[derive(Default)]
pub struct Owners(Vec<Box<dyn Send + Sync>>);

impl Owners {
    /// Keeps `o` until the bag is released; the copy names it until then.
    pub fn keep<H: Handle + Copy + Send + Sync + 'static>(&mut self, o: Owned<H>) -> Shared<H> {
        let shared = o.share();
        self.0.push(Box::new(o));
        shared
    }
}

impl Drop for Owners {
    fn drop(&mut self) {
        while let Some(o) = self.0.pop() {
            drop(o);
        }
    }
}

pub type CommandPool = Owned<vk::CommandPool>;
pub type QueryPool = Owned<vk::QueryPool>;
pub type Fence = Owned<vk::Fence>;

/// A primary command buffer allocated from one of our pools; freed with the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolBuffer(vk::CommandBuffer);

impl PoolBuffer {
    pub fn handle(self) -> vk::CommandBuffer {
        self.0
    }
}

/// A command buffer in the recording state: the `cmd_*` calls are methods of it.
pub struct Recorder<'d> {
    pub(super) fns: &'d ash::Device,
    pub(super) cb: vk::CommandBuffer,
}

impl Recorder<'_> {
    /// Only in our own buffers, which never open a render pass (a reset must be outside one).
    pub fn cmd_reset_query_pool(&self, pool: Shared<vk::QueryPool>, first: u32, count: u32) {
        // SAFETY: a recording command buffer (the token) and a live pool of ours.
        unsafe { (self.fns.fp_v1_0().cmd_reset_query_pool)(self.cb, pool.0, first, count) }
    }

    pub fn cmd_write_timestamp(&self, stage: vk::PipelineStageFlags, pool: Shared<vk::QueryPool>, query: u32) {
        // SAFETY: a recording command buffer and a live pool of ours.
        unsafe { (self.fns.fp_v1_0().cmd_write_timestamp)(self.cb, stage, pool.0, query) }
    }

    /// The caller keeps Vulkan's rules on active queries: one of a type at a time, ended in
    /// the subpass (or command buffer) it began in.
    pub fn cmd_begin_query(&self, pool: Shared<vk::QueryPool>, query: u32) {
        // SAFETY: a recording command buffer and a live pool of ours.
        unsafe { (self.fns.fp_v1_0().cmd_begin_query)(self.cb, pool.0, query, vk::QueryControlFlags::empty()) }
    }

    pub fn cmd_end_query(&self, pool: Shared<vk::QueryPool>, query: u32) {
        // SAFETY: a recording command buffer and a live pool of ours.
        unsafe { (self.fns.fp_v1_0().cmd_end_query)(self.cb, pool.0, query) }
    }

    /// Ends the recording; the buffer is executable after `Ok`.
    pub fn end(self) -> VkResult<()> {
        // SAFETY: the token's buffer is recording and nothing else records it.
        unsafe { self.fns.end_command_buffer(self.cb) }
    }
}

impl Device {
    pub(super) fn owned<H: Handle + Copy>(&self, handle: H, destroy: DestroyFn<H>) -> Owned<H> {
        Owned {
            device: self.handle,
            handle,
            destroy,
        }
    }

    pub fn create_command_pool(&self, family: u32) -> VkResult<CommandPool> {
        self.create_command_pool_with(family, vk::CommandPoolCreateFlags::empty())
    }

    /// A command pool of `family` with `flags` (`RESET_COMMAND_BUFFER` for buffers begun
    /// again without a pool reset).
    pub fn create_command_pool_with(&self, family: u32, flags: vk::CommandPoolCreateFlags) -> VkResult<CommandPool> {
        let ci = vk::CommandPoolCreateInfo::default()
            .queue_family_index(family)
            .flags(flags);
        // SAFETY: a valid create info for this live device.
        let pool = unsafe { self.fns.create_command_pool(&ci, None) }?;
        Ok(self.owned(pool, self.fns.fp_v1_0().destroy_command_pool))
    }

    /// A query pool; `ci`'s chain is built with ash's typed `push_next`, so it is valid.
    pub fn create_query_pool(&self, ci: &vk::QueryPoolCreateInfo<'_>) -> VkResult<QueryPool> {
        // SAFETY: a create info of typed structs for this live device.
        let pool = unsafe { self.fns.create_query_pool(ci, None) }?;
        Ok(self.owned(pool, self.fns.fp_v1_0().destroy_query_pool))
    }

    /// `n` primary command buffers of `pool`, each given the loader's dispatch pointer; the
    /// caller serializes use of the pool (Vulkan's external synchronization).
    pub fn allocate_command_buffers(&self, pool: &CommandPool, n: u32) -> VkResult<Vec<PoolBuffer>> {
        let ai = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool.handle)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(n);
        // SAFETY: a live pool of ours on this device.
        let cbs = unsafe { self.fns.allocate_command_buffers(&ai) }?;
        if !cbs.iter().all(|&cb| self.stamp_loader_data(cb)) {
            return Err(vk::Result::ERROR_INITIALIZATION_FAILED);
        }
        Ok(cbs.into_iter().map(PoolBuffer).collect())
    }

    /// One primary command buffer of `pool`, without the `Vec` of the batch allocation (no
    /// Rust allocation); `None` when the driver or the loader refuses it.
    pub fn allocate_command_buffer(&self, pool: &CommandPool) -> Option<PoolBuffer> {
        let ai = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool.handle)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        let mut cb = vk::CommandBuffer::null();
        // SAFETY: a live pool of ours; one command buffer written into `cb`.
        let r = unsafe { (self.fns.fp_v1_0().allocate_command_buffers)(self.handle, &ai, &mut cb) };
        (r == vk::Result::SUCCESS && self.stamp_loader_data(cb)).then_some(PoolBuffer(cb))
    }

    /// Begins recording `cb`; the caller holds the lock that serializes its pool and does not
    /// begin a buffer the GPU may still run without `SIMULTANEOUS_USE` in `flags`.
    pub fn begin(&self, cb: PoolBuffer, flags: vk::CommandBufferUsageFlags) -> VkResult<Recorder<'_>> {
        let bi = vk::CommandBufferBeginInfo::default().flags(flags);
        // SAFETY: `cb` is a live buffer of one of our pools (only `allocate_*` make one).
        unsafe { self.fns.begin_command_buffer(cb.0, &bi) }?;
        Ok(Recorder {
            fns: &self.fns,
            cb: cb.0,
        })
    }

    /// The app's command buffer `cb`, which the app is recording.
    ///
    /// # Safety
    /// Called inside the app's `vkCmd*` (or `vkBegin`/`vkEndCommandBuffer`) hook for `cb`,
    /// where Vulkan's contract puts `cb` in the recording state and on this thread; the token
    /// is used only within that call.
    pub unsafe fn app_recording(&self, cb: vk::CommandBuffer) -> Recorder<'_> {
        Recorder { fns: &self.fns, cb }
    }

    pub fn create_fence(&self) -> VkResult<Fence> {
        // SAFETY: a default create info for this live device.
        let fence = unsafe { self.fns.create_fence(&vk::FenceCreateInfo::default(), None) }?;
        Ok(self.owned(fence, self.fns.fp_v1_0().destroy_fence))
    }

    /// Whether `fence` signalled; never waits (an error reads as not signalled).
    pub fn fence_signalled(&self, fence: &Fence) -> bool {
        // SAFETY: a live fence of ours.
        unsafe { self.fns.get_fence_status(fence.handle) }.unwrap_or(false)
    }

    /// Unsignals `fence`; the caller knows no submission still uses it.
    pub fn reset_fence(&self, fence: &Fence) -> VkResult<()> {
        // SAFETY: a live fence of ours.
        unsafe { self.fns.reset_fences(&[fence.handle]) }
    }

    /// Waits for every fence of `fences`, at most `timeout_ns`.
    pub fn wait_for_fences(&self, fences: &[&Fence], timeout_ns: u64) -> VkResult<()> {
        match fences {
            [] => Ok(()),
            // SAFETY: a live fence of ours.
            [one] => unsafe { self.fns.wait_for_fences(&[one.handle], true, timeout_ns) },
            many => {
                let raw: Vec<vk::Fence> = many.iter().map(|f| f.handle).collect();
                // SAFETY: live fences of ours.
                unsafe { self.fns.wait_for_fences(&raw, true, timeout_ns) }
            }
        }
    }

    /// Reads `count` queries of `pool` from `first` into `out`, `out.len() / count` u64 per
    /// query: the query type's values, then the availability word; never waits. The caller
    /// sizes the width by the pool's query type. The driver's result as is.
    pub fn query_results(&self, pool: Shared<vk::QueryPool>, first: u32, count: u32, out: &mut [u64]) -> vk::Result {
        let width = out.len().checked_div(count as usize).unwrap_or(0);
        if width == 0 {
            return vk::Result::NOT_READY;
        }
        // SAFETY: a live pool of ours; the driver writes `count` strides of `width` u64, all
        // within `out` (`count * width <= out.len()`).
        unsafe {
            (self.fns.fp_v1_0().get_query_pool_results)(
                self.handle,
                pool.0,
                first,
                count,
                std::mem::size_of_val(out),
                out.as_mut_ptr().cast(),
                (width * 8) as u64,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WITH_AVAILABILITY,
            )
        }
    }
}

impl Instance {
    /// The device extensions `phys` offers; empty when the call fails.
    pub fn device_extensions(&self, phys: vk::PhysicalDevice) -> Vec<vk::ExtensionProperties> {
        // SAFETY: `phys` is a physical device of this live instance.
        unsafe { self.fns.enumerate_device_extension_properties(phys) }.unwrap_or_default()
    }

    /// `vkGetPhysicalDeviceProperties2` with a chain of ash's typed structs; the caller asks
    /// only a 1.1 instance (on an older one ash's stub for the missing command panics, which
    /// the hook's guard contains).
    pub fn physical_device_properties2(&self, phys: vk::PhysicalDevice, p2: &mut vk::PhysicalDeviceProperties2<'_>) {
        // SAFETY: `phys` is a physical device of this live instance and the chain is typed;
        // a struct the driver does not know is skipped by it.
        unsafe { self.fns.get_physical_device_properties2(phys, p2) }
    }
}
