//! `hwmon`: GPU temperature, power, fan and clock from the GPU driver's hwmon chip, and the
//! CPU package temperature, from `/sys/class/hwmon/hwmon*/`. The catalogue holds only the
//! sensors that exist when the source is built.

use super::kernel_text::{clear, hint_pci, lines, pci_address, read_u64};
use crate::seam::{BoxFs, RealFs};
use crate::source::{CounterScope, CounterSource, GpuHint, ReadError, SourceCounter, StartError};
use framescope_core::counters::CounterWindow;
use std::path::{Path, PathBuf};

const HWMON: &str = "/sys/class/hwmon";
const GPU_CHIPS: &[&str] = &["amdgpu", "nouveau", "i915", "xe"];
const CPU_CHIPS: &[&str] = &["coretemp", "k10temp", "zenpower"];

/// How a file's integer becomes the counter's value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Conv {
    /// Multiply (m°C → °C, µW → W, Hz → MHz, rpm as is).
    Scale(f64),
    /// `energy1_input` in µJ, turned into W between two reads (i915 has no power file).
    EnergyUj,
}

#[derive(Debug)]
struct Sensor {
    path: PathBuf,
    conv: Conv,
}

pub struct HwmonSource {
    fs: BoxFs,
    catalogue: Vec<SourceCounter>,
    sensors: Vec<Sensor>,
    /// Why nothing was found, for `start`.
    missing: Option<String>,
    gpu_chip: Option<String>,
    choice_note: Option<String>,
    prev_energy: Option<(u64, u64)>,
    buf: Vec<u8>,
}

impl HwmonSource {
    pub fn new(hint: GpuHint) -> Self {
        Self::with_fs(Box::new(RealFs), hint)
    }

    /// Scans the hwmon chips through `fs` and fixes the catalogue from what exists.
    pub fn with_fs(mut fs: BoxFs, hint: GpuHint) -> Self {
        let mut buf = Vec::new();
        let mut names = Vec::new();
        let mut chips: Vec<(u32, PathBuf, String)> = Vec::new();
        if fs.list_dir(Path::new(HWMON), &mut names).is_ok() {
            for n in &names {
                let Some(k) = n
                    .to_str()
                    .and_then(|s| s.strip_prefix("hwmon"))
                    .and_then(|s| s.parse().ok())
                else {
                    continue;
                };
                let dir = Path::new(HWMON).join(n);
                if fs.read(&dir.join("name"), &mut buf).is_ok() {
                    let name =
                        String::from_utf8_lossy(lines(&buf).next().unwrap_or_default().trim_ascii()).into_owned();
                    chips.push((k, dir, name));
                }
            }
        }
        chips.sort_by_key(|c| c.0);

        let mut s = HwmonSource {
            fs,
            catalogue: Vec::new(),
            sensors: Vec::new(),
            missing: None,
            gpu_chip: None,
            choice_note: None,
            prev_energy: None,
            buf,
        };

        let gpus: Vec<&(u32, PathBuf, String)> = chips.iter().filter(|c| GPU_CHIPS.contains(&c.2.as_str())).collect();
        let gpu = match hint_pci(&hint) {
            // Another GPU's sensors would be wrong for this app, so no match means none.
            Some(want) => gpus
                .iter()
                .find(|c| pci_address(&mut *s.fs, &c.1, &mut s.buf).as_deref() == Some(want.as_str()))
                .copied(),
            None => {
                if gpus.len() > 1 {
                    s.choice_note = Some(format!(
                        "{} GPU hwmon chips and no PCI address of the app's GPU; reading {} ({})",
                        gpus.len(),
                        gpus[0].1.display(),
                        gpus[0].2
                    ));
                }
                gpus.first().copied()
            }
        };
        if let Some((_, dir, name)) = gpu {
            s.gpu_chip = Some(format!("{} ({name})", dir.display()));
            s.add(dir, "temp1_input", "gpu_temp_c", "C", Conv::Scale(1e-3));
            let _ = s.add(dir, "power1_average", "gpu_power_w", "W", Conv::Scale(1e-6))
                || s.add(dir, "power1_input", "gpu_power_w", "W", Conv::Scale(1e-6))
                || s.add(dir, "energy1_input", "gpu_power_w", "W", Conv::EnergyUj);
            s.add(dir, "fan1_input", "gpu_fan_rpm", "rpm", Conv::Scale(1.0));
            s.add(dir, "freq1_input", "gpu_clock_mhz", "MHz", Conv::Scale(1e-6));
        }
        for (_, dir, _) in chips.iter().filter(|c| CPU_CHIPS.contains(&c.2.as_str())) {
            if s.add(dir, "temp1_input", "cpu_temp_c", "C", Conv::Scale(1e-3)) {
                break;
            }
        }
        if s.sensors.is_empty() {
            let seen: Vec<&str> = chips.iter().map(|c| c.2.as_str()).collect();
            s.missing = Some(format!(
                "no GPU or CPU sensor under {HWMON}/hwmon*/ (chips looked for: {}, {}; found: {})",
                GPU_CHIPS.join(", "),
                CPU_CHIPS.join(", "),
                if seen.is_empty() {
                    "none".to_string()
                } else {
                    seen.join(", ")
                }
            ));
        }
        s
    }

    /// Adds a counter if `dir/file` reads as an integer now; true if it did.
    fn add(&mut self, dir: &Path, file: &str, name: &str, unit: &str, conv: Conv) -> bool {
        let path = dir.join(file);
        if read_u64(&mut *self.fs, &path, &mut self.buf).is_none() {
            return false;
        }
        let scope = if name.starts_with("cpu") {
            CounterScope::System
        } else {
            CounterScope::Device
        };
        self.catalogue.push(SourceCounter::new(name, unit, scope));
        self.sensors.push(Sensor { path, conv });
        true
    }

    /// `/sys/class/hwmon/hwmonK (name)` of the GPU chip read, if any.
    pub fn gpu_chip(&self) -> Option<&str> {
        self.gpu_chip.as_deref()
    }

    /// Set when several GPU chips were found and the hint did not pick one.
    pub fn choice_note(&self) -> Option<&str> {
        self.choice_note.as_deref()
    }
}

impl CounterSource for HwmonSource {
    fn id(&self) -> &'static str {
        "hwmon"
    }

    fn catalogue(&self) -> &[SourceCounter] {
        &self.catalogue
    }

    fn start(&mut self) -> Result<(), StartError> {
        match &self.missing {
            Some(why) => Err(StartError::Unavailable(why.clone())),
            None => Ok(()),
        }
    }

    fn read(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
        if out.len() < self.catalogue.len() {
            return Err(ReadError::Lost("output shorter than the catalogue".into()));
        }
        clear(out);
        let mut begin = now_ns;
        let mut any = false;
        for (o, s) in out.iter_mut().zip(&self.sensors) {
            let v = read_u64(&mut *self.fs, &s.path, &mut self.buf);
            any |= v.is_some();
            *o = match (s.conv, v) {
                (Conv::Scale(k), Some(v)) => v as f64 * k,
                (Conv::EnergyUj, Some(uj)) => {
                    let prev = self.prev_energy.replace((uj, now_ns));
                    match prev {
                        Some((pu, pn)) if now_ns > pn && uj >= pu => {
                            begin = pn;
                            // µJ per ns is kW; ×1e3 gives W.
                            (uj - pu) as f64 * 1e3 / (now_ns - pn) as f64
                        }
                        _ => f64::NAN,
                    }
                }
                (Conv::EnergyUj, None) => {
                    self.prev_energy = None;
                    f64::NAN
                }
                (Conv::Scale(_), None) => f64::NAN,
            };
        }
        if !any && !self.sensors.is_empty() {
            return Err(ReadError::Lost("no hwmon sensor readable".into()));
        }
        Ok(CounterWindow {
            begin_ns: begin,
            end_ns: now_ns,
        })
    }
}
