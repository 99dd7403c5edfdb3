//! What the benchmark sections share: a configuration of the app measured, and the median.

/// One configuration of a benchmarked app (shared by the vkcube and glmark2 sections).
pub(crate) struct Config {
    pub(crate) name: &'static str,
    pub(crate) what: &'static str,
    /// Through `framescope run` (else the app directly).
    pub(crate) framescope: bool,
    pub(crate) env: &'static [(&'static str, &'static str)],
}

/// Sorts `v` and returns its median.
pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// What `program args` printed, trimmed; empty when it could not run.
pub(crate) fn cmd_line(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
