//! The Mali sources' catalogue and how each entry is computed from a sample: every entry is
//! an equation over the database's counters (`collectors/db/mali_bifrost.json`), bound by the
//! database's `CounterSet` (so derived counters carry the database's corrected formulas and
//! cardinality corrections) and compiled once into an allocation-free `ProgramSet`.

use super::hwlayout::GpuLayout;
use super::layout::Totals;
use crate::constants::{
    GPU_MHZ, MALI_CONFIG_EXT_BUS_BYTE_SIZE, MALI_CONFIG_L2_CACHE_COUNT, MALI_CONFIG_SHADER_CORE_COUNT,
    MALI_CONFIG_TIME_SPAN,
};
use crate::expr::program::ProgramSet;
use crate::source::{CounterScope, SourceCounter};

/// `(name, unit, equation)`. Shader-core cycle counts are sums over cores; ratios are the
/// database's (cardinality-corrected) ones, in percent.
pub const CATALOGUE: &[(&str, &str, &str)] = &[
    ("mali_gpu_active_cycles", "count", "JM.GPU_ACTIVE"),
    ("mali_gpu_mhz", "MHz", "GPU_MHZ"),
    ("mali_gpu_util_pct", "%", "100 * JM.GPU_UTILIZATION"),
    ("mali_fragment_active_cycles", "count", "JM.JS0_ACTIVE"),
    ("mali_fragment_util_pct", "%", "100 * JM.JS0_UTILIZATION"),
    ("mali_non_fragment_active_cycles", "count", "JM.JS1_ACTIVE"),
    ("mali_non_fragment_util_pct", "%", "100 * JM.JS1_UTILIZATION"),
    ("mali_tiler_active_cycles", "count", "TI.ACTIVE"),
    ("mali_tiler_util_pct", "%", "100 * TI.ACTIVE / JM.GPU_ACTIVE"),
    ("mali_shader_core_util_pct", "%", "100 * SC.EXEC_CORE_UTILIZATION"),
    ("mali_fragment_shader_cycles", "count", "SC.FRAG_ACTIVE"),
    ("mali_compute_shader_cycles", "count", "SC.COMPUTE_ACTIVE"),
    ("mali_input_primitives", "count", "TI.INPUT_PRIMITIVES"),
    ("mali_visible_primitives", "count", "TI.PRIMITIVE_VISIBLE"),
    ("mali_l2_read_lookups", "count", "L2.READ_REQUEST"),
    ("mali_l2_write_lookups", "count", "L2.WRITE_REQUEST"),
    ("mali_l2_read_miss_pct", "%", "100 * L2.READ_MISS_RATE"),
    ("mali_ext_read_bytes", "bytes", "L2.EXTERNAL_READ_BYTES"),
    ("mali_ext_write_bytes", "bytes", "L2.EXTERNAL_WRITE_BYTES"),
    (
        "mali_ext_read_mib_s",
        "MiB/s",
        "L2.EXTERNAL_READ_BYTES / MALI_CONFIG_TIME_SPAN / 1048576",
    ),
    (
        "mali_ext_write_mib_s",
        "MiB/s",
        "L2.EXTERNAL_WRITE_BYTES / MALI_CONFIG_TIME_SPAN / 1048576",
    ),
];

/// The catalogue as a source reports it.
pub fn catalogue() -> Vec<SourceCounter> {
    CATALOGUE
        .iter()
        .map(|(n, u, _)| SourceCounter::new(*n, u, CounterScope::Device))
        .collect()
}

/// The per-GPU constants of a session.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuConfig {
    pub cores: u32,
    pub l2_slices: u32,
    pub bus_bytes: Option<u32>,
}

/// One sample's time span and clock, when known.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleClock {
    pub span_ns: u64,
    /// GPU top-level cycles over the span (kinstr clock metadata, vinstr with cycles).
    pub gpu_cycles: Option<u64>,
    /// Frequency from elsewhere (Panfrost's devfreq), used without cycle counts.
    pub mhz: Option<f64>,
}

impl SampleClock {
    pub fn mhz(&self) -> Option<f64> {
        match self.gpu_cycles {
            Some(c) if c > 0 && self.span_ns > 0 => Some(c as f64 * 1000.0 / self.span_ns as f64),
            _ => self.mhz.filter(|m| m.is_finite() && *m > 0.0),
        }
    }
}

/// The compiled catalogue for one GPU layout.
pub struct Deriver {
    layout: GpuLayout,
    programs: ProgramSet,
    inputs: Vec<f64>,
    consts: Vec<f64>,
}

impl Deriver {
    pub fn new(layout: GpuLayout) -> Result<Self, String> {
        let dbs = crate::db::databases().map_err(|e| format!("counter database: {e}"))?;
        let set = dbs
            .counter_set(layout.db_gpu)
            .map_err(|e| format!("counter database: {e}"))?;
        let mut exprs = Vec::with_capacity(CATALOGUE.len());
        for (name, _, eq) in CATALOGUE {
            exprs.push((*name, set.bind(eq).map_err(|e| format!("{name}: {e}"))?));
        }
        let programs = ProgramSet::compile(exprs.iter().map(|(n, e)| (*n, e))).map_err(|e| e.to_string())?;
        Ok(Deriver {
            layout,
            inputs: vec![f64::NAN; programs.inputs().len()],
            consts: vec![f64::NAN; programs.constants().len()],
            programs,
        })
    }

    pub fn layout(&self) -> &GpuLayout {
        &self.layout
    }

    /// Hardware counters the catalogue reads that this GPU's layout lacks (none for a
    /// supported GPU; checked by the tests).
    pub fn unmapped_inputs(&self) -> Vec<String> {
        self.programs
            .inputs()
            .iter()
            .filter(|n| self.layout.find(n).is_none())
            .cloned()
            .collect()
    }

    /// Writes the catalogue's values for one sample into `out` (catalogue order; NaN: no
    /// value, e.g. a rate without a time span or a utilisation without a clock).
    pub fn evaluate(&mut self, totals: &Totals, gpu: &GpuConfig, clock: &SampleClock, out: &mut [f64]) {
        let layout = self.layout;
        self.programs
            .fill_inputs(|n| layout.value(totals, n).map(|v| v as f64), &mut self.inputs);
        let span_s = (clock.span_ns > 0).then(|| clock.span_ns as f64 / 1e9);
        let mhz = clock.mhz();
        let positive = |v: f64| (v.is_finite() && v > 0.0).then_some(v);
        // A constant without a value reads as NaN, so only the counters that need it are
        // left without a value.
        let _ = self.programs.fill_constants(
            |n| match n {
                MALI_CONFIG_SHADER_CORE_COUNT => positive(f64::from(gpu.cores)),
                MALI_CONFIG_L2_CACHE_COUNT => positive(f64::from(gpu.l2_slices)),
                MALI_CONFIG_EXT_BUS_BYTE_SIZE => gpu.bus_bytes.map(f64::from).and_then(positive),
                MALI_CONFIG_TIME_SPAN => span_s,
                GPU_MHZ => mhz,
                _ => None,
            },
            &mut self.consts,
        );
        self.programs.eval_into(&self.inputs, &self.consts, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mali::hwlayout;

    #[test]
    fn every_catalogue_input_has_a_hardware_position_on_the_g76() {
        let d = Deriver::new(hwlayout::for_product((7, 1)).unwrap()).unwrap();
        assert_eq!(d.unmapped_inputs(), Vec::<String>::new());
        assert_eq!(catalogue().len(), CATALOGUE.len());
    }
}
