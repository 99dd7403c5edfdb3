//! The counter model of seed 002 (libGPUCounters): basic, scaled and derived counters,
//! plus the metadata every backend and the HUD need.

use serde::{Deserialize, Serialize};

use crate::expr::Expr;

/// Hardware block (or counter family) a counter belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockType {
    /// Mali GPU front-end / Job Manager (`JM.`): one instance.
    Jm,
    /// Mali tiler (`TI.`): one instance.
    Tiler,
    /// Mali shader core (`SC.`): one instance per core.
    ShaderCore,
    /// Mali L2 cache slice or bus interface (`L2.`): one instance per slice.
    L2,
    /// Intel OA report header fields (TIME_STAMP, GPU_TICKS).
    OaHeader,
    /// Intel OA aggregating A counters.
    OaA,
    /// Intel OA Boolean B counters.
    OaB,
    /// Intel OA custom C counters.
    OaC,
    /// An AMD GPUPerfAPI counter (its GPA group is the counter's `group`).
    Gpa,
    /// A vendor-neutral metric computed from a vendor's counters.
    Common,
}

/// How many instances of a block a GPU has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cardinality {
    Single,
    PerShaderCore,
    PerL2Slice,
    /// Not a per-instance hardware block (already aggregated by the driver or library).
    Aggregated,
}

/// Clock domain of a block (seed 002). Ratios mixing domains cannot be corrected by a
/// static factor under DVFS, so they are flagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockDomain {
    TopLevel,
    ShaderCore,
}

impl BlockType {
    pub fn cardinality(self) -> Cardinality {
        match self {
            BlockType::Jm | BlockType::Tiler => Cardinality::Single,
            BlockType::ShaderCore => Cardinality::PerShaderCore,
            BlockType::L2 => Cardinality::PerL2Slice,
            _ => Cardinality::Aggregated,
        }
    }

    pub fn clock_domain(self) -> Option<ClockDomain> {
        match self {
            // Seed 002 does not state the L2 domain; seed 001 normalises L2 by
            // JM.GPU_ACTIVE, which implies the top-level domain (digest A-20).
            BlockType::Jm | BlockType::Tiler | BlockType::L2 => Some(ClockDomain::TopLevel),
            BlockType::ShaderCore => Some(ClockDomain::ShaderCore),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Cycles,
    Nanoseconds,
    Milliseconds,
    Seconds,
    Bytes,
    Kilobytes,
    /// A count of things; `Counter::item` says of what.
    Items,
    /// Bus beats; the bytes per beat depend on the bus.
    Beats,
    /// 0..100 (may exceed 100 where the vendor says so).
    Percent,
    /// 0..1 (seed 001's `*_PERCENT(AGE)` formulas give ratios, digest A-6).
    Ratio,
    CyclesPerItem,
    BytesPerItem,
    BytesPerSecond,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Cycles => "cycles",
            Unit::Nanoseconds => "ns",
            Unit::Milliseconds => "ms",
            Unit::Seconds => "s",
            Unit::Bytes => "bytes",
            Unit::Kilobytes => "KiB",
            Unit::Items => "items",
            Unit::Beats => "beats",
            Unit::Percent => "%",
            Unit::Ratio => "ratio",
            Unit::CyclesPerItem => "cycles/item",
            Unit::BytesPerItem => "bytes/item",
            Unit::BytesPerSecond => "bytes/s",
        }
    }

    /// Whether values in this unit can be summed over draws or frames. Percentages and
    /// ratios cannot: they are recomputed from summed components instead.
    pub fn is_additive(self) -> bool {
        !matches!(
            self,
            Unit::Percent | Unit::Ratio | Unit::CyclesPerItem | Unit::BytesPerItem
        )
    }
}

/// Granularity at which a counter can be reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Draw,
    Pass,
    Frame,
    Periodic,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Draw => "draw",
            Scope::Pass => "pass",
            Scope::Frame => "frame",
            Scope::Periodic => "periodic",
        }
    }
}

/// The three counter types of seed 002.
#[derive(Debug, Clone, PartialEq)]
pub enum CounterKind {
    Basic,
    /// The hardware increments once per `multiplier` events; consumers multiply.
    Scaled {
        multiplier: u32,
    },
    Derived {
        equation: String,
        expr: Expr,
    },
}

impl CounterKind {
    /// `CounterView.is_derived()` of seed 002.
    pub fn is_derived(&self) -> bool {
        matches!(self, CounterKind::Derived { .. })
    }

    /// `CounterView.scale_multiplier()` of seed 002.
    pub fn scale_multiplier(&self) -> u32 {
        match self {
            CounterKind::Scaled { multiplier } => *multiplier,
            _ => 1,
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            CounterKind::Basic => "basic",
            CounterKind::Scaled { .. } => "scaled",
            CounterKind::Derived { .. } => "derived",
        }
    }

    pub fn equation(&self) -> Option<&str> {
        match self {
            CounterKind::Derived { equation, .. } => Some(equation),
            _ => None,
        }
    }
}

/// A mistake in a seed's printed formula or text, and how the database corrects it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Erratum {
    /// Digest ambiguity id, e.g. "A-7".
    pub id: String,
    /// The formula or text exactly as the seed prints it.
    pub printed: String,
    pub note: String,
}

/// Stable numeric id: FNV-1a (64-bit) of `"<database id>/<counter key>"`. It depends only
/// on names, so it survives reordering of the database files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct CounterId(pub u64);

impl CounterId {
    pub fn of(db: &str, key: &str) -> CounterId {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in db.bytes().chain(std::iter::once(b'/')).chain(key.bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        CounterId(h)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    pub id: CounterId,
    /// Unique within a counter set; equals `name` except for AMD compute-analysis
    /// counters, keyed `compute/<name>` because GPA reuses graphics names there.
    pub key: String,
    /// The vendor's name (`JM.GPU_ACTIVE`, `GPUTime`, `OA.A0`, `gpu_busy_pct`).
    pub name: String,
    pub group: String,
    pub block: BlockType,
    pub kind: CounterKind,
    pub unit: Unit,
    /// What an `items`/`beats` unit counts (quads, threads, primitives, ...).
    pub item: Option<String>,
    pub description: String,
    pub scopes: Vec<Scope>,
    /// False for values that must not be summed over draws or frames (percentages,
    /// averages, timestamps).
    pub additive: bool,
    /// The vendor documents the counter as an approximation, or our formula is one.
    pub approx: bool,
    pub errata: Vec<Erratum>,
    /// The vendor's own unit name where it differs from ours (GPA usage type).
    pub vendor_unit: Option<String>,
}

impl Counter {
    pub fn is_derived(&self) -> bool {
        self.kind.is_derived()
    }
}
