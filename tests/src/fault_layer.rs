//! The test-only layer `VK_LAYER_FRAMESCOPE_fault` (tests/faultlayer) in a sandbox: its
//! manifest written into the sandbox and the layer enabled below the lane's layers (the
//! validation layer when it is there) and below framescope, whose manifest is implicit, with
//! `FRAMESCOPE_FAULT` saying what it injects.

use crate::{Artifacts, Sandbox};

pub const NAME: &str = "VK_LAYER_FRAMESCOPE_fault";

/// Enables the fault layer in `sb` with `FRAMESCOPE_FAULT=fault`. Call after the lane's
/// layers are set (`Sandbox::with_validation`).
pub fn enable(sb: &mut Sandbox, fault: &str) {
    let a = Artifacts::get();
    let lib = a.bin_dir.join("libframescope_fault_layer.so");
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
            "name": NAME,
            "type": "GLOBAL",
            "library_path": lib,
            "api_version": "1.3.0",
            "implementation_version": "1",
            "description": "framescope test layer: injects faults",
        }
    });
    std::fs::write(dir.join("fault.json"), manifest.to_string()).unwrap();
    // The list's first is nearest the app.
    let layers = match sb.env("VK_INSTANCE_LAYERS") {
        Some(l) => format!("{l}:{NAME}"),
        None => NAME.to_string(),
    };
    sb.set("FRAMESCOPE_FAULT", fault).set("VK_INSTANCE_LAYERS", layers).set(
        "VK_LAYER_PATH",
        format!("{}:/usr/share/vulkan/explicit_layer.d", dir.display()),
    );
}
