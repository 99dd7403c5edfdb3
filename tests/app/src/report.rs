//! The app's own present-to-present clock and the `testapp-result` line.

/// CLOCK_MONOTONIC in nanoseconds: the clock framescope's layer uses, so the
/// two measurements of the same present calls can be compared directly.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time of the calling thread in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the thread CPU clock always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A counter of the user-space instructions the calling thread retires (perf_event_open),
/// where the kernel allows it: unlike CPU time, it does not move with the clock frequency or
/// with what else runs on the machine, so what a layer adds per frame shows in short runs.
pub struct InstructionCounter(Option<i32>);

impl InstructionCounter {
    pub fn start() -> Self {
        // struct perf_event_attr (include/uapi/linux/perf_event.h), PERF_ATTR_SIZE_VER7: 128
        // bytes. type (u32) PERF_TYPE_HARDWARE = 0, size (u32), config (u64)
        // PERF_COUNT_HW_INSTRUCTIONS = 1, and the flag word (u64 at byte 40) with
        // exclude_kernel (bit 5) and exclude_hv (bit 6); counting starts enabled.
        let mut attr = [0u64; 16];
        attr[0] = 128 << 32;
        attr[1] = 1;
        attr[5] = (1 << 5) | (1 << 6);
        // SAFETY: `attr` is a valid, zero-extended perf_event_attr that outlives the call;
        // pid 0 and cpu -1 count the calling thread on any CPU.
        let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, attr.as_ptr(), 0, -1, -1, 0u64) };
        InstructionCounter((fd >= 0).then_some(fd as i32))
    }

    /// Instructions since start, or None where counting was refused.
    pub fn read(&self) -> Option<u64> {
        let fd = self.0?;
        let mut v = 0u64;
        // SAFETY: reading 8 bytes into a live u64 from the counter's descriptor.
        let n = unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
        (n == 8).then_some(v)
    }
}

/// Start times of vkQueuePresentKHR calls, reduced on the fly.
#[derive(Default, Debug)]
pub struct PresentClock {
    first: Option<u64>,
    last: Option<u64>,
    count: u64,
}

impl PresentClock {
    pub fn record(&mut self, now_ns: u64) {
        self.first.get_or_insert(now_ns);
        self.last = Some(now_ns);
        self.count += 1;
    }

    pub fn intervals(&self) -> u64 {
        self.count.saturating_sub(1)
    }

    /// The mean of consecutive intervals telescopes to (last - first) / n.
    pub fn mean_interval_ns(&self) -> Option<f64> {
        match (self.first, self.last, self.intervals()) {
            (Some(f), Some(l), n) if n > 0 => Some((l - f) as f64 / n as f64),
            _ => None,
        }
    }
}

/// Everything the result line reports; built by the render loop.
#[derive(Debug, Default)]
pub struct Report {
    pub frames: u64,
    pub windows: u32,
    pub draws_per_frame: u64,
    pub vertices_per_frame: u64,
    pub passes_per_frame: u32,
    pub width: u32,
    pub height: u32,
    pub present_mode: &'static str,
    pub scene: &'static str,
    pub threads: u32,
    pub submits_per_frame: u32,
    pub headless: bool,
    pub multiview: bool,
    pub render_pass: bool,
    pub swapchain_rebuilds: u64,
    pub presents: PresentClock,
    /// CPU time spent recording command buffers, all frames (benchmarks of per-draw overhead).
    pub record_ns: u64,
    /// CPU time of the thread that ran the frames, whole run (what a layer adds to the app's own
    /// thread, without the layer's threads).
    pub thread_cpu_ns: u64,
    /// User-space instructions of that thread, whole run (null where not allowed).
    pub thread_instructions: Option<u64>,
    /// File name of the library whose `vkCmdDraw` the device's dispatch calls: a layer that
    /// intercepts draws, or the next one down.
    pub cmd_draw_owner: String,
}

/// The file name (letters, digits, `._-` only) of the shared object holding `f`.
pub fn owner_of(f: *const libc::c_void) -> String {
    // SAFETY: Dl_info is plain C data, for which all zeroes is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address; `info` is a valid out-parameter.
    if unsafe { libc::dladdr(f, &mut info) } == 0 || info.dli_fname.is_null() {
        return "unknown".into();
    }
    // SAFETY: dladdr returned a NUL-terminated path that lives as long as the object is loaded.
    let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    let name = path.rsplit('/').next().unwrap_or("");
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric() || "._-".contains(*c))
        .collect()
}

impl Report {
    /// Hand-written JSON: every value is a number, bool or fixed identifier.
    pub fn line(&self) -> String {
        let opt = |v: Option<u64>| v.map_or("null".to_string(), |v| v.to_string());
        let mean = self
            .presents
            .mean_interval_ns()
            .map_or("null".to_string(), |m| format!("{m:.1}"));
        format!(
            "testapp-result {{\"frames\":{},\"windows\":{},\"draws_per_frame\":{},\
\"vertices_per_frame\":{},\"passes_per_frame\":{},\"width\":{},\"height\":{},\
\"mean_present_interval_ns\":{},\"present_intervals\":{},\"first_present_ns\":{},\
\"last_present_ns\":{},\"present_mode\":\"{}\",\"scene\":\"{}\",\"threads\":{},\
\"submits_per_frame\":{},\"headless\":{},\"swapchain_rebuilds\":{},\"record_ns\":{},\
\"multiview\":{},\"render_pass\":{},\"thread_cpu_ns\":{},\"thread_instructions\":{},\"cmd_draw_owner\":\"{}\"}}",
            self.frames,
            self.windows,
            self.draws_per_frame,
            self.vertices_per_frame,
            self.passes_per_frame,
            self.width,
            self.height,
            mean,
            self.presents.intervals(),
            opt(self.presents.first),
            opt(self.presents.last),
            self.present_mode,
            self.scene,
            self.threads,
            self.submits_per_frame,
            self.headless,
            self.swapchain_rebuilds,
            self.record_ns,
            self.multiview,
            self.render_pass,
            self.thread_cpu_ns,
            opt(self.thread_instructions),
            self.cmd_draw_owner,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_of_intervals() {
        let mut c = PresentClock::default();
        assert_eq!(c.mean_interval_ns(), None);
        c.record(100);
        assert_eq!(c.mean_interval_ns(), None);
        c.record(300);
        c.record(400);
        assert_eq!(c.intervals(), 2);
        assert_eq!(c.mean_interval_ns(), Some(150.0));
    }

    #[test]
    fn line_shape() {
        let r = Report {
            frames: 3,
            present_mode: "fifo",
            scene: "basic",
            ..Report::default()
        };
        let line = r.line();
        assert!(line.starts_with("testapp-result {\"frames\":3,"));
        assert!(line.contains("\"mean_present_interval_ns\":null"));
        assert!(line.contains("\"multiview\":false,\"render_pass\":false,"));
        assert!(line.contains("\"thread_instructions\":null,\"cmd_draw_owner\":\"\"}"));
        assert!(line.ends_with('}'));
    }
}
