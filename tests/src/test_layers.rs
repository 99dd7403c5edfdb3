//! The project's test-only Vulkan layers in a sandbox: the fault layer
//! (`VK_LAYER_FRAMESCOPE_fault`, tests/faultlayer) and the driver-counter double
//! (`VK_LAYER_FRAMESCOPE_perf_double`, tests/perfdouble) and the present-wait double
//! (`VK_LAYER_FRAMESCOPE_present_double`, tests/presentdouble). Each gets its manifest in the sandbox
//! and is enabled below the lane's layers (the validation layer when it is there) and below
//! framescope, whose manifest is implicit.

use crate::{Artifacts, Sandbox};

/// One of the test layers.
pub struct TestLayer {
    pub name: &'static str,
    /// The library's file name in the build's bin directory.
    library: &'static str,
    description: &'static str,
}

pub const FAULT: TestLayer = TestLayer {
    name: "VK_LAYER_FRAMESCOPE_fault",
    library: "libframescope_fault_layer.so",
    description: "framescope test layer: injects faults",
};

pub const PERF_DOUBLE: TestLayer = TestLayer {
    name: "VK_LAYER_FRAMESCOPE_perf_double",
    library: "libframescope_perf_double.so",
    description: "framescope test double: VK_KHR_performance_query on lavapipe",
};

pub const PRESENT_DOUBLE: TestLayer = TestLayer {
    name: "VK_LAYER_FRAMESCOPE_present_double",
    library: "libframescope_present_double.so",
    description: "framescope test double: VK_KHR_present_id and VK_KHR_present_wait on lavapipe",
};

impl TestLayer {
    /// Enables the layer in `sb`. Call after the lane's layers are set
    /// (`Sandbox::with_validation`).
    pub fn enable(&self, sb: &mut Sandbox) {
        let a = Artifacts::get();
        let lib = a.bin_dir.join(self.library);
        assert!(
            lib.is_file(),
            "{} is missing: run `cargo build --workspace`",
            lib.display()
        );
        let dir = sb.path("layers");
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = serde_json::json!({
            "file_format_version": "1.2.0",
            "layer": {
                "name": self.name,
                "type": "GLOBAL",
                "library_path": lib,
                "api_version": "1.3.0",
                "implementation_version": "1",
                "description": self.description,
            }
        });
        std::fs::write(dir.join(format!("{}.json", self.name)), manifest.to_string()).unwrap();
        // The list's first is nearest the app.
        let layers = match sb.env("VK_INSTANCE_LAYERS") {
            Some(l) => format!("{l}:{}", self.name),
            None => self.name.to_string(),
        };
        let path = match sb.env("VK_LAYER_PATH") {
            Some(p) if p.starts_with(&dir.display().to_string()) => p.to_string(),
            _ => format!("{}:/usr/share/vulkan/explicit_layer.d", dir.display()),
        };
        sb.set("VK_INSTANCE_LAYERS", layers).set("VK_LAYER_PATH", path);
    }
}

/// Enables the fault layer in `sb` with `FRAMESCOPE_FAULT=fault`.
pub fn enable_faults(sb: &mut Sandbox, fault: &str) {
    sb.set("FRAMESCOPE_FAULT", fault);
    FAULT.enable(sb);
}
