//! Finding the Intel GPU and checking OA access, all through sysfs/procfs reads:
//!
//! * the render node: `/dev/dri/renderD*` whose `/sys/class/drm/renderD*/device/driver` link
//!   ends in `i915` or `xe`;
//! * the metric set: `<card>/metrics/<uuid>/id` (i915 and Xe both publish the sets loaded
//!   into the kernel there; Mesa's `enumerate_sysfs_metrics` reads the same files);
//! * privilege: system-wide OA on Gen8+ needs `perf_stream_paranoid` (i915) or
//!   `observation_paranoid` (Xe) at 0, or `CAP_PERFMON` / `CAP_SYS_ADMIN`
//!   (vendor-counter-backends §3.1, §3.3, pitfall 9).

use crate::seam::Fs;
use crate::source::GpuHint;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

const DRM_SYSFS: &str = "/sys/class/drm";
const DEV_DRI: &str = "/dev/dri";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    I915,
    Xe,
}

impl Driver {
    pub fn name(self) -> &'static str {
        match self {
            Driver::I915 => "i915",
            Driver::Xe => "xe",
        }
    }

    /// The sysctl that gates unprivileged system-wide OA.
    pub fn paranoid_path(self) -> &'static str {
        match self {
            Driver::I915 => "/proc/sys/dev/i915/perf_stream_paranoid",
            Driver::Xe => "/proc/sys/dev/xe/observation_paranoid",
        }
    }

    /// What to tell a user who lacks the privilege.
    pub fn privilege_fix(self) -> &'static str {
        match self {
            Driver::I915 => "sysctl dev.i915.perf_stream_paranoid=0, or run with CAP_PERFMON",
            Driver::Xe => "sysctl dev.xe.observation_paranoid=0, or run with CAP_PERFMON",
        }
    }
}

/// An Intel render node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    pub driver: Driver,
    /// `/dev/dri/renderD128`.
    pub node: PathBuf,
    /// `renderD128`.
    pub name: String,
    /// PCI address from the `device` link, when it has one.
    pub pci: Option<String>,
}

fn last_component(p: &Path) -> Option<String> {
    p.file_name().and_then(|n| n.to_str()).map(str::to_owned)
}

/// The render node of the Intel GPU `hint` names, or the first one when the hint names no
/// PCI address. `None`: no i915/xe render node (or the app renders on another GPU).
pub fn find_device(fs: &mut dyn Fs, hint: &GpuHint) -> Option<Device> {
    let mut names: Vec<OsString> = Vec::new();
    fs.list_dir(Path::new(DRM_SYSFS), &mut names).ok()?;
    let want_pci = crate::sources::kernel_text::hint_pci(hint);
    for n in &names {
        let Some(name) = n.to_str() else { continue };
        if !name.starts_with("renderD") {
            continue;
        }
        let base = Path::new(DRM_SYSFS).join(name);
        let Ok(driver) = fs.read_link(&base.join("device/driver")) else {
            continue;
        };
        let driver = match last_component(&driver).as_deref() {
            Some("i915") => Driver::I915,
            Some("xe") => Driver::Xe,
            _ => continue,
        };
        let pci = fs.read_link(&base.join("device")).ok().and_then(|p| last_component(&p));
        if let Some(want) = &want_pci {
            if pci.as_deref() != Some(want.as_str()) {
                continue;
            }
        }
        return Some(Device {
            driver,
            node: Path::new(DEV_DRI).join(name),
            name: name.to_string(),
            pci,
        });
    }
    None
}

/// A metric set published in sysfs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricSet {
    pub uuid: String,
    pub id: u64,
    /// Where it came from, for the source's note.
    pub name: Option<&'static str>,
}

/// `RenderBasic` sets by the `hw_config_guid` Mesa's `oa-*.xml` gives them (the kernel
/// names sets only by UUID). The sets of other platforms are not listed; for them the first
/// published set is taken.
pub const RENDER_BASIC_UUIDS: &[(&str, &str)] = &[
    ("c17af13d-3953-432b-9bd1-81346b4c2092", "RenderBasic (TGL GT1)"),
    ("f5b8f05e-c84c-4f1c-bb05-68fbea73879b", "RenderBasic (ACM GT1)"),
];

/// The metric set to sample: a known `RenderBasic` set if the kernel has one loaded, else
/// the first (by UUID order) whose `id` file holds a number.
pub fn pick_metric_set(fs: &mut dyn Fs, device: &Device) -> Option<MetricSet> {
    let drm = Path::new(DRM_SYSFS).join(&device.name).join("device/drm");
    let mut cards: Vec<OsString> = Vec::new();
    fs.list_dir(&drm, &mut cards).ok()?;
    let mut buf = Vec::new();
    let mut uuids: Vec<OsString> = Vec::new();
    let mut found: Vec<MetricSet> = Vec::new();
    for card in cards
        .iter()
        .filter_map(|c| c.to_str())
        .filter(|c| c.starts_with("card"))
    {
        let metrics = drm.join(card).join("metrics");
        if fs.list_dir(&metrics, &mut uuids).is_err() {
            continue;
        }
        for uuid in uuids.iter().filter_map(|u| u.to_str()) {
            if fs.read(&metrics.join(uuid).join("id"), &mut buf).is_err() {
                continue;
            }
            let Some(id) = crate::sources::kernel_text::parse_u64(&buf) else {
                continue;
            };
            let name = RENDER_BASIC_UUIDS
                .iter()
                .find(|(u, _)| u.eq_ignore_ascii_case(uuid))
                .map(|(_, n)| *n);
            found.push(MetricSet {
                uuid: uuid.to_string(),
                id,
                name,
            });
        }
        if !found.is_empty() {
            break;
        }
    }
    let i = found.iter().position(|m| m.name.is_some()).unwrap_or(0);
    (!found.is_empty()).then(|| found.swap_remove(i))
}

/// `CAP_PERFMON` and `CAP_SYS_ADMIN` (`linux/capability.h`).
pub const CAP_PERFMON: u32 = 38;
pub const CAP_SYS_ADMIN: u32 = 21;

/// The `CapEff:` mask of a `/proc/<pid>/status` text.
pub fn parse_cap_eff(status: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(status).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

/// Whether this process may open a system-wide OA stream on `driver`: `Err` carries the
/// reason and the fix. An unreadable sysctl counts as paranoid (the kernel default, 1).
pub fn check_privilege(fs: &mut dyn Fs, driver: Driver) -> Result<(), String> {
    let mut buf = Vec::new();
    let paranoid = fs
        .read(Path::new(driver.paranoid_path()), &mut buf)
        .ok()
        .and_then(|_| crate::sources::kernel_text::parse_u64(&buf))
        .unwrap_or(1);
    if paranoid == 0 {
        return Ok(());
    }
    let caps = fs
        .read(Path::new("/proc/self/status"), &mut buf)
        .ok()
        .and_then(|_| parse_cap_eff(&buf))
        .unwrap_or(0);
    if caps >> CAP_PERFMON & 1 == 1 || caps >> CAP_SYS_ADMIN & 1 == 1 {
        return Ok(());
    }
    Err(format!(
        "system-wide {} OA counters are privileged ({} is {paranoid}): {}",
        driver.name(),
        driver.paranoid_path(),
        driver.privilege_fix()
    ))
}
