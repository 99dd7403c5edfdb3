//! Foreign-architecture (i386) packages paired with their native twins.
//!
//! A `Multi-Arch: same` package must have one version on both architectures. When one index
//! lags (a mirror caught mid-sync fails bookworm-security's i386 list while its amd64 list
//! arrived), the native twin's installed or candidate version may not exist for i386, and apt
//! refuses the whole i386 set with "Depends: libexpat1:i386 … but it is not going to be
//! installed". So before installing, apt simulates the install, and each foreign package it
//! names as unmet is checked against its native twin: when the twin is installed and the
//! foreign candidate equals neither the twin's installed nor its candidate version, both are
//! installed at the newest version both architectures have (apt's version tables list newest
//! first, so no version arithmetic is needed); the simulation is repeated with those pins.
//! Installed packages of the same source that the move would remove (libexpat1-dev with
//! libexpat1) move with it; a removal that cannot be avoided that way stops the task. A twin installed at a newer version than every foreign one
//! is never downgraded: the task stops with the command that would.

use std::process::Command;

/// One package's entry in `apt-cache policy` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// As apt prints it: `libexpat1` (native) or `libexpat1:i386`.
    pub name: String,
    pub installed: Option<String>,
    pub candidate: Option<String>,
    /// Every version apt knows, newest first (the installed one included).
    pub versions: Vec<String>,
}

/// Parses `apt-cache policy A B …` output.
pub fn parse_policy(text: &str) -> Vec<Policy> {
    let mut all: Vec<Policy> = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        if !line.starts_with(' ') {
            if let Some(name) = line.strip_suffix(':') {
                all.push(Policy {
                    name: name.to_string(),
                    installed: None,
                    candidate: None,
                    versions: Vec::new(),
                });
                in_table = false;
            }
            continue;
        }
        let Some(p) = all.last_mut() else { continue };
        let t = line.trim();
        let version = |v: &str| Some(v.trim().to_string()).filter(|v| v != "(none)");
        if let Some(v) = t.strip_prefix("Installed:") {
            p.installed = version(v);
        } else if let Some(v) = t.strip_prefix("Candidate:") {
            p.candidate = version(v);
        } else if t == "Version table:" {
            in_table = true;
        } else if in_table {
            // A version line is indented five columns (" *** " marks the installed one); the
            // sources under it eight, and start with their priority.
            let indent = line.len() - line.trim_start().len();
            let t = t.strip_prefix("***").map(str::trim).unwrap_or(t);
            if indent <= 5 || line.starts_with(" *** ") {
                if let Some(v) = t.split_whitespace().next() {
                    p.versions.push(v.to_string());
                }
            }
        }
    }
    all
}

/// What pairing a foreign package with its native twin needs.
#[derive(Debug, PartialEq, Eq)]
pub enum Pairing {
    /// apt pairs them itself (the foreign candidate is the twin's installed or candidate
    /// version), or the twin is not installed.
    AsIs,
    /// Install both at this version.
    At(String),
    /// No version both have that does not downgrade the twin: the line to print.
    Blocked(String),
}

/// `native` and `foreign` are the same package's two entries.
pub fn pair(native: &Policy, foreign: &Policy) -> Pairing {
    let Some(installed) = &native.installed else {
        return Pairing::AsIs;
    };
    let Some(candidate) = &foreign.candidate else {
        return Pairing::AsIs;
    };
    if Some(candidate) == native.installed.as_ref() || Some(candidate) == native.candidate.as_ref() {
        return Pairing::AsIs;
    }
    let base = native.name.as_str();
    let arch = foreign.name.rsplit_once(':').map(|(_, a)| a).unwrap_or("foreign");
    let common = foreign.versions.iter().find(|v| native.versions.contains(v));
    let newest_foreign = foreign.versions.first().map(String::as_str).unwrap_or("none");
    let Some(common) = common else {
        return Pairing::Blocked(format!(
            "{base}: no version is known for both architectures (native installed {installed}, \
             {arch} newest {newest_foreign}); an index is missing or lags: rerun once `apt-get update` \
             fetches every index"
        ));
    };
    // Newest first: a twin installed above the common version would be downgraded.
    let pos = |v: &str| native.versions.iter().position(|x| x == v);
    match (pos(installed), pos(common)) {
        (Some(i), Some(c)) if i < c => Pairing::Blocked(format!(
            "{base}: native {installed} is installed, newer than every {arch} version known \
             ({newest_foreign}); an index lags: rerun once `apt-get update` fetches every index, or \
             downgrade both: apt-get install --allow-downgrades {base}={common} {base}:{arch}={common}"
        )),
        _ => Pairing::At(common.clone()),
    }
}

/// The foreign packages (`name:arch`) an `apt-get install` that failed names as unmet
/// dependencies ("libgl1-mesa-dri:i386 : Depends: libexpat1:i386 (>= 2.0.1) but it is not going
/// to be installed"), once each: exactly the packages apt could not pair, where a dependency
/// closure would also hold alternatives apt never installs.
pub fn unmet_foreign(out: &str, arch: &str) -> Vec<String> {
    let suffix = format!(":{arch}");
    let mut names: Vec<String> = Vec::new();
    let mut in_unmet = false;
    for line in out.lines() {
        if line.starts_with("The following packages have unmet dependencies") {
            in_unmet = true;
            continue;
        }
        if !in_unmet || !line.starts_with(' ') {
            in_unmet = in_unmet && line.starts_with(' ');
            continue;
        }
        let Some((_, dep)) = line.split_once("Depends: ") else {
            continue;
        };
        let name = dep.split_whitespace().next().unwrap_or("");
        if name.ends_with(&suffix) && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

fn apt_cache_policy(names: &[String]) -> Result<String, String> {
    let out = Command::new("apt-cache")
        .arg("policy")
        .args(names)
        .output()
        .map_err(|e| format!("apt-cache: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The most rounds of simulation: each round pairs what apt named, and pairing one package
/// can expose the next (libxml2:i386 needs liblzma5:i386 once libexpat1 is paired).
const ROUNDS: usize = 8;

/// The `name=version` arguments that let apt install `absent` (foreign packages of `arch`
/// among them) where a lagging index keeps foreign packages from their native twins'
/// versions, or the lines saying why they cannot be paired. apt's own simulation names the
/// packages; nothing is installed here.
pub fn pins_for(absent: &[&str], arch: &str) -> Result<Vec<String>, String> {
    let mut pins: Vec<String> = Vec::new();
    for _ in 0..ROUNDS {
        let out = Command::new("apt-get")
            .args(["install", "-s", "-q", "--no-install-recommends"])
            .args(absent)
            .args(&pins)
            .output()
            .map_err(|e| format!("apt-get: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let pinned = |n: &str| pins.iter().any(|p| p.starts_with(&format!("{n}=")));
        if out.status.success() {
            // A native twin moved to the common version takes its installed siblings of the
            // same source with it (libexpat1-dev with libexpat1), or apt would remove them.
            let removed: Vec<String> = removals(&text).into_iter().filter(|n| !pinned(n)).collect();
            if removed.is_empty() {
                return Ok(pins);
            }
            let versions: Vec<String> = pins
                .iter()
                .filter_map(|p| p.split_once('=').map(|(_, v)| v.to_string()))
                .collect();
            let new = keep_installed(&parse_policy(&apt_cache_policy(&removed)?), &versions);
            if new.is_empty() {
                return Err(format!(
                    "pairing the {arch} packages with {} would remove installed packages: {}; \
                     rerun once `apt-get update` fetches every index",
                    pins.join(" "),
                    removed.join(" ")
                ));
            }
            pins.extend(new);
            continue;
        }
        let named: Vec<String> = unmet_foreign(&text, arch).into_iter().filter(|n| !pinned(n)).collect();
        let mut query = Vec::new();
        for n in &named {
            query.push(n[..n.len() - arch.len() - 1].to_string());
            query.push(n.clone());
        }
        let new = if query.is_empty() {
            Vec::new()
        } else {
            plan_pins(&parse_policy(&apt_cache_policy(&query)?), arch)?
        };
        if new.is_empty() {
            // Not a pairing problem: the install itself says what it is.
            return Ok(pins);
        }
        pins.extend(new);
    }
    Ok(pins)
}

/// The packages an `apt-get install -s` would remove ("Remv libexpat1-dev [2.5.0-1+deb12u1]").
pub fn removals(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.strip_prefix("Remv "))
        .filter_map(|r| r.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// `name=version` for each package of `policies` that is installed and has one of `versions`
/// (its source's version, which its twin was pinned to), so it moves with the twin.
pub fn keep_installed(policies: &[Policy], versions: &[String]) -> Vec<String> {
    policies
        .iter()
        .filter(|p| p.installed.is_some())
        .filter_map(|p| {
            let v = versions.iter().find(|v| p.versions.contains(v))?;
            Some(format!("{}={v}", p.name))
        })
        .collect()
}

/// The pins for every native/foreign pair in `policies`, or every blocked pair's line.
pub fn plan_pins(policies: &[Policy], arch: &str) -> Result<Vec<String>, String> {
    let suffix = format!(":{arch}");
    let mut pins = Vec::new();
    let mut blocked = Vec::new();
    for foreign in policies.iter().filter(|p| p.name.ends_with(&suffix)) {
        let base = &foreign.name[..foreign.name.len() - suffix.len()];
        let Some(native) = policies.iter().find(|p| p.name == base) else {
            continue;
        };
        match pair(native, foreign) {
            Pairing::AsIs => {}
            Pairing::At(v) => {
                let (a, b) = (format!("{base}={v}"), format!("{}={v}", foreign.name));
                if !pins.contains(&a) {
                    pins.extend([a, b]);
                }
            }
            Pairing::Blocked(why) => {
                if !blocked.contains(&why) {
                    blocked.push(why)
                }
            }
        }
    }
    if blocked.is_empty() {
        Ok(pins)
    } else {
        Err(blocked.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded on Debian 12 (2026-11-28) with bookworm-security's i386 index missing: the
    /// native twins' candidates come from the security index, the i386 ones from main only.
    const LAGGING: &str = "libexpat1:
  Installed: 2.5.0-1+deb12u1
  Candidate: 2.5.0-1+deb12u5
  Version table:
     2.5.0-1+deb12u5 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
     2.5.0-1+deb12u2 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
 *** 2.5.0-1+deb12u1 100
        100 /var/lib/dpkg/status
libexpat1:i386:
  Installed: (none)
  Candidate: 2.5.0-1+deb12u2
  Version table:
     2.5.0-1+deb12u2 500
        500 http://deb.debian.org/debian bookworm/main i386 Packages
liblzma5:
  Installed: 5.4.1-1
  Candidate: 5.4.1-1+deb12u2
  Version table:
     5.4.1-1+deb12u2 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
     5.4.1-1+deb12u1 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
 *** 5.4.1-1 100
        100 /var/lib/dpkg/status
liblzma5:i386:
  Installed: (none)
  Candidate: 5.4.1-1+deb12u1
  Version table:
     5.4.1-1+deb12u1 500
        500 http://deb.debian.org/debian bookworm/main i386 Packages
libx11-6:
  Installed: 2:1.8.4-2+deb12u2
  Candidate: 2:1.8.4-2+deb12u2
  Version table:
 *** 2:1.8.4-2+deb12u2 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
        100 /var/lib/dpkg/status
libx11-6:i386:
  Installed: (none)
  Candidate: 2:1.8.4-2+deb12u2
  Version table:
     2:1.8.4-2+deb12u2 500
        500 http://deb.debian.org/debian bookworm/main i386 Packages
";

    #[test]
    fn policy_output_is_read_with_its_installed_version_in_the_table() {
        let p = parse_policy(LAGGING);
        assert_eq!(p.len(), 6);
        assert_eq!(p[0].name, "libexpat1");
        assert_eq!(p[0].installed.as_deref(), Some("2.5.0-1+deb12u1"));
        assert_eq!(p[0].candidate.as_deref(), Some("2.5.0-1+deb12u5"));
        assert_eq!(p[0].versions, ["2.5.0-1+deb12u5", "2.5.0-1+deb12u2", "2.5.0-1+deb12u1"]);
        assert_eq!(p[1].name, "libexpat1:i386");
        assert_eq!(p[1].installed, None);
        assert_eq!(p[1].versions, ["2.5.0-1+deb12u2"]);
        assert_eq!(p[4].versions, ["2:1.8.4-2+deb12u2"]);
    }

    /// The case that broke a fresh machine: both pinned at the version both architectures
    /// have (the native twins are upgraded from the image's, not downgraded); a pair apt
    /// handles itself is left alone.
    #[test]
    fn a_lagging_index_pins_both_at_the_newest_common_version() {
        assert_eq!(
            plan_pins(&parse_policy(LAGGING), "i386").unwrap(),
            [
                "libexpat1=2.5.0-1+deb12u2",
                "libexpat1:i386=2.5.0-1+deb12u2",
                "liblzma5=5.4.1-1+deb12u1",
                "liblzma5:i386=5.4.1-1+deb12u1",
            ]
        );
    }

    /// The twin already installed from the newer index: never downgraded; the line names the
    /// package, both versions and the command.
    #[test]
    fn a_twin_newer_than_every_foreign_version_stops_with_the_command() {
        let text = LAGGING.replace(
            "     2.5.0-1+deb12u5 500\n        500 http://deb.debian.org/debian-security",
            " *** 2.5.0-1+deb12u5 500\n        500 http://deb.debian.org/debian-security",
        );
        let text = text.replace("  Installed: 2.5.0-1+deb12u1", "  Installed: 2.5.0-1+deb12u5");
        let err = plan_pins(&parse_policy(&text), "i386").unwrap_err();
        assert!(err.contains("libexpat1: native 2.5.0-1+deb12u5 is installed"), "{err}");
        assert!(err.contains("(2.5.0-1+deb12u2)"), "{err}");
        assert!(
            err.contains("apt-get install --allow-downgrades libexpat1=2.5.0-1+deb12u2 libexpat1:i386=2.5.0-1+deb12u2"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "one line per package: {err}");
    }

    #[test]
    fn a_fetched_index_needs_no_pin() {
        // Both architectures' candidates from the security index.
        let text = "libexpat1:
  Installed: 2.5.0-1+deb12u1
  Candidate: 2.5.0-1+deb12u5
  Version table:
     2.5.0-1+deb12u5 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
 *** 2.5.0-1+deb12u1 100
        100 /var/lib/dpkg/status
libexpat1:i386:
  Installed: (none)
  Candidate: 2.5.0-1+deb12u5
  Version table:
     2.5.0-1+deb12u5 500
        500 http://deb.debian.org/debian-security bookworm-security/main i386 Packages
";
        assert!(plan_pins(&parse_policy(text), "i386").unwrap().is_empty());
    }

    #[test]
    fn no_common_version_is_blocked_with_its_reason() {
        let text = "libfoo1:
  Installed: 2
  Candidate: 2
  Version table:
 *** 2 500
        100 /var/lib/dpkg/status
libfoo1:i386:
  Installed: (none)
  Candidate: 1
  Version table:
     1 500
        500 http://deb.debian.org/debian bookworm/main i386 Packages
";
        let err = plan_pins(&parse_policy(text), "i386").unwrap_err();
        assert!(
            err.starts_with("libfoo1: no version is known for both architectures"),
            "{err}"
        );
    }

    /// apt's words from a fresh Debian 12 machine with bookworm-security's i386 list missing.
    #[test]
    fn the_unmet_foreign_dependencies_are_read_from_apt() {
        let out = "Reading package lists...
Some packages could not be installed. This may mean that you have
The following information may help to resolve the situation:

The following packages have unmet dependencies:
 libegl-mesa0:i386 : Depends: libexpat1:i386 (>= 2.0.1) but it is not going to be installed
 libgbm1:i386 : Depends: libexpat1:i386 (>= 2.0.1) but it is not going to be installed
 libxml2:i386 : Depends: liblzma5:i386 (>= 5.1.1alpha+20120614) but it is not going to be installed
 python3 : PreDepends: python3-minimal (= 3.11.2-1+b1) but it is not going to be installed
           Depends: python3.11:i386 (>= 3.11.2-1~) but it is not going to be installed
E: Unable to correct problems, you have held broken packages.
 libfoo:i386 : Depends: libbar:i386 but it is not going to be installed
";
        assert_eq!(
            unmet_foreign(out, "i386"),
            ["libexpat1:i386", "liblzma5:i386", "python3.11:i386"]
        );
    }

    /// The same machine after the pairing: the image's -dev packages would be removed with
    /// their twins' move; they move with them instead.
    #[test]
    fn installed_siblings_move_with_the_pinned_twin() {
        let sim = "Remv libexpat1-dev [2.5.0-1+deb12u1]
Remv liblzma-dev [5.4.1-1]
Inst libexpat1 [2.5.0-1+deb12u1] (2.5.0-1+deb12u2 Debian:12.12/oldstable [amd64])";
        assert_eq!(removals(sim), ["libexpat1-dev", "liblzma-dev"]);
        let policy = "libexpat1-dev:
  Installed: 2.5.0-1+deb12u1
  Candidate: 2.5.0-1+deb12u5
  Version table:
     2.5.0-1+deb12u5 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
     2.5.0-1+deb12u2 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
 *** 2.5.0-1+deb12u1 100
        100 /var/lib/dpkg/status
liblzma-dev:
  Installed: 5.4.1-1
  Candidate: 5.4.1-1+deb12u2
  Version table:
     5.4.1-1+deb12u2 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
 *** 5.4.1-1 100
        100 /var/lib/dpkg/status
";
        let versions = ["2.5.0-1+deb12u2".to_string(), "5.4.1-1+deb12u1".to_string()];
        // liblzma-dev has no version its twin was pinned to: it stays a removal, which stops
        // the task.
        assert_eq!(
            keep_installed(&parse_policy(policy), &versions),
            ["libexpat1-dev=2.5.0-1+deb12u2"]
        );
    }
}
