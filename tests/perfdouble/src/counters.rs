//! The double's counters: what each one counts in the work recorded between a query's begin
//! and end, and which pass it needs. Counters 0 and 1 share a pass, 2 and 3 need another, so
//! a set mixing them takes two passes, as on real drivers.

use ash::vk;

/// The work recorded between a query's begin and end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub draws: u64,
    pub vertices: u64,
}

impl Tally {
    pub fn since(self, start: Tally) -> Tally {
        Tally {
            draws: self.draws - start.draws,
            vertices: self.vertices - start.vertices,
        }
    }
}

pub struct Counter {
    pub name: &'static str,
    pub description: &'static str,
    pub category: &'static str,
    pub storage: vk::PerformanceCounterStorageKHR,
    pub unit: vk::PerformanceCounterUnitKHR,
    /// The hardware pass it needs.
    pub group: u32,
}

pub const COUNTERS: [Counter; 4] = [
    Counter {
        name: "Draws",
        description: "Draw commands recorded between the query's begin and end",
        category: "Test double",
        storage: vk::PerformanceCounterStorageKHR::UINT64,
        unit: vk::PerformanceCounterUnitKHR::GENERIC,
        group: 0,
    },
    Counter {
        name: "Vertices",
        description: "Vertices drawn (vertex or index count times instance count; 0 for indirect draws)",
        category: "Test double",
        storage: vk::PerformanceCounterStorageKHR::UINT64,
        unit: vk::PerformanceCounterUnitKHR::GENERIC,
        group: 0,
    },
    Counter {
        name: "Vertices per draw",
        description: "Vertices divided by draws (0 without draws)",
        category: "Test double",
        storage: vk::PerformanceCounterStorageKHR::FLOAT64,
        unit: vk::PerformanceCounterUnitKHR::GENERIC,
        group: 1,
    },
    Counter {
        name: "Draws x 1000",
        description: "Draws times 1000, as a 32-bit count",
        category: "Test double",
        storage: vk::PerformanceCounterStorageKHR::UINT32,
        unit: vk::PerformanceCounterUnitKHR::GENERIC,
        group: 1,
    },
];

/// The passes a set of counter indices needs, in pass order (`None`: an index out of range).
pub fn passes(indices: &[u32]) -> Option<Vec<u32>> {
    let mut groups = Vec::new();
    for &i in indices {
        let g = COUNTERS.get(i as usize)?.group;
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    groups.sort_unstable();
    Some(groups)
}

/// Counter `index`'s value over `t`, in its storage.
pub fn value(index: u32, t: Tally) -> vk::PerformanceCounterResultKHR {
    match index {
        0 => vk::PerformanceCounterResultKHR { uint64: t.draws },
        1 => vk::PerformanceCounterResultKHR { uint64: t.vertices },
        2 => vk::PerformanceCounterResultKHR {
            float64: if t.draws == 0 {
                0.0
            } else {
                t.vertices as f64 / t.draws as f64
            },
        },
        _ => vk::PerformanceCounterResultKHR {
            uint32: (t.draws * 1000) as u32,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_of_one_group_take_one_pass_and_a_mix_two() {
        assert_eq!(passes(&[0, 1]), Some(vec![0]));
        assert_eq!(passes(&[3, 0, 2]), Some(vec![0, 1]));
        assert_eq!(passes(&[4]), None);
    }

    #[test]
    fn values_follow_the_tally_in_each_storage() {
        let t = Tally { draws: 4, vertices: 30 };
        // SAFETY: reading the member `value` wrote for each index.
        unsafe {
            assert_eq!(value(0, t).uint64, 4);
            assert_eq!(value(1, t).uint64, 30);
            assert_eq!(value(2, t).float64, 7.5);
            assert_eq!(value(3, t).uint32, 4000);
            assert_eq!(value(2, Tally::default()).float64, 0.0);
        }
    }
}
