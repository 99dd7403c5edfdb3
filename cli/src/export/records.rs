//! The dump's records as the exports read them: every field optional where a dump may lack
//! it, nothing trusted.

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize, Default)]
pub struct Device {
    pub name: Option<String>,
    pub driver_info: Option<String>,
    pub driver_version: Option<String>,
}

#[derive(Deserialize)]
pub struct CounterEntry {
    pub name: String,
    #[serde(default)]
    pub unit: String,
    /// The counter source (`nvml`, `system`, ...): `system` counters are the CPU's.
    #[serde(default)]
    pub source: String,
}

/// The header fields the exporters read.
#[derive(Deserialize, Default)]
pub struct Header {
    pub schema: Option<String>,
    pub pid: Option<u64>,
    pub exe: Option<String>,
    pub api: Option<String>,
    pub start_ns: Option<u64>,
    pub start_unix_ns: Option<u64>,
    pub device: Option<Device>,
    pub calibrated_timestamps: Option<bool>,
    /// False when draws and dispatches were not counted (their frame fields are 0 then).
    pub command_counts: Option<bool>,
    #[serde(default)]
    pub counters: Vec<CounterEntry>,
}

impl Header {
    /// The executable's file name, for tools that show an application name.
    pub fn app_name(&self) -> String {
        let exe = self.exe.as_deref().unwrap_or("");
        exe.rsplit('/').next().unwrap_or(exe).to_string()
    }
}

#[derive(Deserialize)]
pub struct Swapchain {
    pub handle: Option<String>,
    pub present_mode: Option<u64>,
    pub present_mode_name: Option<String>,
}

#[derive(Deserialize)]
pub struct Sample {
    pub scope: Option<String>,
    #[serde(default)]
    pub label: String,
    pub cmdbuf: Option<u32>,
    pub draw: Option<u32>,
    pub gpu_begin_ns: Option<u64>,
    pub gpu_end_ns: Option<u64>,
}

/// A stutter's cause.
#[derive(Deserialize, Default)]
pub struct Cause {
    pub cause: String,
    #[serde(default)]
    pub ns: u64,
}

/// The frame fields the exporters read.
#[derive(Deserialize, Default)]
pub struct Frame {
    pub frame: u64,
    pub t_ns: u64,
    pub cpu_frame_ns: Option<u64>,
    /// The previous present's return (dumps before the frame timeline have none).
    #[serde(default)]
    pub cpu_start_ns: Option<u64>,
    #[serde(default)]
    pub present_call_ns: Option<u64>,
    pub gpu_busy_ns: Option<u64>,
    pub gpu_span_ns: Option<u64>,
    pub gpu_begin_ns: Option<u64>,
    /// When it reached the screen (dumps before the display times have none).
    #[serde(default)]
    pub display: Option<String>,
    #[serde(default)]
    pub shown_ns: Option<u64>,
    #[serde(default)]
    pub display_latency_ns: Option<u64>,
    #[serde(default)]
    pub displayed_time_ns: Option<u64>,
    #[serde(default)]
    pub until_displayed_ns: Option<u64>,
    #[serde(default)]
    pub between_display_change_ns: Option<u64>,
    #[serde(default)]
    pub animation_error_ns: Option<i64>,
    /// Stutter frames: their causes (largest first).
    #[serde(default)]
    pub stutter: bool,
    #[serde(default)]
    pub stutter_causes: Vec<Cause>,
    pub draws: Option<u64>,
    pub dispatches: Option<u64>,
    pub submits: Option<u64>,
    pub swapchain: Option<Swapchain>,
    #[serde(default)]
    pub counters: Option<BTreeMap<String, Option<f64>>>,
    #[serde(default)]
    pub samples: Vec<Sample>,
}

impl Frame {
    /// A counter's value when it is a finite number.
    pub fn counter(&self, name: &str) -> Option<f64> {
        self.counters
            .as_ref()?
            .get(name)
            .copied()
            .flatten()
            .filter(|v| v.is_finite())
    }
}

/// A `mark` record.
#[derive(Deserialize)]
pub struct Mark {
    pub t_ns: u64,
    pub label: String,
}

/// A `series` record: a counter source's raw samples.
#[derive(Deserialize)]
pub struct Series {
    pub source: String,
    pub begin_ns: Vec<u64>,
    #[serde(default)]
    pub values: BTreeMap<String, Vec<Option<f64>>>,
}
