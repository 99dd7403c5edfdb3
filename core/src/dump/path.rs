//! Dump path templates: `%p` pid, `%n` exe name, `%t` UTC start time, `%%` a `%`.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// Expands a dump path template. `%t` is the UTC start time as `YYYYmmdd-HHMMSS`; a leading
/// `~/` is the home directory; any other `%x` is kept as written. `exe_name` is made safe for
/// a file name (`/` and control characters become `_`).
pub fn expand(template: &str, pid: u32, exe_name: &str, start_unix_s: u64, home: Option<&str>) -> String {
    let out = expand_bytes(
        template.as_bytes(),
        pid,
        exe_name,
        start_unix_s,
        home.map(str::as_bytes),
    );
    // Only ASCII and whole UTF-8 strings were inserted into UTF-8 text.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// [`expand`] for paths as the OS has them: bytes, not necessarily UTF-8 (a file name may
/// hold any byte but `/` and NUL, and `FRAMESCOPE_DUMP` may name one).
pub fn expand_os(template: &OsStr, pid: u32, exe_name: &str, start_unix_s: u64, home: Option<&OsStr>) -> OsString {
    OsString::from_vec(expand_bytes(
        template.as_bytes(),
        pid,
        exe_name,
        start_unix_s,
        home.map(OsStr::as_bytes),
    ))
}

fn expand_bytes(template: &[u8], pid: u32, exe_name: &str, start_unix_s: u64, home: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(template.len() + 32);
    let mut rest = template;
    if let (Some(h), Some(r)) = (home, template.strip_prefix(b"~/")) {
        let mut h = h;
        while let Some(t) = h.strip_suffix(b"/") {
            h = t;
        }
        out.extend_from_slice(h);
        out.push(b'/');
        rest = r;
    }
    let mut bytes = rest.iter().copied();
    while let Some(b) = bytes.next() {
        if b != b'%' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'p') => out.extend_from_slice(pid.to_string().as_bytes()),
            Some(b'n') => {
                let safe: String = exe_name
                    .chars()
                    .map(|c| if c == '/' || c.is_control() { '_' } else { c })
                    .collect();
                out.extend_from_slice(safe.as_bytes());
            }
            Some(b't') => out.extend_from_slice(utc_stamp(start_unix_s).as_bytes()),
            Some(b'%') => out.push(b'%'),
            Some(other) => {
                out.push(b'%');
                out.push(other);
            }
            None => out.push(b'%'),
        }
    }
    out
}

/// `YYYYmmdd-HHMMSS` in UTC for seconds since the Unix epoch.
pub fn utc_stamp(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm),
/// so no date crate is needed for one file name.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps_of_known_instants() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        // 2000-02-29 12:34:56 UTC = 951827696 (leap day in a century leap year).
        assert_eq!(utc_stamp(951_827_696), "20000229-123456");
        // 2024-12-31 23:59:59 UTC = 1735689599.
        assert_eq!(utc_stamp(1_735_689_599), "20241231-235959");
    }

    #[test]
    fn expands_every_placeholder() {
        let p = expand("/tmp/%n-%p-%t-100%%-%q%", 42, "vk/cube", 0, None);
        assert_eq!(p, "/tmp/vk_cube-42-19700101-000000-100%-%q%");
        assert_eq!(expand("~/d/%p.jsonl", 7, "x", 0, Some("/home/u/")), "/home/u/d/7.jsonl");
        assert_eq!(expand("~/d", 7, "x", 0, None), "~/d");
    }

    #[test]
    fn non_utf8_bytes_pass_through() {
        let t = OsStr::from_bytes(b"/tmp/\xff\xfe-%p.jsonl");
        let home = OsStr::from_bytes(b"/h\xff");
        assert_eq!(expand_os(t, 9, "x", 0, None).as_bytes(), b"/tmp/\xff\xfe-9.jsonl");
        let t = OsStr::from_bytes(b"~/%n");
        assert_eq!(expand_os(t, 9, "a/b", 0, Some(home)).as_bytes(), b"/h\xff/a_b");
    }
}
