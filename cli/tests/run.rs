//! `framescope run` and `install`: where the private manifest goes (never a directory another
//! user can write), what happens when no place can be written (the app still runs), arguments
//! that are not UTF-8, and `install --prefix` with a relative directory.
//!
//! The layer library is a stand-in file in `FRAMESCOPE_LIB_DIR`: these tests look at the
//! environment and files `run` prepares, not at Vulkan, and the apps they run are `sh`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MANIFEST: &str = "VK_LAYER_FRAMESCOPE_overlay.json";
const NOBODY: u32 = 65534;

/// A directory for one test, removed at the end; `lib/` holds the stand-in layer library.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("framescope-run-test-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("lib")).unwrap();
        std::fs::write(d.join("lib/libframescope_vk.so"), b"stand-in").unwrap();
        for p in [&d, &d.join("lib")] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Scratch(d)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    /// `framescope args` with only PATH, FRAMESCOPE_LIB_DIR and `env` set.
    fn command(&self, args: &[&OsStr], env: &[(&str, &Path)]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_framescope"));
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap())
            .env("FRAMESCOPE_LIB_DIR", self.path("lib"));
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// The first entry of `XDG_CONFIG_DIRS` that `framescope run` gives the app: the directory whose
/// `vulkan/implicit_layer.d` holds the private manifest.
fn layer_path_of_run(c: &mut Command) -> (Output, PathBuf) {
    c.args(["run", "--", "sh", "-c", "printf %s \"${XDG_CONFIG_DIRS%%:*}\""]);
    let out = c.output().unwrap();
    let printed = PathBuf::from(OsStr::from_bytes(&out.stdout));
    (out, printed)
}

/// Where the loader finds implicit manifests below an `XDG_CONFIG_DIRS` entry.
fn manifests_in(config_dir: &Path) -> PathBuf {
    config_dir.join("vulkan/implicit_layer.d")
}

fn describe(out: &Output) -> String {
    format!(
        "status {:?}\nstdout {}\nstderr {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The config directory and every level down to the manifest directory must be ours and 0700,
/// and the manifest directory must hold our manifest alone (the loader loads every manifest in
/// it).
fn assert_private(config_dir: &Path) {
    let dir = &manifests_in(config_dir);
    for d in [config_dir, &config_dir.join("vulkan"), dir] {
        let m = std::fs::symlink_metadata(d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        assert!(m.is_dir(), "{}", d.display());
        // SAFETY: geteuid cannot fail.
        assert_eq!(m.uid(), unsafe { libc::geteuid() }, "{}", d.display());
        assert_eq!(m.mode() & 0o777, 0o700, "{}", d.display());
    }
    let names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [MANIFEST], "{}", dir.display());
    let text = std::fs::read_to_string(dir.join(MANIFEST)).unwrap();
    assert!(text.contains("libframescope_vk.so"), "{text}");
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}

/// A shared, sticky, world-writable directory like /tmp.
fn shared_tmp(s: &Scratch) -> PathBuf {
    let t = s.path("tmp");
    std::fs::create_dir(&t).unwrap();
    std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o1777)).unwrap();
    t
}

#[test]
fn a_directory_another_user_made_in_tmp_is_never_used() {
    let s = Scratch::new("shared");
    let tmp = shared_tmp(&s);
    // What another user can do before our first run: create the directory the old code
    // predicted, and put a manifest of their own in it.
    let lib = s.path("lib/libframescope_vk.so").canonicalize().unwrap();
    let theirs = tmp.join(format!(
        "framescope/run-layer-{:016x}",
        fnv1a(lib.as_os_str().as_bytes())
    ));
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::write(theirs.join("evil.json"), "{}").unwrap();
    for d in [tmp.join("framescope"), theirs.clone()] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        // As root the directory can really be someone else's; otherwise it is ours but
        // writable by everyone, which must be refused just the same.
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&d, Some(NOBODY), Some(NOBODY)).unwrap();
        }
    }
    let (out, dir) = layer_path_of_run(&mut s.command(&[], &[("TMPDIR", &tmp)]));
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(!dir.starts_with(tmp.join("framescope")), "{}", dir.display());
    assert_private(&dir);
    assert_private_parent(&dir);
    let left: Vec<_> = std::fs::read_dir(&theirs)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["evil.json"], "nothing of ours goes into their directory");
}

/// The mkdtemp directory above the manifest directory: ours and 0700 too.
fn assert_private_parent(dir: &Path) {
    let m = std::fs::symlink_metadata(dir.parent().unwrap()).unwrap();
    // SAFETY: geteuid cannot fail.
    assert_eq!(m.uid(), unsafe { libc::geteuid() });
    assert_eq!(m.mode() & 0o777, 0o700);
}

#[test]
fn the_runtime_dir_is_used_only_when_it_is_private() {
    let s = Scratch::new("runtime");
    let runtime = s.path("runtime");
    let cache = s.path("cache");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let env = [
        ("XDG_RUNTIME_DIR", runtime.as_path()),
        ("XDG_CACHE_HOME", cache.as_path()),
    ];
    let (out, dir) = layer_path_of_run(&mut s.command(&[], &env));
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(dir.starts_with(runtime.join("framescope")), "{}", dir.display());
    assert_private(&dir);

    // A runtime dir others can read is not the one the XDG spec promises: the cache is used.
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (out, dir) = layer_path_of_run(&mut s.command(&[], &env));
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(dir.starts_with(cache.join("framescope")), "{}", dir.display());
    assert_private(&dir);
}

/// Runs as `nobody` when the test runs as root (root writes through any mode bits), so a
/// 0555 HOME is read-only for the run either way.
fn as_unprivileged(c: &mut Command) -> &mut Command {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        // SAFETY: setgroups/setgid/setuid are async-signal-safe; they change only the child.
        unsafe {
            c.pre_exec(|| {
                if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(NOBODY) != 0 || libc::setuid(NOBODY) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    c
}

#[test]
fn a_read_only_home_falls_back_to_another_private_directory() {
    let s = Scratch::new("rohome");
    let home = s.path("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o555)).unwrap();
    let tmp = shared_tmp(&s);
    let mut c = s.command(&[], &[("HOME", &home), ("TMPDIR", &tmp)]);
    let (out, dir) = layer_path_of_run(as_unprivileged(&mut c));
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(dir.starts_with(&tmp), "{}", dir.display());
    let m = std::fs::symlink_metadata(&dir).unwrap();
    assert_eq!(m.mode() & 0o777, 0o700);
    let names: Vec<_> = std::fs::read_dir(manifests_in(&dir))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [MANIFEST]);
}

#[test]
fn with_no_private_directory_the_app_runs_without_framescope() {
    let s = Scratch::new("nowhere");
    // Files where directories should be: nothing can be created under them.
    let file = s.path("a-file");
    std::fs::write(&file, b"").unwrap();
    let mut c = s.command(&[], &[("HOME", &file), ("TMPDIR", &file)]);
    c.args(["run", "--", "sh", "-c", "printf %s \"${FRAMESCOPE_RUN-unset}\"; exit 7"]);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", describe(&out));
    assert_eq!(out.stdout, b"unset");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<_> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("framescope run: no private directory"), "{err}");
    assert!(lines[0].ends_with("running sh without framescope"), "{err}");
}

#[test]
fn arguments_that_are_not_utf8_reach_the_app_byte_for_byte() {
    let s = Scratch::new("utf8");
    let cache = s.path("cache");
    let bad = OsStr::from_bytes(b"caf\xe9.txt");
    let dump = OsStr::from_bytes(b"/tmp/d\xe9.jsonl");
    let out = s
        .command(
            &[
                os("run"),
                os("--dump"),
                dump,
                os("--"),
                os("sh"),
                os("-c"),
                os("printf '%s|%s' \"$1\" \"$FRAMESCOPE_DUMP\""),
                os("sh"),
                bad,
            ],
            &[("XDG_CACHE_HOME", &cache)],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(out.stdout, b"caf\xe9.txt|/tmp/d\xe9.jsonl");

    // Options that must be text: one clear line, never a panic.
    for args in [
        vec![
            os("run"),
            os("--config"),
            OsStr::from_bytes(b"hud=\xe9"),
            os("--"),
            os("true"),
        ],
        vec![os("counters"), os("--gpu"), OsStr::from_bytes(b"\xe9")],
        vec![OsStr::from_bytes(b"r\xe9port")],
    ] {
        let out = s.command(&args, &[("XDG_CACHE_HOME", &cache)]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.lines().next().unwrap().contains('\u{fffd}'), "{err}");
    }
}

#[test]
fn install_with_a_relative_prefix_names_an_absolute_library() {
    let s = Scratch::new("install");
    let work = s.path("work");
    std::fs::create_dir(&work).unwrap();
    let out = s
        .command(&[os("install"), os("--prefix"), os("rel/dir")], &[])
        .current_dir(&work)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    // Under this system's $LIB name for 64-bit libraries (Debian's here), named through $LIB.
    let lib = work.join("rel/dir/share/framescope/lib/x86_64-linux-gnu/libframescope_vk.so");
    assert_eq!(std::fs::read(&lib).unwrap(), b"stand-in");
    let named = work.join("rel/dir/share/framescope/$LIB/libframescope_vk.so");
    for kind in ["implicit", "explicit"] {
        let m = work.join(format!("rel/dir/share/vulkan/{kind}_layer.d/{MANIFEST}"));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
        assert_eq!(v["layer"]["library_path"], named.to_str().unwrap(), "{kind}");
    }
}

#[test]
fn install_never_writes_through_a_symlink_left_at_a_temporary_name() {
    let s = Scratch::new("symlink");
    let prefix = s.path("prefix");
    let lib_dir = prefix.join("share/framescope/lib/x86_64-linux-gnu");
    std::fs::create_dir_all(&lib_dir).unwrap();
    let victim = s.path("victim");
    std::fs::write(&victim, b"precious").unwrap();
    // The fixed temporary name the library used to be copied to.
    std::os::unix::fs::symlink(&victim, lib_dir.join(".libframescope_vk.so.tmp")).unwrap();
    let out = s
        .command(&[os("install"), os("--prefix"), prefix.as_os_str()], &[])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert_eq!(std::fs::read(lib_dir.join("libframescope_vk.so")).unwrap(), b"stand-in");
}

#[test]
fn install_with_a_prefix_no_manifest_can_name_fails_in_one_line_before_writing() {
    let s = Scratch::new("install-utf8");
    let prefix = s.path("").join(OsStr::from_bytes(b"pr\xe9fix"));
    let out = s
        .command(&[os("install"), os("--prefix"), prefix.as_os_str()], &[])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("a layer manifest can only name a UTF-8 path"), "{err}");
    assert!(!prefix.exists(), "nothing written");
}

/// The per-user directory `run` reuses in the temporary directory.
fn user_temp(tmp: &Path) -> PathBuf {
    // SAFETY: geteuid cannot fail.
    tmp.join(format!("framescope-{}", unsafe { libc::geteuid() }))
}

#[test]
fn runs_without_home_reuse_one_directory_in_tmp() {
    let s = Scratch::new("nohome");
    let tmp = shared_tmp(&s);
    for _ in 0..3 {
        let (out, dir) = layer_path_of_run(&mut s.command(&[], &[("TMPDIR", &tmp)]));
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        assert!(dir.starts_with(user_temp(&tmp)), "{}", dir.display());
        assert_private(&dir);
        assert_private_parent(&dir);
    }
    let names: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| PathBuf::from(e.unwrap().file_name()))
        .collect();
    assert_eq!(
        names,
        [user_temp(Path::new(""))],
        "one directory for every run, none left per run"
    );
}

#[test]
fn a_per_user_directory_someone_else_made_is_refused() {
    let s = Scratch::new("squat");
    let tmp = shared_tmp(&s);
    let theirs = user_temp(&tmp);
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let (out, dir) = layer_path_of_run(&mut s.command(&[], &[("TMPDIR", &tmp)]));
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(!dir.starts_with(&theirs), "{}", dir.display());
    assert_private(&dir);
    assert_private_parent(&dir);
    assert_eq!(
        std::fs::read_dir(&theirs).unwrap().count(),
        0,
        "nothing of ours in theirs"
    );
}

#[test]
fn a_group_writable_cache_home_is_refused() {
    let s = Scratch::new("groupcache");
    let cache = s.path("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o775)).unwrap();
    let tmp = shared_tmp(&s);
    let (out, dir) = layer_path_of_run(&mut s.command(&[], &[("XDG_CACHE_HOME", &cache), ("TMPDIR", &tmp)]));
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(!dir.starts_with(&cache), "{}", dir.display());
    assert_private(&dir);
}

/// `run --pm` where CUPTI cannot be loaded (the test machines have no CUDA): the sampler says why in one
/// line of its own, and the app runs and exits as it would without it, with its own status.
#[test]
fn pm_without_cupti_says_why_and_the_app_runs_as_without_it() {
    let s = Scratch::new("pm");
    let missing = s.path("no-cupti");
    let out = s
        .command(
            &[
                os("run"),
                os("--pm"),
                os("--"),
                os("sh"),
                os("-c"),
                os("echo app ran; exit 3"),
            ],
            &[("FRAMESCOPE_CUPTI_DIR", &missing), ("HOME", &s.path("home"))],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "app ran\n", "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("gpu-sampler")).collect();
    assert_eq!(lines.len(), 1, "{}", describe(&out));
    assert!(
        lines[0].contains("libcupti.so.12 not found") && lines[0].contains("FRAMESCOPE_CUPTI_DIR"),
        "{}",
        lines[0]
    );
    // The metric set needs --pm.
    let out = s
        .command(
            &[os("run"), os("--pm-metrics"), os("raster"), os("--"), os("true")],
            &[],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
}

/// `--label` reaches the app as config key `label`, after `--config`'s keys (so it wins), and a
/// value the config could not hold is refused with one line before the app starts.
#[test]
fn a_label_goes_to_the_apps_config_and_a_bad_one_is_refused() {
    let s = Scratch::new("label");
    let print = ["sh", "-c", "printf %s \"$FRAMESCOPE_CONFIG\""];
    let mut args = vec![
        os("run"),
        os("--config"),
        os("hud=0,label=old"),
        os("--label"),
        os("nightly 1234 (é)"),
        os("--"),
    ];
    args.extend(print.iter().map(|a| os(a)));
    let out = s.command(&args, &[]).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hud=0,label=old,label=nightly 1234 (é)"
    );
    for bad in ["a,b", "", "tab\there"] {
        let mut args = vec![os("run"), os("--label"), os(bad), os("--")];
        args.extend(print.iter().map(|a| os(a)));
        let out = s.command(&args, &[]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", describe(&out));
        assert!(out.stdout.is_empty(), "{bad:?}: the app ran");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("a label is 1 to 128 bytes"), "{bad:?}: {err}");
    }
}
