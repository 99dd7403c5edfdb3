//! PM-sampling metric sets: the presets, raw names for experts, and validation through the
//! host API (a set must fit one pass: PM sampling is one pass only, `cupti-pm-sampling.md`).

use super::api::{CuptiApi, CuptiError, HostObject, MetricType};
use std::ffi::CString;

/// Most metrics one set may hold: a sample carries this many values in the shared ring.
pub const MAX_METRICS: usize = 32;

/// `graphics`: the names measured to fit one pass together on GH100
/// (`cupti-pm-sampling.md`, "Metric names that fit one pass"). Vertex, tessellation and
/// geometry warps are not in it: adding them made the set two passes there. L2 and PCIe
/// throughput are not in it either until they are checked on the H100 with the rest.
pub const GRAPHICS: &[&str] = &[
    "gr__cycles_active.avg",
    "gr__cycles_elapsed.max",
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active_shader_ps_realtime.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active_shader_cs_realtime.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__time_duration.sum",
];

/// `raster`: the raster-output (`crop`, `zrop`, `prop`) families the reference doc lists, with
/// the graphics-engine cycles that give them a time base. These exact names are not yet
/// checked on a chip; validation refuses any the chip lacks, by name.
pub const RASTER: &[&str] = &[
    "gr__cycles_active.avg",
    "gr__cycles_elapsed.max",
    "crop__throughput.avg.pct_of_peak_sustained_elapsed",
    "zrop__throughput.avg.pct_of_peak_sustained_elapsed",
    "prop__throughput.avg.pct_of_peak_sustained_elapsed",
];

/// How a metric's per-sample values combine over a window of several samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// An amount per sample (cycles, bytes, ns): summed, partial samples weighted by overlap.
    Count,
    /// A ratio, percentage or rate: the time-weighted mean, unless the set has its numerator
    /// and denominator counts (a [`Derived`]), which are summed and divided instead.
    Ratio,
}

impl MetricKind {
    /// The kind of a full metric name (`base.rollup[.submetric]`) whose base metric is of
    /// `base_type`. A counter with only a rollup (`.sum`, `.avg`, `.max`, `.min`) counts per
    /// sample; any submetric (`.pct_of_peak_sustained_elapsed`, `.per_second`, `.ratio`) and any
    /// ratio or throughput base is a ratio. For `.avg`/`.max` of a counter the sum over time is
    /// exact for `.avg` (a mean over units is linear) and for units that agree (`elapsed`
    /// cycles); for `.max` of units that disagree it is an upper bound.
    pub fn of(name: &str, base_type: MetricType) -> MetricKind {
        if base_type != MetricType::Counter {
            return MetricKind::Ratio;
        }
        let mut parts = name.split('.');
        let _base = parts.next();
        let rollup = parts.next();
        let rest = parts.next();
        match (rollup, rest) {
            (Some("sum" | "avg" | "max" | "min"), None) => MetricKind::Count,
            _ => MetricKind::Ratio,
        }
    }
}

/// A value the set computes from two of its counts over the window, rather than averaging a
/// ratio CUPTI computed per sample: exact for any window, however samples straddle it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Derived {
    pub name: &'static str,
    pub unit: &'static str,
    pub numerator: &'static str,
    pub denominator: &'static str,
    pub scale: f64,
}

/// Graphics-engine active % = `gr__cycles_active.avg` / `gr__cycles_elapsed.max` (the reading
/// that matched GPM's graphics activity on the H100, `cupti-pm-sampling.md`).
pub const GRAPHICS_ACTIVE: Derived = Derived {
    name: "pm_graphics_active_pct",
    unit: "%",
    numerator: "gr__cycles_active.avg",
    denominator: "gr__cycles_elapsed.max",
    scale: 100.0,
};

/// The derived values every set gets whose inputs it holds.
const DERIVED: &[Derived] = &[GRAPHICS_ACTIVE];

/// A metric set as asked for, before the chip has seen it.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricSet {
    /// `graphics`, `raster`, or `custom` for raw names.
    pub name: String,
    pub metrics: Vec<String>,
}

impl MetricSet {
    /// `graphics`, `raster`, or comma-separated raw metric names.
    pub fn parse(spec: &str) -> Result<MetricSet, String> {
        let spec = spec.trim();
        let preset = |name: &str, list: &[&str]| MetricSet {
            name: name.to_string(),
            metrics: list.iter().map(|s| s.to_string()).collect(),
        };
        match spec {
            "graphics" => return Ok(preset("graphics", GRAPHICS)),
            "raster" => return Ok(preset("raster", RASTER)),
            _ => {}
        }
        let mut metrics: Vec<String> = Vec::new();
        for m in spec.split(',').map(str::trim).filter(|m| !m.is_empty()) {
            if !m.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.') {
                return Err(format!(
                    "{m:?} is not a metric name (letters, digits, '_' and '.' only)"
                ));
            }
            if !metrics.iter().any(|x| x == m) {
                metrics.push(m.to_string());
            }
        }
        if metrics.is_empty() {
            return Err("no metrics: name a preset (graphics, raster) or metric names separated by commas".into());
        }
        if metrics.len() > MAX_METRICS {
            return Err(format!("{} metrics; at most {MAX_METRICS} fit a sample", metrics.len()));
        }
        Ok(MetricSet {
            name: "custom".into(),
            metrics,
        })
    }

    /// The derived values whose numerator and denominator are both in the set.
    pub fn derived(&self) -> Vec<Derived> {
        DERIVED
            .iter()
            .filter(|d| {
                self.metrics.iter().any(|m| m == d.numerator) && self.metrics.iter().any(|m| m == d.denominator)
            })
            .copied()
            .collect()
    }
}

/// One metric of a validated set, with what the host API says of it.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricInfo {
    pub name: String,
    pub unit: String,
    pub description: String,
    pub kind: MetricKind,
}

/// A set the chip accepted in one pass.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidatedSet {
    pub set: MetricSet,
    pub metrics: Vec<MetricInfo>,
    pub derived: Vec<Derived>,
    /// The names as C strings, in the set's order (what every later CUPTI call takes).
    pub c_names: Vec<CString>,
}

/// Why a set was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum SetRefused {
    /// The chip does not know this metric (or not for PM sampling).
    UnknownMetric { metric: String, error: CuptiError },
    /// The set needs `passes` passes; `pushed_over` are the metrics that did not fit next to
    /// those before them (adding metrics one at a time in the set's order).
    TooManyPasses { passes: usize, pushed_over: Vec<String> },
    /// A host-API call failed.
    Cupti { call: &'static str, error: CuptiError },
}

impl std::fmt::Display for SetRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetRefused::UnknownMetric { metric, error } => {
                write!(
                    f,
                    "metric {metric} is not available for PM sampling on this chip ({error})"
                )
            }
            SetRefused::TooManyPasses { passes, pushed_over } => write!(
                f,
                "the metric set needs {passes} passes and PM sampling takes one; it fits without: {}",
                pushed_over.join(", ")
            ),
            SetRefused::Cupti { call, error } => write!(f, "{call}: {error}"),
        }
    }
}

/// A host object released on drop (validation makes several).
struct Host<'a> {
    api: &'a dyn CuptiApi,
    h: HostObject,
}

impl Drop for Host<'_> {
    fn drop(&mut self) {
        let _ = self.api.host_deinitialize(self.h);
    }
}

fn passes_of(api: &dyn CuptiApi, chip: &str, availability: &[u8], names: &[CString]) -> Result<usize, SetRefused> {
    let host = Host {
        api,
        h: api
            .host_initialize(chip, availability)
            .map_err(|error| SetRefused::Cupti {
                call: "cuptiProfilerHostInitialize",
                error,
            })?,
    };
    let refs: Vec<&std::ffi::CStr> = names.iter().map(|c| c.as_c_str()).collect();
    api.config_add_metrics(host.h, &refs)
        .map_err(|error| SetRefused::Cupti {
            call: "cuptiProfilerHostConfigAddMetrics",
            error,
        })?;
    let image = api.config_image(host.h).map_err(|error| SetRefused::Cupti {
        call: "cuptiProfilerHostGetConfigImage",
        error,
    })?;
    api.num_passes(&image).map_err(|error| SetRefused::Cupti {
        call: "cuptiProfilerHostGetNumOfPasses",
        error,
    })
}

/// Checks `set` on `chip` with the host API: every metric known (with its unit and description),
/// and the whole set one pass. On refusal for passes, finds the metrics that pushed it over by
/// adding them one at a time. Host-only work (no monitors held); called at sampler start.
pub fn validate(
    api: &dyn CuptiApi,
    chip: &str,
    availability: &[u8],
    set: &MetricSet,
) -> Result<ValidatedSet, SetRefused> {
    let mut c_names = Vec::with_capacity(set.metrics.len());
    for m in &set.metrics {
        c_names.push(CString::new(m.as_str()).map_err(|_| SetRefused::UnknownMetric {
            metric: m.clone(),
            error: CuptiError::InvalidArgument("a metric name with a NUL"),
        })?);
    }
    let host = Host {
        api,
        h: api
            .host_initialize(chip, availability)
            .map_err(|error| SetRefused::Cupti {
                call: "cuptiProfilerHostInitialize",
                error,
            })?,
    };
    let mut metrics = Vec::with_capacity(set.metrics.len());
    for (name, c) in set.metrics.iter().zip(&c_names) {
        let p = api
            .metric_properties(host.h, c)
            .map_err(|error| SetRefused::UnknownMetric {
                metric: name.clone(),
                error,
            })?;
        metrics.push(MetricInfo {
            name: name.clone(),
            unit: p.dim_unit.clone(),
            description: p.description.clone(),
            kind: MetricKind::of(name, p.metric_type),
        });
    }
    drop(host);
    let passes = passes_of(api, chip, availability, &c_names)?;
    if passes > 1 {
        let mut kept: Vec<CString> = Vec::new();
        let mut pushed_over = Vec::new();
        for c in &c_names {
            kept.push(c.clone());
            if passes_of(api, chip, availability, &kept)? > 1 {
                kept.pop();
                pushed_over.push(c.to_string_lossy().into_owned());
            }
        }
        return Err(SetRefused::TooManyPasses { passes, pushed_over });
    }
    Ok(ValidatedSet {
        derived: set.derived(),
        set: set.clone(),
        metrics,
        c_names,
    })
}

#[cfg(test)]
mod tests {
    use super::super::fake::{FakeCupti, FakeMetric};
    use super::*;

    fn chip() -> FakeCupti {
        let mut m: Vec<FakeMetric> = GRAPHICS
            .iter()
            .map(|n| {
                let t = if n.contains("pct") {
                    MetricType::Ratio
                } else {
                    MetricType::Counter
                };
                FakeMetric::new(n, t, if n.contains("pct") { "%" } else { "cycle" }, 2)
            })
            .collect();
        m.push(FakeMetric::new(
            "sm__warps_active_shader_vs_realtime.avg.pct_of_peak_sustained_elapsed",
            MetricType::Ratio,
            "%",
            4,
        ));
        m.push(FakeMetric::new(
            "tpc__warps_inactive_sm_idle.sum",
            MetricType::Counter,
            "warp",
            4,
        ));
        // The graphics preset takes 16 of 18 counters: fits; a 4-counter metric does not.
        FakeCupti::new("GH100", m, 18)
    }

    #[test]
    fn presets_and_raw_names_parse() {
        assert_eq!(MetricSet::parse("graphics").unwrap().metrics.len(), GRAPHICS.len());
        assert_eq!(MetricSet::parse("raster").unwrap().name, "raster");
        let s = MetricSet::parse(" gr__cycles_active.avg, gr__cycles_elapsed.max,gr__cycles_active.avg ").unwrap();
        assert_eq!(s.name, "custom");
        assert_eq!(s.metrics, ["gr__cycles_active.avg", "gr__cycles_elapsed.max"]);
        assert_eq!(s.derived(), [GRAPHICS_ACTIVE]);
        assert!(MetricSet::parse("").is_err());
        assert!(MetricSet::parse("a b").is_err());
        let many: Vec<String> = (0..33).map(|i| format!("m{i}.sum")).collect();
        assert!(MetricSet::parse(&many.join(",")).unwrap_err().contains("at most 32"));
    }

    #[test]
    fn kinds_follow_the_rollup_and_submetric() {
        assert_eq!(
            MetricKind::of("gr__cycles_active.avg", MetricType::Counter),
            MetricKind::Count
        );
        assert_eq!(
            MetricKind::of("gpu__time_duration.sum", MetricType::Counter),
            MetricKind::Count
        );
        assert_eq!(
            MetricKind::of(
                "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
                MetricType::Counter
            ),
            MetricKind::Ratio
        );
        assert_eq!(
            MetricKind::of("dram__bytes.sum.per_second", MetricType::Counter),
            MetricKind::Ratio
        );
        assert_eq!(
            MetricKind::of("dram__throughput.avg", MetricType::Throughput),
            MetricKind::Ratio
        );
    }

    #[test]
    fn the_graphics_preset_validates_with_units_and_descriptions() {
        let api = chip();
        let v = validate(&api, "GH100", &[], &MetricSet::parse("graphics").unwrap()).unwrap();
        assert_eq!(v.metrics.len(), GRAPHICS.len());
        assert_eq!(v.metrics[0].unit, "cycle");
        assert_eq!(v.metrics[0].kind, MetricKind::Count);
        assert_eq!(v.metrics[2].unit, "%");
        assert_eq!(v.metrics[2].kind, MetricKind::Ratio);
        assert!(v.metrics[0].description.contains("gr__cycles_active.avg"));
        assert_eq!(v.derived, [GRAPHICS_ACTIVE]);
        assert_eq!(api.live_hosts(), 0, "every host object released");
    }

    #[test]
    fn a_two_pass_set_is_refused_with_its_pass_count_and_the_metrics_that_pushed_it_over() {
        let api = chip();
        let spec = format!(
            "{},sm__warps_active_shader_vs_realtime.avg.pct_of_peak_sustained_elapsed,tpc__warps_inactive_sm_idle.sum",
            GRAPHICS.join(",")
        );
        let e = validate(&api, "GH100", &[], &MetricSet::parse(&spec).unwrap()).unwrap_err();
        // 16 + 4 + 4 = 24 counters at 18 per pass.
        assert_eq!(
            e,
            SetRefused::TooManyPasses {
                passes: 2,
                pushed_over: vec![
                    "sm__warps_active_shader_vs_realtime.avg.pct_of_peak_sustained_elapsed".into(),
                    "tpc__warps_inactive_sm_idle.sum".into()
                ],
            }
        );
        assert!(e.to_string().starts_with("the metric set needs 2 passes"), "{e}");
        assert_eq!(api.live_hosts(), 0);
    }

    #[test]
    fn an_unknown_metric_is_refused_by_name() {
        let api = chip();
        let e = validate(
            &api,
            "GH100",
            &[],
            &MetricSet::parse("gr__cycles_active.avg,nope__x.sum").unwrap(),
        )
        .unwrap_err();
        assert!(
            matches!(&e, SetRefused::UnknownMetric { metric, .. } if metric == "nope__x.sum"),
            "{e:?}"
        );
        assert!(e.to_string().contains("CUPTI_ERROR_INVALID_METRIC_NAME"), "{e}");
    }
}
