//! The HUD's counter rows in the words overlay users know: one row per device
//! (`GPU  42%  34°C  118W  1980MHz`, `VRAM  43MiB / 80GiB`, `CPU  7%  2.1GHz`,
//! `RAM  0.9GiB / 15.6GiB`, the app's own use), built from the catalogue's counters by name,
//! and display names for any other counter (`pm_graphics_active_pct` -> `PM graphics active`).

/// Every counter a device row shows; a counter among them is never given a line of its own.
pub const ROW_COUNTERS: &[&str] = &[
    "gpu_util_pct",
    "gpu_temp_c",
    "gpu_power_w",
    "gpu_clock_mhz",
    "gpu_mem_clock_mhz",
    "vram_used_bytes",
    "vram_total_bytes",
    "proc_gpu_busy_pct",
    "proc_vram_bytes",
    "proc_cpu_pct",
    "proc_rss_bytes",
    "cpu_load_pct",
    "cpu_temp_c",
    "ram_used_bytes",
    "ram_total_bytes",
];

/// Whether `name` is shown in a device row (per-core clocks too: they make the CPU's average).
pub fn in_rows(name: &str) -> bool {
    ROW_COUNTERS.contains(&name) || core_mhz(name)
}

fn core_mhz(name: &str) -> bool {
    name.strip_prefix("cpu")
        .and_then(|r| r.strip_suffix("_mhz"))
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Bytes as MiB below 1 GiB, else GiB.
fn bytes(v: f64) -> String {
    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
    if v >= GIB {
        format!("{:.1}GiB", v / GIB)
    } else {
        format!("{:.0}MiB", v / (1024.0 * 1024.0))
    }
}

/// The device rows from the newest values (`value(name)`), in order GPU, VRAM, app, CPU, RAM;
/// a row whose counters this machine lacks is left out, and so is a part. `full` adds the
/// GPU's memory clock.
pub fn device_rows(value: &dyn Fn(&str) -> Option<f64>, cpu_mhz: Option<f64>, full: bool, out: &mut Vec<String>) {
    out.clear();
    let mut row = |label: &str, parts: &[Option<String>]| {
        let parts: Vec<&String> = parts.iter().flatten().collect();
        if parts.is_empty() {
            return;
        }
        let mut t = format!("{label:<5}");
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                t.push_str("  ");
            }
            t.push_str(p);
        }
        out.push(t);
    };
    let pct = |n: &str| value(n).map(|v| format!("{v:.0}%"));
    row(
        "GPU",
        &[
            pct("gpu_util_pct"),
            value("gpu_temp_c").map(|v| format!("{v:.0}°C")),
            value("gpu_power_w").map(|v| format!("{v:.0}W")),
            value("gpu_clock_mhz").map(|v| format!("{v:.0}MHz")),
            value("gpu_mem_clock_mhz")
                .filter(|_| full)
                .map(|v| format!("mem {v:.0}MHz")),
        ],
    );
    let used_total = |used: &str, total: &str| match (value(used), value(total)) {
        (Some(u), Some(t)) => Some(format!("{} / {}", bytes(u), bytes(t))),
        (Some(u), None) => Some(bytes(u)),
        _ => None,
    };
    row("VRAM", &[used_total("vram_used_bytes", "vram_total_bytes")]);
    row(
        "APP",
        &[
            value("proc_gpu_busy_pct").map(|v| format!("GPU {v:.0}%")),
            value("proc_vram_bytes").map(|v| format!("VRAM {}", bytes(v))),
            value("proc_cpu_pct").map(|v| format!("CPU {v:.0}%")),
            value("proc_rss_bytes").map(|v| format!("RSS {}", bytes(v))),
        ],
    );
    row(
        "CPU",
        &[
            pct("cpu_load_pct"),
            cpu_mhz.map(|v| format!("{:.1}GHz", v / 1000.0)),
            value("cpu_temp_c").map(|v| format!("{v:.0}°C")),
        ],
    );
    row("RAM", &[used_total("ram_used_bytes", "ram_total_bytes")]);
}

/// The mean of the per-core clocks (`cpu3_mhz`) among `values`.
pub fn mean_core_mhz<'a>(values: impl Iterator<Item = (&'a str, f64)>) -> Option<f64> {
    let (n, sum) = values
        .filter(|(n, v)| core_mhz(n) && v.is_finite())
        .fold((0u32, 0.0), |(n, s), (_, v)| (n + 1, s + v));
    (n > 0).then(|| sum / f64::from(n))
}

/// A counter's name for people (core's, shared with `framescope report`).
pub use framescope_core::counters::display_name;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_rows_read_like_an_overlay() {
        let v = |n: &str| -> Option<f64> {
            Some(match n {
                "gpu_util_pct" => 42.4,
                "gpu_temp_c" => 34.0,
                "gpu_power_w" => 118.2,
                "gpu_clock_mhz" => 1980.0,
                "gpu_mem_clock_mhz" => 2619.0,
                "vram_used_bytes" => 43.0 * 1024.0 * 1024.0,
                "vram_total_bytes" => 80.0 * 1024.0 * 1024.0 * 1024.0,
                "cpu_load_pct" => 7.0,
                "ram_used_bytes" => 0.9 * 1024.0 * 1024.0 * 1024.0,
                "ram_total_bytes" => 15.6 * 1024.0 * 1024.0 * 1024.0,
                _ => return None,
            })
        };
        let mut rows = Vec::new();
        device_rows(&v, Some(2100.0), false, &mut rows);
        assert_eq!(
            rows,
            [
                "GPU  42%  34°C  118W  1980MHz",
                "VRAM 43MiB / 80.0GiB",
                "CPU  7%  2.1GHz",
                "RAM  922MiB / 15.6GiB",
            ]
        );
        device_rows(&v, None, true, &mut rows);
        assert!(rows[0].ends_with("mem 2619MHz"), "{rows:?}");
        // A machine with none of them: no rows at all.
        device_rows(&|_| None, None, true, &mut rows);
        assert!(rows.is_empty());
    }

    #[test]
    fn counters_get_names_for_people() {
        assert_eq!(display_name("pm_graphics_active_pct"), "PM graphics active");
        assert_eq!(display_name("gpu_sm_clock_mhz"), "GPU SM clock");
        assert_eq!(display_name("intel_eu_active_pct"), "Intel EU active");
        assert_eq!(display_name("gpm_dram_bw_pct"), "GPM DRAM bw");
        assert_eq!(display_name("proc_cpu_time_ns"), "Proc CPU time");
        assert!(in_rows("cpu12_mhz") && in_rows("gpu_util_pct") && !in_rows("cpu_mhz_x"));
        let m = mean_core_mhz([("cpu0_mhz", 2000.0), ("cpu1_mhz", 3000.0), ("gpu_clock_mhz", 9.0)].into_iter());
        assert_eq!(m, Some(2500.0));
    }
}
