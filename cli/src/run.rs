//! `framescope run [OPTIONS] [--] CMD ARGS...`: runs CMD with the layer enabled, installing
//! nothing: a private implicit manifest is written to a private directory of the user (below),
//! found through `XDG_CONFIG_DIRS` and enabled with `FRAMESCOPE_RUN=1`, then CMD runs as this
//! process's child (`supervise`: signals passed on, the exit status the app's own, and a dump
//! the app leaves without its summary completed).
//!
//! Why implicit: the loader (1.3.239) puts every enabled implicit layer above the layers of
//! `VK_INSTANCE_LAYERS`, so an explicit framescope sat below MangoHud and vkBasalt and counted
//! their draws and GPU time as the app's. Among implicit layers the first manifest found is
//! closest to the app, and `XDG_CONFIG_DIRS` is searched before `/etc/vulkan` and the data dirs
//! where such layers install. Layers the user names in `VK_INSTANCE_LAYERS` (validation) are
//! explicit, so they stay below framescope and check its calls too.
//!
//! The loader loads every manifest in that directory's `vulkan/implicit_layer.d` into the app,
//! so the directory must be one only this user can write: `$XDG_RUNTIME_DIR/framescope` when the
//! runtime dir is ours and 0700 (as the XDG Base Directory spec requires), else
//! `$XDG_CACHE_HOME/framescope` (default `~/.cache/framescope`), else `$TMPDIR/framescope-UID`,
//! else a fresh `mkdtemp` directory. Every directory framescope creates is 0700, and one found owned by someone else
//! or writable by others is refused and the next place tried. A predictable path in a shared
//! directory (`/tmp`) is never used: another user could create it first. When no place works
//! the app runs without framescope, with one line saying so: a profiler must not stop the app.
//!
//! 32-bit apps: that directory holds the libraries under ld.so's `$LIB` names (links to the
//! 64-bit build and, where one is found, the 32-bit build, see [`locate::LibDirs`]), and the
//! manifest and `LD_PRELOAD` name them through `$LIB`, so a 32-bit game loads the 32-bit layer
//! and shim, and ld.so never tries a library of the other class (its "wrong ELF class" line).
//!
//! GL apps: the GL shim (`libframescope_gl.so`, found like the layer) is prepended to
//! `LD_PRELOAD` in CMD's environment. It is set on CMD alone, so nothing else framescope
//! starts gets it; the shim leaves `LD_PRELOAD` as it is, so processes CMD itself starts are
//! measured too when they use GL (the shim does nothing in a process that does not).

use crate::locate::{self, IMPLICIT_TEMPLATE, MANIFEST_FILE, VK_LIB};
use crate::text::show;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The GL shim, found next to the executable like the Vulkan layer.
const GL_LIB: &str = "libframescope_gl.so";

/// `run --help`'s description.
pub const ABOUT: &str = "\
Runs CMD with framescope enabled, installing nothing: the Vulkan layer through a private
implicit manifest, the GL shim through LD_PRELOAD. --dump sets the dump path template
(%p pid, %n exe name, %t start time); --config takes the keys of FRAMESCOPE_CONFIG (listed
below with --help). The exit status is the app's.";

pub const EXAMPLES: &str = "\
examples:
  framescope run vkcube
  framescope run --dump /tmp/%n-%p.jsonl -- glmark2 -b build
  framescope run --config hud=0,samples=draw --dump run.jsonl -- ./game --benchmark";

// `run`'s options (a plain comment: a doc comment here would become clap's about text). The
// app's command line is passed on byte for byte: everything from CMD on is the app's, options
// included.
#[derive(clap::Args, Debug)]
#[command(args_override_self = true)]
pub struct Args {
    /// the dump path template (%p pid, %n exe name, %t start time); any bytes a path may hold
    #[arg(long, value_name = "PATH")]
    pub dump: Option<OsString>,
    /// config keys as in FRAMESCOPE_CONFIG, after its own (text)
    #[arg(long, value_name = "KEY=VALUE,...", value_parser = crate::usage::text())]
    pub config: Option<String>,
    /// a name for the run in the dump header (config key `label`): a driver build, a CI job;
    /// `report --html`'s farm view groups by it
    #[arg(long, value_name = "TEXT", value_parser = label)]
    pub label: Option<String>,
    /// NVIDIA PM counters: start `framescope gpu-sampler` in the background for as long as
    /// the app runs (needs CUPTI and, by default, root)
    #[arg(long)]
    pub pm: bool,
    /// the sampler's metric set with --pm: graphics, raster or metric names joined by `,`
    #[arg(long, value_name = "SET", default_value = "graphics", requires = "pm", value_parser = crate::usage::text())]
    pub pm_metrics: String,
    /// the app and its arguments
    #[arg(
        value_name = "CMD",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
    )]
    pub command: Vec<OsString>,
}

/// `run --help`'s examples, then every config key with its default and doc, from
/// `framescope_core::config::KEYS` (so the key reference is written once).
pub fn after_long_help() -> String {
    let mut s = format!("{EXAMPLES}\n\nconfig keys (--config KEY=VALUE,...; also FRAMESCOPE_CONFIG):\n");
    for k in framescope_core::config::KEYS {
        s.push_str(&format!("  {} (default {}): {}\n", k.name, k.default, k.doc));
    }
    s
}

/// `--label`'s value: what config key `label` takes, and no `,` (which ends a value there).
fn label(raw: &str) -> Result<String, String> {
    let max = framescope_core::config::LABEL_MAX;
    if raw.len() > max || raw.chars().any(|c| c.is_control() || c == ',') || raw.is_empty() {
        return Err(format!(
            "a label is 1 to {max} bytes of text without control characters or commas"
        ));
    }
    Ok(raw.to_string())
}

pub fn main(args: Args) -> i32 {
    let Args {
        dump,
        config,
        label,
        pm,
        pm_metrics,
        command,
    } = args;
    let Some((cmd, cmd_args)) = command.split_first() else {
        return crate::usage::usage_error::<Args>("run", "framescope run: no CMD given");
    };
    // After --config's keys, so --label wins over a `label` there.
    let config = match (config, label) {
        (c, None) => c,
        (None, Some(l)) => Some(format!("label={l}")),
        (Some(c), Some(l)) => Some(format!("{c},label={l}")),
    };
    if let Some(line) = nested_line(
        std::env::var_os(RUN_ENABLE).as_deref(),
        std::env::var_os("FRAMESCOPE_DUMP").as_deref(),
        dump.as_deref(),
        config.is_some(),
    ) {
        eprintln!("{line}");
    }
    if pm {
        start_pm_sampler(&pm_metrics);
    }
    let mut c = Command::new(cmd);
    c.args(cmd_args);
    let prepared = prepare();
    match &prepared {
        Ok(p) => enable(&mut c, p, dump, config),
        Err(e) => eprintln!("framescope run: {e}; running {} without framescope", show(cmd)),
    }
    // Where the app's dump writers say where their dumps are, so that a dump the app leaves
    // without its summary (a signal, a crash) is completed after it ends (`supervise`).
    let dumps = prepared.ok().and_then(|p| {
        tempfile::Builder::new()
            .prefix("dumps-")
            .tempdir_in(&p.dir)
            .map_err(|e| eprintln!("framescope run: {e}; a dump the app leaves without a summary stays so"))
            .ok()
    });
    if let Some(d) = &dumps {
        c.env(framescope_core::dump::announce::RUN_DUMPS_ENV, d.path());
    }
    let code = crate::supervise::run(c, cmd, dumps.as_ref().map(|d| d.path()));
    drop(dumps);
    code
}

/// The one line a `framescope run` inside another prints (`None` when it is not nested): the
/// app loads framescope once, so one dump wins, and without this line the outer run's dump went
/// missing without a word.
fn nested_line(
    run_enable: Option<&OsStr>,
    outer_dump: Option<&OsStr>,
    dump: Option<&OsStr>,
    config: bool,
) -> Option<String> {
    if run_enable != Some(OsStr::new("1")) {
        return None;
    }
    let outer = outer_dump.filter(|d| !d.is_empty());
    let what = match (outer, dump) {
        (Some(o), Some(d)) if o != d => format!(
            "the app writes its dump to '{}' and not to the outer run's '{}'",
            show(d),
            show(o)
        ),
        (Some(o), _) => format!("the app writes the outer run's dump '{}'", show(o)),
        (None, Some(d)) => format!("the app writes its dump to '{}'", show(d)),
        (None, None) => "the app writes no dump unless the configuration names one".to_string(),
    };
    let settings = if dump.is_some() || config {
        "; this run's --dump and --config keys win over the outer run's for the app"
    } else {
        ""
    };
    Some(format!(
        "framescope run: inside another framescope run (FRAMESCOPE_RUN=1), framescope is loaded once: {what}{settings}"
    ))
}

/// Starts `framescope gpu-sampler` detached (it forks and its first process exits at once, so
/// the app never has it as a child) for as long as this process, which becomes the app, lives,
/// and waits (at most [`PM_READY_WAIT`]) until its ring exists, so that the app's first frames
/// already find it. Failures are the sampler's own lines on stderr; the app runs either way.
fn start_pm_sampler(set: &str) {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("framescope run: cannot start the PM sampler: {e}");
            return;
        }
    };
    // The sampler writes one byte to `ready` once its ring is there; its end closes when it
    // gives up, so the read below ends either way.
    let (ready, ready_w) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("framescope run: cannot start the PM sampler: {e}");
            return;
        }
    };
    let pid = std::process::id().to_string();
    let mut cmd = Command::new(exe);
    cmd.args([
        "gpu-sampler",
        "--detach",
        "--while-pid",
        &pid,
        "--metrics",
        set,
        "--ready-fd",
        "3",
    ]);
    // The write end becomes fd 3 of the sampler (std's pipe ends are close-on-exec).
    cmd.stdin(std::process::Stdio::null());
    let w: std::os::fd::OwnedFd = ready_w.into();
    let raw = std::os::fd::AsRawFd::as_raw_fd(&w);
    // SAFETY: between fork and exec only dup2 runs, which is async-signal-safe; fd 3 is then
    // the pipe's write end without close-on-exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(raw, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let status = cmd.status();
    drop(w);
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            eprintln!("framescope run: the PM sampler did not start ({s}); running without PM counters");
            return;
        }
        Err(e) => {
            eprintln!("framescope run: cannot start the PM sampler: {e}");
            return;
        }
    }
    if !wait_readable(&ready, PM_READY_WAIT) {
        eprintln!(
            "framescope run: the PM sampler is not ready after {} s; the app starts anyway",
            PM_READY_WAIT.as_secs()
        );
    }
}

/// How long `run --pm` waits for the sampler's ring (CUDA's start and CUPTI's set-up took about
/// a second on the H100).
const PM_READY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether `r` has a byte or its end (within `limit`), read without blocking longer.
fn wait_readable(r: &std::io::PipeReader, limit: std::time::Duration) -> bool {
    let mut p = libc::pollfd {
        fd: std::os::fd::AsRawFd::as_raw_fd(r),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut p, 1, limit.as_millis().min(i32::MAX as u128) as i32) };
    n == 1
}

/// The variable that enables `run`'s private implicit manifest (the installed one answers to
/// `FRAMESCOPE=1`, which `run` removes).
const RUN_ENABLE: &str = "FRAMESCOPE_RUN";

/// The environment that loads framescope into the app.
fn enable(c: &mut Command, p: &Prepared, dump: Option<OsString>, config: Option<String>) {
    // Unset means `/etc/xdg` (XDG Base Directory spec), which must stay searched after ours.
    let mut dirs = p.dir.as_os_str().to_os_string();
    dirs.push(":");
    match std::env::var_os("XDG_CONFIG_DIRS").filter(|o| !o.is_empty()) {
        Some(old) => dirs.push(old),
        None => dirs.push("/etc/xdg"),
    }
    c.env("XDG_CONFIG_DIRS", dirs);
    c.env(RUN_ENABLE, "1");
    // The implicit layer, if installed, must not load a second copy.
    c.env_remove("FRAMESCOPE");
    // GL and GLES apps: the shim, first in LD_PRELOAD. Its absence only costs GL measurements.
    match &p.gl_preload {
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

/// What `run` prepared in its private directory.
struct Prepared {
    /// The directory to put first in `XDG_CONFIG_DIRS` (the manifest is in its
    /// `vulkan/implicit_layer.d`).
    dir: PathBuf,
    /// The GL shim through `$LIB`, for `LD_PRELOAD`, or why there is none.
    gl_preload: Result<PathBuf, String>,
}

/// A library linked under a `$LIB` name: (directory relative to the private directory, file
/// name, the build it links to).
type Link = (String, &'static str, PathBuf);

/// The libraries one private directory links, and why there is no GL shim, if there is none.
fn links(dirs: &locate::LibDirs) -> Result<(Vec<Link>, Option<String>), String> {
    let vk = locate::find_library(VK_LIB)?;
    let mut out = vec![(dirs.lib64.clone(), VK_LIB, vk)];
    let gl = locate::find_library(GL_LIB);
    if let Ok(gl) = &gl {
        out.push((dirs.lib64.clone(), GL_LIB, gl.clone()));
    }
    if let Some(lib32) = &dirs.lib32 {
        for name in [VK_LIB, GL_LIB] {
            if let Some(p) = locate::find_library32(name) {
                out.push((lib32.clone(), name, p));
            }
        }
    }
    Ok((out, gl.err()))
}

/// A private directory per set of library locations, so two checkouts never point at each
/// other's build: the implicit manifest and the libraries linked under `$LIB` names.
fn prepare() -> Result<Prepared, String> {
    let dirs = locate::LibDirs::here();
    let (links, gl_missing) = links(&dirs)?;
    let installed_enable = "\"FRAMESCOPE\": \"1\"";
    let template = IMPLICIT_TEMPLATE.replace(installed_enable, &format!("\"{RUN_ENABLE}\": \"1\""));
    if template == IMPLICIT_TEMPLATE {
        return Err(format!(
            "the implicit manifest template has no {installed_enable} to replace"
        ));
    }
    let mut key = Vec::new();
    for (d, name, target) in &links {
        key.extend_from_slice(d.as_bytes());
        key.extend_from_slice(name.as_bytes());
        key.extend_from_slice(target.as_os_str().as_bytes());
        key.push(0);
    }
    let leaf = format!("run-layer-{:016x}", fnv1a(&key));
    let mut why = Vec::new();
    for place in places() {
        let base = match place {
            Ok(b) => b,
            Err(e) => {
                why.push(e);
                continue;
            }
        };
        sweep_dangling(&base);
        let dir = base.join(&leaf);
        // ld.so expands `$LIB` in dlopen paths and LD_PRELOAD (ld.so(8)); the loader passes
        // library_path to dlopen as it is.
        let through_lib = |name: &str| dir.join("$LIB").join(name);
        let contents = locate::render_manifest(&template, &through_lib(VK_LIB))?;
        match write_in(&base, &leaf, &contents, &links) {
            Ok(dir) => {
                return Ok(Prepared {
                    gl_preload: match &gl_missing {
                        None => Ok(through_lib(GL_LIB)),
                        Some(e) => Err(e.clone()),
                    },
                    dir,
                })
            }
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
        if m.uid() != euid() || m.mode() & 0o022 != 0 {
            return Err(format!(
                "{} is not ours or is writable by group or others",
                show(c.as_os_str())
            ));
        }
        Ok(c.join("framescope"))
    };
    // One directory per user in the temporary directory, reused by every run (a `mkdtemp`
    // directory per run would be left behind: the app needs it after we exec). `write_in`
    // creates it 0700 and accepts it only as a real directory of ours that nobody else can
    // write, so one made first by another user is refused and the next place is tried.
    let user_temp = || Ok(std::env::temp_dir().join(format!("framescope-{}", euid())));
    // Random name, created 0700 with O_EXCL semantics (mkdir fails on an existing name): no
    // other user can have made it first. Kept, since the app needs it after we exec; only
    // reached when the per-user directory was taken by someone else.
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
        Box::new(user_temp),
        Box::new(temp),
    ]
    .into_iter()
    .map(|f| f())
}

/// Writes the manifest to `base/leaf/vulkan/implicit_layer.d/` and the library links to
/// `base/leaf/<$LIB>/` (every level created 0700), after checking that each is a directory of
/// ours that nobody else can write. Returns `base/leaf`.
fn write_in(base: &Path, leaf: &str, contents: &str, links: &[Link]) -> Result<PathBuf, String> {
    let dir = base.join(leaf);
    let at = |p: &Path, e: &dyn std::fmt::Display| format!("{}: {e}", show(p.as_os_str()));
    // The loader splits XDG_CONFIG_DIRS at colons.
    if dir.as_os_str().as_bytes().contains(&b':') {
        return Err(at(&dir, &"a colon in the path cannot go in XDG_CONFIG_DIRS"));
    }
    let vulkan = dir.join("vulkan");
    let layers = vulkan.join("implicit_layer.d");
    let mut levels = vec![base.to_path_buf(), dir.clone(), vulkan, layers.clone()];
    for (lib, _, _) in links {
        let mut d = dir.clone();
        for part in Path::new(lib).components() {
            d.push(part);
            if !levels.contains(&d) {
                levels.push(d.clone());
            }
        }
    }
    for d in &levels {
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
    for (lib, name, target) in links {
        let link = dir.join(lib).join(name);
        link_atomically(&link, target).map_err(|e| at(&link, &e))?;
    }
    let path = layers.join(MANIFEST_FILE);
    let current = std::fs::read(&path).ok();
    if current.as_deref() != Some(contents.as_bytes()) {
        locate::write_atomically(&path, contents).map_err(|e| at(&path, &e))?;
    }
    Ok(dir)
}

/// Entries looked at per directory when sweeping (the private directory holds a few).
const MAX_SWEEP: usize = 256;

/// Removes, in the `run-layer-*` directories under `base`, our library links whose library is
/// gone (a package purged, a build directory deleted), and a directory left with no library
/// at all (its manifest and empty levels): otherwise they stay for good, pointing nowhere. Only
/// links named like our libraries and directories of ours are touched; nothing is followed.
fn sweep_dangling(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for e in entries.flatten().take(MAX_SWEEP) {
        let ours_dir = e.file_name().as_bytes().starts_with(b"run-layer-")
            && std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.file_type().is_dir() && m.uid() == euid());
        if !ours_dir {
            continue;
        }
        let leaf = e.path();
        if !sweep_links(&leaf, 0) {
            let _ = std::fs::remove_file(leaf.join("vulkan/implicit_layer.d").join(MANIFEST_FILE));
            remove_empty_dirs(&leaf, 0);
        }
    }
}

/// Removes the dangling library links under `dir` (to a bounded depth); whether a live one is
/// left.
fn sweep_links(dir: &Path, depth: usize) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    let mut live = false;
    for e in entries.flatten().take(MAX_SWEEP) {
        let Ok(t) = e.file_type() else {
            live = true;
            continue;
        };
        let path = e.path();
        if t.is_dir() && depth < 3 {
            live |= sweep_links(&path, depth + 1);
        } else if t.is_symlink() && [VK_LIB, GL_LIB].iter().any(|n| e.file_name() == OsStr::new(n)) {
            match std::fs::metadata(&path) {
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    let _ = std::fs::remove_file(&path);
                }
                _ => live = true,
            }
        }
    }
    live
}

/// Removes `dir` and the directories below it that are empty (never a file).
fn remove_empty_dirs(dir: &Path, depth: usize) {
    if depth < 4 {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten().take(MAX_SWEEP) {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    remove_empty_dirs(&e.path(), depth + 1);
                }
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// Makes `link` a symbolic link to `target`: left as it is when it already is one, else a new
/// link under a random name renamed over it (never following what is there).
fn link_atomically(link: &Path, target: &Path) -> std::io::Result<()> {
    if std::fs::read_link(link).is_ok_and(|t| t == target) {
        return Ok(());
    }
    let dir = link.parent().unwrap_or(Path::new("."));
    for _ in 0..16 {
        let tmp = dir.join(format!(".framescope-link-{:016x}", fastrand_u64()));
        match std::os::unix::fs::symlink(target, &tmp) {
            Ok(()) => {
                return std::fs::rename(&tmp, link).inspect_err(|_| {
                    let _ = std::fs::remove_file(&tmp);
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary name"))
}

/// A random 64-bit name part (the kernel's getrandom; the time as a fallback).
fn fastrand_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: getrandom writes at most `b.len()` bytes into `b`.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n == 8 {
        u64::from_ne_bytes(b)
    } else {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_to_libraries_that_are_gone_are_swept_and_live_ones_kept() {
        let base = std::env::temp_dir().join(format!("fs-run-sweep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let lib = std::env::temp_dir().join(format!("fs-run-sweep-lib-{}.so", std::process::id()));
        std::fs::write(&lib, b"a library").unwrap();
        let contents = "{}";
        // One directory whose libraries were purged, one whose library is there (and a
        // dangling GL link beside it), and a file of someone's own that stays.
        let gone = std::env::temp_dir().join("fs-run-sweep-purged/libframescope_vk.so");
        let dead: Vec<Link> = vec![("lib/x86_64-linux-gnu".into(), VK_LIB, gone.clone())];
        let dead_dir = write_in(&base, "run-layer-dead", contents, &dead).unwrap();
        let live: Vec<Link> = vec![
            ("lib/x86_64-linux-gnu".into(), VK_LIB, lib.clone()),
            ("lib/x86_64-linux-gnu".into(), GL_LIB, gone),
        ];
        let live_dir = write_in(&base, "run-layer-live", contents, &live).unwrap();
        std::fs::write(base.join("notes.txt"), b"mine").unwrap();
        sweep_dangling(&base);
        assert!(!dead_dir.exists(), "a directory left with no library is removed");
        assert!(live_dir.join("lib/x86_64-linux-gnu").join(VK_LIB).exists());
        assert!(std::fs::symlink_metadata(live_dir.join("lib/x86_64-linux-gnu").join(GL_LIB)).is_err());
        assert!(live_dir.join("vulkan/implicit_layer.d").join(MANIFEST_FILE).exists());
        assert!(base.join("notes.txt").exists());
        let _ = std::fs::remove_dir_all(&base);
        let _ = std::fs::remove_file(&lib);
    }
}
