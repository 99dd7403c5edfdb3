//! MangoHud's CSV log layout, so MangoHud's log tools (MangoPlot, FlightlessMango's log
//! upload) read a framescope run. The layout is MangoHud 0.8's `Logger::writeFileHeaders`
//! without `log_versioning`: a system-info line pair, the column line, then one row per
//! frame (MangoHud writes one per `log_interval`; framescope has every frame).
//!
//! Units as MangoHud writes them: frametime in ms, loads in %, temperatures in °C, clocks in
//! MHz, power in W, memory in GiB, elapsed in ns since the first row. MangoHud writes 0 for
//! what it could not read, so columns framescope has no value for are 0: `cpu_power` and
//! `swap_used` always, the others when the dump's counters lack them. `cpu_mhz` is the mean
//! of the per-core `cpuN_mhz` counters.

use super::records::{Frame, Header};
use super::sink::{cell, Sink};
use std::io::{self, Write};

pub const SYSTEM_COLUMNS: &str = "os,cpu,gpu,ram,kernel,driver,cpuscheduler";
pub const COLUMNS: &str = "fps,frametime,cpu_load,cpu_power,gpu_load,cpu_temp,gpu_temp,gpu_core_clock,gpu_mem_clock,gpu_vram_used,gpu_power,ram_used,swap_used,process_rss,cpu_mhz,elapsed";

const GIB: f64 = (1u64 << 30) as f64;

pub struct MangoHud<W: Write> {
    out: W,
    first_t: Option<u64>,
}

impl<W: Write> MangoHud<W> {
    pub fn new(out: W) -> Self {
        MangoHud { out, first_t: None }
    }
}

/// A value as MangoHud would print it; 0 where there is none.
fn num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{}", (v * 1e4).round() / 1e4),
        _ => "0".into(),
    }
}

/// The mean of the `cpuN_mhz` counters: MangoHud's one CPU clock for the whole CPU.
fn mean_core_mhz(f: &Frame) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0u32);
    for (name, v) in f.counters.iter().flatten() {
        let core = name.strip_prefix("cpu").and_then(|r| r.strip_suffix("_mhz"));
        if let (Some(core), Some(v)) = (core, v) {
            if !core.is_empty() && core.bytes().all(|b| b.is_ascii_digit()) && v.is_finite() {
                sum += v;
                n += 1;
            }
        }
    }
    (n > 0).then(|| sum / f64::from(n))
}

impl<W: Write> Sink for MangoHud<W> {
    fn header(&mut self, h: &Header) -> io::Result<()> {
        let d = h.device.as_ref();
        let gpu = d.and_then(|d| d.name.as_deref()).unwrap_or("");
        let driver = d
            .and_then(|d| d.driver_info.as_deref().or(d.driver_version.as_deref()))
            .unwrap_or("");
        // The dump does not record the OS, CPU, RAM size, kernel or scheduler.
        writeln!(self.out, "{SYSTEM_COLUMNS}")?;
        writeln!(self.out, ",,{},,,{},", cell(gpu), cell(driver))?;
        writeln!(self.out, "{COLUMNS}")
    }

    fn frame(&mut self, f: &Frame) -> io::Result<()> {
        let first = *self.first_t.get_or_insert(f.t_ns);
        let ft = f.cpu_frame_ns.filter(|&n| n > 0);
        let fps = ft.map(|n| 1e9 / n as f64);
        let ms = ft.map(|n| n as f64 / 1e6);
        let gib = |name: &str| f.counter(name).map(|b| b / GIB);
        let cols = [
            num(fps),
            num(ms),
            num(f.counter("cpu_load_pct")),
            num(None),
            num(f.counter("gpu_util_pct")),
            num(f.counter("cpu_temp_c")),
            num(f.counter("gpu_temp_c")),
            num(f.counter("gpu_clock_mhz")),
            num(f.counter("gpu_mem_clock_mhz")),
            num(gib("vram_used_bytes")),
            num(f.counter("gpu_power_w")),
            num(gib("ram_used_bytes")),
            num(None),
            num(gib("proc_rss_bytes")),
            num(mean_core_mhz(f)),
            f.t_ns.saturating_sub(first).to_string(),
        ];
        writeln!(self.out, "{}", cols.join(","))
    }

    fn finish(&mut self) -> io::Result<Vec<String>> {
        self.out.flush()?;
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_the_column_line() {
        let mut m = MangoHud::new(Vec::new());
        let h: Header =
            serde_json::from_str(r#"{"device":{"name":"GPU, fast","driver_info":"Mesa 24"},"counters":[]}"#).unwrap();
        m.header(&h).unwrap();
        let f: Frame = serde_json::from_str(
            r#"{"frame":1,"t_ns":100,"cpu_frame_ns":16666667,"counters":{"gpu_util_pct":50.0,"ram_used_bytes":1073741824,"gpu_temp_c":null,"cpu0_mhz":1000,"cpu1_mhz":2000,"cpu_mhz":9}}"#,
        )
        .unwrap();
        m.frame(&f).unwrap();
        let text = String::from_utf8(m.out.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], SYSTEM_COLUMNS);
        assert_eq!(lines[1], ",,GPU  fast,,,Mesa 24,");
        assert_eq!(lines[2], COLUMNS);
        assert_eq!(lines[3], "60,16.6667,0,0,50,0,0,0,0,0,0,1,0,0,1500,0");
        assert_eq!(lines[3].split(',').count(), COLUMNS.split(',').count());
    }
}
