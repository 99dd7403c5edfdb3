//! `framescope install` / `uninstall`: the implicit and explicit layer manifests plus a copy of
//! the layer library, under `$XDG_DATA_HOME` (default `~/.local/share`) or `--prefix DIR`.

use crate::locate::{self, EXPLICIT_TEMPLATE, IMPLICIT_TEMPLATE, MANIFEST_FILE, VK_LIB};
use crate::text::show;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

struct Layout {
    implicit_dir: PathBuf,
    explicit_dir: PathBuf,
    lib_dir: PathBuf,
}

/// Usage of `install` / `uninstall`.
fn usage(verb: &str) -> String {
    format!(
        "usage: framescope {verb} [--prefix DIR]

{}: the implicit and explicit Vulkan layer manifests, and a copy of the layer library, under
$XDG_DATA_HOME (default ~/.local/share) or DIR/share. Once installed, a Vulkan app loads
framescope when FRAMESCOPE=1 is set (DISABLE_FRAMESCOPE=1 wins), or when it names
VK_LAYER_FRAMESCOPE_overlay in VK_INSTANCE_LAYERS.

examples:
  framescope {verb}
  framescope {verb} --prefix /opt/framescope
  FRAMESCOPE=1 vkcube",
        if verb == "install" { "Installs" } else { "Removes" }
    )
}

/// `Some(exit status)` when the arguments asked for help.
fn help(args: &[OsString], verb: &str) -> Option<i32> {
    args.iter().any(|a| a == "-h" || a == "--help").then(|| {
        println!("{}", usage(verb));
        0
    })
}

fn layout(args: &[OsString], verb: &str) -> Result<Layout, String> {
    let data = match args {
        [] => locate::data_home()?,
        // Absolute, because the manifest's `library_path` is read by the loader in every app,
        // each in a directory of its own: a relative one would name a file that is not there.
        [flag, dir] if flag == "--prefix" => std::path::absolute(Path::new(dir))
            .map_err(|e| format!("--prefix {}: {e}", show(dir)))?
            .join("share"),
        _ => return Err(usage(verb)),
    };
    Ok(Layout {
        implicit_dir: data.join("vulkan/implicit_layer.d"),
        explicit_dir: data.join("vulkan/explicit_layer.d"),
        lib_dir: data.join("framescope/lib"),
    })
}

pub fn install_main(args: &[OsString]) -> i32 {
    if let Some(code) = help(args, "install") {
        return code;
    }
    match install(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("framescope install: {e}");
            1
        }
    }
}

fn install(args: &[OsString]) -> Result<(), String> {
    let l = layout(args, "install")?;
    let built = locate::find_library(VK_LIB)?;
    let lib = l.lib_dir.join(VK_LIB);
    // Rendered first: a path a manifest cannot name fails before anything is written.
    let manifests = [
        (&l.implicit_dir, locate::render_manifest(IMPLICIT_TEMPLATE, &lib)?),
        (&l.explicit_dir, locate::render_manifest(EXPLICIT_TEMPLATE, &lib)?),
    ];
    std::fs::create_dir_all(&l.lib_dir).map_err(|e| format!("{}: {e}", show(l.lib_dir.as_os_str())))?;
    // Copy to a fresh temporary file and rename: an app running with the old library keeps its
    // mapping, and a symlink left at a fixed temporary name is never written through.
    let copy = || -> std::io::Result<()> {
        let mut tmp = tempfile::Builder::new()
            .prefix(".framescope-")
            .tempfile_in(&l.lib_dir)?;
        std::io::copy(&mut std::fs::File::open(&built)?, &mut tmp)?;
        tmp.as_file()
            .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
        tmp.persist(&lib).map_err(|e| e.error)?;
        Ok(())
    };
    copy().map_err(|e| format!("copy {} -> {}: {e}", show(built.as_os_str()), show(lib.as_os_str())))?;
    for (dir, manifest) in manifests {
        let path = dir.join(MANIFEST_FILE);
        locate::write_atomically(&path, &manifest).map_err(|e| format!("{}: {e}", show(path.as_os_str())))?;
        println!("installed {}", show(path.as_os_str()));
    }
    println!("installed {}", show(lib.as_os_str()));
    println!("enable per app with FRAMESCOPE=1 (implicit layer); DISABLE_FRAMESCOPE=1 turns it off");
    Ok(())
}

pub fn uninstall_main(args: &[OsString]) -> i32 {
    if let Some(code) = help(args, "uninstall") {
        return code;
    }
    let l = match layout(args, "uninstall") {
        Ok(l) => l,
        Err(e) => {
            eprintln!("framescope uninstall: {e}");
            return 2;
        }
    };
    let mut code = 0;
    for path in [
        l.implicit_dir.join(MANIFEST_FILE),
        l.explicit_dir.join(MANIFEST_FILE),
        l.lib_dir.join(VK_LIB),
    ] {
        match std::fs::remove_file(&path) {
            Ok(()) => println!("removed {}", show(path.as_os_str())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                eprintln!("framescope uninstall: {}: {e}", show(path.as_os_str()));
                code = 1;
            }
        }
    }
    let _ = std::fs::remove_dir(&l.lib_dir);
    code
}
