//! `--storm N`: a GL lifecycle storm. Each of the N cycles creates two windows with a context
//! each, the second sharing the first's objects (the program is built in the first and used in
//! both), renders and swaps [`FRAMES_PER_WINDOW`] frames in each window alternately (switching
//! the current context every frame), destroys the first context while the second is current,
//! renders and swaps one more frame in the second (with the program the destroyed context
//! built), then destroys the second context (while current on even cycles, after releasing it
//! on odd ones) and both windows. The X display is closed and reopened every
//! [`REOPEN_EVERY`] cycles (and before each sample below). Every [`CHILD_EVERY`] cycles, while
//! both contexts are alive and the second is current, the app forks and the child execs
//! `/proc/self/exe --frames 3 --width 64 --height 64` (a short normal run that inherits the
//! environment, `LD_PRELOAD` included); the storm waits for it and needs exit status 0.
//!
//! After half the cycles and at the end it samples its resident memory and open descriptors
//! (after a pause, as the Vulkan test app's `--lifecycle` does, and after `malloc_trim`) and
//! prints one line:
//!
//! ```text
//! glapp-storm {"cycles":N,"swaps":S,"rss_kib":[A,B],"fds":[A,B],"children":K,"pid":P,"child_pids":[...],"gl_errors":0,"first_errors":[]}
//! ```

use super::*;

/// Frames per window before the first context goes.
pub const FRAMES_PER_WINDOW: u32 = 3;
/// A child is forked and exec'd in every cycle `i` with `i % CHILD_EVERY == CHILD_EVERY - 1`.
pub const CHILD_EVERY: u32 = 25;
/// The display is closed after every cycle `i` with `i % REOPEN_EVERY == REOPEN_EVERY - 1`.
pub const REOPEN_EVERY: u32 = 10;
/// The child's frames.
const CHILD_FRAMES: &str = "3";

pub struct StormReport {
    pub cycles: u32,
    pub swaps: u64,
    pub rss_kib: [u64; 2],
    pub fds: [usize; 2],
    pub child_pids: Vec<i32>,
    pub gl_errors: u32,
    pub first_errors: Vec<u32>,
}

impl StormReport {
    pub fn line(&self) -> String {
        let pids: Vec<String> = self.child_pids.iter().map(i32::to_string).collect();
        format!(
            "glapp-storm {{\"cycles\":{},\"swaps\":{},\"rss_kib\":[{},{}],\"fds\":[{},{}],\"children\":{},\"pid\":{},\"child_pids\":[{}],\"gl_errors\":{},\"first_errors\":{:?}}}",
            self.cycles,
            self.swaps,
            self.rss_kib[0],
            self.rss_kib[1],
            self.fds[0],
            self.fds[1],
            self.child_pids.len(),
            std::process::id(),
            pids.join(","),
            self.gl_errors,
            self.first_errors,
        )
    }

    fn check_errors(&mut self, gl: &Gl) {
        loop {
            // SAFETY: glGetError on the current context.
            let e = unsafe { (gl.get_error)() };
            if e == GL_NO_ERROR {
                break;
            }
            self.gl_errors += 1;
            if self.first_errors.len() < 8 {
                self.first_errors.push(e);
            }
        }
    }
}

/// This process's resident memory (KiB) and open file descriptors, after a pause that lets
/// threads winding down from the last cycle (the shim's, the driver's) finish and after
/// `malloc_trim`; the fewest
/// descriptors of a few counts (one a background thread holds for a moment is gone in some, a
/// leaked one stays in all). As `framescope-testapp --lifecycle` measures.
fn footprint() -> (u64, usize) {
    std::thread::sleep(std::time::Duration::from_millis(300));
    // Memory the allocator holds free goes back first: it is not a leak, and without this the
    // samples varied by several MiB from run to run (-7.7 to +4.3 MiB over 100 cycles under
    // framescope, +0.2 MiB bare), with it by tens of KiB.
    // SAFETY: a plain libc call.
    unsafe { libc::malloc_trim(0) };
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0);
    let fds = (0..5)
        .map(|k| {
            if k > 0 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
        })
        .min()
        .unwrap_or(0);
    (rss, fds)
}

/// One frame of the regions scene (the current context's program and VAO bound) and its swap.
fn frame(gl: &Gl, glx: &Glx, p: &Program, main_draws: u32, dpy: *mut Display, window: c_ulong) {
    // SAFETY: GL calls on the current context with valid arguments; live display and window.
    unsafe {
        (gl.push_debug_group)(GL_DEBUG_SOURCE_APPLICATION, 1, -1, c"Frame".as_ptr());
        (gl.clear)(GL_COLOR_BUFFER_BIT);
        let mut draw_index = 0;
        for (r, region) in REGIONS.iter().enumerate() {
            let draws = if r == 1 { main_draws } else { region.draws };
            (gl.push_debug_group)(GL_DEBUG_SOURCE_APPLICATION, 2, -1, region.label.as_ptr());
            let [cr, cg, cb, ca] = region.color;
            (gl.uniform4f)(p.color, cr, cg, cb, ca);
            (gl.uniform1i)(p.fullscreen, region.fullscreen as i32);
            for _ in 0..draws {
                (gl.uniform1i)(p.cell, draw_index);
                (gl.draw_arrays)(GL_TRIANGLES, 0, region.vertices);
                draw_index += 1;
            }
            (gl.pop_debug_group)();
        }
        (gl.pop_debug_group)();
        (glx.swap_buffers)(dpy, window);
    }
}

/// Binds `p` and a new VAO of the current context, and sets the viewport.
fn setup_context(gl: &Gl, p: &Program, width: u32, height: u32) {
    // SAFETY: GL calls on the current context; `vao` is written by glGenVertexArrays.
    unsafe {
        (gl.use_program)(p.prog);
        let mut vao = 0;
        (gl.gen_vertex_arrays)(1, &mut vao);
        (gl.bind_vertex_array)(vao);
        (gl.viewport)(0, 0, width as i32, height as i32);
        (gl.clear_color)(0.0, 0.0, 0.0, 1.0);
    }
}

fn make_current(glx: &Glx, dpy: *mut Display, window: c_ulong, ctx: *mut c_void) -> Result<(), String> {
    // SAFETY: a live display; a live window and context, or none and null to release.
    if unsafe { (glx.make_current)(dpy, window, ctx) } == 0 {
        return Err(format!("glXMakeCurrent({window:#x}, {ctx:?}) failed"));
    }
    Ok(())
}

/// Forks; the child execs `/proc/self/exe` for a short normal run. Returns its pid once it
/// exited 0.
fn fork_exec_child() -> Result<i32, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let argv0 = CString::new(exe.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    let args: Vec<CString> = [CHILD_FRAMES, "64", "64"]
        .iter()
        .zip(["--frames", "--width", "--height"])
        .flat_map(|(v, k)| [CString::new(k).unwrap(), CString::new(*v).unwrap()])
        .collect();
    let mut argv: Vec<*const c_char> = std::iter::once(argv0.as_ptr())
        .chain(args.iter().map(|a| a.as_ptr()))
        .collect();
    argv.push(std::ptr::null());
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: the child only calls execv (async-signal-safe) and _exit with what was prepared
    // before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: NUL-terminated path and a null-terminated argv of live C strings.
        unsafe {
            libc::execv(c"/proc/self/exe".as_ptr(), argv.as_ptr());
            libc::_exit(127);
        }
    }
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child; writes `status`.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("waitpid({pid}): {err}"));
        }
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!("child {pid} ended with wait status {status:#x}"));
    }
    Ok(pid)
}

pub fn storm(a: &Args, cycles: u32) -> Result<StormReport, String> {
    let libs = load_libs()?;
    let (x, glx) = (&libs.x, &libs.glx);
    let warm = (cycles / 2).max(1);
    let mut report = StormReport {
        cycles,
        swaps: 0,
        rss_kib: [0; 2],
        fds: [0; 2],
        child_pids: Vec::new(),
        gl_errors: 0,
        first_errors: Vec::new(),
    };
    let mut first = None;
    let mut open: Option<(Conn, CreateContextAttribs)> = None;
    for cycle in 0..cycles {
        let (conn, create) = match open.take() {
            Some(o) => o,
            None => {
                let c = open_display(&libs)?;
                let f = create_context_fn(&libs)?;
                (c, f)
            }
        };
        let dpy = conn.dpy;
        let (win_a, cmap_a) = create_window(&libs, &conn, a.width, a.height)?;
        let (win_b, cmap_b) = create_window(&libs, &conn, a.width, a.height)?;
        let ctx_a = create_context(create, &conn, std::ptr::null_mut())?;
        let ctx_b = create_context(create, &conn, ctx_a)?;

        make_current(glx, dpy, win_a, ctx_a)?;
        // Loaded again for every new context, as GL loaders (glad, epoxy) do.
        let gl = load_gl(glx)?;
        let p = build_program(&gl)?;
        setup_context(&gl, &p, a.width, a.height);
        report.check_errors(&gl);
        make_current(glx, dpy, win_b, ctx_b)?;
        // The program is ctx_a's, shared; the VAO is ctx_b's own (VAOs are not shared).
        setup_context(&gl, &p, a.width, a.height);
        report.check_errors(&gl);
        for _ in 0..FRAMES_PER_WINDOW {
            for (win, ctx) in [(win_a, ctx_a), (win_b, ctx_b)] {
                make_current(glx, dpy, win, ctx)?;
                frame(&gl, glx, &p, a.main_draws, dpy, win);
                report.swaps += 1;
                report.check_errors(&gl);
            }
        }
        // ctx_b is current, ctx_a alive: fork + exec a GL child now and then.
        if cycle % CHILD_EVERY == CHILD_EVERY - 1 {
            report.child_pids.push(fork_exec_child()?);
        }
        // The shared context goes while the other one is current; its objects live on in ctx_b.
        // SAFETY: a live display and context, not current in any thread.
        unsafe { (glx.destroy_context)(dpy, ctx_a) };
        frame(&gl, glx, &p, a.main_draws, dpy, win_b);
        report.swaps += 1;
        report.check_errors(&gl);
        // SAFETY: glFinish on the current context; then tear-down of the objects created above.
        unsafe {
            (gl.finish)();
            if cycle % 2 == 0 {
                (glx.destroy_context)(dpy, ctx_b);
                make_current(glx, dpy, 0, std::ptr::null_mut())?;
            } else {
                make_current(glx, dpy, 0, std::ptr::null_mut())?;
                (glx.destroy_context)(dpy, ctx_b);
            }
            (x.destroy_window)(dpy, win_a);
            (x.destroy_window)(dpy, win_b);
            (x.free_colormap)(dpy, cmap_a);
            (x.free_colormap)(dpy, cmap_b);
            (x.sync)(dpy, 0);
        }
        // The display is closed too before the first sample, so that both samples see the same
        // descriptors of ours (none).
        if cycle % REOPEN_EVERY == REOPEN_EVERY - 1 || cycle + 1 == warm {
            // SAFETY: a live display with nothing of ours left on it.
            unsafe { (x.close_display)(dpy) };
        } else {
            open = Some((conn, create));
        }
        if cycle + 1 == warm {
            first = Some(footprint());
        }
    }
    if let Some((conn, _)) = open.take() {
        // SAFETY: as above.
        unsafe { (x.close_display)(conn.dpy) };
    }
    let ((rss0, fd0), (rss1, fd1)) = (first.unwrap_or_default(), footprint());
    report.rss_kib = [rss0, rss1];
    report.fds = [fd0, fd1];
    Ok(report)
}
