//! Where the built layer libraries are, and how manifests are rendered for them.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub const VK_LIB: &str = "libframescope_vk.so";
pub const IMPLICIT_TEMPLATE: &str = include_str!("../../manifests/VK_LAYER_FRAMESCOPE_overlay.implicit.json.in");
pub const EXPLICIT_TEMPLATE: &str = include_str!("../../manifests/VK_LAYER_FRAMESCOPE_overlay.explicit.json.in");
pub const MANIFEST_FILE: &str = "VK_LAYER_FRAMESCOPE_overlay.json";

/// The directories ld.so's `$LIB` token stands for on this system (ld.so(8), "Dynamic string
/// tokens"), relative to `/` or `/usr`: a manifest's `library_path` or an `LD_PRELOAD` entry
/// through `$LIB` names the 64-bit library to 64-bit processes and the 32-bit one to 32-bit
/// processes, as MangoHud's and the distributions' layer manifests do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibDirs {
    /// `lib/x86_64-linux-gnu` (Debian, Ubuntu), `lib64` (Fedora, openSUSE), `lib` (Arch).
    pub lib64: String,
    /// `lib/i386-linux-gnu`, `lib`, `lib32` respectively; `None` where unknown.
    pub lib32: Option<String>,
}

impl LibDirs {
    /// From the directory this process's libc was loaded from (`/lib/x86_64-linux-gnu`,
    /// `/usr/lib64`, ...), which is where `$LIB` points for a process of its class.
    pub fn from_libc_dir(dir: &Path) -> LibDirs {
        let s = dir.to_string_lossy();
        let s = s.trim_start_matches('/');
        let s = s.strip_prefix("usr/").unwrap_or(s).trim_end_matches('/');
        let lib64 = if s.is_empty() || s.contains("glibc-hwcaps") {
            "lib/x86_64-linux-gnu".to_string()
        } else {
            s.to_string()
        };
        let lib32 = if let Some(head) = lib64.strip_suffix("x86_64-linux-gnu") {
            Some(format!("{head}i386-linux-gnu"))
        } else {
            match lib64.as_str() {
                "lib64" => Some("lib".into()),
                "lib" => Some("lib32".into()),
                _ => None,
            }
        };
        LibDirs { lib64, lib32 }
    }

    /// This system's, found through the loaded libc.
    pub fn here() -> LibDirs {
        static DIRS: std::sync::OnceLock<LibDirs> = std::sync::OnceLock::new();
        DIRS.get_or_init(|| LibDirs::from_libc_dir(&libc_dir().unwrap_or_default()))
            .clone()
    }
}

/// The directory of the libc this process runs on.
fn libc_dir() -> Option<PathBuf> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables for an address of libc's own code and
    // fills `info`; dli_fname, when set, is a NUL-terminated path the loader owns for as long
    // as libc stays loaded (the whole process).
    let name = unsafe {
        if libc::dladdr(libc::getpid as *const libc::c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        std::ffi::CStr::from_ptr(info.dli_fname)
    };
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
    let path = path.canonicalize().unwrap_or(path);
    path.parent().map(Path::to_path_buf)
}

/// Finds `lib` next to the running executable (cargo puts both in target/<profile>/), in
/// `../$LIB/framescope/` or `../lib/framescope/` (an installed prefix), or under
/// `FRAMESCOPE_LIB_DIR`.
pub fn find_library(lib: &str) -> Result<PathBuf, String> {
    let mut tried = Vec::new();
    if let Some(dir) = std::env::var_os("FRAMESCOPE_LIB_DIR") {
        tried.push(PathBuf::from(dir).join(lib));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            tried.push(dir.join(lib));
            tried.push(dir.join("..").join(LibDirs::here().lib64).join("framescope").join(lib));
            tried.push(dir.join("../lib/framescope").join(lib));
        }
    }
    for p in &tried {
        if p.is_file() {
            return p.canonicalize().map_err(|e| format!("{}: {e}", p.display()));
        }
    }
    let list: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
    Err(format!(
        "cannot find {lib}; looked in: {} (build it with `cargo build`)",
        list.join(", ")
    ))
}

/// The cargo target of the 32-bit layers.
pub const TARGET32: &str = "i686-unknown-linux-gnu";

/// The 32-bit build of `lib`, where there is one: under `FRAMESCOPE_LIB32_DIR`, in cargo's
/// `target/i686-unknown-linux-gnu/<profile>/` beside `target/<profile>/` of the running
/// executable, or in `../$LIB/framescope/` of an installed prefix, `$LIB` as for 32-bit.
pub fn find_library32(lib: &str) -> Option<PathBuf> {
    let mut tried = Vec::new();
    if let Some(dir) = std::env::var_os("FRAMESCOPE_LIB32_DIR") {
        tried.push(PathBuf::from(dir).join(lib));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let (Some(dir), Some(profile)) = (exe.parent(), exe.parent().and_then(Path::file_name)) {
            tried.push(dir.join("..").join(TARGET32).join(profile).join(lib));
            if let Some(lib32) = LibDirs::here().lib32 {
                tried.push(dir.join("..").join(lib32).join("framescope").join(lib));
            }
        }
    }
    tried
        .into_iter()
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}

/// A manifest with an absolute `library_path`; JSON-escaped so any path is valid. JSON holds
/// only Unicode text, so a library path that is not UTF-8 cannot be named in a manifest.
pub fn render_manifest(template: &str, library: &Path) -> Result<String, String> {
    let path = library.to_str().ok_or_else(|| {
        format!(
            "{}: a layer manifest can only name a UTF-8 path (JSON is text)",
            crate::text::show(library.as_os_str())
        )
    })?;
    let quoted = serde_json::to_string(path).map_err(|e| e.to_string())?;
    Ok(template.replace("\"@LIBRARY_PATH@\"", &quoted))
}

/// Writes `contents` to `path` through a fresh temporary file (random name, `O_EXCL`, so never
/// through a symlink someone left there) and a rename, so concurrent runs never see a
/// half-written manifest and a symlink at `path` is replaced, not followed.
pub fn write_atomically(path: &Path, contents: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new().prefix(".framescope-").tempfile_in(dir)?;
    std::io::Write::write_all(&mut tmp, contents.as_bytes())?;
    // Manifests are read by the loader in every process of the user; 0644 like the file
    // `install` used to write, not the 0600 of a temporary file.
    tmp.as_file()
        .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

/// `$XDG_DATA_HOME`, else `~/.local/share`.
pub fn data_home() -> Result<PathBuf, String> {
    match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(d) => Ok(PathBuf::from(d)),
        None => home_dir()
            .map(|h| h.join(".local/share"))
            .ok_or_else(|| "neither XDG_DATA_HOME nor HOME is set".into()),
    }
}

/// `$XDG_CACHE_HOME`, else `~/.cache`.
pub fn cache_home() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| home_dir().map(|h| h.join(".cache")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lib_token_directories_follow_the_distributions_layouts() {
        let d = |p: &str| LibDirs::from_libc_dir(Path::new(p));
        let debian = d("/lib/x86_64-linux-gnu");
        assert_eq!(debian.lib64, "lib/x86_64-linux-gnu");
        assert_eq!(debian.lib32.as_deref(), Some("lib/i386-linux-gnu"));
        assert_eq!(d("/usr/lib/x86_64-linux-gnu"), debian, "merged /usr is the same $LIB");
        let fedora = d("/usr/lib64");
        assert_eq!((fedora.lib64.as_str(), fedora.lib32.as_deref()), ("lib64", Some("lib")));
        let arch = d("/usr/lib");
        assert_eq!((arch.lib64.as_str(), arch.lib32.as_deref()), ("lib", Some("lib32")));
        assert_eq!(d("/opt/weird/place").lib32, None);
        assert_eq!(d("").lib64, "lib/x86_64-linux-gnu");
    }

    #[test]
    fn this_systems_lib_token_is_where_libc_is() {
        let here = LibDirs::here();
        assert!(
            Path::new("/").join(&here.lib64).join("libc.so.6").exists()
                || Path::new("/usr").join(&here.lib64).join("libc.so.6").exists(),
            "{here:?}"
        );
    }
}
