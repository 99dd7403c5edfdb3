//! `framescope run [OPTIONS] [--] CMD ARGS...`: runs CMD with the layer enabled, installing
//! nothing: a private implicit manifest is written to the user's cache directory, found through
//! `XDG_CONFIG_DIRS` and enabled with `FRAMESCOPE_RUN=1`, then CMD replaces this process (so its
//! exit code and signals are the app's own).
//!
//! Why implicit: the loader (1.3.239) puts every enabled implicit layer above the layers of
//! `VK_INSTANCE_LAYERS`, so an explicit framescope sat below MangoHud and vkBasalt and counted
//! their draws and GPU time as the app's. Among implicit layers the first manifest found is
//! closest to the app, and `XDG_CONFIG_DIRS` is searched before `/etc/vulkan` and the data dirs
//! where such layers install. Layers the user names in `VK_INSTANCE_LAYERS` (validation) are
//! explicit, so they stay below framescope and check its calls too.
//!
//! GL apps: the GL shim (`libframescope_gl.so`, found like the layer) is prepended to
//! `LD_PRELOAD` in CMD's environment. Since CMD replaces this process, nothing else framescope
//! starts gets it; the shim leaves `LD_PRELOAD` as it is, so processes CMD itself starts are
//! measured too when they use GL (the shim does nothing in a process that does not).

use crate::locate::{self, IMPLICIT_TEMPLATE, MANIFEST_FILE, VK_LIB};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The GL shim, found next to the executable like the Vulkan layer.
const GL_LIB: &str = "libframescope_gl.so";

const USAGE: &str = "usage: framescope run [--dump PATH] [--config KEY=VALUE,...] [--] CMD ARGS...";

pub fn main(args: &[String]) -> i32 {
    let mut dump = None;
    let mut config = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--" => {
                i += 1;
                break;
            }
            "--dump" if i + 1 < args.len() => {
                dump = Some(args[i + 1].clone());
                i += 2;
            }
            "--config" if i + 1 < args.len() => {
                config = Some(args[i + 1].clone());
                i += 2;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return 0;
            }
            s if s.starts_with("--") => {
                eprintln!("framescope run: unknown option '{s}'\n{USAGE}");
                return 2;
            }
            _ => break,
        }
    }
    let Some((cmd, cmd_args)) = args[i..].split_first() else {
        eprintln!("{USAGE}");
        return 2;
    };
    let config_dir = match prepare_manifest() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("framescope run: {e}");
            return 1;
        }
    };
    let mut c = Command::new(cmd);
    c.args(cmd_args);
    // Unset means `/etc/xdg` (XDG Base Directory spec), which must stay searched after ours.
    let dirs = match std::env::var("XDG_CONFIG_DIRS") {
        Ok(old) if !old.is_empty() => old,
        _ => "/etc/xdg".to_string(),
    };
    c.env("XDG_CONFIG_DIRS", format!("{}:{dirs}", config_dir.display()));
    c.env(RUN_ENABLE, "1");
    // The implicit layer, if installed, must not load a second copy.
    c.env_remove("FRAMESCOPE");
    // GL and GLES apps: the shim, first in LD_PRELOAD. Its absence only costs GL measurements.
    match locate::find_library(GL_LIB) {
        Ok(gl) => {
            c.env("LD_PRELOAD", prepend(&gl.display().to_string(), "LD_PRELOAD"));
        }
        Err(e) => eprintln!("framescope run: {e}; OpenGL apps will not be measured"),
    }
    if let Some(d) = dump {
        c.env("FRAMESCOPE_DUMP", d);
    }
    if let Some(cfg) = config {
        let merged = match std::env::var("FRAMESCOPE_CONFIG") {
            Ok(old) if !old.is_empty() => format!("{old},{cfg}"),
            _ => cfg,
        };
        c.env("FRAMESCOPE_CONFIG", merged);
    }
    let err = c.exec();
    eprintln!("framescope run: cannot run '{cmd}': {err}");
    if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    }
}

fn prepend(value: &str, var: &str) -> String {
    match std::env::var(var) {
        Ok(old) if !old.is_empty() => format!("{value}:{old}"),
        _ => value.to_string(),
    }
}

/// The variable that enables `run`'s private implicit manifest (the installed one answers to
/// `FRAMESCOPE=1`, which `run` removes).
const RUN_ENABLE: &str = "FRAMESCOPE_RUN";

/// A manifest per library location, so two checkouts never point at each other's build. Returns
/// the directory to put in `XDG_CONFIG_DIRS` (the manifest is in its `vulkan/implicit_layer.d`).
fn prepare_manifest() -> Result<std::path::PathBuf, String> {
    let lib = locate::find_library(VK_LIB)?;
    let tag = fnv1a(lib.display().to_string().as_bytes());
    let dir = locate::cache_home().join(format!("framescope/run-layer-{tag:016x}"));
    let path = dir.join("vulkan/implicit_layer.d").join(MANIFEST_FILE);
    let installed_enable = "\"FRAMESCOPE\": \"1\"";
    let template = IMPLICIT_TEMPLATE.replace(installed_enable, &format!("\"{RUN_ENABLE}\": \"1\""));
    if template == IMPLICIT_TEMPLATE {
        return Err(format!(
            "the implicit manifest template has no {installed_enable} to replace"
        ));
    }
    let contents = locate::render_manifest(&template, &lib);
    if std::fs::read_to_string(&path).ok().as_deref() != Some(contents.as_str()) {
        locate::write_atomically(&path, &contents).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(dir)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}
