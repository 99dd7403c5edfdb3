//! `framescope run [OPTIONS] [--] CMD ARGS...`: runs CMD with the layer enabled, installing
//! nothing: a private explicit manifest is written to a private directory of the user (below),
//! named through `VK_ADD_LAYER_PATH` and enabled with `VK_INSTANCE_LAYERS`, then CMD replaces
//! this process (so its exit code and signals are the app's own).
//!
//! The loader loads every manifest in a `VK_ADD_LAYER_PATH` directory into the app, so that
//! directory must be one only this user can write: `$XDG_RUNTIME_DIR/framescope` when the
//! runtime dir is ours and 0700 (as the XDG Base Directory spec requires), else
//! `$XDG_CACHE_HOME/framescope` (default `~/.cache/framescope`), else a fresh `mkdtemp`
//! directory. Every directory framescope creates is 0700, and one found owned by someone else
//! or writable by others is refused and the next place tried. A predictable path in a shared
//! directory (`/tmp`) is never used: another user could create it first. When no place works
//! the app runs without framescope, with one line saying so: a profiler must not stop the app.
//!
//! GL apps: the GL shim (`libframescope_gl.so`, found like the layer) is prepended to
//! `LD_PRELOAD` in CMD's environment. Since CMD replaces this process, nothing else framescope
//! starts gets it; the shim leaves `LD_PRELOAD` as it is, so processes CMD itself starts are
//! measured too when they use GL (the shim does nothing in a process that does not).

use crate::locate::{self, EXPLICIT_TEMPLATE, LAYER_NAME, MANIFEST_FILE, VK_LIB};
use crate::text::{show, utf8};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The GL shim, found next to the executable like the Vulkan layer.
const GL_LIB: &str = "libframescope_gl.so";

const USAGE: &str = "usage: framescope run [--dump PATH] [--config KEY=VALUE,...] [--] CMD ARGS...";

pub fn main(args: &[OsString]) -> i32 {
    let mut dump = None;
    let mut config = None;
    let mut i = 0;
    while i < args.len() {
        // Only options must be text; the command and its arguments are passed on as bytes.
        let Some(a) = args[i].to_str() else { break };
        match a {
            "--" => {
                i += 1;
                break;
            }
            "--dump" if i + 1 < args.len() => {
                dump = Some(args[i + 1].clone());
                i += 2;
            }
            "--config" if i + 1 < args.len() => {
                match utf8(&args[i + 1], "--config") {
                    Ok(c) => config = Some(c.to_string()),
                    Err(e) => {
                        eprintln!("framescope run: {e}");
                        return 2;
                    }
                }
                i += 2;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return 0;
            }
            s if s.starts_with("--") => {
                eprintln!("framescope run: unknown option '{}'\n{USAGE}", show(&args[i]));
                return 2;
            }
            _ => break,
        }
    }
    let Some((cmd, cmd_args)) = args[i..].split_first() else {
        eprintln!("{USAGE}");
        return 2;
    };
    let mut c = Command::new(cmd);
    c.args(cmd_args);
    match prepare_manifest() {
        Ok(layer_dir) => enable(&mut c, &layer_dir, dump, config),
        Err(e) => eprintln!("framescope run: {e}; running {} without framescope", show(cmd)),
    }
    let err = c.exec();
    eprintln!("framescope run: cannot run '{}': {err}", show(cmd));
    if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    }
}

/// The environment that loads framescope into the app.
fn enable(c: &mut Command, layer_dir: &Path, dump: Option<OsString>, config: Option<String>) {
    c.env("VK_ADD_LAYER_PATH", prepend(layer_dir.as_os_str(), "VK_ADD_LAYER_PATH"));
    // First in the list is closest to the app, so layers the user adds (validation) sit below us
    // and check our calls too.
    c.env(
        "VK_INSTANCE_LAYERS",
        prepend(OsStr::new(LAYER_NAME), "VK_INSTANCE_LAYERS"),
    );
    // The implicit layer, if installed, must not load a second copy.
    c.env_remove("FRAMESCOPE");
    // GL and GLES apps: the shim, first in LD_PRELOAD. Its absence only costs GL measurements.
    match locate::find_library(GL_LIB) {
        // ld.so splits LD_PRELOAD at spaces and colons (ld.so(8)).
        Ok(gl) if gl.as_os_str().as_bytes().iter().any(|b| b" :".contains(b)) => eprintln!(
            "framescope run: {} has a space or colon in its path, which LD_PRELOAD cannot \
             hold; OpenGL apps will not be measured",
            show(gl.as_os_str())
        ),
        Ok(gl) => {
            c.env("LD_PRELOAD", prepend(gl.as_os_str(), "LD_PRELOAD"));
        }
        Err(e) => eprintln!("framescope run: {e}; OpenGL apps will not be measured"),
    }
    if let Some(d) = dump {
        c.env("FRAMESCOPE_DUMP", d);
    }
    if let Some(cfg) = config {
        let mut merged = std::env::var_os("FRAMESCOPE_CONFIG").unwrap_or_default();
        if !merged.is_empty() {
            merged.push(",");
        }
        merged.push(cfg);
        c.env("FRAMESCOPE_CONFIG", merged);
    }
}

/// `value`, then the variable's old value (kept byte for byte) after a colon.
fn prepend(value: &OsStr, var: &str) -> OsString {
    let mut out = value.to_os_string();
    if let Some(old) = std::env::var_os(var).filter(|o| !o.is_empty()) {
        out.push(":");
        out.push(old);
    }
    out
}

/// A manifest per library location, so two checkouts never point at each other's build.
fn prepare_manifest() -> Result<PathBuf, String> {
    let lib = locate::find_library(VK_LIB)?;
    let contents = locate::render_manifest(EXPLICIT_TEMPLATE, &lib)?;
    let leaf = format!("run-layer-{:016x}", fnv1a(lib.as_os_str().as_bytes()));
    let mut why = Vec::new();
    for place in places() {
        let base = match place {
            Ok(b) => b,
            Err(e) => {
                why.push(e);
                continue;
            }
        };
        match write_in(&base, &leaf, &contents) {
            Ok(dir) => return Ok(dir),
            Err(e) => why.push(e),
        }
    }
    Err(format!(
        "no private directory for the layer manifest ({})",
        why.join("; ")
    ))
}

/// Where the manifest directory may go, best first; each a directory only we can write, or
/// why not.
fn places() -> impl Iterator<Item = Result<PathBuf, String>> {
    let runtime = || {
        let d = std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|d| !d.is_empty())
            .ok_or("XDG_RUNTIME_DIR is not set")?;
        let d = PathBuf::from(d);
        let m = std::fs::metadata(&d).map_err(|e| format!("{}: {e}", show(d.as_os_str())))?;
        if !d.is_absolute() || !m.is_dir() || m.uid() != euid() || m.mode() & 0o077 != 0 {
            return Err(format!(
                "XDG_RUNTIME_DIR {} is not an absolute directory of ours with mode 0700",
                show(d.as_os_str())
            ));
        }
        Ok(d.join("framescope"))
    };
    let cache = || {
        let c = locate::cache_home().ok_or("neither XDG_CACHE_HOME nor HOME is set")?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&c)
            .map_err(|e| format!("{}: {e}", show(c.as_os_str())))?;
        // Whoever can write the cache dir can swap our directory inside it for theirs.
        let m = std::fs::metadata(&c).map_err(|e| format!("{}: {e}", show(c.as_os_str())))?;
        if m.uid() != euid() || m.mode() & 0o002 != 0 {
            return Err(format!("{} is not ours or is writable by others", show(c.as_os_str())));
        }
        Ok(c.join("framescope"))
    };
    // Random name, created 0700 with O_EXCL semantics (mkdir fails on an existing name): no
    // other user can have made it first. Kept, since the app needs it after we exec.
    let temp = || {
        tempfile::Builder::new()
            .prefix("framescope-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .map(tempfile::TempDir::keep)
            .map_err(|e| format!("{}: {e}", show(std::env::temp_dir().as_os_str())))
    };
    [
        Box::new(runtime) as Box<dyn Fn() -> Result<PathBuf, String>>,
        Box::new(cache),
        Box::new(temp),
    ]
    .into_iter()
    .map(|f| f())
}

/// Writes the manifest to `base/leaf/` (both created 0700), after checking that both are
/// directories of ours that nobody else can write. Returns `base/leaf`.
fn write_in(base: &Path, leaf: &str, contents: &str) -> Result<PathBuf, String> {
    let dir = base.join(leaf);
    let at = |p: &Path, e: &dyn std::fmt::Display| format!("{}: {e}", show(p.as_os_str()));
    // The loader splits VK_ADD_LAYER_PATH at colons.
    if dir.as_os_str().as_bytes().contains(&b':') {
        return Err(at(&dir, &"a colon in the path cannot go in VK_ADD_LAYER_PATH"));
    }
    for d in [base, &dir] {
        match std::fs::DirBuilder::new().mode(0o700).create(d) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(at(d, &e)),
        }
        // lstat: a symlink here could point anywhere, including a directory someone else owns.
        let m = std::fs::symlink_metadata(d).map_err(|e| at(d, &e))?;
        if !m.file_type().is_dir() || m.uid() != euid() || m.mode() & 0o022 != 0 {
            return Err(at(d, &"not a directory of ours that only we can write; refused"));
        }
    }
    let path = dir.join(MANIFEST_FILE);
    let current = std::fs::read(&path).ok();
    if current.as_deref() != Some(contents.as_bytes()) {
        locate::write_atomically(&path, contents).map_err(|e| at(&path, &e))?;
    }
    Ok(dir)
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}
