//! The shared-memory ring between one PM sampler process (the writer) and any number of reader
//! processes (the app's collector thread, a launcher, the GL shim and the Vulkan layer).
//!
//! A file `pm-KEY.ring` in framescope's private runtime directory (`core::ctl::dir()`, made
//! 0700 and checked as `ctl` checks it), mapped shared. Everything in it is a 64-bit word
//! accessed atomically, so readers in other processes never race in Rust's sense. Layout:
//!
//! * a header of [`HEADER_WORDS`] words: magic, version, capacity, metric count, record size,
//!   writer pid, interval, `head` (records published), `heartbeat` (the writer's
//!   `CLOCK_MONOTONIC` ns, also moved while no sample comes), writer state, a seqlock-guarded
//!   status line, metric kinds and names;
//! * `capacity` fixed-size records: `seq`, start, end, values.
//!
//! Each record is a seqlock: the writer stores `seq = 2i+1` before writing record `i` and
//! `2i+2` after; a reader accepts record `i` only when it reads `2i+2` before and after copying
//! it, so it never uses a torn sample, and learns of records overwritten before it got to them
//! (the ring wrapped past it) by `head` and by `seq`.
//!
//! The writer creates the file under a temporary name and renames it into place once the
//! header is complete (magic stored last), so a reader never maps a half-made ring; a new
//! sampler replaces the file, which readers notice with [`RingReader::replaced`].

use super::attribute::PmSample;
use super::metrics::{MetricKind, MAX_METRICS};
use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU64, Ordering};

const MAGIC: u64 = u64::from_le_bytes(*b"FSPMRNG1");
/// 2: the status line grew from 256 bytes to [`STATUS_BYTES`] (the header from 4 to 8 KiB).
pub const VERSION: u64 = 2;
/// Words of the header (8 KiB).
pub const HEADER_WORDS: usize = 1024;
/// Longest status line, in bytes: room for a reason with its fix and what was searched. A
/// longer one is cut at a word and ends with "…" ([`clip_reason`]).
pub const STATUS_BYTES: usize = 1024;
/// Longest metric name, in bytes.
pub const NAME_BYTES: usize = 96;
/// Most records a ring holds (64 Mi samples would be hours at 10 kHz).
pub const MAX_CAPACITY: u64 = 1 << 26;

mod w {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 1;
    pub const CAPACITY: usize = 2;
    pub const METRICS: usize = 3;
    pub const RECORD_WORDS: usize = 4;
    pub const PID: usize = 5;
    pub const INTERVAL: usize = 6;
    pub const HEAD: usize = 7;
    pub const HEARTBEAT: usize = 8;
    pub const STATE: usize = 9;
    pub const STATUS_SEQ: usize = 10;
    pub const STATUS_LEN: usize = 11;
    pub const STATUS: usize = 12;
    pub const KINDS: usize = STATUS + super::STATUS_BYTES / 8;
    pub const NAMES: usize = KINDS + super::MAX_METRICS;
    pub const END: usize = NAMES + super::MAX_METRICS * super::NAME_BYTES / 8;
}
const _: () = assert!(w::END <= HEADER_WORDS);

/// Words of a record before its values: seq, start, end.
const RECORD_HEAD: usize = 3;

/// What the writer says it is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriterState {
    /// Sampling (or about to): samples come.
    Running,
    /// Not sampling for now, with why (another profiler holds the monitors; retrying).
    Waiting(String),
    /// Gave up, with why (no permission, unsupported device): no samples will come.
    Failed(String),
    /// Stopped on request.
    Stopped,
}

impl WriterState {
    fn code(&self) -> u64 {
        match self {
            WriterState::Running => 0,
            WriterState::Waiting(_) => 1,
            WriterState::Failed(_) => 2,
            WriterState::Stopped => 3,
        }
    }
}

/// What a reader concludes about the writer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// Its heartbeat is recent; its state.
    Alive(WriterState),
    /// No heartbeat for `silent_ns` (more than the bound asked for): the sampler died or hangs.
    Stale { silent_ns: u64 },
}

/// The ring's key for CUDA device `device` (what `framescope gpu-sampler --device` writes).
pub fn ring_key(device: usize) -> String {
    format!("gpu{device}")
}

/// The ring file of sampler `key` (a GPU's id) in `dir`.
pub fn path_in(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("pm-{key}.ring"))
}

fn key_ok(key: &str) -> Result<(), String> {
    if key.is_empty()
        || key.len() > 64
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        || key.starts_with('.')
    {
        return Err(format!("{key:?} is not a ring key (letters, digits, '-', '_', '.')"));
    }
    Ok(())
}

/// How long a writer whose process is gone may have been silent before its ring counts as
/// left behind. The heartbeat stands in where the pid cannot be checked (a sampler in another
/// pid namespace, whose pid means nothing here, still beats every decode).
pub const GONE_AFTER_NS: u64 = 2_000_000_000;

/// Whether a sampler holds the ring of `key` in the private runtime directory: the ring is
/// there and its writer has not gone (a ring left by a sampler that crashed or was killed, or by
/// an older framescope that kept failed rings for good, is not one).
pub fn in_use(key: &str) -> bool {
    let Some(dir) = framescope_core::ctl::dir() else {
        return false;
    };
    if !path_in(&dir, key).is_file() {
        return false;
    }
    RingReader::open_in(&dir, key)
        .is_ok_and(|r| !r.writer_gone(framescope_core::clock::monotonic_now_ns(), GONE_AFTER_NS))
}

/// Whether process `pid` exists (`kill(pid, 0)`: only `ESRCH` says it does not).
fn process_exists(pid: u64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; it only checks the pid.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// The private runtime directory, made if missing and checked (as `ctl` does).
pub fn private_dir() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = framescope_core::ctl::dir().ok_or("XDG_RUNTIME_DIR is not set to an absolute path")?;
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    }
    framescope_core::ctl::dir_is_private(&dir)?;
    Ok(dir)
}

/// A shared mapping of a whole ring file, as words.
struct Map {
    ptr: *mut libc::c_void,
    words: usize,
}

// SAFETY: the mapping is only reached through `AtomicU64`s (`words()`), which are Sync; the
// pointer itself is never handed out.
unsafe impl Send for Map {}
// SAFETY: as above.
unsafe impl Sync for Map {}

impl Map {
    fn new(file: &File, bytes: usize, writable: bool) -> Result<Map, String> {
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh mapping of `bytes` bytes of an open file, chosen by the kernel
        // (no fixed address), shared; nothing else in this process is at that address.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), bytes, prot, libc::MAP_SHARED, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        Ok(Map { ptr, words: bytes / 8 })
    }

    fn words(&self) -> &[AtomicU64] {
        // SAFETY: `ptr` is a page-aligned mapping of `words * 8` bytes that lives as long as
        // `self` (unmapped in Drop). `AtomicU64` has the size and alignment of `u64`, and every
        // access to the ring, in this process and others, is atomic. A read-only mapping is
        // only loaded from (Relaxed/Acquire loads of 8 bytes, which Rust permits on read-only
        // memory); only the writer's mapping is stored to. A file truncated under us would
        // fault rather than race; the file is in a directory only this user can reach.
        unsafe { std::slice::from_raw_parts(self.ptr as *const AtomicU64, self.words) }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, of this size, unmapped once; no reference from
        // `words()` outlives `self`.
        unsafe { libc::munmap(self.ptr, self.words * 8) };
    }
}

fn store_str(words: &[AtomicU64], at: usize, max_bytes: usize, s: &str) -> usize {
    let mut bytes = s.as_bytes();
    if bytes.len() > max_bytes {
        let mut cut = max_bytes;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        bytes = &bytes[..cut];
    }
    for (i, word) in words[at..at + max_bytes / 8].iter().enumerate() {
        let mut b = [0u8; 8];
        for (j, x) in b.iter_mut().enumerate() {
            *x = bytes.get(i * 8 + j).copied().unwrap_or(0);
        }
        word.store(u64::from_le_bytes(b), Ordering::Relaxed);
    }
    bytes.len()
}

/// `s` whole when it fits `max_bytes`, else cut at the last space that leaves room for "…",
/// which marks the cut: a reason never ends mid-word.
pub fn clip_reason(s: &str, max_bytes: usize) -> std::borrow::Cow<'_, str> {
    const MORE: &str = "…";
    if s.len() <= max_bytes {
        return s.into();
    }
    let mut cut = max_bytes.saturating_sub(MORE.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = &s[..cut];
    let head = head.rfind(' ').map_or(head, |sp| &head[..sp]);
    format!("{}{MORE}", head.trim_end_matches([',', ';', ':', ' '])).into()
}

fn load_str(words: &[AtomicU64], at: usize, len: usize) -> String {
    let mut b = Vec::with_capacity(len);
    for word in &words[at..at + len.div_ceil(8)] {
        b.extend_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
    }
    b.truncate(len);
    String::from_utf8_lossy(&b).into_owned()
}

/// The sampler's end of a ring.
pub struct RingWriter {
    map: Map,
    path: PathBuf,
    dev_ino: (u64, u64),
    capacity: u64,
    metrics: usize,
    record_words: usize,
    head: u64,
}

impl RingWriter {
    /// Creates the ring of `key` in the private runtime directory.
    pub fn create(
        key: &str,
        names: &[&str],
        kinds: &[MetricKind],
        capacity: u64,
        interval_ns: u64,
    ) -> Result<RingWriter, String> {
        Self::create_in(&private_dir()?, key, names, kinds, capacity, interval_ns)
    }

    /// Creates the ring of `key` in `dir` (which must be private), replacing any earlier one.
    /// `capacity` is rounded up to a power of two.
    pub fn create_in(
        dir: &Path,
        key: &str,
        names: &[&str],
        kinds: &[MetricKind],
        capacity: u64,
        interval_ns: u64,
    ) -> Result<RingWriter, String> {
        key_ok(key)?;
        framescope_core::ctl::dir_is_private(dir)?;
        if names.is_empty() || names.len() > MAX_METRICS || kinds.len() != names.len() {
            return Err(format!(
                "{} metrics ({} kinds); 1 to {MAX_METRICS} fit a ring",
                names.len(),
                kinds.len()
            ));
        }
        if let Some(n) = names.iter().find(|n| n.len() > NAME_BYTES) {
            return Err(format!("metric name {n} is longer than {NAME_BYTES} bytes"));
        }
        let capacity = capacity.clamp(2, MAX_CAPACITY).next_power_of_two();
        let record_words = RECORD_HEAD + names.len();
        let words = HEADER_WORDS + capacity as usize * record_words;
        let path = path_in(dir, key);
        let tmp = dir.join(format!(".pm-{key}.ring.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        let made = (|| {
            file.set_len(words as u64 * 8)
                .map_err(|e| format!("{}: {e}", tmp.display()))?;
            let map = Map::new(&file, words * 8, true)?;
            {
                let h = map.words();
                h[w::VERSION].store(VERSION, Ordering::Relaxed);
                h[w::CAPACITY].store(capacity, Ordering::Relaxed);
                h[w::METRICS].store(names.len() as u64, Ordering::Relaxed);
                h[w::RECORD_WORDS].store(record_words as u64, Ordering::Relaxed);
                h[w::PID].store(u64::from(std::process::id()), Ordering::Relaxed);
                h[w::INTERVAL].store(interval_ns, Ordering::Relaxed);
                h[w::HEARTBEAT].store(framescope_core::clock::monotonic_now_ns(), Ordering::Relaxed);
                for (i, (n, k)) in names.iter().zip(kinds).enumerate() {
                    h[w::KINDS + i].store(u64::from(*k == MetricKind::Ratio) + 1, Ordering::Relaxed);
                    store_str(h, w::NAMES + i * NAME_BYTES / 8, NAME_BYTES, n);
                }
                // Last, with release: a reader that sees the magic sees the whole header.
                h[w::MAGIC].store(MAGIC, Ordering::Release);
            }
            std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(map)
        })();
        let map = match made {
            Ok(m) => m,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        let m = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(RingWriter {
            map,
            dev_ino: (m.dev(), m.ino()),
            path,
            capacity,
            metrics: names.len(),
            record_words,
            head: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The ring file's device and inode: whether the file at [`Self::path`] is still this one.
    pub fn identity(&self) -> (u64, u64) {
        self.dev_ino
    }

    /// Removes the ring file if it is still this writer's (a later sampler may have replaced
    /// it with its own).
    pub fn remove(self) {
        let ours = std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.dev_ino);
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// Records it holds.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Publishes one sample (values beyond the ring's metric count are dropped, missing ones
    /// are NaN) and beats the heart.
    pub fn publish(&mut self, s: &PmSample, now_ns: u64) {
        let h = self.map.words();
        let i = self.head;
        let base = HEADER_WORDS + (i % self.capacity) as usize * self.record_words;
        let rec = &h[base..base + self.record_words];
        rec[0].store(2 * i + 1, Ordering::Relaxed);
        // Orders the odd `seq` before the data stores for a reader that checks `seq` after
        // copying (the seqlock's writer side).
        fence(Ordering::Release);
        rec[1].store(s.start_ns, Ordering::Relaxed);
        rec[2].store(s.end_ns, Ordering::Relaxed);
        for (j, slot) in rec[RECORD_HEAD..].iter().enumerate().take(self.metrics) {
            let v = if j < s.len { s.values[j] } else { f64::NAN };
            slot.store(v.to_bits(), Ordering::Relaxed);
        }
        rec[0].store(2 * i + 2, Ordering::Release);
        self.head = i + 1;
        h[w::HEAD].store(self.head, Ordering::Release);
        h[w::HEARTBEAT].store(now_ns, Ordering::Release);
    }

    /// Says the writer is alive without a sample (while waiting to retry, or between decodes).
    pub fn heartbeat(&self, now_ns: u64) {
        self.map.words()[w::HEARTBEAT].store(now_ns, Ordering::Release);
    }

    /// Sets the state readers see, with its reason.
    pub fn set_state(&self, state: &WriterState, now_ns: u64) {
        let h = self.map.words();
        let text = match state {
            WriterState::Waiting(r) | WriterState::Failed(r) => r.as_str(),
            WriterState::Running | WriterState::Stopped => "",
        };
        let seq = h[w::STATUS_SEQ].load(Ordering::Relaxed);
        h[w::STATUS_SEQ].store(seq | 1, Ordering::Relaxed);
        fence(Ordering::Release);
        let len = store_str(h, w::STATUS, STATUS_BYTES, &clip_reason(text, STATUS_BYTES));
        h[w::STATUS_LEN].store(len as u64, Ordering::Relaxed);
        h[w::STATE].store(state.code(), Ordering::Relaxed);
        h[w::STATUS_SEQ].store((seq | 1) + 1, Ordering::Release);
        h[w::HEARTBEAT].store(now_ns, Ordering::Release);
    }
}

/// What one [`RingReader::read`] got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadOutcome {
    /// Samples written to the front of the buffer.
    pub read: usize,
    /// Samples overwritten before this reader got to them (it fell behind by more than the
    /// ring holds), or torn by a writer lapping it mid-copy.
    pub lost: u64,
}

/// A reader's end of a ring.
pub struct RingReader {
    map: Map,
    path: PathBuf,
    dev_ino: (u64, u64),
    capacity: u64,
    metrics: usize,
    record_words: usize,
    names: Vec<String>,
    kinds: Vec<MetricKind>,
    next: u64,
}

impl RingReader {
    /// Opens the ring of `key` in the private runtime directory.
    pub fn open(key: &str) -> Result<RingReader, String> {
        Self::open_in(&private_dir()?, key)
    }

    /// Opens the ring of `key` in `dir`, checking that the directory and the file are ours and
    /// private, and that the header is whole and consistent with the file's size. Reading
    /// starts at the oldest sample the ring still holds.
    pub fn open_in(dir: &Path, key: &str) -> Result<RingReader, String> {
        key_ok(key)?;
        framescope_core::ctl::dir_is_private(dir)?;
        let path = path_in(dir, key);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let m = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        if !m.file_type().is_file() || m.uid() != uid || m.mode() & 0o077 != 0 {
            return Err(format!(
                "{} is not a private file of ours (uid {}, mode {:o})",
                path.display(),
                m.uid(),
                m.mode() & 0o777
            ));
        }
        let bytes = m.len();
        if bytes < HEADER_WORDS as u64 * 8
            || bytes % 8 != 0
            || bytes > (HEADER_WORDS as u64 + MAX_CAPACITY * (RECORD_HEAD + MAX_METRICS) as u64) * 8
        {
            return Err(format!("{}: {bytes} bytes is no ring", path.display()));
        }
        let map = Map::new(&file, bytes as usize, false)?;
        let h = map.words();
        if h[w::MAGIC].load(Ordering::Acquire) != MAGIC {
            return Err(format!("{}: not a framescope PM ring", path.display()));
        }
        if h[w::VERSION].load(Ordering::Relaxed) != VERSION {
            return Err(format!(
                "{}: ring version {} (this framescope reads {VERSION})",
                path.display(),
                h[w::VERSION].load(Ordering::Relaxed)
            ));
        }
        let capacity = h[w::CAPACITY].load(Ordering::Relaxed);
        let metrics = h[w::METRICS].load(Ordering::Relaxed) as usize;
        let record_words = h[w::RECORD_WORDS].load(Ordering::Relaxed) as usize;
        let fits = capacity.is_power_of_two()
            && capacity <= MAX_CAPACITY
            && (1..=MAX_METRICS).contains(&metrics)
            && record_words == RECORD_HEAD + metrics
            && (HEADER_WORDS as u64 + capacity * record_words as u64) * 8 <= bytes;
        if !fits {
            return Err(format!("{}: inconsistent ring header", path.display()));
        }
        let mut names = Vec::with_capacity(metrics);
        let mut kinds = Vec::with_capacity(metrics);
        for i in 0..metrics {
            let raw = load_str(h, w::NAMES + i * NAME_BYTES / 8, NAME_BYTES);
            names.push(raw.trim_end_matches('\0').to_string());
            kinds.push(if h[w::KINDS + i].load(Ordering::Relaxed) == 2 {
                MetricKind::Ratio
            } else {
                MetricKind::Count
            });
        }
        let head = h[w::HEAD].load(Ordering::Acquire);
        Ok(RingReader {
            dev_ino: (m.dev(), m.ino()),
            map,
            path,
            capacity,
            metrics,
            record_words,
            names,
            kinds,
            next: head.saturating_sub(capacity),
        })
    }

    /// The metric names, in record order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn kinds(&self) -> &[MetricKind] {
        &self.kinds
    }

    /// The writer's sampling interval, ns.
    pub fn interval_ns(&self) -> u64 {
        self.map.words()[w::INTERVAL].load(Ordering::Relaxed)
    }

    /// Skips to the newest sample: later reads return only what comes after now.
    pub fn skip_to_newest(&mut self) {
        self.next = self.map.words()[w::HEAD].load(Ordering::Acquire);
    }

    /// Copies the samples published since the last read into `out` (at most `out.len()`;
    /// the rest wait for the next call), oldest first.
    pub fn read(&mut self, out: &mut [PmSample]) -> ReadOutcome {
        let h = self.map.words();
        let head = h[w::HEAD].load(Ordering::Acquire);
        let mut outcome = ReadOutcome::default();
        if head > self.next + self.capacity {
            outcome.lost += head - self.capacity - self.next;
            self.next = head - self.capacity;
        }
        while self.next < head && outcome.read < out.len() {
            let i = self.next;
            self.next += 1;
            let base = HEADER_WORDS + (i % self.capacity) as usize * self.record_words;
            let rec = &h[base..base + self.record_words];
            let want = 2 * i + 2;
            if rec[0].load(Ordering::Acquire) != want {
                outcome.lost += 1;
                continue;
            }
            let slot = &mut out[outcome.read];
            slot.start_ns = rec[1].load(Ordering::Relaxed);
            slot.end_ns = rec[2].load(Ordering::Relaxed);
            slot.len = self.metrics;
            for (v, word) in slot.values.iter_mut().zip(&rec[RECORD_HEAD..]) {
                *v = f64::from_bits(word.load(Ordering::Relaxed));
            }
            // Orders the copies before the second `seq` load (the seqlock's reader side).
            fence(Ordering::Acquire);
            if rec[0].load(Ordering::Relaxed) != want {
                outcome.lost += 1;
                continue;
            }
            outcome.read += 1;
        }
        outcome
    }

    /// Whether the writer is alive (heartbeat within `stale_after_ns` of `now_ns`, both
    /// `CLOCK_MONOTONIC`) and what it says it is doing.
    pub fn liveness(&self, now_ns: u64, stale_after_ns: u64) -> Liveness {
        let h = self.map.words();
        let beat = h[w::HEARTBEAT].load(Ordering::Acquire);
        let silent = now_ns.saturating_sub(beat);
        // The status line under its seqlock; a writer changing it twice while we copy is
        // retried a few times, then read as it is.
        let mut state = WriterState::Running;
        for _ in 0..4 {
            let s1 = h[w::STATUS_SEQ].load(Ordering::Acquire);
            let code = h[w::STATE].load(Ordering::Relaxed);
            let len = (h[w::STATUS_LEN].load(Ordering::Relaxed) as usize).min(STATUS_BYTES);
            let text = load_str(h, w::STATUS, len);
            fence(Ordering::Acquire);
            let s2 = h[w::STATUS_SEQ].load(Ordering::Relaxed);
            state = match code {
                1 => WriterState::Waiting(text),
                2 => WriterState::Failed(text),
                3 => WriterState::Stopped,
                _ => WriterState::Running,
            };
            if s1 == s2 && s1 & 1 == 0 {
                break;
            }
        }
        // A sampler that failed and still lives keeps its ring for the reason, which stays the
        // news however long ago it beat; once its process is gone the ring is only left over.
        let failed_and_held = matches!(state, WriterState::Failed(_)) && process_exists(self.writer_pid());
        if silent > stale_after_ns && !failed_and_held {
            return Liveness::Stale { silent_ns: silent };
        }
        Liveness::Alive(state)
    }

    /// The writer's process id (in the writer's pid namespace).
    pub fn writer_pid(&self) -> u64 {
        self.map.words()[w::PID].load(Ordering::Relaxed)
    }

    /// Whether the writer is gone for good: its process does not exist and it has been silent
    /// for more than `silent_after_ns`.
    pub fn writer_gone(&self, now_ns: u64, silent_after_ns: u64) -> bool {
        self.silent_ns(now_ns) > silent_after_ns && !process_exists(self.writer_pid())
    }

    /// How long the writer has said nothing (`CLOCK_MONOTONIC` ns): the age of a failed
    /// sampler's reason.
    pub fn silent_ns(&self, now_ns: u64) -> u64 {
        now_ns.saturating_sub(self.map.words()[w::HEARTBEAT].load(Ordering::Acquire))
    }

    /// Whether the file at the ring's path is no longer the one mapped (a new sampler made a
    /// new ring, or the old one was removed): reopen to follow it.
    pub fn replaced(&self) -> bool {
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) => (m.dev(), m.ino()) != self.dev_ino,
            Err(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::DirBuilderExt;
    use std::sync::atomic::AtomicUsize;

    static N: AtomicUsize = AtomicUsize::new(0);

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "fs-ring-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        d
    }

    fn sample(i: u64) -> PmSample {
        PmSample::new(i * 1000, i * 1000 + 1000, &[i as f64, 2.0 * i as f64])
    }

    fn writer(d: &Path, cap: u64) -> RingWriter {
        RingWriter::create_in(
            d,
            "0",
            &["a.sum", "b.avg.pct_of_peak_sustained_elapsed"],
            &[MetricKind::Count, MetricKind::Ratio],
            cap,
            1_000_000,
        )
        .unwrap()
    }

    #[test]
    fn samples_written_are_read_in_order_with_the_header() {
        let d = dir();
        let mut wr = writer(&d, 8);
        let mut r = RingReader::open_in(&d, "0").unwrap();
        assert_eq!(r.names(), ["a.sum", "b.avg.pct_of_peak_sustained_elapsed"]);
        assert_eq!(r.kinds(), [MetricKind::Count, MetricKind::Ratio]);
        assert_eq!(r.interval_ns(), 1_000_000);
        for i in 0..5 {
            wr.publish(&sample(i), 1);
        }
        let mut buf = [PmSample::new(0, 0, &[]); 3];
        assert_eq!(r.read(&mut buf), ReadOutcome { read: 3, lost: 0 });
        assert_eq!(buf[0].values(), &[0.0, 0.0]);
        assert_eq!(buf[2], sample(2));
        assert_eq!(r.read(&mut buf), ReadOutcome { read: 2, lost: 0 });
        assert_eq!(buf[1], sample(4));
        assert_eq!(r.read(&mut buf), ReadOutcome { read: 0, lost: 0 });
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_reader_that_fell_behind_counts_what_it_lost_after_wrap_around() {
        let d = dir();
        let mut wr = writer(&d, 4);
        let mut r = RingReader::open_in(&d, "0").unwrap();
        for i in 0..11 {
            wr.publish(&sample(i), 1);
        }
        let mut buf = [PmSample::new(0, 0, &[]); 16];
        // 11 published, 4 kept: 7 lost, samples 7..=10 read.
        assert_eq!(r.read(&mut buf), ReadOutcome { read: 4, lost: 7 });
        assert_eq!(buf[0], sample(7));
        assert_eq!(buf[3], sample(10));
        // A reader opened late starts at the oldest sample still held.
        let mut late = RingReader::open_in(&d, "0").unwrap();
        assert_eq!(late.read(&mut buf), ReadOutcome { read: 4, lost: 0 });
        assert_eq!(buf[0], sample(7));
        late.skip_to_newest();
        wr.publish(&sample(11), 1);
        assert_eq!(late.read(&mut buf), ReadOutcome { read: 1, lost: 0 });
        assert_eq!(buf[0], sample(11));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn readers_on_other_threads_never_see_a_torn_sample() {
        let d = dir();
        let mut wr = writer(&d, 16);
        let total = 200_000u64;
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let mut r = RingReader::open_in(&d, "0").unwrap();
                std::thread::spawn(move || {
                    let mut buf = [PmSample::new(0, 0, &[]); 8];
                    let (mut seen, mut lost, mut last) = (0u64, 0u64, None::<u64>);
                    while seen + lost < total {
                        let o = r.read(&mut buf);
                        lost += o.lost;
                        for s in &buf[..o.read] {
                            // Every field of a sample belongs to the same index.
                            let i = s.values[0] as u64;
                            assert_eq!(
                                (s.start_ns, s.end_ns, s.values[1]),
                                (i * 1000, i * 1000 + 1000, 2.0 * i as f64)
                            );
                            assert!(last < Some(i), "out of order");
                            last = Some(i);
                            seen += 1;
                        }
                        if o.read == 0 {
                            std::thread::yield_now();
                        }
                    }
                    (seen, lost)
                })
            })
            .collect();
        for i in 0..total {
            wr.publish(&sample(i), i);
        }
        for h in readers {
            let (seen, lost) = h.join().unwrap();
            assert_eq!(seen + lost, total);
            assert!(seen > 0);
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_dead_writer_is_stale_after_the_bound_and_states_carry_their_reason() {
        let d = dir();
        let wr = writer(&d, 4);
        let r = RingReader::open_in(&d, "0").unwrap();
        wr.set_state(
            &WriterState::Waiting("CUPTI_ERROR_HARDWARE_BUSY (26): another profiler holds the counters".into()),
            1_000,
        );
        assert_eq!(
            r.liveness(1_500, 1_000),
            Liveness::Alive(WriterState::Waiting(
                "CUPTI_ERROR_HARDWARE_BUSY (26): another profiler holds the counters".into()
            ))
        );
        wr.set_state(&WriterState::Running, 2_000);
        assert_eq!(r.liveness(2_000, 1_000), Liveness::Alive(WriterState::Running));
        drop(wr); // the writer dies: no more heartbeats
        assert_eq!(r.liveness(3_000, 1_000), Liveness::Alive(WriterState::Running));
        assert_eq!(r.liveness(3_001, 1_000), Liveness::Stale { silent_ns: 1_001 });
        let _ = std::fs::remove_dir_all(&d);
    }

    /// The pid of a process that has ended.
    fn dead_pid() -> u64 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        u64::from(pid)
    }

    #[test]
    fn a_failed_ring_whose_writer_is_gone_is_left_over_not_news() {
        let d = dir();
        let wr = writer(&d, 4);
        let r = RingReader::open_in(&d, "0").unwrap();
        wr.set_state(&WriterState::Failed("libcupti.so.12 not found".into()), 1_000);
        // Its writer (this process) lives: the reason stays the news.
        assert_eq!(
            r.liveness(10_000, 1_000),
            Liveness::Alive(WriterState::Failed("libcupti.so.12 not found".into()))
        );
        assert!(!r.writer_gone(10_000, 1_000));
        // The same ring once its process has ended: stale, and gone after the bound.
        wr.map.words()[w::PID].store(dead_pid(), Ordering::Relaxed);
        assert_eq!(r.liveness(10_000, 1_000), Liveness::Stale { silent_ns: 9_000 });
        assert!(!r.writer_gone(1_500, 1_000), "silent for less than the bound");
        assert!(r.writer_gone(10_000, 1_000));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_long_reason_is_kept_whole_or_cut_at_a_word_with_a_mark() {
        let d = dir();
        let wr = writer(&d, 4);
        let r = RingReader::open_in(&d, "0").unwrap();
        // CUPTI's reason as built, with many places searched: whole.
        let places: Vec<super::super::dl::Place> = (0..12)
            .map(|i| {
                super::super::dl::Place::Dir(format!("/opt/some/long/prefix/number/{i}/extras/CUPTI/lib64").into())
            })
            .collect();
        let why = super::super::dl::DlCupti::load_from(&places).err().unwrap();
        wr.set_state(&WriterState::Failed(why.clone()), 1_000);
        assert_eq!(r.liveness(1_000, 1_000), Liveness::Alive(WriterState::Failed(why)));
        // Longer than the ring holds: cut at a word, marked.
        let long = format!(
            "set FRAMESCOPE_CUPTI_DIR to the directory holding it; {}",
            "searched here ".repeat(200)
        );
        wr.set_state(&WriterState::Failed(long.clone()), 1_000);
        let Liveness::Alive(WriterState::Failed(got)) = r.liveness(1_000, 1_000) else {
            panic!("not failed")
        };
        assert!(got.len() <= STATUS_BYTES && got.ends_with("here…"), "{got}");
        assert!(long.starts_with(got.trim_end_matches('…')), "{got}");
        assert_eq!(clip_reason("short", 8), "short");
        assert_eq!(clip_reason("two words", 8), "two…");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_new_writer_replaces_the_ring_and_readers_notice() {
        let d = dir();
        let _w1 = writer(&d, 4);
        let r = RingReader::open_in(&d, "0").unwrap();
        assert!(!r.replaced());
        let _w2 = writer(&d, 4);
        assert!(r.replaced());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn only_private_rings_of_ours_are_opened() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir();
        let wr = writer(&d, 4);
        std::fs::set_permissions(wr.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = RingReader::open_in(&d, "0").err().unwrap();
        assert!(e.contains("not a private file"), "{e}");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = RingReader::open_in(&d, "0").err().unwrap();
        assert!(e.contains("open to other users"), "{e}");
        assert!(RingReader::open_in(&d, "../x").is_err());
        std::fs::write(d.join("pm-junk.ring"), [0u8; 10]).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(d.join("pm-junk.ring"), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(RingReader::open_in(&d, "junk").err().unwrap().contains("is no ring"));
        let _ = std::fs::remove_dir_all(&d);
    }
}
