//! The driver's own counters (`VK_KHR_performance_query`), as the device lists them per queue
//! family: what a user can ask a driver for on RADV, ANV, Turnip or v3dv. Listed in the dump
//! header; collecting them per command buffer and render pass, rotated across frames, builds
//! on this.

use crate::dispatch::instance::Instance;
use ash::vk;
use std::ffi::CStr;

/// One counter of one queue family.
#[derive(Clone, Debug, PartialEq)]
pub struct DriverCounter {
    pub family: u32,
    pub index: u32,
    pub name: String,
    pub category: String,
    pub description: String,
    pub unit: &'static str,
    pub storage: &'static str,
    pub scope: &'static str,
}

impl DriverCounter {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "family": self.family,
            "index": self.index,
            "name": self.name,
            "category": self.category,
            "description": self.description,
            "unit": self.unit,
            "storage": self.storage,
            "scope": self.scope,
        })
    }
}

pub fn unit_name(u: vk::PerformanceCounterUnitKHR) -> &'static str {
    match u {
        vk::PerformanceCounterUnitKHR::GENERIC => "generic",
        vk::PerformanceCounterUnitKHR::PERCENTAGE => "percentage",
        vk::PerformanceCounterUnitKHR::NANOSECONDS => "nanoseconds",
        vk::PerformanceCounterUnitKHR::BYTES => "bytes",
        vk::PerformanceCounterUnitKHR::BYTES_PER_SECOND => "bytes_per_second",
        vk::PerformanceCounterUnitKHR::KELVIN => "kelvin",
        vk::PerformanceCounterUnitKHR::WATTS => "watts",
        vk::PerformanceCounterUnitKHR::VOLTS => "volts",
        vk::PerformanceCounterUnitKHR::AMPS => "amps",
        vk::PerformanceCounterUnitKHR::HERTZ => "hertz",
        vk::PerformanceCounterUnitKHR::CYCLES => "cycles",
        _ => "unknown",
    }
}

pub fn storage_name(s: vk::PerformanceCounterStorageKHR) -> &'static str {
    match s {
        vk::PerformanceCounterStorageKHR::INT32 => "int32",
        vk::PerformanceCounterStorageKHR::INT64 => "int64",
        vk::PerformanceCounterStorageKHR::UINT32 => "uint32",
        vk::PerformanceCounterStorageKHR::UINT64 => "uint64",
        vk::PerformanceCounterStorageKHR::FLOAT32 => "float32",
        vk::PerformanceCounterStorageKHR::FLOAT64 => "float64",
        _ => "unknown",
    }
}

pub fn scope_name(s: vk::PerformanceCounterScopeKHR) -> &'static str {
    match s {
        vk::PerformanceCounterScopeKHR::COMMAND_BUFFER => "command_buffer",
        vk::PerformanceCounterScopeKHR::RENDER_PASS => "render_pass",
        vk::PerformanceCounterScopeKHR::COMMAND => "command",
        _ => "unknown",
    }
}

/// Text of a fixed-size, NUL-terminated Vulkan string.
fn text(raw: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = raw.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Most counters listed per family: a driver may list hundreds; the header keeps it bounded.
const MAX_PER_FAMILY: u32 = 1024;

/// Every family's counters, through the next layer's
/// `vkEnumeratePhysicalDeviceQueueFamilyPerformanceQueryCountersKHR`; empty when it has none
/// or `phys` does not support `VK_KHR_performance_query`.
pub fn enumerate(inst: &Instance, phys: vk::PhysicalDevice) -> Vec<DriverCounter> {
    let mut out = Vec::new();
    for (family, counters, descs) in inst.performance_counters(phys, MAX_PER_FAMILY) {
        for (i, (c, d)) in counters.iter().zip(&descs).enumerate() {
            out.push(DriverCounter {
                family,
                index: i as u32,
                name: text(&d.name),
                category: text(&d.category),
                description: text(&d.description),
                unit: unit_name(c.unit),
                storage: storage_name(c.storage),
                scope: scope_name(c.scope),
            });
        }
    }
    out
}

/// The extension's name, for the support check.
pub const EXTENSION: &CStr = ash::khr::performance_query::NAME;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_units_storages_and_scopes() {
        assert_eq!(unit_name(vk::PerformanceCounterUnitKHR::CYCLES), "cycles");
        assert_eq!(storage_name(vk::PerformanceCounterStorageKHR::FLOAT64), "float64");
        assert_eq!(scope_name(vk::PerformanceCounterScopeKHR::RENDER_PASS), "render_pass");
        let raw: Vec<std::ffi::c_char> = b"Draws\0junk".iter().map(|b| *b as std::ffi::c_char).collect();
        assert_eq!(text(&raw), "Draws");
    }
}
