//! Counter data every part of framescope shares, below all of them: how many counters a frame
//! holds, a frame's values by catalogue index, the window a source's values cover, and the
//! catalogue entries the dump header lists.

use serde::{Deserialize, Serialize};

/// Counters a board (and so a frame record) can hold.
pub const MAX_COUNTERS: usize = 96;
/// Counter sources a board can hold windows for.
pub const MAX_SOURCES: usize = 8;

/// The time a source's values cover, on `CLOCK_MONOTONIC`. A value such as NVML's utilisation
/// or a GPM metric is an average over its window, never a per-frame measurement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterWindow {
    pub begin_ns: u64,
    pub end_ns: u64,
}

impl CounterWindow {
    pub fn is_set(&self) -> bool {
        self.end_ns != 0
    }
}

/// Capacity of [`CounterValues`]: counters recorded per frame (the board's slots).
pub const MAX_FRAME_COUNTERS: usize = MAX_COUNTERS;

/// Counter values by catalogue index (the dump header's `counters` list), fixed capacity:
/// slot `i` holds counter `i` of the catalogue, or nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CounterValues {
    present: u128,
    values: [f64; MAX_FRAME_COUNTERS],
}

impl Default for CounterValues {
    fn default() -> Self {
        CounterValues {
            present: 0,
            values: [0.0; MAX_FRAME_COUNTERS],
        }
    }
}

impl CounterValues {
    /// Sets the value of catalogue entry `index`; false (and dropped) past the capacity.
    pub fn set(&mut self, index: usize, value: f64) -> bool {
        if index >= MAX_FRAME_COUNTERS {
            return false;
        }
        self.values[index] = value;
        self.present |= 1u128 << index;
        true
    }

    pub fn clear(&mut self) {
        self.present = 0;
    }

    /// Counters with a value.
    pub fn len(&self) -> usize {
        self.present.count_ones() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.present == 0
    }

    /// `(catalogue index, value)` of every counter with a value, by index.
    pub fn iter(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        (0..MAX_FRAME_COUNTERS)
            .filter(|&i| self.present & (1u128 << i) != 0)
            .map(|i| (i, self.values[i]))
    }

    /// The value of catalogue entry `index`, if recorded.
    pub fn get(&self, index: usize) -> Option<f64> {
        (index < MAX_FRAME_COUNTERS && self.present & (1u128 << index) != 0).then(|| self.values[index])
    }
}

/// One counter of the header's catalogue; frames refer to counters by catalogue index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterDesc {
    pub name: String,
    /// e.g. `ns`, `%`, `bytes`, `MHz`, `W`, `C`, `count`.
    pub unit: String,
    /// Where it comes from, e.g. `vulkan`, `nvml`, `amdgpu-sysfs`, `perf`.
    pub source: String,
    /// What it is measured over, e.g. `frame`, `device`, `process`.
    pub scope: String,
}

/// A counter source that could not be used, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unavailable {
    pub source: String,
    pub reason: String,
}
