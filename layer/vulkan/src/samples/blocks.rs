//! Query slots for samples: device-wide timestamp and pipeline-statistics pools cut into
//! blocks of `BLOCK` queries. A recording takes whole blocks (one lock per block, none per
//! sample); blocks are shared through `Arc` so a submission whose results are unread keeps its
//! blocks alive after the app re-records the command buffer. A block is free again when only
//! the pool holds it. Each block has, per queue family, a pre-recorded command buffer of ours
//! that resets it; submissions start with the reset buffers of the blocks they use, so query
//! resets never happen inside the app's command buffers or render passes.

use crate::dispatch::device::Device;
use crate::dispatch::vk_calls::{CommandPool, PoolBuffer, QueryPool, Shared};
use ash::vk;
use framescope_core::sync::Mutex;
use std::sync::Arc;

pub const BLOCK: u32 = 64;

/// The pipeline statistics framescope asks for, in bit order (matches `PipelineStats`).
pub const STATS: vk::QueryPipelineStatisticFlags = vk::QueryPipelineStatisticFlags::from_raw(
    vk::QueryPipelineStatisticFlags::INPUT_ASSEMBLY_VERTICES.as_raw()
        | vk::QueryPipelineStatisticFlags::INPUT_ASSEMBLY_PRIMITIVES.as_raw()
        | vk::QueryPipelineStatisticFlags::VERTEX_SHADER_INVOCATIONS.as_raw()
        | vk::QueryPipelineStatisticFlags::CLIPPING_INVOCATIONS.as_raw()
        | vk::QueryPipelineStatisticFlags::CLIPPING_PRIMITIVES.as_raw()
        | vk::QueryPipelineStatisticFlags::FRAGMENT_SHADER_INVOCATIONS.as_raw()
        | vk::QueryPipelineStatisticFlags::COMPUTE_SHADER_INVOCATIONS.as_raw(),
);
pub const STATS_COUNT: usize = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Timestamp,
    Stats,
    /// Performance queries of driver-counter group `n` (`perf`).
    Perf(u8),
}

/// Queue families whose reset buffers a block keeps inline; further ones (rare: few devices
/// have more families that submit sampled work) go to a vector.
const RESET_FAMILIES: usize = 4;

/// A block's reset buffers by queue family.
struct Resets {
    inline: [(u32, vk::CommandBuffer); RESET_FAMILIES],
    n: usize,
    more: Vec<(u32, vk::CommandBuffer)>,
}

pub struct Block {
    pub pool: Shared<vk::QueryPool>,
    pub first: u32,
    /// Reset command buffer per queue family, recorded on first use there. A fixed array: a
    /// block first used when the GPU lags further than before (first fit then reaches a new
    /// block) must not allocate on the app's thread.
    resets: Mutex<Resets>,
}

impl Block {
    /// The block's reset command buffer for `family`, recording it on first use.
    pub fn reset_cb(&self, d: &Device, family: u32, pools: &ResetPools) -> Option<vk::CommandBuffer> {
        let mut r = self.resets.lock();
        if let Some(&(_, cb)) = r.inline[..r.n].iter().chain(&r.more).find(|(f, _)| *f == family) {
            return Some(cb);
        }
        let cb = pools.allocate(d, family)?;
        // Recorded once, under the block's lock.
        let rec = d.begin(cb, vk::CommandBufferUsageFlags::SIMULTANEOUS_USE).ok()?;
        rec.cmd_reset_query_pool(self.pool, self.first, BLOCK);
        rec.end().ok()?;
        let cb = cb.handle();
        if r.n < RESET_FAMILIES {
            let n = r.n;
            r.inline[n] = (family, cb);
            r.n += 1;
        } else {
            r.more.push((family, cb));
        }
        Some(cb)
    }
}

/// Our command pools for reset buffers, one per queue family.
#[derive(Default)]
pub struct ResetPools {
    pools: Mutex<Vec<(u32, CommandPool)>>,
}

impl ResetPools {
    /// One command buffer of the family's pool, used only under this lock; allocated one at
    /// a time, without a `Vec` (see `Block::resets`).
    fn allocate(&self, d: &Device, family: u32) -> Option<PoolBuffer> {
        let mut pools = self.pools.lock();
        let i = match pools.iter().position(|(f, _)| *f == family) {
            Some(i) => i,
            None => {
                pools.push((family, d.create_command_pool(family).ok()?));
                pools.len() - 1
            }
        };
        d.allocate_command_buffer(&pools[i].1)
    }

    /// At device destruction; nothing of ours is pending.
    pub fn destroy(&self) {
        self.pools.lock().clear();
    }
}

/// All blocks of one query type.
pub struct BlockPool {
    /// Taken at device destruction, after every block is done with it.
    pool: Mutex<Option<QueryPool>>,
    blocks: Mutex<Vec<Arc<Block>>>,
}

impl BlockPool {
    pub fn new(d: &Device, kind: Kind, blocks: u32) -> Option<BlockPool> {
        let mut ci = vk::QueryPoolCreateInfo::default().query_count(blocks * BLOCK);
        ci = match kind {
            Kind::Timestamp => ci.query_type(vk::QueryType::TIMESTAMP),
            Kind::Stats => ci
                .query_type(vk::QueryType::PIPELINE_STATISTICS)
                .pipeline_statistics(STATS),
            Kind::Perf(_) => return None,
        };
        let pool = d.create_query_pool(&ci).ok()?;
        Some(Self::of_pool(pool, blocks))
    }

    /// Performance queries of the counters `indices` of queue family `family`
    /// (`VK_KHR_performance_query`; the set needs one pass).
    pub fn new_perf(d: &Device, family: u32, indices: &[u32], blocks: u32) -> Option<BlockPool> {
        let mut perf = vk::QueryPoolPerformanceCreateInfoKHR::default()
            .queue_family_index(family)
            .counter_indices(indices);
        let ci = vk::QueryPoolCreateInfo::default()
            .query_count(blocks * BLOCK)
            .query_type(vk::QueryType::PERFORMANCE_QUERY_KHR)
            .push_next(&mut perf);
        // The device has performanceCounterQueryPools.
        let pool = d.create_query_pool(&ci).ok()?;
        Some(Self::of_pool(pool, blocks))
    }

    fn of_pool(pool: QueryPool, blocks: u32) -> BlockPool {
        let list = (0..blocks)
            .map(|i| {
                Arc::new(Block {
                    pool: pool.share(),
                    first: i * BLOCK,
                    resets: Mutex::new(Resets {
                        inline: [(0, vk::CommandBuffer::null()); RESET_FAMILIES],
                        n: 0,
                        more: Vec::new(),
                    }),
                })
            })
            .collect();
        BlockPool {
            pool: Mutex::new(Some(pool)),
            blocks: Mutex::new(list),
        }
    }

    /// The first block nobody else holds, or `None` when all are in use. First fit keeps the
    /// working set to the blocks in flight, whose reset buffers are already recorded: a
    /// rotating cursor would visit every block, recording (and allocating) a reset buffer for
    /// each, frames into steady state.
    pub fn take(&self) -> Option<Arc<Block>> {
        let list = self.blocks.lock();
        // Only holders clone a block and the pool is the only holder here, so a count of one
        // cannot grow under this lock.
        list.iter().find(|b| Arc::strong_count(b) == 1).map(Arc::clone)
    }

    /// At device destruction; nothing of ours is pending.
    pub fn destroy(&self) {
        drop(self.pool.lock().take());
    }
}
