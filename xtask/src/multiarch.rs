//! Foreign-architecture (i386) packages paired with their native twins.
//!
//! A `Multi-Arch: same` package must have one version on both architectures. When one index
//! lags (a mirror caught mid-sync fails bookworm-security's i386 list while its amd64 list
//! arrived), the native twin's installed or candidate version may not exist for i386, and apt
//! refuses the whole i386 set with "Depends: libexpat1:i386 … but it is not going to be
//! installed". So before installing, every `Multi-Arch: same` package in the i386 set's
//! dependency closure whose native twin is installed is checked: when the foreign candidate
//! equals neither the twin's installed nor its candidate version, both are installed at the
//! newest version both architectures have (apt's version tables list newest first, so no
//! version arithmetic is needed). A twin installed at a newer version than every foreign one
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

/// The foreign packages (`name:arch`) in `apt-cache depends --recurse` output, once each;
/// virtual ones (`<name:arch>`) left out.
pub fn closure_names(text: &str, arch: &str) -> Vec<String> {
    let suffix = format!(":{arch}");
    let mut names: Vec<String> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        // Top-level entries, and the targets of dependency lines ("  Depends: libexpat1:i386").
        let name = if !line.starts_with(' ') {
            t
        } else {
            t.split_once(": ").map(|(_, n)| n.trim()).unwrap_or("")
        };
        if name.ends_with(&suffix) && !name.starts_with('<') && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// The `name:arch` of each stanza of `apt-cache show` output that is `Multi-Arch: same`.
pub fn multi_arch_same(text: &str) -> Vec<String> {
    let mut same = Vec::new();
    for stanza in text.split("\n\n") {
        let field = |f: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(f).map(|v| v.trim().to_string()))
        };
        if field("Multi-Arch:").as_deref() == Some("same") {
            if let (Some(p), Some(a)) = (field("Package:"), field("Architecture:")) {
                let n = format!("{p}:{a}");
                if !same.contains(&n) {
                    same.push(n);
                }
            }
        }
    }
    same
}

fn apt_cache(args: &[&str]) -> Result<String, String> {
    let out = Command::new("apt-cache")
        .args(args)
        .output()
        .map_err(|e| format!("apt-cache: {e}"))?;
    // `show` exits non-zero when one name has no package; the others are still printed.
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The `name=version` arguments that pair `absent`'s closure's `Multi-Arch: same` packages of
/// `arch` with their native twins, or the lines saying why they cannot be paired.
pub fn pins_for(absent: &[&str], arch: &str) -> Result<Vec<String>, String> {
    let mut args = vec![
        "depends",
        "--recurse",
        "--no-recommends",
        "--no-suggests",
        "--no-conflicts",
        "--no-breaks",
        "--no-replaces",
        "--no-enhances",
    ];
    args.extend(absent.iter().copied());
    let closure = closure_names(&apt_cache(&args)?, arch);
    if closure.is_empty() {
        return Ok(Vec::new());
    }
    let mut show = vec!["show", "--no-all-versions"];
    show.extend(closure.iter().map(String::as_str));
    let same = multi_arch_same(&apt_cache(&show)?);
    let mut policy_args = vec!["policy".to_string()];
    for n in &same {
        if let Some((base, _)) = n.rsplit_once(':') {
            policy_args.push(base.to_string());
            policy_args.push(n.clone());
        }
    }
    let refs: Vec<&str> = policy_args.iter().map(String::as_str).collect();
    let policies = parse_policy(&apt_cache(&refs)?);
    plan_pins(&policies, arch)
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

    #[test]
    fn the_closure_keeps_real_foreign_packages_and_multi_arch_same_is_read_per_stanza() {
        let depends = "libgl1-mesa-dri:i386
  Depends: libc6:i386
  Depends: libexpat1:i386
 |Depends: <libfoo:i386>
  Depends: dpkg
libexpat1:i386
  Depends: libc6:i386
<libdrm-common:i386>
dpkg:i386
";
        assert_eq!(
            closure_names(depends, "i386"),
            ["libgl1-mesa-dri:i386", "libc6:i386", "libexpat1:i386", "dpkg:i386"]
        );
        let show = "Package: libexpat1
Version: 2.5.0-1+deb12u2
Architecture: i386
Multi-Arch: same

Package: dpkg
Version: 1.21.23
Architecture: i386
Multi-Arch: foreign
";
        assert_eq!(multi_arch_same(show), ["libexpat1:i386"]);
    }
}
