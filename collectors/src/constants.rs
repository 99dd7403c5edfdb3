//! Symbolic constants of derived equations, bound at run time per GPU and per sample.

use std::collections::BTreeMap;
use std::fmt;

pub const MALI_CONFIG_SHADER_CORE_COUNT: &str = "MALI_CONFIG_SHADER_CORE_COUNT";
pub const MALI_CONFIG_L2_CACHE_COUNT: &str = "MALI_CONFIG_L2_CACHE_COUNT";
pub const MALI_CONFIG_EXT_BUS_BYTE_SIZE: &str = "MALI_CONFIG_EXT_BUS_BYTE_SIZE";
pub const MALI_CONFIG_TIME_SPAN: &str = "MALI_CONFIG_TIME_SPAN";
pub const GPU_MHZ: &str = "GPU_MHZ";
pub const INTEL_OA_TIMESTAMP_HZ: &str = "INTEL_OA_TIMESTAMP_HZ";
pub const INTEL_EU_COUNT: &str = "INTEL_EU_COUNT";

/// Every constant an equation may name, with its meaning. A name that is neither a
/// counter of the set nor listed here is an error when a database is loaded.
pub const KNOWN: &[(&str, &str)] = &[
    (MALI_CONFIG_SHADER_CORE_COUNT, "number of shader cores"),
    (MALI_CONFIG_L2_CACHE_COUNT, "number of L2 cache slices"),
    (
        MALI_CONFIG_EXT_BUS_BYTE_SIZE,
        "width of the GPU external (AXI) bus in bytes (8 or 16 on Bifrost)",
    ),
    (
        MALI_CONFIG_TIME_SPAN,
        "time span represented by the counter sample, in seconds",
    ),
    (
        GPU_MHZ,
        "GPU clock frequency used for the sample, in MHz (DVFS-variable)",
    ),
    (INTEL_OA_TIMESTAMP_HZ, "frequency of the OA TIME_STAMP counter in Hz"),
    (INTEL_EU_COUNT, "number of execution units"),
];

pub fn is_known(name: &str) -> bool {
    KNOWN.iter().any(|(n, _)| *n == name)
}

pub fn describe(name: &str) -> Option<&'static str> {
    KNOWN.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConstantError {
    Unknown(String),
    Invalid {
        name: String,
        value: f64,
        why: &'static str,
    },
}

impl fmt::Display for ConstantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstantError::Unknown(n) => write!(f, "unknown constant {n}"),
            ConstantError::Invalid { name, value, why } => {
                write!(f, "invalid value {value} for {name}: {why}")
            }
        }
    }
}

impl std::error::Error for ConstantError {}

/// Constant values for one GPU (and, for the time span and frequency, one sample).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Constants(BTreeMap<String, f64>);

impl Constants {
    pub fn new() -> Self {
        Self::default()
    }

    /// The per-GPU constants of a Bifrost GPU. The bus width is stored in bytes although
    /// seed 002 describes it "in bits" (digest A-15); only 8 and 16 exist on Bifrost.
    pub fn mali_bifrost(cores: u32, l2_slices: u32, bus_bytes: u32) -> Result<Self, ConstantError> {
        if bus_bytes != 8 && bus_bytes != 16 {
            return Err(ConstantError::Invalid {
                name: MALI_CONFIG_EXT_BUS_BYTE_SIZE.into(),
                value: f64::from(bus_bytes),
                why: "Bifrost AXI buses are 8 or 16 bytes wide",
            });
        }
        let mut c = Constants::new();
        c.set(MALI_CONFIG_SHADER_CORE_COUNT, f64::from(cores))?;
        c.set(MALI_CONFIG_L2_CACHE_COUNT, f64::from(l2_slices))?;
        c.set(MALI_CONFIG_EXT_BUS_BYTE_SIZE, f64::from(bus_bytes))?;
        Ok(c)
    }

    /// Sets a constant; values must be finite and positive (they are counts, sizes,
    /// frequencies or durations, and most appear as divisors).
    pub fn set(&mut self, name: &str, value: f64) -> Result<&mut Self, ConstantError> {
        if !is_known(name) {
            return Err(ConstantError::Unknown(name.into()));
        }
        if !(value.is_finite() && value > 0.0) {
            return Err(ConstantError::Invalid {
                name: name.into(),
                value,
                why: "must be finite and > 0",
            });
        }
        self.0.insert(name.into(), value);
        Ok(self)
    }

    /// Binds the per-sample values: time span in seconds and GPU frequency in MHz.
    pub fn with_sample(mut self, time_span_s: f64, gpu_mhz: f64) -> Result<Self, ConstantError> {
        self.set(MALI_CONFIG_TIME_SPAN, time_span_s)?;
        self.set(GPU_MHZ, gpu_mhz)?;
        Ok(self)
    }

    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.get(name).copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }
}
