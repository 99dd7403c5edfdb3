//! The file seam: bounded reads, FIFOs that do not block, fixture roots that cannot be left,
//! and the scripted fake's sequences, directories and links.

use framescope_collectors::seam::{FixtureFs, Fs, RealFs, ScriptedFs, Step, READ_CAP};
use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("sensors_seam_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn real_reads_are_capped_and_reuse_the_buffer() {
    let d = scratch("cap");
    let big = d.join("big");
    std::fs::write(&big, vec![b'x'; READ_CAP * 3]).unwrap();
    let mut fs = RealFs;
    let mut buf = Vec::new();
    fs.read(&big, &mut buf).unwrap();
    assert_eq!(buf.len(), READ_CAP);
    let cap = buf.capacity();
    std::fs::write(d.join("small"), b"42\n").unwrap();
    fs.read(&d.join("small"), &mut buf).unwrap();
    assert_eq!(buf, b"42\n");
    assert_eq!(buf.capacity(), cap, "the caller's buffer is reused, not replaced");
    assert_eq!(
        fs.read(&d.join("nope"), &mut buf).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

#[test]
fn a_fifo_does_not_block() {
    let d = scratch("fifo");
    let p = d.join("gpu_busy_percent");
    // mkfifo(1) rather than libc::mkfifo: the crate keeps `unsafe` to its sysconf call.
    let st = std::process::Command::new("mkfifo")
        .arg(&p)
        .status()
        .expect("mkfifo(1)");
    assert!(st.success());
    let mut buf = vec![1, 2, 3];
    // No writer: a blocking open would hang here; the read gives nothing instead.
    let r = RealFs.read(&p, &mut buf);
    assert!(r.is_err() || buf.is_empty(), "{r:?} {buf:?}");
}

#[test]
fn fixture_paths_stay_under_the_root() {
    let d = scratch("fixture");
    std::fs::create_dir_all(d.join("proc/self")).unwrap();
    std::fs::write(d.join("proc/self/statm"), b"1 2 3").unwrap();
    std::fs::write(d.join("secret"), b"outside /proc").unwrap();
    let mut fs = FixtureFs::new(d.join("proc"));
    let mut buf = Vec::new();
    fs.read(Path::new("/self/statm"), &mut buf).unwrap();
    assert_eq!(buf, b"1 2 3");
    // `..` is dropped: this is `<root>/secret`, which does not exist.
    assert!(fs.read(Path::new("/../secret"), &mut buf).is_err());
    let mut names = Vec::new();
    fs.list_dir(Path::new("/self"), &mut names).unwrap();
    assert_eq!(names, [OsString::from("statm")]);
}

#[test]
fn scripted_sequences_dirs_and_links() {
    let mut fs = ScriptedFs::new();
    fs.file("/proc/stat", ["a", "b"])
        .steps("/sys/x/gone", vec![Step::Data(b"1".to_vec()), Step::Missing])
        .file("/sys/x/big", [vec![b'y'; READ_CAP + 10]])
        .link("/sys/x/device", "../../0000:03:00.0");
    let mut buf = Vec::new();
    for want in ["a", "b", "b"] {
        fs.read(Path::new("/proc/stat"), &mut buf).unwrap();
        assert_eq!(buf, want.as_bytes(), "the last content repeats");
    }
    fs.read(Path::new("/sys/x/gone"), &mut buf).unwrap();
    assert_eq!(
        fs.read(Path::new("/sys/x/gone"), &mut buf).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    fs.read(Path::new("/sys/x/big"), &mut buf).unwrap();
    assert_eq!(buf.len(), READ_CAP, "the fake caps like the real one");
    let mut names = Vec::new();
    fs.list_dir(Path::new("/sys/x"), &mut names).unwrap();
    assert_eq!(names, ["big", "device", "gone"].map(OsString::from));
    fs.list_dir(Path::new("/"), &mut names).unwrap();
    assert_eq!(names, ["proc", "sys"].map(OsString::from));
    assert!(fs.list_dir(Path::new("/nope"), &mut names).is_err());
    assert_eq!(
        fs.read_link(Path::new("/sys/x/device")).unwrap(),
        Path::new("../../0000:03:00.0")
    );
    assert!(fs.read_link(Path::new("/proc/stat")).is_err());
    assert!(fs.read(Path::new("/sys/x/device"), &mut buf).is_err());
}
