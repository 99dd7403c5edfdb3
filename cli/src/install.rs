//! `framescope install` / `uninstall`: the implicit and explicit layer manifests plus a copy of
//! the layer library, under `$XDG_DATA_HOME` (default `~/.local/share`) or `--prefix DIR`.

use crate::locate::{self, EXPLICIT_TEMPLATE, IMPLICIT_TEMPLATE, MANIFEST_FILE, VK_LIB};
use crate::text::show;
use std::path::{Path, PathBuf};

struct Layout {
    implicit_dir: PathBuf,
    explicit_dir: PathBuf,
    lib_dir: PathBuf,
}

/// What `install` puts in place and `uninstall` removes, for both descriptions.
macro_rules! what {
    () => {
        "the implicit and explicit Vulkan layer manifests, and a copy of the layer library (64-bit,
and 32-bit where it was built), under $XDG_DATA_HOME (default ~/.local/share) or DIR/share;
the manifests name the library through ld.so's $LIB, so 32-bit apps load the 32-bit one. Once installed, a Vulkan app loads
framescope when FRAMESCOPE=1 is set (DISABLE_FRAMESCOPE=1 wins), or when it names
VK_LAYER_FRAMESCOPE_overlay in VK_INSTANCE_LAYERS."
    };
}

/// `install --help`'s description.
pub const INSTALL_ABOUT: &str = concat!("Installs ", what!());
/// `uninstall --help`'s description.
pub const UNINSTALL_ABOUT: &str = concat!("Removes ", what!());

pub const INSTALL_EXAMPLES: &str = "\
examples:
  framescope install
  framescope install --prefix /opt/framescope
  FRAMESCOPE=1 vkcube";

pub const UNINSTALL_EXAMPLES: &str = "\
examples:
  framescope uninstall
  framescope uninstall --prefix /opt/framescope";

// The options of `install` and `uninstall` (a plain comment: a doc comment would become
// clap's about text).
#[derive(clap::Args, Debug)]
#[command(args_override_self = true)]
pub struct Args {
    /// use DIR/share instead of $XDG_DATA_HOME
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<PathBuf>,
}

fn layout(prefix: Option<&Path>) -> Result<Layout, String> {
    let data = match prefix {
        None => locate::data_home()?,
        // Absolute, because the manifest's `library_path` is read by the loader in every app,
        // each in a directory of its own: a relative one would name a file that is not there.
        Some(dir) => std::path::absolute(dir)
            .map_err(|e| format!("--prefix {}: {e}", show(dir.as_os_str())))?
            .join("share"),
    };
    Ok(Layout {
        implicit_dir: data.join("vulkan/implicit_layer.d"),
        explicit_dir: data.join("vulkan/explicit_layer.d"),
        lib_dir: data.join("framescope"),
    })
}

pub fn install_main(args: Args) -> i32 {
    match install(args.prefix.as_deref()) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("framescope install: {e}");
            1
        }
    }
}

fn install(prefix: Option<&Path>) -> Result<(), String> {
    let l = layout(prefix)?;
    let built = locate::find_library(VK_LIB)?;
    let dirs = locate::LibDirs::here();
    // ld.so expands $LIB in the path the loader passes to dlopen (ld.so(8)).
    let lib = l.lib_dir.join("$LIB").join(VK_LIB);
    // Rendered first: a path a manifest cannot name fails before anything is written.
    let manifests = [
        (&l.implicit_dir, locate::render_manifest(IMPLICIT_TEMPLATE, &lib)?),
        (&l.explicit_dir, locate::render_manifest(EXPLICIT_TEMPLATE, &lib)?),
    ];
    // Copy to a fresh temporary file and rename: an app running with the old library keeps its
    // mapping, and a symlink left at a fixed temporary name is never written through.
    let copy = |from: &Path, to: &Path| -> std::io::Result<()> {
        let dir = to.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::Builder::new().prefix(".framescope-").tempfile_in(dir)?;
        std::io::copy(&mut std::fs::File::open(from)?, &mut tmp)?;
        tmp.as_file()
            .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
        tmp.persist(to).map_err(|e| e.error)?;
        Ok(())
    };
    let mut copies = vec![(built, l.lib_dir.join(&dirs.lib64).join(VK_LIB))];
    if let (Some(lib32), Some(built32)) = (&dirs.lib32, locate::find_library32(VK_LIB)) {
        copies.push((built32, l.lib_dir.join(lib32).join(VK_LIB)));
    }
    for (from, to) in &copies {
        copy(from, to).map_err(|e| format!("copy {} -> {}: {e}", show(from.as_os_str()), show(to.as_os_str())))?;
    }
    for (dir, manifest) in manifests {
        let path = dir.join(MANIFEST_FILE);
        locate::write_atomically(&path, &manifest).map_err(|e| format!("{}: {e}", show(path.as_os_str())))?;
        println!("installed {}", show(path.as_os_str()));
    }
    for (_, to) in &copies {
        println!("installed {}", show(to.as_os_str()));
    }
    println!("enable per app with FRAMESCOPE=1 (implicit layer); DISABLE_FRAMESCOPE=1 turns it off");
    Ok(())
}

pub fn uninstall_main(args: Args) -> i32 {
    let l = match layout(args.prefix.as_deref()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("framescope uninstall: {e}");
            return 2;
        }
    };
    let mut code = 0;
    let dirs = locate::LibDirs::here();
    let mut libs = vec![dirs.lib64.clone(), "lib".to_string()];
    libs.extend(dirs.lib32.clone());
    let mut paths = vec![l.implicit_dir.join(MANIFEST_FILE), l.explicit_dir.join(MANIFEST_FILE)];
    // The library where an older framescope put it, then under each $LIB name.
    paths.push(l.lib_dir.join("lib").join(VK_LIB));
    paths.extend(libs.iter().map(|d| l.lib_dir.join(d).join(VK_LIB)));
    for path in paths {
        match std::fs::remove_file(&path) {
            Ok(()) => println!("removed {}", show(path.as_os_str())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                eprintln!("framescope uninstall: {}: {e}", show(path.as_os_str()));
                code = 1;
            }
        }
    }
    // The $LIB directories we made, deepest first, while empty.
    for d in &libs {
        let mut dir = l.lib_dir.join(d);
        while dir != l.lib_dir && dir.starts_with(&l.lib_dir) {
            let _ = std::fs::remove_dir(&dir);
            if !dir.pop() {
                break;
            }
        }
    }
    let _ = std::fs::remove_dir(&l.lib_dir);
    // The manifest directories and `vulkan` above them, when nothing else is in them (another
    // layer's manifest keeps them).
    for d in [&l.implicit_dir, &l.explicit_dir] {
        if std::fs::remove_dir(d).is_ok() {
            println!("removed {}", show(d.as_os_str()));
        }
    }
    if let Some(vulkan) = l.implicit_dir.parent() {
        if std::fs::remove_dir(vulkan).is_ok() {
            println!("removed {}", show(vulkan.as_os_str()));
        }
    }
    code
}
