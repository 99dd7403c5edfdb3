//! The Mali sources' catalogue values for dump `k` of the fake G76 (`kbase_fake.rs`),
//! computed by hand from the fixture's numbers: 6 present cores (0, 1, 2, 4, 5, 7, whose
//! `inst + 1` weights sum to 1 + 2 + 3 + 5 + 6 + 8 = 25), 2 L2 slices (weights 1 + 2 = 3),
//! a 16-byte bus, 16 ms at 500 MHz.

#![allow(dead_code)]

pub fn expected(k: f64) -> Vec<(&'static str, f64)> {
    let span_s = 0.016;
    let gpu_active = 800_000.0 * k;
    let cores = 6.0;
    let read_bytes = 10_000.0 * 3.0 * k * 16.0;
    let write_bytes = 4_000.0 * 3.0 * 16.0;
    vec![
        ("mali_gpu_active_cycles", gpu_active),
        ("mali_gpu_mhz", 500.0),
        // 500 MHz x 16 ms = 8e6 cycles.
        ("mali_gpu_util_pct", 100.0 * gpu_active / 8_000_000.0),
        ("mali_fragment_active_cycles", 600_000.0 * k),
        ("mali_fragment_util_pct", 75.0),
        ("mali_non_fragment_active_cycles", 200_000.0 * k),
        ("mali_non_fragment_util_pct", 25.0),
        ("mali_tiler_active_cycles", 300_000.0 * k),
        ("mali_tiler_util_pct", 37.5),
        // EXEC_CORE_ACTIVE summed over cores, divided by cores x GPU_ACTIVE.
        (
            "mali_shader_core_util_pct",
            100.0 * (100_000.0 * 25.0 * k) / (cores * gpu_active),
        ),
        ("mali_fragment_shader_cycles", 50_000.0 * 25.0),
        ("mali_compute_shader_cycles", 10_000.0 * 25.0),
        ("mali_input_primitives", 100.0 + 200.0 + 9_700.0),
        ("mali_visible_primitives", 4_000.0),
        ("mali_l2_read_lookups", 1_000.0 * 3.0 * k),
        ("mali_l2_write_lookups", 500.0 * 3.0),
        ("mali_l2_read_miss_pct", 100.0 * (250.0 * 3.0) / (1_000.0 * 3.0 * k)),
        ("mali_ext_read_bytes", read_bytes),
        ("mali_ext_write_bytes", write_bytes),
        ("mali_ext_read_mib_s", read_bytes / span_s / 1_048_576.0),
        ("mali_ext_write_mib_s", write_bytes / span_s / 1_048_576.0),
    ]
}

pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}
