//! Raw counter values: aggregation over block instances (seed 002: a per-GPU total is the
//! sum over instances) and accumulation over draws, passes or frames (percentages are
//! recomputed from the summed components, never averaged).

use std::collections::{BTreeMap, BTreeSet};

/// Hardware counter values of one sample, each already summed over block instances.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawValues(BTreeMap<String, f64>);

impl RawValues {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set(&mut self, name: &str, value: f64) -> &mut Self {
        self.0.insert(name.to_string(), value);
        self
    }

    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.get(name).copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<S: Into<String>> FromIterator<(S, f64)> for RawValues {
    fn from_iter<I: IntoIterator<Item = (S, f64)>>(iter: I) -> Self {
        RawValues(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

/// Values as the hardware emits them: one block of counters per instance (per shader
/// core, per L2 slice).
#[derive(Debug, Clone, Default)]
pub struct InstanceValues(BTreeMap<String, BTreeMap<u32, f64>>);

impl InstanceValues {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `value` for `instance`; a repeated instance replaces the earlier value.
    pub fn push(&mut self, name: &str, instance: u32, value: f64) -> &mut Self {
        self.0.entry(name.to_string()).or_default().insert(instance, value);
        self
    }

    pub fn instances(&self, name: &str) -> usize {
        self.0.get(name).map_or(0, BTreeMap::len)
    }

    /// The per-GPU totals: every counter summed over its instances.
    pub fn total(&self) -> RawValues {
        self.0
            .iter()
            .map(|(k, per)| (k.clone(), per.values().sum::<f64>()))
            .collect()
    }

    /// The DS-5 Streamline view of a shader-core counter (average over cores); derived
    /// explicitly because the canonical value is the sum (digest A-1).
    pub fn mean_per_instance(&self, name: &str) -> Option<f64> {
        let per = self.0.get(name)?;
        (!per.is_empty()).then(|| per.values().sum::<f64>() / per.len() as f64)
    }
}

/// Sums raw values over several samples (draws into a pass, passes into a frame).
///
/// A counter that is not additive (a vendor percentage, an average, a timestamp) or that
/// is missing from any sample is left out of the total, so anything derived from it
/// evaluates to "no value" instead of a wrong number.
#[derive(Debug, Clone, Default)]
pub struct Accumulator {
    sums: BTreeMap<String, (f64, u64)>,
    non_additive: BTreeSet<String>,
    samples: u64,
}

impl Accumulator {
    pub fn new(non_additive: impl IntoIterator<Item = String>) -> Self {
        Accumulator {
            non_additive: non_additive.into_iter().collect(),
            ..Default::default()
        }
    }

    pub fn add(&mut self, v: &RawValues) {
        self.samples += 1;
        for (k, x) in v.iter() {
            if self.non_additive.contains(k) {
                continue;
            }
            let e = self.sums.entry(k.to_string()).or_insert((0.0, 0));
            e.0 += x;
            e.1 += 1;
        }
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    pub fn total(&self) -> RawValues {
        self.sums
            .iter()
            .filter(|(_, (_, n))| *n == self.samples)
            .map(|(k, (s, _))| (k.clone(), *s))
            .collect()
    }
}
