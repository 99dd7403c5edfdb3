//! Driver counters in samples (`VK_KHR_performance_query`, config `driver_counters`).
//!
//! A counter set that needs several passes would be collected by replaying the work once per
//! pass (GPUPerfAPI's sessions, seed 003). A live overlay cannot replay, but an app renders
//! nearly the same frame again and again: the queue family's counters are split into groups
//! that each need one pass, and the groups rotate across frames. A recording begun in frame
//! `f` carries group `f mod groups` of its command pool's family; one submitted again in a
//! later frame keeps its group and says it was reused. Every group needs one pass, so every
//! submission is pass 0, the spec's default without `VkPerformanceQuerySubmitInfoKHR`.
//!
//! Spec rules kept here and in `recording`: the profiling lock is held from device creation to
//! destruction, so before every `vkBeginCommandBuffer` of a buffer holding our queries
//! (VUID-vkCmdBeginQuery-queryPool-03223); pools are made per queue family and used only in
//! command buffers of that family's pools (VUID-vkCmdBeginQuery-queryPool-07289); a group with
//! a command-buffer-scope counter begins first and ends last in the primary
//! (VUID-vkCmdBeginQuery-queryPool-03224, VUID-vkCmdEndQuery-queryPool-03228); render-pass
//! scope queries go around render pass instances, never inside (-03225, -03229); resets come
//! from our own command buffers at the start of each submission, never in the app's
//! (VUID-vkCmdBeginQuery-None-02862); one performance query is active in a command buffer at a
//! time and one pool per command buffer (without `performanceCounterMultipleQueryPools`, each
//! recording uses one group's pool); results are read without `WITH_AVAILABILITY`, `PARTIAL`
//! or `64_BIT` (VUID-vkGetQueryPoolResults-queryType-03230), one query a call, since without
//! availability a call over several reports nothing per query.

use super::blocks::BlockPool;
use crate::dispatch::device::Device;
use crate::dispatch::profiling::{LockRefused, ProfilingLock};
use crate::dispatch::vk_calls::Shared;
use crate::driver_counters::DriverCounter;
use ash::vk;
use framescope_core::driver_values::{DriverGroup, Meaning, MAX_GROUP};
use framescope_core::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Query blocks per group (64 queries each): a recording takes one query per render pass.
const BLOCKS_PER_GROUP: u32 = 4;

/// Where a group's queries go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfScope {
    /// First to last command of each primary command buffer.
    CmdBuf,
    /// Around each render pass instance of a primary.
    Pass,
}

pub struct PerfGroup {
    pub scope: PerfScope,
    pub pool: BlockPool,
}

/// What reading a group's query needs: its counters' storages, in order.
#[derive(Clone, Copy, Debug)]
pub struct PerfLayout {
    pub n: usize,
    pub storages: [vk::PerformanceCounterStorageKHR; MAX_GROUP],
}

/// The device's groups and the rotation.
pub struct PerfState {
    pub groups: Vec<PerfGroup>,
    /// Per group, shared with the submissions whose results are pending.
    pub layouts: Arc<[PerfLayout]>,
    /// Per queue family, its groups' indices in `groups`.
    by_family: Vec<(u32, Vec<u8>)>,
    frame: AtomicU64,
    /// Released at device destruction, after the groups' pools.
    lock: Mutex<Option<ProfilingLock>>,
}

/// What `vkGetPhysicalDeviceQueueFamilyPerformanceQueryPassesKHR` answers for a set.
pub type PassesOf<'a> = dyn FnMut(u32, &[u32]) -> u32 + 'a;

/// Splits a family's counters (indices in its list, with their scopes) into groups that each
/// need one pass and hold at most [`MAX_GROUP`] counters, in list order. A counter that needs
/// several passes on its own is left out (returned second).
pub fn split(family: u32, counters: &[u32], passes: &mut PassesOf<'_>) -> (Vec<Vec<u32>>, Vec<u32>) {
    let mut groups: Vec<Vec<u32>> = Vec::new();
    let mut alone = Vec::new();
    let mut current: Vec<u32> = Vec::new();
    for &c in counters {
        current.push(c);
        if current.len() <= MAX_GROUP && passes(family, &current) == 1 {
            continue;
        }
        current.pop();
        if passes(family, &[c]) != 1 {
            alone.push(c);
            continue;
        }
        if !current.is_empty() {
            groups.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        groups.push(current);
    }
    (groups, alone)
}

/// Why driver counters are not collected, or the state that collects them.
pub enum Setup {
    On(PerfState, Vec<DriverGroup>),
    Off(String),
}

/// How a group is named in the dump header and the HUD: its counters with their units,
/// storages and, where the driver-name database knows them, their common meanings.
fn describe_group(d: &Device, family: u32, scope: PerfScope, members: &[&DriverCounter]) -> DriverGroup {
    let driver = d.driver_properties().map(|(name, _)| name).unwrap_or_default();
    let meanings = members
        .iter()
        .map(|c| {
            framescope_collectors::db::driver_names::lookup(&driver, &c.name, c.unit).map(|m| Meaning {
                common: m.common,
                vendor_db: m.vendor_db,
                vendor: m.vendor,
                scale: m.scale,
            })
        })
        .collect();
    DriverGroup {
        family,
        scope: match scope {
            PerfScope::CmdBuf => "command_buffer",
            PerfScope::Pass => "render_pass",
        },
        names: members.iter().map(|c| c.name.clone()).collect(),
        units: members.iter().map(|c| c.unit).collect(),
        storages: members.iter().map(|c| c.storage).collect(),
        meanings,
    }
}

impl PerfState {
    /// Acquires the profiling lock and makes each group's pools. `counters` are the device's
    /// listed counters; `cmdbuf_only` puts every query around command buffers (`samples=cmdbuf`).
    pub fn setup(d: &Device, counters: &[DriverCounter], cmdbuf_only: bool) -> Setup {
        let lock = match d.acquire_profiling_lock() {
            Ok(lock) => lock,
            Err(LockRefused::NoCommands) => {
                return Setup::Off("the driver does not give the extension's commands".into())
            }
            Err(LockRefused::Refused(r)) => {
                return Setup::Off(format!(
                    "vkAcquireProfilingLockKHR answered {r:?}: another profiler holds the lock, or the driver needs \
                     permission (ANV: sysctl dev.i915.perf_stream_paranoid=0 or CAP_PERFMON)"
                ))
            }
        };
        let mut passes = |family: u32, indices: &[u32]| lock.passes(family, indices);
        let mut groups = Vec::new();
        let mut layouts = Vec::new();
        let mut descs = Vec::new();
        let mut by_family: Vec<(u32, Vec<u8>)> = Vec::new();
        let mut left_out = 0usize;
        let mut families: Vec<u32> = counters.iter().map(|c| c.family).collect();
        families.dedup();
        for family in families {
            let of_family: Vec<&DriverCounter> = counters.iter().filter(|c| c.family == family).collect();
            let indices: Vec<u32> = of_family.iter().map(|c| c.index).collect();
            let (split_groups, alone) = split(family, &indices, &mut passes);
            left_out += alone.len();
            for g in split_groups {
                if groups.len() >= usize::from(u8::MAX) {
                    break;
                }
                let members: Vec<&DriverCounter> = g
                    .iter()
                    .filter_map(|i| of_family.iter().find(|c| c.index == *i).copied())
                    .collect();
                let scope = if cmdbuf_only || members.iter().any(|c| c.scope == "command_buffer") {
                    PerfScope::CmdBuf
                } else {
                    PerfScope::Pass
                };
                let Some(pool) = BlockPool::new_perf(d, family, &g, BLOCKS_PER_GROUP) else {
                    continue;
                };
                let mut storages = [vk::PerformanceCounterStorageKHR::UINT64; MAX_GROUP];
                for (s, c) in storages.iter_mut().zip(&members) {
                    *s = storage_of(c.storage);
                }
                layouts.push(PerfLayout {
                    n: members.len().min(MAX_GROUP),
                    storages,
                });
                let idx = groups.len() as u8;
                match by_family.iter_mut().find(|(f, _)| *f == family) {
                    Some((_, list)) => list.push(idx),
                    None => by_family.push((family, vec![idx])),
                }
                descs.push(describe_group(d, family, scope, &members));
                groups.push(PerfGroup { scope, pool });
            }
        }
        if groups.is_empty() {
            // The lock goes with the error.
            return Setup::Off(format!(
                "no counter group could be made ({left_out} counters need several passes each)"
            ));
        }
        if left_out > 0 {
            framescope_core::log::info(format_args!(
                "driver counters: {left_out} need several passes each and are left out"
            ));
        }
        Setup::On(
            PerfState {
                groups,
                layouts: layouts.into(),
                by_family,
                frame: AtomicU64::new(0),
                lock: Mutex::new(Some(lock)),
            },
            descs,
        )
    }

    /// The group a recording begun now on a command pool of `family` carries, and the
    /// rotation's frame (to tell later whether the recording is reused).
    pub fn group_now(&self, family: u32) -> Option<(u8, u64)> {
        let (_, list) = self.by_family.iter().find(|(f, _)| *f == family)?;
        let frame = self.frame.load(Ordering::Relaxed);
        Some((list[(frame % list.len() as u64) as usize], frame))
    }

    /// The rotation's current frame.
    pub fn frame(&self) -> u64 {
        self.frame.load(Ordering::Relaxed)
    }

    /// A frame ended: the next group's turn.
    pub fn end_frame(&self) {
        self.frame.fetch_add(1, Ordering::Relaxed);
    }

    /// At device destruction, nothing of ours pending: the pools, then the lock.
    pub fn destroy(&self) {
        for g in &self.groups {
            g.pool.destroy();
        }
        drop(self.lock.lock().take());
    }
}

fn storage_of(name: &str) -> vk::PerformanceCounterStorageKHR {
    match name {
        "int32" => vk::PerformanceCounterStorageKHR::INT32,
        "int64" => vk::PerformanceCounterStorageKHR::INT64,
        "uint32" => vk::PerformanceCounterStorageKHR::UINT32,
        "float32" => vk::PerformanceCounterStorageKHR::FLOAT32,
        "float64" => vk::PerformanceCounterStorageKHR::FLOAT64,
        _ => vk::PerformanceCounterStorageKHR::UINT64,
    }
}

/// One `VkPerformanceCounterResultKHR` (an 8-byte union, little-endian) by its storage.
pub fn decode(raw: u64, storage: vk::PerformanceCounterStorageKHR) -> f64 {
    match storage {
        vk::PerformanceCounterStorageKHR::INT32 => f64::from(raw as u32 as i32),
        vk::PerformanceCounterStorageKHR::INT64 => raw as i64 as f64,
        vk::PerformanceCounterStorageKHR::UINT32 => f64::from(raw as u32),
        vk::PerformanceCounterStorageKHR::FLOAT32 => f64::from(f32::from_bits(raw as u32)),
        vk::PerformanceCounterStorageKHR::FLOAT64 => f64::from_bits(raw),
        _ => raw as f64,
    }
}

/// Reads one query of a group laid out as `g` into `out` (its counters' values), without
/// waiting; false while it is not available.
pub fn read(d: &Device, g: &PerfLayout, pool: Shared<vk::QueryPool>, query: u32, out: &mut [f64]) -> bool {
    let n = g.n.min(out.len());
    let mut raw = [0u64; MAX_GROUP];
    let r = d.perf_query_result(pool, query, &mut raw[..n]);
    if r != vk::Result::SUCCESS {
        return false;
    }
    for (k, o) in out.iter_mut().take(n).enumerate() {
        *o = decode(raw[k], g.storages[k]);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_split_into_one_pass_groups_in_order() {
        // Counters 0..6; any set with both an even and an odd counter needs two passes; 5
        // needs two on its own.
        let mut passes = |_f: u32, set: &[u32]| -> u32 {
            if set.contains(&5) {
                return 2;
            }
            let even = set.iter().any(|c| c % 2 == 0);
            let odd = set.iter().any(|c| c % 2 == 1);
            1 + u32::from(even && odd)
        };
        let (groups, alone) = split(0, &[0, 2, 1, 3, 5, 4, 6], &mut passes);
        assert_eq!(groups, vec![vec![0, 2], vec![1, 3], vec![4, 6]]);
        assert_eq!(alone, vec![5]);
    }

    #[test]
    fn groups_hold_at_most_max_group_counters() {
        let all: Vec<u32> = (0..20).collect();
        let (groups, alone) = split(0, &all, &mut |_, _| 1);
        assert!(alone.is_empty());
        assert_eq!(groups.iter().map(Vec::len).collect::<Vec<_>>(), vec![8, 8, 4]);
    }

    #[test]
    fn results_decode_by_storage() {
        use vk::PerformanceCounterStorageKHR as S;
        assert_eq!(decode((-3i32) as u32 as u64, S::INT32), -3.0);
        assert_eq!(decode((-3i64) as u64, S::INT64), -3.0);
        assert_eq!(decode(0xffff_ffff_0000_0007, S::UINT32), 7.0);
        assert_eq!(decode(1.5f32.to_bits() as u64, S::FLOAT32), 1.5);
        assert_eq!(decode(2.25f64.to_bits(), S::FLOAT64), 2.25);
        assert_eq!(decode(42, S::UINT64), 42.0);
    }
}
