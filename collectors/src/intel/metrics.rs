//! The `intel_oa` catalogue and how each value is derived from a window's deltas, through
//! the `intel-gen9` counter set (`collectors/db/intel_oa.json` plus the shared metrics of
//! `common_metrics.json`) and its equation engine: the formulas below name the set's
//! counters (`OA.A0`), its shared metrics (`gpu_busy_pct`) and constants
//! (`INTEL_OA_TIMESTAMP_HZ`, `INTEL_EU_COUNT`); nothing is computed by hand here.

use super::accumulate::Deltas;
use super::report::Layout;
use crate::catalogue::CounterSet;
use crate::constants::Constants;
use crate::expr::Expr;
use crate::raw_values::RawValues;
use crate::source::{CounterScope, SourceCounter};

/// The counter set the formulas are bound to.
pub const SET: &str = "intel-gen9";

/// `(name, unit, formula)`, in catalogue order.
///
/// * Busy: A0 is render-engine busy (seed 004; digest A-4), over GPU_TICKS.
/// * EU active / stall: A7 and A8 as the `RenderBasic` metric set programs them (Mesa
///   `oa-*.xml`: `EuActive = A 7 READ $EuCoresTotalCount UDIV 100 UMUL $GpuCoreClocks
///   FDIV`), per EU over render clocks (digest §5.6 rule 8). Another set gives other
///   meanings to A7-A20 (seed 004: flexible EU counters).
/// * 2x2 counts are in 2x2 blocks, pixels or samples depending on the part (digest A-39).
pub const METRICS: &[(&str, &str, &str)] = &[
    ("intel_gpu_busy_pct", "%", "gpu_busy_pct"),
    (
        "intel_eu_active_pct",
        "%",
        "100 * OA.A7 / (INTEL_EU_COUNT * OA.GPU_TICKS)",
    ),
    (
        "intel_eu_stall_pct",
        "%",
        "100 * OA.A8 / (INTEL_EU_COUNT * OA.GPU_TICKS)",
    ),
    ("intel_gpu_core_clocks", "count", "gpu_elapsed_cycles"),
    (
        "intel_gpu_core_clock_mhz",
        "MHz",
        "OA.GPU_TICKS * INTEL_OA_TIMESTAMP_HZ / (OA.TIME_STAMP * 1000000)",
    ),
    ("intel_gpu_time_ns", "ns", "gpu_time_ns"),
    ("intel_vs_threads", "count", "vs_threads"),
    ("intel_ps_threads", "count", "ps_threads"),
    ("intel_cs_threads", "count", "cs_threads"),
    ("intel_quads_rasterized", "count", "quads_rasterized"),
    ("intel_quads_early_z_killed", "count", "quads_early_z_killed"),
    ("intel_quads_shaded", "count", "quads_shaded"),
    ("intel_pixels_written", "count", "pixels_written"),
    ("intel_sampler_texels", "count", "4 * OA.A28"),
    ("intel_sampler_l1_misses", "count", "OA.A29"),
    ("intel_slm_reads", "count", "OA.A30"),
    ("intel_slm_writes", "count", "OA.A31"),
    ("intel_shader_memory_accesses", "count", "OA.A32"),
    ("intel_shader_memory_l1_misses", "count", "OA.A33"),
    ("intel_shader_atomics", "count", "atomics"),
    ("intel_shader_barriers", "count", "barriers"),
];

/// Report pairs summed into the window.
pub const REPORTS: &str = "intel_oa_reports";
/// `OA_REPORT_LOST` / `OA_BUFFER_LOST` records (i915) or lost/overflow status (Xe) since the
/// last read: the intervals across them are not summed (digest §5.6 rule 9).
pub const REPORTS_LOST: &str = "intel_oa_reports_lost";

/// The whole catalogue: [`METRICS`], then [`REPORTS`] and [`REPORTS_LOST`].
pub fn catalogue() -> Vec<SourceCounter> {
    let d = CounterScope::Device;
    METRICS
        .iter()
        .map(|(n, u, _)| SourceCounter::new(*n, u, d))
        .chain([
            SourceCounter::new(REPORTS, "count", d),
            SourceCounter::new(REPORTS_LOST, "count", d),
        ])
        .collect()
}

/// The bound formulas.
pub struct Metrics {
    set: &'static CounterSet,
    exprs: Vec<Expr>,
}

impl Metrics {
    pub fn new() -> Result<Self, String> {
        let dbs = crate::db::databases().map_err(|e| e.to_string())?;
        let set = dbs.counter_set(SET).map_err(|e| e.to_string())?;
        let exprs = METRICS
            .iter()
            .map(|(n, _, f)| set.bind(f).map_err(|e| format!("{n}: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(Metrics { set, exprs })
    }

    /// The raw values of a window: every counter of the layout and the two header deltas,
    /// under their `intel_oa.json` keys.
    pub fn raw(layout: &Layout, d: &Deltas) -> RawValues {
        let mut raw = RawValues::new();
        raw.set("OA.TIME_STAMP", d.timestamp as f64);
        raw.set("OA.GPU_TICKS", d.gpu_ticks as f64);
        for (c, v) in layout.counters.iter().zip(&d.counters) {
            raw.set(&c.name, *v as f64);
        }
        raw
    }

    /// Writes [`METRICS`] in order into `out` (NaN where a formula has no value: a counter
    /// the format lacks, a constant not known for this GPU, a division by zero).
    pub fn evaluate(&self, layout: &Layout, d: &Deltas, consts: &Constants, out: &mut [f64]) {
        let raw = Self::raw(layout, d);
        for (o, e) in out.iter_mut().zip(&self.exprs) {
            *o = self
                .set
                .evaluate_expr(e, &raw, consts)
                .ok()
                .flatten()
                .unwrap_or(f64::NAN);
        }
    }
}
