//! `VK_KHR_performance_query` as safe calls: the counter list, the profiling lock (released
//! when its owner drops) and the pass count; the commands are resolved by name through the
//! next layer.

use super::device::Device;
use super::instance::Instance;
use ash::vk;

/// The device's profiling lock, held by framescope; released on drop (device destruction,
/// after the performance pools are gone).
pub struct ProfilingLock {
    device: vk::Device,
    physical: vk::PhysicalDevice,
    passes: vk::PFN_vkGetPhysicalDeviceQueueFamilyPerformanceQueryPassesKHR,
    release: vk::PFN_vkReleaseProfilingLockKHR,
}

/// Why the lock was not taken.
pub enum LockRefused {
    /// The next layer does not give the extension's commands.
    NoCommands,
    /// `vkAcquireProfilingLockKHR`'s answer.
    Refused(vk::Result),
}

impl Device {
    /// Takes the profiling lock without waiting (timeout 0: never on the app's thread for
    /// another profiler to let go).
    pub fn acquire_profiling_lock(&self) -> Result<ProfilingLock, LockRefused> {
        let inst = &self.instance;
        // SAFETY: asking the next layer for commands by name, for its live instance and device.
        let (passes, acquire, release) = unsafe {
            (
                (inst.next_gipa)(
                    inst.handle,
                    c"vkGetPhysicalDeviceQueueFamilyPerformanceQueryPassesKHR".as_ptr(),
                ),
                (self.next_gdpa)(self.handle, c"vkAcquireProfilingLockKHR".as_ptr()),
                (self.next_gdpa)(self.handle, c"vkReleaseProfilingLockKHR".as_ptr()),
            )
        };
        let (Some(passes), Some(acquire), Some(release)) = (passes, acquire, release) else {
            return Err(LockRefused::NoCommands);
        };
        // SAFETY: the commands of those names have these signatures.
        let (passes, acquire, release) = unsafe {
            (
                std::mem::transmute::<
                    unsafe extern "system" fn(),
                    vk::PFN_vkGetPhysicalDeviceQueueFamilyPerformanceQueryPassesKHR,
                >(passes),
                std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkAcquireProfilingLockKHR>(acquire),
                std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkReleaseProfilingLockKHR>(release),
            )
        };
        let info = vk::AcquireProfilingLockInfoKHR::default().timeout(0);
        // SAFETY: a live device with the extension enabled; a valid info.
        let r = unsafe { acquire(self.handle, &info) };
        if r != vk::Result::SUCCESS {
            return Err(LockRefused::Refused(r));
        }
        Ok(ProfilingLock {
            device: self.handle,
            physical: self.physical,
            passes,
            release,
        })
    }

    /// One query of a performance pool of ours into `out` (one result of 8 bytes per
    /// counter), without flags (VUID-vkGetQueryPoolResults-queryType-03230): one not yet
    /// available answers `NOT_READY` and writes nothing.
    pub fn perf_query_result(
        &self,
        pool: super::vk_calls::Shared<vk::QueryPool>,
        query: u32,
        out: &mut [u64],
    ) -> vk::Result {
        // SAFETY: a live pool of ours; one query of `out.len()` results, within `out`.
        unsafe {
            (self.fns.fp_v1_0().get_query_pool_results)(
                self.handle,
                pool.handle(),
                query,
                1,
                std::mem::size_of_val(out),
                out.as_mut_ptr().cast(),
                std::mem::size_of_val(out) as u64,
                vk::QueryResultFlags::empty(),
            )
        }
    }
}

impl ProfilingLock {
    /// The passes a query of `indices` on queue family `family` needs.
    pub fn passes(&self, family: u32, indices: &[u32]) -> u32 {
        let ci = vk::QueryPoolPerformanceCreateInfoKHR::default()
            .queue_family_index(family)
            .counter_indices(indices);
        let mut n = 0u32;
        // SAFETY: the device's physical device; a valid create info.
        unsafe { (self.passes)(self.physical, &ci, &mut n) };
        n
    }
}

impl Drop for ProfilingLock {
    fn drop(&mut self) {
        // SAFETY: the lock this owner acquired on its live device (owners go before the device).
        unsafe { (self.release)(self.device) }
    }
}

/// One queue family's performance counters and their descriptions, in the driver's order.
pub type FamilyCounters = (
    u32,
    Vec<vk::PerformanceCounterKHR<'static>>,
    Vec<vk::PerformanceCounterDescriptionKHR<'static>>,
);

impl Instance {
    /// Each queue family's counters of `phys` (at most `max` a family), where it supports
    /// `VK_KHR_performance_query` and the next layer gives the command; else none.
    pub fn performance_counters(&self, phys: vk::PhysicalDevice, max: u32) -> Vec<FamilyCounters> {
        let name = ash::khr::performance_query::NAME;
        if !self
            .device_extensions(phys)
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(name))
        {
            return Vec::new();
        }
        // SAFETY: asking the next layer for an instance command of its live instance by name.
        let Some(f) = (unsafe {
            (self.next_gipa)(
                self.handle,
                c"vkEnumeratePhysicalDeviceQueueFamilyPerformanceQueryCountersKHR".as_ptr(),
            )
        }) else {
            return Vec::new();
        };
        // SAFETY: the next layer returned this command for that name.
        let f: vk::PFN_vkEnumeratePhysicalDeviceQueueFamilyPerformanceQueryCountersKHR =
            unsafe { std::mem::transmute(f) };
        // SAFETY: a physical device of this instance.
        let families = unsafe { self.fns.get_physical_device_queue_family_properties(phys) }.len() as u32;
        let mut out = Vec::new();
        for family in 0..families {
            let mut n = 0u32;
            // SAFETY: the two-call idiom on a device with the extension: a count first.
            let r = unsafe { f(phys, family, &mut n, std::ptr::null_mut(), std::ptr::null_mut()) };
            if r != vk::Result::SUCCESS || n == 0 {
                continue;
            }
            let n = n.min(max);
            let mut counters = vec![vk::PerformanceCounterKHR::default(); n as usize];
            let mut descs = vec![vk::PerformanceCounterDescriptionKHR::default(); n as usize];
            let mut got = n;
            // SAFETY: then arrays of that length, each struct initialised with its sType.
            let r = unsafe { f(phys, family, &mut got, counters.as_mut_ptr(), descs.as_mut_ptr()) };
            if r != vk::Result::SUCCESS && r != vk::Result::INCOMPLETE {
                continue;
            }
            counters.truncate(got as usize);
            descs.truncate(got as usize);
            out.push((family, counters, descs));
        }
        out
    }
}
