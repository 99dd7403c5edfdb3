//! The Python readers some tests run on framescope's outputs (Perfetto's published protos,
//! pyarrow): a missing package is a failure, never a skip.

use crate::artifacts::require_program;
use crate::runner::Sandbox;
use serde_json::Value;
use std::process::Command;

/// The Python that has the `perfetto`, `protobuf` and `pyarrow` packages:
/// `FRAMESCOPE_TEST_PYTHON`, or `python3` on PATH.
pub fn python() -> String {
    std::env::var("FRAMESCOPE_TEST_PYTHON").unwrap_or_else(|_| {
        require_program("python3");
        "python3".into()
    })
}

/// Runs the Python reader `source` (written into the sandbox as `name`) on `file`; its stdout
/// is JSON.
pub fn python_json(sb: &Sandbox, name: &str, source: &str, file: &std::path::Path) -> Value {
    let script = sb.path(name);
    std::fs::write(&script, source).expect("write decoder");
    // Not through the sandbox: its private HOME would hide a user-level Python install.
    let out = Command::new(python())
        .arg(&script)
        .arg(file)
        .output()
        .expect("start python3");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name} failed ({}): {stderr}\n(PyPI packages perfetto, protobuf>=6.31.1 and pyarrow are needed: `cargo xtask install-deps`)",
        out.status
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("decoder output: {e}: {stderr}"))
}

/// Decodes a Perfetto trace with Perfetto's protos (tests/tests/export_perfetto.py).
pub fn decode_perfetto(sb: &Sandbox, trace: &std::path::Path) -> Value {
    python_json(
        sb,
        "export_perfetto.py",
        include_str!("../tests/export_perfetto.py"),
        trace,
    )
}
