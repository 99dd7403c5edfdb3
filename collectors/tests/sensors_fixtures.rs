//! The committed binary `gpu_metrics` fixtures are exactly what the blob helper builds from
//! the kernel layouts, so the fixture trees and the helper cannot drift apart.
//! `FRAMESCOPE_WRITE_SENSOR_FIXTURES=1` rewrites them instead.

#[path = "support/gpu_metrics_blob.rs"]
mod blob;
#[path = "support/sensors.rs"]
mod sensors;

#[test]
fn gpu_metrics_fixture_files_match_the_helper() {
    let write = std::env::var_os("FRAMESCOPE_WRITE_SENSOR_FIXTURES").is_some();
    for (rel, bytes) in blob::fixtures() {
        let path = sensors::fixture(rel);
        if write {
            std::fs::write(&path, &bytes).unwrap();
        }
        let on_disk = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(on_disk, bytes, "{} differs from the helper's blob", path.display());
    }
}
