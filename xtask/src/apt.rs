//! Debian packages through apt, for every task that installs: the indexes updated once per
//! run with each index that failed named once, foreign-architecture packages paired with their
//! native twins (`multiarch`), the install's own words kept so a failure says its cause, and
//! what was installed said at the end. Installs when root; otherwise the exact commands are
//! printed and the task fails (a missing dependency is never a silent skip).

use crate::multiarch;
use crate::shell::is_installed;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The foreign architecture the 32-bit builds use.
pub const FOREIGN: &str = "i386";

/// The packages of `wanted` that are not installed, in order.
pub fn missing<'a>(wanted: &[&'a str]) -> Vec<&'a str> {
    wanted.iter().copied().filter(|p| !is_installed(p)).collect()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn foreign_arch_added() -> bool {
    Command::new("dpkg")
        .arg("--print-foreign-architectures")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).lines().any(|a| a.trim() == FOREIGN))
}

/// Installs what of `wanted` is missing, for `why` (a few words: "the demo", "the tests").
pub fn ensure(why: &str, wanted: &[&str]) -> Result<(), String> {
    let absent = missing(wanted);
    if absent.is_empty() {
        eprintln!("xtask: {why}: all {} Debian packages present", wanted.len());
        return Ok(());
    }
    let foreign = absent.iter().any(|p| p.ends_with(&format!(":{FOREIGN}")));
    let line = format!("apt-get install -y --no-install-recommends {}", absent.join(" "));
    if !is_root() {
        let arch = if foreign {
            format!("sudo dpkg --add-architecture {FOREIGN} && ")
        } else {
            String::new()
        };
        return Err(format!(
            "{why}: missing Debian packages; run as root:\n  {arch}sudo apt-get update && sudo {line}"
        ));
    }
    eprintln!(
        "xtask: {why}: installing {} Debian package(s) and what they depend on: {}",
        absent.len(),
        absent.join(" ")
    );
    if foreign && !foreign_arch_added() {
        eprintln!("xtask: adding the {FOREIGN} architecture to dpkg");
        run_apt("dpkg", &["--add-architecture", FOREIGN])?;
        UPDATED.store(false, Ordering::SeqCst);
    }
    update_once();
    let mut args: Vec<String> = ["install", "-y", "-q", "--no-install-recommends", "--no-remove"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(absent.iter().map(|s| s.to_string()));
    if foreign {
        let pins = multiarch::pins_for(&absent, FOREIGN)?;
        if !pins.is_empty() {
            eprintln!(
                "xtask: pairing {FOREIGN} packages with their native twins at versions both architectures have: {}",
                pins.join(" ")
            );
        }
        args.extend(pins);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, out) = run_captured("apt-get", &refs)?;
    if !ok {
        return Err(format!(
            "{why}: apt-get install failed:\n  {}",
            install_failure(&out).join("\n  ")
        ));
    }
    let still = missing(&absent);
    if !still.is_empty() {
        return Err(format!(
            "{why}: apt-get install succeeded but these are still not installed: {}",
            still.join(" ")
        ));
    }
    eprintln!(
        "xtask: {why}: installed {}{}",
        absent.join(" "),
        install_summary(&out).map(|s| format!(" ({s})")).unwrap_or_default()
    );
    Ok(())
}

static UPDATED: AtomicBool = AtomicBool::new(false);

/// `apt-get update`, once per xtask run: the failed indexes are named, and the install goes on
/// from the indexes there are (a mirror caught mid-sync fails one index; the pairing and the
/// install below say whether what we need was found anyway).
fn update_once() {
    if UPDATED.swap(true, Ordering::SeqCst) {
        return;
    }
    // A mirror mid-sync ("File has unexpected size … Mirror sync in progress?") is fixed
    // minutes later: a few tries before going on with the indexes there are.
    for attempt in 1..=UPDATE_TRIES {
        eprintln!("xtask: apt-get update");
        let failed = match run_captured("apt-get", &["update", "-q"]) {
            Ok((ok, out)) => {
                let failed = failed_indexes(&out);
                if !ok && failed.is_empty() {
                    eprintln!("xtask: apt-get update failed; installing from the indexes there are");
                }
                failed
            }
            Err(e) => {
                eprintln!("xtask: {e}; installing from the indexes there are");
                return;
            }
        };
        if failed.is_empty() {
            return;
        }
        for (index, reason) in &failed {
            eprintln!("xtask: apt index not fetched (try {attempt} of {UPDATE_TRIES}): {index}: {reason}");
        }
        if attempt < UPDATE_TRIES {
            let wait = std::time::Duration::from_secs(20 * attempt as u64);
            eprintln!("xtask: trying again in {} s", wait.as_secs());
            std::thread::sleep(wait);
        } else {
            eprintln!("xtask: installing with the old index or none for those");
        }
    }
}

/// How often `apt-get update` is tried while an index fails.
const UPDATE_TRIES: u32 = 3;

/// Each index `apt-get update` could not fetch, once, with apt's reason.
pub fn failed_indexes(out: &[String]) -> Vec<(String, String)> {
    let mut failed: Vec<(String, String)> = Vec::new();
    fn push(failed: &mut Vec<(String, String)>, index: String, reason: String) {
        if let Some(f) = failed.iter_mut().find(|(i, _)| *i == index) {
            if f.1.is_empty() {
                f.1 = reason;
            }
        } else {
            failed.push((index, reason));
        }
    }
    for (i, line) in out.iter().enumerate() {
        // "Err:7 http://deb.debian.org/debian-security bookworm-security/main i386 Packages",
        // its reason on the next, indented line.
        if let Some(rest) = line.strip_prefix("Err:") {
            let index = rest.split_once(' ').map(|(_, r)| r.trim()).unwrap_or("").to_string();
            let reason = out
                .get(i + 1)
                .filter(|n| n.starts_with(' '))
                .map(|n| clean_reason(n))
                .unwrap_or_default();
            if !index.is_empty() {
                push(&mut failed, index, reason);
            }
        }
    }
    // "E: Failed to fetch URL  reason" names the file, which the Err line may not have.
    for line in out {
        let Some(rest) = line
            .strip_prefix("E: Failed to fetch ")
            .or_else(|| line.strip_prefix("W: Failed to fetch "))
        else {
            continue;
        };
        let (url, reason) = rest.split_once("  ").unwrap_or((rest, ""));
        let url = url.trim();
        let known = failed.iter().any(|(index, _)| index_matches_url(index, url));
        if !known {
            push(&mut failed, url.to_string(), clean_reason(reason));
        }
    }
    failed
}

/// Whether an `Err:` line's index ("URI suite/component arch Packages") is the file `url`.
fn index_matches_url(index: &str, url: &str) -> bool {
    let f: Vec<&str> = index.split_whitespace().collect();
    match f.as_slice() {
        [base, suite_comp, arch, ..] => {
            let (suite, comp) = suite_comp.split_once('/').unwrap_or((suite_comp, ""));
            url.starts_with(base)
                && url.contains(&format!("/dists/{suite}/"))
                && url.contains(&format!("/{comp}/binary-{arch}/"))
        }
        _ => false,
    }
}

/// apt's reason without the mirror's address.
fn clean_reason(reason: &str) -> String {
    let r = reason.trim();
    match r.rfind(" [IP:") {
        Some(i) => r[..i].trim().to_string(),
        None => r.to_string(),
    }
}

/// What an install that failed said about why: its unmet dependencies and its errors.
pub fn install_failure(out: &[String]) -> Vec<String> {
    let mut why: Vec<String> = Vec::new();
    let mut in_unmet = false;
    for line in out {
        if line.starts_with("The following packages have unmet dependencies") {
            in_unmet = true;
            continue;
        }
        if in_unmet && line.starts_with(' ') {
            why.push(line.trim().to_string());
            continue;
        }
        in_unmet = false;
        if line.starts_with("E: ") {
            why.push(line.clone());
        }
    }
    if why.is_empty() {
        why.extend(out.iter().rev().take(5).rev().cloned());
    }
    why
}

/// apt's count line and disk line ("12 newly installed …", "After this operation, … used."),
/// joined.
pub fn install_summary(out: &[String]) -> Option<String> {
    let count = out.iter().find(|l| l.contains(" newly installed,"));
    let disk = out
        .iter()
        .find(|l| l.starts_with("After this operation, "))
        .map(|l| l.trim_start_matches("After this operation, ").trim_end_matches('.'));
    match (count, disk) {
        (None, None) => None,
        (c, d) => Some(
            [
                c.map(|s| s.trim().trim_end_matches('.').to_string()),
                d.map(str::to_string),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; "),
        ),
    }
}

fn run_apt(program: &str, args: &[&str]) -> Result<(), String> {
    crate::shell::run_noninteractive(program, args)
}

/// Runs `program args` non-interactively with its output shown as it comes and kept
/// (stdout and stderr, in the order read), so a failure can be explained from apt's own words.
pub fn run_captured(program: &str, args: &[&str]) -> Result<(bool, Vec<String>), String> {
    let mut child = Command::new(program)
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    let lines = Arc::new(Mutex::new(Vec::new()));
    let pump = |from: Box<dyn Read + Send>, lines: Arc<Mutex<Vec<String>>>| {
        std::thread::spawn(move || {
            for line in BufReader::new(from).lines().map_while(Result::ok) {
                eprintln!("{line}");
                lines.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        })
    };
    let out = child.stdout.take().map(|s| pump(Box::new(s), lines.clone()));
    let err = child.stderr.take().map(|s| pump(Box::new(s), lines.clone()));
    let status = child.wait().map_err(|e| format!("{program}: {e}"))?;
    for t in [out, err].into_iter().flatten() {
        let _ = t.join();
    }
    let lines = std::mem::take(&mut *lines.lock().unwrap_or_else(|p| p.into_inner()));
    Ok((status.success(), lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    /// `apt-get update` with bookworm-security's i386 list caught mid-sync (the set-up failure
    /// of 2026-11-28): the index is named once, with apt's reason and without the mirror's IP.
    #[test]
    fn a_failed_index_is_named_once_with_its_reason() {
        let out = lines(
            "Hit:1 http://deb.debian.org/debian bookworm InRelease
Get:2 http://deb.debian.org/debian-security bookworm-security InRelease [48.0 kB]
Err:7 http://deb.debian.org/debian-security bookworm-security/main i386 Packages
  File has unexpected size (171268 != 171740). Mirror sync in progress? [IP: 151.101.2.132 80]
Fetched 48.0 kB in 1s (52.1 kB/s)
Reading package lists...
E: Failed to fetch http://deb.debian.org/debian-security/dists/bookworm-security/main/binary-i386/Packages.xz  File has unexpected size (171268 != 171740). Mirror sync in progress? [IP: 151.101.2.132 80]
   Hashes of expected file:
E: Some index files failed to download. They have been ignored, or old ones used instead.",
        );
        let failed = failed_indexes(&out);
        assert_eq!(
            failed,
            vec![(
                "http://deb.debian.org/debian-security bookworm-security/main i386 Packages".to_string(),
                "File has unexpected size (171268 != 171740). Mirror sync in progress?".to_string()
            )]
        );
    }

    #[test]
    fn a_fetch_failure_without_an_err_line_is_named_by_its_url() {
        let out =
            lines("W: Failed to fetch http://example.invalid/dists/x/InRelease  Could not resolve 'example.invalid'");
        assert_eq!(
            failed_indexes(&out),
            vec![(
                "http://example.invalid/dists/x/InRelease".to_string(),
                "Could not resolve 'example.invalid'".to_string()
            )]
        );
        assert!(failed_indexes(&lines("Hit:1 http://deb.debian.org/debian bookworm InRelease")).is_empty());
    }

    /// The install's failure keeps apt's unmet dependencies, not only its last line.
    #[test]
    fn a_failed_install_says_which_dependency_broke() {
        let out = lines(
            "Reading package lists...
Some packages could not be installed. This may mean that you have
requested an impossible situation.
The following information may help to resolve the situation:

The following packages have unmet dependencies:
 libgl1-mesa-dri:i386 : Depends: libexpat1:i386 (>= 2.0.1) but it is not going to be installed
 libxml2:i386 : Depends: liblzma5:i386 (>= 5.1.1alpha+20120614) but it is not going to be installed
E: Unable to correct problems, you have held broken packages.",
        );
        assert_eq!(
            install_failure(&out),
            vec![
                "libgl1-mesa-dri:i386 : Depends: libexpat1:i386 (>= 2.0.1) but it is not going to be installed",
                "libxml2:i386 : Depends: liblzma5:i386 (>= 5.1.1alpha+20120614) but it is not going to be installed",
                "E: Unable to correct problems, you have held broken packages.",
            ]
        );
    }

    #[test]
    fn an_install_says_how_much_it_added() {
        let out = lines(
            "0 upgraded, 144 newly installed, 0 to remove and 3 not upgraded.
Need to get 512 MB of archives.
After this operation, 2417 MB of additional disk space will be used.",
        );
        assert_eq!(
            install_summary(&out).as_deref(),
            Some("0 upgraded, 144 newly installed, 0 to remove and 3 not upgraded; 2417 MB of additional disk space will be used")
        );
    }
}
