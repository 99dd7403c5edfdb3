//! Per-draw aggregates over a run: each timed draw is keyed by where it sits in its frame
//! (label path, command-buffer index, draw index in that command buffer's recording) and the
//! pipeline it ran with, and each key keeps running statistics of its GPU time, vertices and
//! pipeline statistics. With a budgeted draw window a key is timed only in the frames whose
//! window covers it, so `count` is the number of frames it was timed in, not the frames it ran.
//!
//! Built on the dump writer's thread (and by `framescope report` from a dump), never on the
//! app's. Memory is bounded: at most [`MAX_KEYS`] keys, about 1 KiB each; samples of further
//! keys are counted in [`DrawTable::untracked`].
//!
//! Percentiles come from a log-scale histogram with 8 buckets per octave from 16 ns to 2^36 ns
//! (69 s), each octave cut into 8 equal steps: a reported percentile is the geometric middle
//! of the nearest-rank value's bucket, within 6.1 % of the exact value (a bucket's bounds are
//! at most 9/8 apart, and sqrt(9/8) − 1 = 6.07 %). Count, mean, min and max are exact.

use crate::model::frame::DrawKind;
use crate::model::sample::{PipelineStats, SampleRecord, Scope};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::hash::Hash;

/// Keys kept. A frame has about as many keys as draws (a scene of 10 000 draws: 10 000 keys).
pub const MAX_KEYS: usize = 16 * 1024;
/// Keys the summary lists, most expensive (by total GPU time over the run) first.
pub const TOP: usize = 20;

const MIN_LOG2: u32 = 4;
const OCTAVES: u32 = 32;
const PER_OCTAVE: u32 = 8;
const BUCKETS: usize = (OCTAVES * PER_OCTAVE) as usize;

/// Where a draw sits and what it ran with. `L` is the label path: interned ids on the
/// writer's thread, strings in `report`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DrawKey<L> {
    pub label: L,
    pub cmdbuf: u32,
    pub draw: u32,
    pub pipeline: u64,
}

#[derive(Clone)]
struct Agg {
    kind: Option<DrawKind>,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    hist: Box<[u32; BUCKETS]>,
    /// Vertices per draw as recorded (vertex or index count times instances; 0 for indirect).
    vertices_sum: u128,
    stats: PipelineStats,
    stats_count: u64,
}

fn bucket(ns: u64) -> usize {
    let ns = ns.max(1 << MIN_LOG2);
    let log2 = 63 - ns.leading_zeros();
    if log2 >= MIN_LOG2 + OCTAVES {
        return BUCKETS - 1;
    }
    // The 3 bits below the leading one pick one of 8 equal steps of the octave.
    let frac = ((ns >> (log2 - 3)) & 7) as u32;
    ((log2 - MIN_LOG2) * PER_OCTAVE + frac) as usize
}

/// The middle of bucket `b` (geometric mean of its bounds).
fn bucket_mid(b: usize) -> u64 {
    let log2 = b as u32 / PER_OCTAVE + MIN_LOG2;
    let frac = u64::from(b as u32 % PER_OCTAVE);
    let lo = (8 + frac) << (log2 - 3);
    let hi = (9 + frac) << (log2 - 3);
    ((lo as f64) * (hi as f64)).sqrt().round() as u64
}

impl Agg {
    fn new(kind: Option<DrawKind>) -> Self {
        Agg {
            kind,
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            hist: Box::new([0; BUCKETS]),
            vertices_sum: 0,
            stats: PipelineStats::default(),
            stats_count: 0,
        }
    }

    fn add(&mut self, ns: u64, vertices: u64, stats: Option<&PipelineStats>) {
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        let h = &mut self.hist[bucket(ns)];
        *h = h.saturating_add(1);
        self.vertices_sum += u128::from(vertices);
        if let Some(s) = stats {
            self.stats.add(s);
            self.stats_count += 1;
        }
    }

    /// Nearest-rank percentile `p` (0..=100) from the histogram, clamped to the exact range.
    fn percentile(&self, p: u64) -> u64 {
        let rank = (p * self.count).div_ceil(100).max(1);
        let mut seen = 0u64;
        for (b, &n) in self.hist.iter().enumerate() {
            seen += u64::from(n);
            if seen >= rank {
                return bucket_mid(b).clamp(self.min_ns, self.max_ns);
            }
        }
        self.max_ns
    }
}

/// One key's statistics, as the summary lists them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DrawSummary {
    /// Label path (`Frame/Main`), empty outside labels.
    pub label: String,
    pub cmdbuf: u32,
    pub draw: u32,
    /// Pipeline handle (Vulkan) or program name (GL), hex; `0x0` when none was seen.
    pub pipeline: String,
    /// Draw command kind (`draw_indexed`, ...), null for dispatches and trace-rays.
    pub kind: Option<String>,
    /// Frames this draw was timed in.
    pub count: u64,
    pub total_ns: u64,
    pub mean_ns: f64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p95_ns: u64,
    pub max_ns: u64,
    /// Mean vertices per draw as recorded (0 for indirect draws).
    pub vertices: f64,
    /// Mean pipeline statistics per draw, where taken per draw (`sample_stats=draw`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<std::collections::BTreeMap<String, f64>>,
}

/// The draws of a run, aggregated per key.
pub struct DrawTable<L> {
    map: HashMap<DrawKey<L>, Agg>,
    untracked: u64,
}

impl<L> Default for DrawTable<L> {
    fn default() -> Self {
        DrawTable {
            map: HashMap::new(),
            untracked: 0,
        }
    }
}

/// Vertices a draw's recorded parameters say it draws: indices (or vertices) times instances.
pub fn vertices(vertex_count: u32, index_count: u32, instance_count: u32) -> u64 {
    let per = if index_count > 0 { index_count } else { vertex_count };
    u64::from(per) * u64::from(instance_count.max(1))
}

fn vertices_of(s: &SampleRecord) -> u64 {
    s.params
        .map_or(0, |p| vertices(p.vertex_count, p.index_count, p.instance_count))
}

impl<L: Hash + Eq + Clone> DrawTable<L> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one timed draw (`ns`: its GPU time).
    pub fn add(
        &mut self,
        key: DrawKey<L>,
        kind: Option<DrawKind>,
        ns: u64,
        vertices: u64,
        stats: Option<&PipelineStats>,
    ) {
        if let Some(a) = self.map.get_mut(&key) {
            a.add(ns, vertices, stats);
            return;
        }
        if self.map.len() >= MAX_KEYS {
            self.untracked += 1;
            return;
        }
        let mut a = Agg::new(kind);
        a.add(ns, vertices, stats);
        self.map.insert(key, a);
    }

    /// Keys seen (at most [`MAX_KEYS`]).
    pub fn keys(&self) -> usize {
        self.map.len()
    }

    /// Timed draws not aggregated because the table was full.
    pub fn untracked(&self) -> u64 {
        self.untracked
    }

    /// The `n` keys with the most GPU time over the run, most first; ties in key order
    /// (command buffer, draw, pipeline, label), so the list is the same for the same draws
    /// whichever way their labels are held (the writer's and `report`'s agree).
    pub fn top(&self, n: usize, label_name: impl Fn(&L) -> String) -> Vec<DrawSummary> {
        let mut v: Vec<(String, &DrawKey<L>, &Agg)> =
            self.map.iter().map(|(k, a)| (label_name(&k.label), k, a)).collect();
        v.sort_by(|a, b| {
            b.2.sum_ns
                .cmp(&a.2.sum_ns)
                .then(a.1.cmdbuf.cmp(&b.1.cmdbuf))
                .then(a.1.draw.cmp(&b.1.draw))
                .then(a.1.pipeline.cmp(&b.1.pipeline))
                .then(a.0.cmp(&b.0))
        });
        v.truncate(n);
        v.into_iter()
            .map(|(label, k, a)| DrawSummary {
                label,
                cmdbuf: k.cmdbuf,
                draw: k.draw,
                pipeline: format!("{:#x}", k.pipeline),
                kind: a.kind.map(|k| k.name().to_string()),
                count: a.count,
                total_ns: a.sum_ns.min(u128::from(u64::MAX)) as u64,
                mean_ns: a.sum_ns as f64 / a.count as f64,
                min_ns: a.min_ns,
                p50_ns: a.percentile(50),
                p95_ns: a.percentile(95),
                max_ns: a.max_ns,
                vertices: a.vertices_sum as f64 / a.count as f64,
                stats: (a.stats_count > 0).then(|| {
                    PipelineStats::NAMES
                        .iter()
                        .zip(a.stats.as_array())
                        .map(|(k, v)| (k.to_string(), v as f64 / a.stats_count as f64))
                        .collect()
                }),
            })
            .collect()
    }
}

impl DrawTable<crate::model::sample::LabelPath> {
    /// Adds a sample record if it is a timed draw with a time.
    pub fn add_sample(&mut self, s: &SampleRecord) {
        if s.scope != Scope::Draw || s.overwritten {
            return;
        }
        let (Some(ns), Some(draw)) = (s.gpu_ns(), s.draw) else {
            return;
        };
        let key = DrawKey {
            label: s.label,
            cmdbuf: s.cmdbuf,
            draw,
            pipeline: s.params.map_or(0, |p| p.pipeline),
        };
        let kind = s.params.and_then(|p| p.kind);
        self.add(key, kind, ns, vertices_of(s), s.stats.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(draw: u32) -> DrawKey<String> {
        DrawKey {
            label: "Frame/Main".into(),
            cmdbuf: 0,
            draw,
            pipeline: 0xabc,
        }
    }

    #[test]
    fn buckets_are_monotonic_and_their_middles_within_the_stated_error() {
        let mut last = 0;
        for ns in (16u64..1 << 20).step_by(7) {
            let b = bucket(ns);
            assert!(b >= last, "{ns}");
            last = b;
            let mid = bucket_mid(b) as f64;
            assert!((mid - ns as f64).abs() / ns as f64 <= 0.0625, "{ns} -> {mid}");
        }
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn keys_aggregate_count_mean_percentiles_and_vertices() {
        let mut t = DrawTable::new();
        for i in 1..=100u64 {
            t.add(key(1), Some(DrawKind::Draw), i * 1000, 36, None);
        }
        t.add(key(2), Some(DrawKind::Draw), 5_000_000, 3, None);
        let top = t.top(TOP, |l| l.clone());
        assert_eq!(top.len(), 2);
        // Ordered by total time: key 1's 100 draws (5.05 ms) before key 2's one (5 ms).
        assert_eq!((top[0].draw, top[0].count, top[0].total_ns), (1, 100, 5_050_000));
        assert_eq!(top[0].mean_ns, 50_500.0);
        assert_eq!((top[0].min_ns, top[0].max_ns), (1000, 100_000));
        // Nearest rank: p50 is the 50th value (50 µs), p95 the 95th (95 µs), within 6.25 %.
        assert!(
            (top[0].p50_ns as f64 - 50_000.0).abs() <= 50_000.0 * 0.0625,
            "{}",
            top[0].p50_ns
        );
        assert!(
            (top[0].p95_ns as f64 - 95_000.0).abs() <= 95_000.0 * 0.0625,
            "{}",
            top[0].p95_ns
        );
        assert_eq!(top[0].vertices, 36.0);
        assert_eq!(top[0].pipeline, "0xabc");
        assert_eq!((top[1].draw, top[1].p50_ns, top[1].p95_ns), (2, 5_000_000, 5_000_000));
    }

    #[test]
    fn the_table_is_bounded_and_counts_what_it_left_out() {
        let mut t = DrawTable::new();
        for d in 0..(MAX_KEYS as u32 + 10) {
            t.add(key(d), None, 100, 0, None);
        }
        t.add(key(0), None, 100, 0, None);
        assert_eq!((t.keys(), t.untracked()), (MAX_KEYS, 10));
    }
}
