//! Runs a program with a clean, private environment and a time limit, capturing its output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A private directory tree and environment for one test: XDG dirs, HOME and the runtime dir
/// point inside it, and every framescope/Vulkan variable of the caller is dropped.
pub struct Sandbox {
    pub dir: PathBuf,
    env: BTreeMap<String, String>,
}

/// What a finished run printed.
pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Outcome {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn combined(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }

    /// Lines of stdout+stderr that start with `prefix`.
    pub fn lines_with(&self, prefix: &str) -> Vec<String> {
        self.combined()
            .lines()
            .filter(|l| l.starts_with(prefix))
            .map(str::to_string)
            .collect()
    }

    /// Panics on what ld.so prints for a library of the other ELF class or a missing one
    /// (a 32-bit app given a 64-bit layer or shim) and on a framescope internal error.
    pub fn assert_no_loader_errors(&self, what: &str) {
        for bad in ["wrong ELF class", "cannot be preloaded", "cannot open shared object"] {
            assert!(!self.combined().contains(bad), "{what}: '{bad}'\n{}", self.describe());
        }
        assert!(
            self.lines_with("framescope: internal error").is_empty(),
            "{what}\n{}",
            self.describe()
        );
    }

    pub fn describe(&self) -> String {
        format!(
            "lane {}, status {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            crate::lane::Lane::current().name(),
            self.status,
            self.stdout,
            self.stderr
        )
    }
}

impl Sandbox {
    pub fn new(name: &str) -> Sandbox {
        let base = std::env::temp_dir().join(format!("framescope-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let mut env = BTreeMap::new();
        for (k, sub) in [
            ("HOME", "home"),
            ("XDG_RUNTIME_DIR", "runtime"),
            ("XDG_DATA_HOME", "data"),
            ("XDG_CONFIG_HOME", "config"),
            ("XDG_CACHE_HOME", "cache"),
        ] {
            let p = base.join(sub);
            std::fs::create_dir_all(&p).expect("sandbox dir");
            env.insert(k.to_string(), p.display().to_string());
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(base.join("runtime"), std::fs::Permissions::from_mode(0o700)).expect("chmod runtime");
        for k in ["PATH", "LANG", "LC_ALL", "TERM"] {
            if let Ok(v) = std::env::var(k) {
                env.insert(k.to_string(), v);
            }
        }
        Sandbox { dir: base, env }
    }

    pub fn set(&mut self, key: &str, value: impl AsRef<str>) -> &mut Self {
        self.env.insert(key.to_string(), value.as_ref().to_string());
        self
    }

    pub fn unset(&mut self, key: &str) -> &mut Self {
        self.env.remove(key);
        self
    }

    pub fn display(&mut self, x: &crate::xvfb::Xvfb) -> &mut Self {
        self.set("DISPLAY", &x.display)
    }

    /// The lane's layers below framescope for everything started in this sandbox: the
    /// validation layer in the `validation` lane, none in the `driver` lane (`crate::lane`).
    pub fn with_validation(&mut self) -> &mut Self {
        match crate::lane::Lane::current() {
            crate::lane::Lane::Validation => self.set("VK_INSTANCE_LAYERS", "VK_LAYER_KHRONOS_validation"),
            crate::lane::Lane::Driver => self.unset("VK_INSTANCE_LAYERS"),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    pub fn env(&self, key: &str) -> Option<&str> {
        self.env.get(key).map(String::as_str)
    }

    /// `program args` in this sandbox's environment, not started: for a test that acts on the
    /// process while it runs.
    pub fn command(&self, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(args).env_clear().envs(&self.env).stdin(Stdio::null());
        c
    }

    /// Runs `program args` to completion or kills it after `limit` and panics.
    pub fn run(&self, program: &Path, args: &[&str], limit: Duration) -> Outcome {
        let out_path = self.dir.join(format!("out-{}.txt", unique()));
        let err_path = self.dir.join(format!("err-{}.txt", unique()));
        let start = Instant::now();
        let mut child = Command::new(program)
            .args(args)
            .env_clear()
            .envs(&self.env)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_path).expect("stdout file"))
            .stderr(std::fs::File::create(&err_path).expect("stderr file"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s;
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                let so = std::fs::read_to_string(&out_path).unwrap_or_default();
                let se = std::fs::read_to_string(&err_path).unwrap_or_default();
                panic!(
                    "{} {args:?} ran past {limit:?}\n--- stdout ---\n{so}\n--- stderr ---\n{se}",
                    program.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Outcome {
            status,
            stdout: String::from_utf8_lossy(&std::fs::read(&out_path).unwrap_or_default()).into_owned(),
            stderr: String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned(),
            elapsed: start.elapsed(),
        }
    }

    /// Runs `app args` through `framescope run`.
    pub fn run_under_framescope(
        &self,
        a: &crate::artifacts::Artifacts,
        app: &str,
        args: &[&str],
        limit: Duration,
    ) -> Outcome {
        let mut all = vec!["run", "--", app];
        all.extend_from_slice(args);
        self.run(&a.framescope, &all, limit)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
