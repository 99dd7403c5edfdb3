//! Which NVML device a source reads: the one the app renders on, from the GPU hint (PCI
//! address, then name), and how NVML start failures read.

use super::api::{Device, NvmlApi, NvmlError, PciInfo};
use crate::source::{GpuHint, StartError};

/// The device a source reads, as [`pick_device`] chose it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickedDevice {
    pub handle: Device,
    pub index: u32,
    pub name: String,
    pub pci: Option<PciInfo>,
    /// Set when the choice was a guess (several GPUs and no hint that settles it).
    pub note: Option<String>,
}

fn describe(d: &Candidate) -> String {
    match d.pci {
        Some(p) => format!(
            "index {} ({}, PCI {:04x}:{:02x}:{:02x})",
            d.index, d.name, p.domain, p.bus, p.device
        ),
        None => format!("index {} ({})", d.index, d.name),
    }
}

struct Candidate {
    handle: Device,
    index: u32,
    name: String,
    pci: Option<PciInfo>,
}

impl Candidate {
    fn pick(self, note: Option<String>) -> PickedDevice {
        PickedDevice {
            handle: self.handle,
            index: self.index,
            name: self.name,
            pci: self.pci,
            note,
        }
    }
}

/// The part of a GL renderer string that names the GPU: NVIDIA's GL driver appends the bus and
/// CPU extension ("NVIDIA H100 80GB HBM3/PCIe/SSE2"), NVML names the part alone.
fn renderer_head(renderer: &str) -> &str {
    renderer.split('/').next().unwrap_or("").trim()
}

/// Lower case without a leading "nvidia ": NVML names from before 2021 ("GeForce GTX 1080")
/// lack the vendor that newer ones and some GL strings carry.
fn bare(name: &str) -> String {
    let l = name.trim().to_ascii_lowercase();
    l.strip_prefix("nvidia ").map(str::to_string).unwrap_or(l)
}

/// Picks the device the app renders on among those NVML lists.
///
/// * [`GpuHint::Pci`]: the device at that domain/bus/device (NVML has no PCI function; NVIDIA
///   GPUs are function 0), none if it is not an NVIDIA GPU (a laptop rendering on its iGPU).
/// * [`GpuHint::Name`]: the device whose NVML name is the renderer's head, else one the renderer
///   starts with; identical names (8 × H100) cannot be told apart, so the first is taken and the
///   note says so.
/// * [`GpuHint::Unknown`]: the only device, or index 0 with a note.
pub fn pick_device(api: &dyn NvmlApi, hint: &GpuHint) -> Result<PickedDevice, StartError> {
    let count = api
        .device_count()
        .map_err(|e| start_error("nvmlDeviceGetCount_v2", e))?;
    let mut devices = Vec::new();
    let mut skipped = Vec::new();
    let mut any_lost = false;
    for index in 0..count {
        // A device this process may not open (cgroup, lost) is left out, not fatal: the app may
        // render on another one.
        match api.device_by_index(index) {
            Ok(handle) => devices.push(Candidate {
                handle,
                index,
                name: api.name(handle).unwrap_or_default(),
                pci: api.pci_info(handle).ok(),
            }),
            Err(e) => {
                any_lost |= e.is_lost();
                skipped.push(format!("index {index}: {e}"));
            }
        }
    }
    if devices.is_empty() {
        if count == 0 {
            return Err(StartError::Unavailable("NVML lists no NVIDIA GPU".into()));
        }
        let why = format!("no NVIDIA GPU could be opened ({})", skipped.join(", "));
        // A GPU that fell off the bus may come back after a reset; a refusal will not.
        return Err(if any_lost {
            StartError::Retry(why)
        } else {
            StartError::Unavailable(why)
        });
    }
    let n = devices.len();
    match hint {
        GpuHint::Pci {
            domain,
            bus,
            device,
            function,
        } => {
            let want = PciInfo {
                domain: *domain,
                bus: *bus,
                device: *device,
                ids: 0,
            };
            match devices
                .into_iter()
                .find(|d| d.pci.is_some_and(|p| p.same_address(&want)))
            {
                Some(d) => Ok(d.pick(None)),
                None => Err(StartError::Unavailable(format!(
                    "the app renders on PCI {domain:04x}:{bus:02x}:{device:02x}.{function}, \
                     which is none of the {n} NVIDIA GPU(s) NVML lists"
                ))),
            }
        }
        GpuHint::Name(renderer) => {
            let head = bare(renderer_head(renderer));
            let full = bare(renderer);
            let exact: Vec<usize> = (0..n)
                .filter(|&i| !devices[i].name.is_empty() && bare(&devices[i].name) == head)
                .collect();
            let matching = if exact.is_empty() {
                (0..n)
                    .filter(|&i| !devices[i].name.is_empty() && full.starts_with(&bare(&devices[i].name)))
                    .collect()
            } else {
                exact
            };
            if let Some(&first) = matching.first() {
                let note = (matching.len() > 1).then(|| {
                    format!(
                        "{} NVIDIA GPUs are named \"{}\" and GL gives no PCI address: reading {}",
                        matching.len(),
                        devices[first].name,
                        describe(&devices[first])
                    )
                });
                return Ok(devices.swap_remove(first).pick(note));
            }
            let l = renderer.to_ascii_lowercase();
            if !["nvidia", "geforce", "quadro", "tesla"].iter().any(|v| l.contains(v)) {
                return Err(StartError::Unavailable(format!(
                    "the app renders on \"{renderer}\", not an NVIDIA GPU"
                )));
            }
            let d = devices.swap_remove(0);
            let note = format!(
                "GL renderer \"{renderer}\" matches no NVML device name: reading {}",
                describe(&d)
            );
            Ok(d.pick(Some(note)))
        }
        GpuHint::Unknown => {
            let note = (n > 1).then(|| {
                format!(
                    "{n} NVIDIA GPUs and no hint of which one the app renders on: reading {}",
                    describe(&devices[0])
                )
            });
            Ok(devices.swap_remove(0).pick(note))
        }
    }
}

/// A start-time NVML failure as a [`StartError`]: permanent conditions are `Unavailable`
/// (never retried), anything else may pass and is `Retry`.
pub(crate) fn start_error(call: &str, e: NvmlError) -> StartError {
    match e {
        NvmlError::DriverNotLoaded => {
            StartError::Unavailable(format!("{call}: {e}: the NVIDIA kernel driver is not loaded"))
        }
        NvmlError::LibRmVersionMismatch => StartError::Unavailable(format!(
            "{call}: {e}: libnvidia-ml and the kernel module are different versions (driver updated without a reboot?)"
        )),
        NvmlError::NoPermission | NvmlError::NotSupported | NvmlError::FunctionNotFound => {
            StartError::Unavailable(format!("{call}: {e}"))
        }
        _ => StartError::Retry(format!("{call}: {e}")),
    }
}
