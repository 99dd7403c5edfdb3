//! Where the built layer libraries are, and how manifests are rendered for them.

use std::path::{Path, PathBuf};

pub const VK_LIB: &str = "libframescope_vk.so";
pub const IMPLICIT_TEMPLATE: &str = include_str!("../../manifests/VK_LAYER_FRAMESCOPE_overlay.implicit.json.in");
pub const EXPLICIT_TEMPLATE: &str = include_str!("../../manifests/VK_LAYER_FRAMESCOPE_overlay.explicit.json.in");
pub const MANIFEST_FILE: &str = "VK_LAYER_FRAMESCOPE_overlay.json";

/// Finds `lib` next to the running executable (cargo puts both in target/<profile>/), in
/// `../lib/framescope/` (an installed prefix), or under `FRAMESCOPE_LIB_DIR`.
pub fn find_library(lib: &str) -> Result<PathBuf, String> {
    let mut tried = Vec::new();
    if let Some(dir) = std::env::var_os("FRAMESCOPE_LIB_DIR") {
        tried.push(PathBuf::from(dir).join(lib));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            tried.push(dir.join(lib));
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
