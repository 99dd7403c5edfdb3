//! Files framescope opens inside the app, given hostile paths: a FIFO nobody reads (dump,
//! screenshot, config file), `/dev/zero` as config, symbolic links and existing files at the
//! dump or screenshot path, two processes on one dump path, the umask, a dump path that is
//! not UTF-8, and a pipe as dump path. The app must exit with its own status, within a
//! generous bound, and framescope must say what it did in one line.

use framescope_tests::artifacts::require_program;
use framescope_tests::{dump, validation, Artifacts, Outcome, Sandbox, Xvfb};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

/// Far above a 3-frame vkcube under validation (seconds) plus the dump writer's bounded finish
/// (3 s); what runs past it hangs, and the harness then fails the test.
const LIMIT: Duration = Duration::from_secs(120);

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

fn sandbox(name: &str, x: &Xvfb) -> Sandbox {
    require_program("vkcube");
    let mut sb = Sandbox::new(name);
    sb.display(x).with_validation();
    sb
}

/// The run exited 0 (vkcube's own status), cleanly, and printed exactly one line containing
/// `needle`.
fn assert_ok_with_one_line(out: &Outcome, what: &str, needle: &str) {
    assert_eq!(out.code(), Some(0), "{what}: {}", out.describe());
    validation::assert_clean(what, &out.combined());
    assert!(
        out.lines_with("framescope: internal error").is_empty(),
        "{what}: {}",
        out.describe()
    );
    let hits = out
        .lines_with("framescope: ")
        .into_iter()
        .filter(|l| l.contains(needle))
        .count();
    assert_eq!(hits, 1, "{what}: want one line with '{needle}'\n{}", out.describe());
}

fn frames_of(path: &Path) -> Vec<u64> {
    dump::read(path).u64s("frame")
}

#[test]
fn a_fifo_nobody_reads_as_dump_path_costs_one_line_not_a_hang() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = sandbox("fifo-dump", &x);
    let fifo = sb.path("dump.fifo");
    mkfifo(&fifo);
    sb.set("FRAMESCOPE_DUMP", fifo.display().to_string());
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "3"], LIMIT);
    assert_ok_with_one_line(&out, "fifo dump", "no process has open for reading");
}

#[test]
fn a_fifo_as_screenshot_path_costs_one_line_not_a_hang() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = sandbox("fifo-shot", &x);
    let fifo = sb.path("shot.fifo");
    mkfifo(&fifo);
    sb.set(
        "FRAMESCOPE_CONFIG",
        format!("screenshot=1,screenshot_path={}", fifo.display()),
    );
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "3"], LIMIT);
    assert_ok_with_one_line(&out, "fifo screenshot", "regular files only");
}

#[test]
fn a_fifo_as_config_file_costs_one_line_not_a_hang() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = sandbox("fifo-config", &x);
    let fifo = sb.path("config.fifo");
    mkfifo(&fifo);
    sb.set("FRAMESCOPE_CONFIG_FILE", fifo.display().to_string());
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "3"], LIMIT);
    assert_ok_with_one_line(&out, "fifo config", "it is a FIFO, not a regular file");
}

/// `/dev/zero` as config: one line, and the app's memory stays bounded. The address-space
/// limit (3 GiB, several times what vkcube under validation maps) turns unbounded reading
/// into a failed allocation instead of a machine running out of memory.
#[test]
fn dev_zero_as_config_file_is_refused_in_bounded_memory() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = sandbox("zero-config", &x);
    sb.set("FRAMESCOPE_CONFIG_FILE", "/dev/zero");
    sb.set("FRAMESCOPE_BIN", a.framescope.display().to_string());
    let out = sb.run(
        Path::new("/bin/sh"),
        &[
            "-c",
            "ulimit -v 3145728 && exec \"$FRAMESCOPE_BIN\" run -- vkcube --c 3",
        ],
        LIMIT,
    );
    assert_ok_with_one_line(&out, "/dev/zero config", "it is a character device, not a regular file");
}

#[test]
fn a_symlink_at_the_dump_or_screenshot_path_is_refused_and_its_target_untouched() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = sandbox("symlinks", &x);
    let target = sb.path("precious.txt");
    std::fs::write(&target, "precious\n").unwrap();
    std::os::unix::fs::symlink(&target, sb.path("dump.jsonl")).unwrap();
    std::os::unix::fs::symlink(&target, sb.path("shot.png")).unwrap();
    let dump_path = sb.path("dump.jsonl").display().to_string();
    let shot = sb.path("shot.png").display().to_string();
    sb.set("FRAMESCOPE_DUMP", dump_path)
        .set("FRAMESCOPE_CONFIG", format!("screenshot=1,screenshot_path={shot}"));
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "3"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let refusals = out.lines_with("framescope: ");
    let refusals: Vec<&String> = refusals.iter().filter(|l| l.contains("symbolic link")).collect();
    assert_eq!(
        refusals.len(),
        2,
        "one line each for dump and screenshot\n{}",
        out.describe()
    );
    assert!(refusals.iter().any(|l| l.contains("dump.jsonl")) && refusals.iter().any(|l| l.contains("shot.png")));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
}

#[test]
fn an_existing_file_at_the_dump_or_screenshot_path_gets_a_numbered_sibling() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = sandbox("existing", &x);
    std::fs::write(sb.path("run.jsonl"), "theirs\n").unwrap();
    std::fs::write(sb.path("shot.png"), "theirs\n").unwrap();
    let dump_path = sb.path("run.jsonl").display().to_string();
    let shot = sb.path("shot.png").display().to_string();
    sb.set("FRAMESCOPE_DUMP", dump_path)
        .set("FRAMESCOPE_CONFIG", format!("screenshot=1,screenshot_path={shot}"));
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "3"], LIMIT);
    assert_ok_with_one_line(&out, "existing dump", "writing the dump to");
    assert_ok_with_one_line(&out, "existing screenshot", "writing the screenshot to");
    assert_eq!(std::fs::read_to_string(sb.path("run.jsonl")).unwrap(), "theirs\n");
    assert_eq!(std::fs::read_to_string(sb.path("shot.png")).unwrap(), "theirs\n");
    assert_eq!(frames_of(&sb.path("run.1.jsonl")), vec![0, 1, 2]);
    let png = std::fs::read(sb.path("shot.1.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "the sibling holds the screenshot");
}

/// Two processes in a row with one dump path (no `%p`): each keeps its whole dump.
#[test]
fn two_processes_on_one_dump_path_both_keep_their_dumps() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = sandbox("two-procs", &x);
    let path = sb.path("seq.jsonl");
    sb.set("FRAMESCOPE_DUMP", path.display().to_string());
    let out = sb.run_under_framescope(&a, "sh", &["-c", "vkcube --c 60 && vkcube --c 3"], LIMIT);
    assert_ok_with_one_line(&out, "two processes", "writing the dump to");
    let first = dump::read(&path);
    assert_eq!(first.u64s("frame"), (0..60).collect::<Vec<u64>>());
    assert_eq!(first.summary.as_ref().expect("first summary")["frames"], 60);
    let second = dump::read(&sb.path("seq.1.jsonl"));
    assert_eq!(second.u64s("frame"), vec![0, 1, 2]);
    assert_eq!(second.summary.as_ref().expect("second summary")["frames"], 3);
}

/// New dumps are mode 0644 less the umask: with umask 0 that is 0644 (not 0666), with 027
/// it is 0640.
#[test]
fn dumps_are_created_0644_less_the_umask() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let sb = sandbox("umask", &x);
    let out = sb.run_under_framescope(
        &a,
        "sh",
        &[
            "-c",
            "umask 000 && FRAMESCOPE_DUMP=\"$HOME/a.jsonl\" vkcube --c 3 && \
             umask 027 && FRAMESCOPE_DUMP=\"$HOME/b.jsonl\" vkcube --c 3",
        ],
        LIMIT,
    );
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let mode = |name: &str| {
        let p = sb.path("home").join(name);
        std::fs::metadata(&p)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", p.display(), out.describe()))
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(format!("{:o}", mode("a.jsonl")), "644");
    assert_eq!(format!("{:o}", mode("b.jsonl")), "640");
}

/// `FRAMESCOPE_DUMP` with a byte that is not UTF-8 (0xff) names the file exactly.
#[test]
fn a_non_utf8_dump_path_is_written() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let sb = sandbox("non-utf8", &x);
    let out = sb.run_under_framescope(
        &a,
        "sh",
        &[
            "-c",
            "FRAMESCOPE_DUMP=\"$HOME/$(printf 'caf\\351-\\377.jsonl')\" exec vkcube --c 3",
        ],
        LIMIT,
    );
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let names: Vec<Vec<u8>> = std::fs::read_dir(sb.path("home"))
        .unwrap()
        .map(|e| e.unwrap().file_name().as_encoded_bytes().to_vec())
        .filter(|n| n.ends_with(b".jsonl"))
        .collect();
    assert_eq!(names, vec![b"caf\xe9-\xff.jsonl".to_vec()], "{}", out.describe());
    let path = sb.path("home").join(std::ffi::OsStr::from_bytes(&names[0]));
    assert_eq!(frames_of(&path), vec![0, 1, 2]);
}

/// `/dev/stdout` (a link to `/proc/self/fd/1`) when stdout is a pipe: the dump streams into it.
#[test]
fn dev_stdout_as_dump_path_streams_into_the_pipe() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = sandbox("stdout", &x);
    sb.set("FRAMESCOPE_DUMP", "/dev/stdout");
    // vkcube's stdout is a pipe to cat; cat's goes to the harness's file.
    let out = sb.run_under_framescope(&a, "sh", &["-c", "vkcube --c 3 | cat"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let lines: String = out
        .stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = sb.path("from-stdout.jsonl");
    std::fs::write(&p, lines).unwrap();
    let d = dump::read(&p);
    assert_eq!(d.u64s("frame"), vec![0, 1, 2], "{}", out.describe());
    assert_eq!(d.summary.as_ref().expect("summary")["frames"], 3);
}

/// A FIFO with a reader receives the whole dump.
#[test]
fn a_fifo_with_a_reader_receives_the_dump() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = sandbox("fifo-reader", &x);
    let fifo = sb.path("dump.fifo");
    mkfifo(&fifo);
    // The reading end, opened without waiting for a writer; a write end of our own keeps it
    // from seeing end-of-file before the app has opened the FIFO, and is closed after the run.
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let keep_open = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    // SAFETY: fcntl on a descriptor `reader` owns: back to blocking reads.
    assert_eq!(unsafe { libc::fcntl(reader.as_raw_fd(), libc::F_SETFL, 0) }, 0);
    let reading = std::thread::spawn(move || {
        let mut s = String::new();
        reader.read_to_string(&mut s).unwrap();
        s
    });
    sb.set("FRAMESCOPE_DUMP", fifo.display().to_string());
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "3"], LIMIT);
    drop(keep_open);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let text = reading.join().unwrap();
    let p = sb.path("from-fifo.jsonl");
    std::fs::write(&p, text).unwrap();
    let d = dump::read(&p);
    assert_eq!(d.u64s("frame"), vec![0, 1, 2], "{}", out.describe());
    assert_eq!(d.summary.as_ref().expect("summary")["frames"], 3);
}
