//! `framescope doctor [--json]`: why framescope would or would not show up here, each failure
//! with its fix: the Vulkan loader's view of framescope's implicit manifest (and of the other
//! implicit layers, MangoHud first), the environment that enables or disables it, the GL
//! shim, the GPUs the loader sees, each counter source (the collector's own answer, with its
//! reason), and whether dumps can be written. Exit status 1 when a check failed.

use crate::display_server::Answer;
use crate::locate;
use crate::text::show;
use std::path::{Path, PathBuf};

pub const ABOUT: &str = "\
Checks what framescope needs on this machine and prints one line per check, with the fix for
each failure: the Vulkan layer's manifest as the loader finds it (and the other implicit layers,
MangoHud first), the environment that enables or disables it, the GL shim's library, the
session's window systems (whether the Wayland compositor and X server named by WAYLAND_DISPLAY
and DISPLAY answer within 1 s, what apps will use there, whether the toggle keys and display
times work for them), the GPUs the Vulkan loader sees, every counter source (NVML, GPM, PM sampling, amdgpu, Intel OA, Mali,
sensors) with the reason one is unavailable, and whether the dump's directory is writable.

Exit status: 0 when nothing failed (warnings allowed), 1 otherwise.";

pub const EXAMPLES: &str = "\
examples:
  framescope doctor
  framescope doctor --json | jq '.[] | select(.status == \"fail\")'";

// `doctor`'s options (a plain comment: a doc comment would become clap's about text).
#[derive(clap::Args, Debug)]
#[command(args_override_self = true)]
pub struct Args {
    /// one JSON array of checks instead of the text
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// Works, with a limit worth knowing.
    Warn,
    Fail,
    /// Informational.
    Info,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Info => "info",
        }
    }
}

#[derive(Debug)]
pub struct Check {
    pub what: String,
    pub status: Status,
    pub detail: String,
    /// What to do about it (failures and warnings).
    pub fix: Option<String>,
}

fn check(what: &str, status: Status, detail: impl Into<String>, fix: Option<String>) -> Check {
    Check {
        what: what.into(),
        status,
        detail: detail.into(),
        fix,
    }
}

/// The directories the Vulkan loader reads implicit layer manifests from, in its order
/// (the loader's documentation, "Linux Layer Discovery"), with `VK_ADD_IMPLICIT_LAYER_PATH`'s
/// first.
pub fn implicit_dirs(env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(p) = env("VK_ADD_IMPLICIT_LAYER_PATH") {
        dirs.extend(p.split(':').filter(|s| !s.is_empty()).map(PathBuf::from));
    }
    let home = env("HOME").map(PathBuf::from);
    let config_home = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    let data_home = env("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".local/share")));
    let config_dirs = env("XDG_CONFIG_DIRS").unwrap_or_else(|| "/etc/xdg".into());
    let data_dirs = env("XDG_DATA_DIRS").unwrap_or_else(|| "/usr/local/share:/usr/share".into());
    let sub = "vulkan/implicit_layer.d";
    dirs.extend(config_home.map(|d| d.join(sub)));
    dirs.extend(
        config_dirs
            .split(':')
            .filter(|s| !s.is_empty())
            .map(|d| Path::new(d).join(sub)),
    );
    dirs.push(Path::new("/etc").join(sub));
    dirs.extend(data_home.map(|d| d.join(sub)));
    dirs.extend(
        data_dirs
            .split(':')
            .filter(|s| !s.is_empty())
            .map(|d| Path::new(d).join(sub)),
    );
    dirs
}

/// An implicit layer's manifest: its file, layer name, library, and enabling variable.
#[derive(Debug)]
pub struct Manifest {
    pub file: PathBuf,
    pub name: String,
    pub library: String,
    pub enable_env: Option<String>,
}

/// Every implicit manifest in `dirs` that parses (at most 256 files, each at most 64 KiB).
pub fn manifests(dirs: &[PathBuf]) -> Vec<Manifest> {
    let mut out = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(d) else { continue };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        for f in files.into_iter().take(256) {
            if std::fs::metadata(&f).map_or(true, |m| !m.is_file() || m.len() > 64 << 10) {
                continue;
            }
            let Ok(v) = std::fs::read(&f).map(|b| serde_json::from_slice::<serde_json::Value>(&b)) else {
                continue;
            };
            let Ok(v) = v else { continue };
            let layer = &v["layer"];
            let Some(name) = layer["name"].as_str() else { continue };
            out.push(Manifest {
                file: f.clone(),
                name: name.into(),
                library: layer["library_path"].as_str().unwrap_or("").into(),
                enable_env: layer["enable_environment"]
                    .as_object()
                    .and_then(|o| o.keys().next().cloned()),
            });
        }
    }
    out
}

/// The layer checks from the manifests found and the environment.
pub fn layer_checks(found: &[Manifest], env: &dyn Fn(&str) -> Option<String>) -> Vec<Check> {
    let mut out = Vec::new();
    let ours = found.iter().find(|m| m.name == "VK_LAYER_FRAMESCOPE_overlay");
    match ours {
        Some(m) => {
            // `$LIB` is ld.so's: the 64-bit library for this (64-bit) process, the 32-bit one
            // for 32-bit apps, which is optional.
            let dirs = crate::locate::LibDirs::here();
            let expand = |d: &str| {
                let lib = Path::new(&m.library.replace("$LIB", d)).to_path_buf();
                if lib.is_relative() {
                    m.file.parent().unwrap_or(Path::new("/")).join(lib)
                } else {
                    lib
                }
            };
            let lib = expand(&dirs.lib64);
            let lib32 = dirs
                .lib32
                .as_deref()
                .filter(|_| m.library.contains("$LIB"))
                .map(expand)
                .filter(|p| p.is_file());
            if lib.is_file() {
                let also = lib32.map_or(String::new(), |p| format!(" (32-bit: {})", show(p.as_os_str())));
                out.push(check(
                    "vulkan manifest",
                    Status::Ok,
                    format!("{} -> {}{also}", show(m.file.as_os_str()), show(lib.as_os_str())),
                    None,
                ));
            } else {
                out.push(check(
                    "vulkan manifest",
                    Status::Fail,
                    format!(
                        "{} names {}, which is not there",
                        show(m.file.as_os_str()),
                        show(lib.as_os_str())
                    ),
                    Some("run `framescope install` again".into()),
                ));
            }
        }
        None => out.push(check(
            "vulkan manifest",
            Status::Fail,
            "the Vulkan loader finds no VK_LAYER_FRAMESCOPE_overlay manifest in its implicit layer directories",
            Some(
                "run `framescope install` (or start apps with `framescope run -- APP`, which needs no install)".into(),
            ),
        )),
    }
    // Other implicit layers, MangoHud first: their work counts as the app's.
    let mut others: Vec<&Manifest> = found
        .iter()
        .filter(|m| m.name != "VK_LAYER_FRAMESCOPE_overlay")
        .collect();
    others.sort_by_key(|m| !m.name.to_ascii_lowercase().contains("mangohud"));
    if !others.is_empty() {
        let list: Vec<String> = others
            .iter()
            .map(|m| {
                let on = m.enable_env.as_ref().map_or("always on".to_string(), |e| {
                    if env(e).is_some() {
                        format!("on ({e} is set)")
                    } else {
                        format!("off unless {e} is set")
                    }
                });
                format!("{} ({on})", m.name)
            })
            .collect();
        out.push(check("other implicit layers", Status::Info, list.join(", "), None));
    }
    let disabled = env("DISABLE_FRAMESCOPE").is_some_and(|v| v == "1");
    let enabled = env("FRAMESCOPE").is_some_and(|v| v == "1")
        || env("VK_INSTANCE_LAYERS").is_some_and(|l| l.split(':').any(|n| n == "VK_LAYER_FRAMESCOPE_overlay"));
    out.push(if disabled {
        check(
            "environment",
            Status::Warn,
            "DISABLE_FRAMESCOPE=1 is set: the layer stays out of every Vulkan app",
            Some("unset DISABLE_FRAMESCOPE".into()),
        )
    } else if enabled {
        check(
            "environment",
            Status::Ok,
            "FRAMESCOPE=1 or VK_INSTANCE_LAYERS names the layer: Vulkan apps load it",
            None,
        )
    } else {
        check(
            "environment",
            Status::Info,
            "the installed layer loads into apps started with FRAMESCOPE=1 (or under `framescope run`)",
            None,
        )
    });
    out
}

/// The GL shim's library, and whether this environment preloads it.
fn gl_check(env: &dyn Fn(&str) -> Option<String>) -> Check {
    let preloaded = env("LD_PRELOAD").is_some_and(|p| p.contains("libframescope_gl.so"));
    match locate::find_library("libframescope_gl.so") {
        Ok(p) => check(
            "gl shim",
            Status::Ok,
            format!(
                "{}{}",
                show(p.as_os_str()),
                if preloaded {
                    "; preloaded in this environment"
                } else {
                    "; GL apps get it under `framescope run` (it sets LD_PRELOAD)"
                }
            ),
            None,
        ),
        Err(e) => check(
            "gl shim",
            Status::Warn,
            e,
            Some("build it (`cargo build --release -p framescope-gl`) or set FRAMESCOPE_LIB_DIR".into()),
        ),
    }
}

/// The GPUs the Vulkan loader sees (framescope's and every other implicit layer left out).
fn vulkan_devices() -> Check {
    // SAFETY: loading the system's Vulkan loader; its entry points are then called as the
    // Vulkan specification says, from this thread only.
    let entry = match unsafe { ash::Entry::load() } {
        Ok(e) => e,
        Err(e) => {
            return check(
                "vulkan devices",
                Status::Fail,
                format!("no Vulkan loader: {e}"),
                Some("install libvulkan1 and a driver (Debian: mesa-vulkan-drivers)".into()),
            )
        }
    };
    let app = ash::vk::ApplicationInfo::default().api_version(ash::vk::API_VERSION_1_1);
    let ci = ash::vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: a valid create info; the instance is destroyed below.
    let instance = match unsafe { entry.create_instance(&ci, None) } {
        Ok(i) => i,
        Err(e) => {
            return check(
                "vulkan devices",
                Status::Fail,
                format!("vkCreateInstance failed: {e:?}"),
                Some("install a Vulkan driver (Debian: mesa-vulkan-drivers)".into()),
            )
        }
    };
    // SAFETY: a live instance.
    let names: Vec<String> = unsafe { instance.enumerate_physical_devices() }
        .unwrap_or_default()
        .into_iter()
        .map(|p| {
            // SAFETY: a physical device of this instance.
            let props = unsafe { instance.get_physical_device_properties(p) };
            let name = props
                .device_name_as_c_str()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // lavapipe names its device after the llvmpipe rasterizer it uses.
            if props.vendor_id == 0x10005 && name.starts_with("llvmpipe") {
                format!("{name} (lavapipe, software)")
            } else {
                format!("{name} [{:04x}:{:04x}]", props.vendor_id, props.device_id)
            }
        })
        .collect();
    // SAFETY: nothing of the instance is in use.
    unsafe { instance.destroy_instance(None) };
    if names.is_empty() {
        check(
            "vulkan devices",
            Status::Fail,
            "the loader sees no GPU",
            Some("install a Vulkan driver (Debian: mesa-vulkan-drivers for lavapipe)".into()),
        )
    } else {
        check("vulkan devices", Status::Ok, names.join(", "), None)
    }
}

/// Each counter source: the collector's own catalogue and `unavailable` reasons.
fn counter_checks() -> Vec<Check> {
    let cfg = framescope_core::settings::get();
    let Some(board) = framescope_collectors::builtin::board_for(cfg, framescope_collectors::GpuHint::Unknown) else {
        return vec![check("counters", Status::Info, "counters=0 in the configuration", None)];
    };
    board.wait_started(std::time::Duration::from_secs(3));
    let mut out = Vec::new();
    let unavailable = board.unavailable();
    if let Some(cat) = board.catalogue() {
        let mut sources: Vec<&str> = cat.counters.iter().map(|c| c.source.as_str()).collect();
        sources.dedup();
        // A source that lists its counters but reads none (a PM ring whose sampler failed) is
        // said once, with its reason below, never as "ok" too.
        sources.retain(|s| !unavailable.iter().any(|u| u.source == *s));
        for s in sources {
            let n = cat.counters.iter().filter(|c| c.source == s).count();
            out.push(check(
                &format!("counters: {s}"),
                Status::Ok,
                format!("{n} counters"),
                None,
            ));
        }
    }
    for u in unavailable {
        out.push(check(&format!("counters: {}", u.source), Status::Info, u.reason, None));
    }
    out
}

/// NVIDIA PM sampling (`framescope gpu-sampler`): CUPTI's libraries and the driver's profiling
/// permission, where there is an NVIDIA driver.
fn pm_checks() -> Vec<Check> {
    let params = std::fs::read_to_string("/proc/driver/nvidia/params").ok();
    let Some(params) = params else {
        return vec![check(
            "pm sampling",
            Status::Info,
            "no NVIDIA driver (/proc/driver/nvidia/params): no PM sampling",
            None,
        )];
    };
    let mut out = vec![match framescope_collectors::nvidia::pm::dl::DlCupti::load() {
        Ok(c) => check("pm sampling", Status::Ok, format!("CUPTI from {}", c.origin()), None),
        Err(e) => check(
            "pm sampling",
            Status::Warn,
            e,
            Some(
                "set FRAMESCOPE_CUPTI_DIR to a directory with libcupti.so.12 and the nvperf libraries \
                 (pip download nvidia-cuda-cupti-cu12 has them)"
                    .into(),
            ),
        ),
    }];
    let admin_only = params
        .lines()
        .find_map(|l| l.strip_prefix("RmProfilingAdminOnly:"))
        .is_some_and(|v| v.trim() == "1");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if admin_only && !root {
        out.push(check(
            "pm permission",
            Status::Warn,
            "the driver lets only root read the performance monitors (RmProfilingAdminOnly: 1)",
            Some(
                "run the sampler as root (`sudo framescope gpu-sampler`), or load nvidia with \
                 NVreg_RestrictProfilingToAdminUsers=0"
                    .into(),
            ),
        ));
    }
    out
}

/// Whether the dump's directory (the configured path's, else the working directory) takes
/// new files.
fn dump_check() -> Check {
    let cfg = framescope_core::settings::get();
    let dir = cfg
        .dump
        .as_ref()
        .and_then(|d| Path::new(d).parent().map(Path::to_path_buf))
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    let writable = tempfile::Builder::new()
        .prefix(".framescope-doctor-")
        .tempfile_in(&dir)
        .is_ok();
    if writable {
        check(
            "dump directory",
            Status::Ok,
            format!("{} is writable", show(dir.as_os_str())),
            None,
        )
    } else {
        check(
            "dump directory",
            Status::Fail,
            format!("{} does not take new files", show(dir.as_os_str())),
            Some("set dump= to a writable directory".into()),
        )
    }
}

/// One window system's check: whether the server the environment names answers.
fn server_check(what: &str, name: &str, path: Option<std::path::PathBuf>, probe: fn(&Path) -> Answer) -> Check {
    let Some(path) = path else {
        return check(
            what,
            Status::Info,
            format!("{name}: not probed (a remote display, or no XDG_RUNTIME_DIR)"),
            None,
        );
    };
    let at = show(path.as_os_str());
    match probe(&path) {
        Answer::Answers => check(what, Status::Ok, format!("{name} answers ({at})"), None),
        Answer::Silent => check(
            what,
            Status::Fail,
            format!(
                "{name} at {at} accepts connections but did not answer within {} s: apps that wait for it hang",
                crate::display_server::TIMEOUT.as_secs()
            ),
            Some("restart the compositor or X server (a stopped process: kill -CONT it)".into()),
        ),
        Answer::Unreachable(e) => check(
            what,
            Status::Warn,
            format!("{name} names {at}, which cannot be reached ({e})"),
            Some("unset the variable, or start the server it names".into()),
        ),
        Answer::Garbled => check(
            what,
            Status::Warn,
            format!("{name} at {at} answered with something that is not its protocol"),
            None,
        ),
    }
}

/// The session's window systems (do they answer?), what apps will use there, and whether the
/// toggle keys and display-time sources work for them.
fn session_checks(env: &dyn Fn(&str) -> Option<String>) -> Vec<Check> {
    use crate::display_server::{probe_wayland, probe_x11, wayland_socket, x11_socket};
    let (wayland, x11) = (env("WAYLAND_DISPLAY"), env("DISPLAY"));
    let mut out = Vec::new();
    if let Some(w) = &wayland {
        let path = wayland_socket(w, env("XDG_RUNTIME_DIR").as_deref());
        out.push(server_check(
            "wayland",
            &format!("WAYLAND_DISPLAY={w}"),
            path,
            probe_wayland,
        ));
    }
    if let Some(d) = &x11 {
        let what = if wayland.is_some() { "xwayland" } else { "x11" };
        out.push(server_check(what, &format!("DISPLAY={d}"), x11_socket(d), probe_x11));
    }
    // Native Wayland windows' keys come from the app's own keyboard events, whose keymap only
    // xkbcommon reads.
    let xkb = framescope_collectors::input::xkb::Xkb::get();
    let wayland_keys = match xkb {
        Ok(_) => (
            Status::Ok,
            "native Wayland windows (Vulkan and EGL): read from the app's own keyboard events while its window has keyboard focus",
        ),
        Err(_) => (
            Status::Warn,
            "native Wayland windows: unavailable, libxkbcommon.so.0 is not installed (it reads the compositor's keymap)",
        ),
    };
    let both = format!(
        "X11 and XWayland windows: read from X11 (DISPLAY) on a connection of framescope's own; {}",
        wayland_keys.1
    );
    let (apps, keys, display) = match (&wayland, &x11) {
        (Some(_), Some(_)) => (
            "Wayland session: apps with Wayland support draw on it natively (SDL 3, GTK 4, Qt 6, vkcube-wayland), X11-only ones through XWayland",
            (wayland_keys.0, both.as_str()),
            "X11 and XWayland windows: the X11 Present extension's completions; Vulkan where the driver has VK_KHR_present_wait: present_wait; native Wayland windows (Vulkan and EGL): the compositor's wp_presentation feedback",
        ),
        (Some(_), None) => (
            "Wayland session without XWayland: apps draw on Wayland natively or not at all",
            wayland_keys,
            "Vulkan where the driver has VK_KHR_present_wait: present_wait; native Wayland windows (Vulkan and EGL): the compositor's wp_presentation feedback",
        ),
        (None, Some(_)) => (
            "X11 session: apps draw on X11",
            (Status::Ok, "read from X11 (DISPLAY) on a connection of framescope's own"),
            "the X11 Present extension's completions (not for windows presented without it: Mesa's software drivers, NVIDIA's GLX on Xvfb); Vulkan where the driver has VK_KHR_present_wait: present_wait",
        ),
        (None, None) => (
            "no window system: only headless apps (Vulkan without a swapchain, frames from VK_EXT_frame_boundary; EGL surfaceless)",
            (Status::Info, "unavailable without a window system"),
            "none: headless frames have no display (frames say not_presented)",
        ),
    };
    out.push(check("apps here", Status::Info, apps, None));
    out.push(check("toggle keys", keys.0, keys.1, None));
    out.push(check("display times", Status::Info, display, None));
    out
}

pub fn main(args: Args) -> i32 {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    // The device check's own instance loads no implicit layer (framescope's included): the
    // loader's VK_LOADER_LAYERS_DISABLE, read when the instance is made. Set before any
    // thread of ours starts.
    std::env::set_var("VK_LOADER_LAYERS_DISABLE", "~implicit~");
    let mut checks = layer_checks(&manifests(&implicit_dirs(&env)), &env);
    checks.push(gl_check(&env));
    checks.extend(session_checks(&env));
    checks.push(vulkan_devices());
    checks.extend(counter_checks());
    checks.extend(pm_checks());
    checks.push(dump_check());
    let failed = checks.iter().any(|c| c.status == Status::Fail);
    if args.json {
        let v: Vec<serde_json::Value> = checks
            .iter()
            .map(|c| {
                serde_json::json!({
                    "check": c.what,
                    "status": c.status.name(),
                    "detail": c.detail,
                    "fix": c.fix,
                })
            })
            .collect();
        println!("{}", serde_json::Value::from(v));
    } else {
        for c in &checks {
            println!("{:<5} {:<24} {}", c.status.name(), c.what, c.detail);
            if let Some(f) = &c.fix {
                println!("      {:<24} fix: {f}", "");
            }
        }
    }
    i32::from(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, file: &str, name: &str, lib: &str, enable: Option<&str>) {
        std::fs::create_dir_all(dir).unwrap();
        let mut layer = serde_json::json!({"name": name, "type": "GLOBAL", "library_path": lib});
        if let Some(e) = enable {
            layer["enable_environment"] = serde_json::json!({ e: "1" });
        }
        let v = serde_json::json!({"file_format_version": "1.2.0", "layer": layer});
        std::fs::write(dir.join(file), v.to_string()).unwrap();
    }

    #[test]
    fn the_manifest_is_found_where_the_loader_looks_and_its_absence_names_the_fix() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().to_path_buf();
        let env = |k: &str| match k {
            "HOME" => Some(home.display().to_string()),
            "XDG_DATA_DIRS" => Some("/nonexistent".to_string()),
            "XDG_CONFIG_DIRS" => Some("/nonexistent".to_string()),
            _ => None,
        };
        let dirs = implicit_dirs(&env);
        assert!(dirs.contains(&home.join(".local/share/vulkan/implicit_layer.d")));
        // Nothing installed: a failure with the fix.
        let found: Vec<Manifest> = manifests(&dirs)
            .into_iter()
            .filter(|m| m.file.starts_with(&home))
            .collect();
        let c = layer_checks(&found, &env);
        assert_eq!(c[0].status, Status::Fail);
        assert!(c[0].fix.as_deref().unwrap().contains("framescope install"));
        // Installed, with MangoHud beside it.
        let d = home.join(".local/share/vulkan/implicit_layer.d");
        let lib = home.join("libframescope_vk.so");
        std::fs::write(&lib, b"").unwrap();
        write(
            &d,
            "fs.json",
            "VK_LAYER_FRAMESCOPE_overlay",
            lib.to_str().unwrap(),
            Some("FRAMESCOPE"),
        );
        write(&d, "a.json", "VK_LAYER_OTHER", "x.so", None);
        write(
            &d,
            "mango.json",
            "VK_LAYER_MANGOHUD_overlay_x86_64",
            "m.so",
            Some("MANGOHUD"),
        );
        let found: Vec<Manifest> = manifests(&dirs)
            .into_iter()
            .filter(|m| m.file.starts_with(&home))
            .collect();
        let c = layer_checks(&found, &env);
        assert_eq!(c[0].status, Status::Ok, "{c:?}");
        assert!(
            c[1].detail.starts_with("VK_LAYER_MANGOHUD"),
            "MangoHud first: {}",
            c[1].detail
        );
        assert!(c[1].detail.contains("off unless MANGOHUD is set"));
        // A manifest whose library is gone.
        std::fs::remove_file(&lib).unwrap();
        let c = layer_checks(&manifests(&[d]), &env);
        assert_eq!(c[0].status, Status::Fail);
        assert!(c[0].detail.contains("not there"));
    }
}
