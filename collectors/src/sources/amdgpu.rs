//! `amdgpu`: GPU busy %, VRAM, and the temperature, power, clocks and fan of the binary
//! `gpu_metrics` file, from `/sys/class/drm/cardN/device/` of the amdgpu device the app
//! renders on. No root needed.

use super::gpu_metrics::{self, GpuMetrics};
use super::kernel_text::{clear, hint_pci, parse_hex, pci_address, read_u64};
use crate::seam::{BoxFs, RealFs};
use crate::source::{CounterScope, CounterSource, GpuHint, ReadError, SourceCounter, StartError};
use framescope_core::counters::CounterWindow;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

const DRM: &str = "/sys/class/drm";
const AMD_VENDOR: u64 = 0x1002;

const UTIL: usize = 0;
const VRAM_USED: usize = 1;
const VRAM_TOTAL: usize = 2;
const TEMP: usize = 3;
const POWER: usize = 4;
const CLOCK: usize = 5;
const MEM_CLOCK: usize = 6;
const FAN: usize = 7;

/// The chosen device's files, built once at start.
#[derive(Debug)]
struct Device {
    busy: PathBuf,
    vram_used: PathBuf,
    vram_total: PathBuf,
    metrics: PathBuf,
}

pub struct AmdgpuSource {
    fs: BoxFs,
    hint: GpuHint,
    catalogue: Vec<SourceCounter>,
    dev: Option<Device>,
    /// `cardN (PCI address)` of the device read.
    chosen: Option<String>,
    choice_note: Option<String>,
    /// The first reason `gpu_metrics` gave no values; kept, never repeated.
    metrics_problem: Option<String>,
    buf: Vec<u8>,
    names: Vec<OsString>,
}

impl AmdgpuSource {
    pub fn new(hint: GpuHint) -> Self {
        Self::with_fs(Box::new(RealFs), hint)
    }

    pub fn with_fs(fs: BoxFs, hint: GpuHint) -> Self {
        let d = CounterScope::Device;
        AmdgpuSource {
            fs,
            hint,
            catalogue: vec![
                SourceCounter::new("gpu_util_pct", "%", d),
                SourceCounter::new("vram_used_bytes", "bytes", d),
                SourceCounter::new("vram_total_bytes", "bytes", d),
                SourceCounter::new("gpu_temp_c", "C", d),
                SourceCounter::new("gpu_power_w", "W", d),
                SourceCounter::new("gpu_clock_mhz", "MHz", d),
                SourceCounter::new("gpu_mem_clock_mhz", "MHz", d),
                SourceCounter::new("gpu_fan_rpm", "rpm", d),
            ],
            dev: None,
            chosen: None,
            choice_note: None,
            metrics_problem: None,
            buf: Vec::new(),
            names: Vec::new(),
        }
    }

    /// `cardN (dddd:bb:dd.f)` of the device read, once started.
    pub fn device(&self) -> Option<&str> {
        self.chosen.as_deref()
    }

    /// Set when several amdgpu devices were found and the hint did not pick one.
    pub fn choice_note(&self) -> Option<&str> {
        self.choice_note.as_deref()
    }

    /// Why `gpu_metrics` gave no values (unknown revision, truncated file), recorded the
    /// first time only so a broken file does not flood the log on every read.
    pub fn metrics_problem(&self) -> Option<&str> {
        self.metrics_problem.as_deref()
    }

    /// `(card name, PCI address)` of every amdgpu card, in card order.
    fn scan(&mut self) -> Vec<(String, Option<String>)> {
        let mut found = Vec::new();
        if self.fs.list_dir(Path::new(DRM), &mut self.names).is_err() {
            return found;
        }
        let mut cards: Vec<(u32, String)> = self
            .names
            .iter()
            .filter_map(|n| {
                let n = n.to_str()?;
                let num = n.strip_prefix("card")?;
                // `card0-DP-1` and the like are connectors, not devices.
                (!num.is_empty() && num.bytes().all(|c| c.is_ascii_digit()))
                    .then(|| Some((num.parse().ok()?, n.to_string())))?
            })
            .collect();
        cards.sort();
        for (_, card) in cards {
            let dir = Path::new(DRM).join(&card);
            let vendor = self
                .fs
                .read(&dir.join("device/vendor"), &mut self.buf)
                .ok()
                .and_then(|_| parse_hex(&self.buf));
            if vendor == Some(AMD_VENDOR) {
                let pci = pci_address(&mut *self.fs, &dir, &mut self.buf);
                found.push((card, pci));
            }
        }
        found
    }
}

fn describe(card: &str, pci: &Option<String>) -> String {
    match pci {
        Some(p) => format!("{card} ({p})"),
        None => card.to_string(),
    }
}

impl CounterSource for AmdgpuSource {
    fn id(&self) -> &'static str {
        "amdgpu"
    }

    fn catalogue(&self) -> &[SourceCounter] {
        &self.catalogue
    }

    fn start(&mut self) -> Result<(), StartError> {
        self.dev = None;
        let found = self.scan();
        if found.is_empty() {
            return Err(StartError::Unavailable(
                "no amdgpu device (/sys/class/drm/card*/device/vendor 0x1002)".into(),
            ));
        }
        let pick = match hint_pci(&self.hint) {
            Some(want) => match found.iter().find(|(_, p)| p.as_deref() == Some(want.as_str())) {
                Some(f) => f.clone(),
                None => {
                    let list: Vec<String> = found.iter().map(|(c, p)| describe(c, p)).collect();
                    return Err(StartError::Unavailable(format!(
                        "the app renders on {want}, which is not an amdgpu device (amdgpu: {})",
                        list.join(", ")
                    )));
                }
            },
            None => {
                // A GL renderer name cannot be matched to a card without the PCI ID
                // database, so a name hint counts as no hint.
                let f = found[0].clone();
                if found.len() > 1 {
                    self.choice_note = Some(format!(
                        "{} amdgpu devices and no PCI address of the app's GPU; reading {}",
                        found.len(),
                        describe(&f.0, &f.1)
                    ));
                }
                f
            }
        };
        let dir = Path::new(DRM).join(&pick.0).join("device");
        self.chosen = Some(describe(&pick.0, &pick.1));
        self.dev = Some(Device {
            busy: dir.join("gpu_busy_percent"),
            vram_used: dir.join("mem_info_vram_used"),
            vram_total: dir.join("mem_info_vram_total"),
            metrics: dir.join("gpu_metrics"),
        });
        Ok(())
    }

    fn read(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
        let Some(dev) = &self.dev else {
            return Err(ReadError::Lost("not started".into()));
        };
        if out.len() < self.catalogue.len() {
            return Err(ReadError::Lost("output shorter than the catalogue".into()));
        }
        clear(out);
        let fs = &mut *self.fs;
        let busy = read_u64(fs, &dev.busy, &mut self.buf);
        let used = read_u64(fs, &dev.vram_used, &mut self.buf);
        let total = read_u64(fs, &dev.vram_total, &mut self.buf);
        out[UTIL] = busy.map_or(f64::NAN, |v| v as f64);
        out[VRAM_USED] = used.map_or(f64::NAN, |v| v as f64);
        out[VRAM_TOTAL] = total.map_or(f64::NAN, |v| v as f64);

        // The reason is formatted only the first time, so a broken file costs no allocation
        // on every later read.
        let m = match fs.read(&dev.metrics, &mut self.buf) {
            Ok(()) => gpu_metrics::parse(&self.buf).map_err(|e| {
                if self.metrics_problem.is_none() {
                    self.metrics_problem = Some(e.to_string());
                }
            }),
            Err(e) => {
                if self.metrics_problem.is_none() {
                    self.metrics_problem = Some(format!("{}: {e}", dev.metrics.display()));
                }
                Err(())
            }
        };
        let metrics_ok = m.is_ok();
        let m = m.unwrap_or(GpuMetrics::NONE);
        out[TEMP] = m.temp_c;
        out[POWER] = m.power_w;
        out[CLOCK] = m.gfx_clock_mhz;
        out[MEM_CLOCK] = m.mem_clock_mhz;
        out[FAN] = m.fan_rpm;

        if busy.is_none() && used.is_none() && total.is_none() && !metrics_ok {
            let which = self.chosen.as_deref().unwrap_or("device");
            return Err(ReadError::Lost(format!("amdgpu {which}: no file readable")));
        }
        Ok(CounterWindow {
            begin_ns: now_ns,
            end_ns: now_ns,
        })
    }
}
