//! framescope-glapp: a small OpenGL 4.3 core app with known work per frame, for framescope's GL
//! shim tests. It mirrors the Vulkan test app's `--scene regions`:
//!
//! ```text
//! glPushDebugGroup("Frame")
//!   glClear
//!   glPushDebugGroup("Shadows")  10 x glDrawArrays(GL_TRIANGLES, 0, 300)   glPopDebugGroup
//!   glPushDebugGroup("Main")    100 x glDrawArrays(GL_TRIANGLES, 0, 36)    glPopDebugGroup
//!   glPushDebugGroup("Post")      1 x glDrawArrays(GL_TRIANGLES, 0, 3)     glPopDebugGroup
//! glPopDebugGroup
//! glXSwapBuffers
//! ```
//!
//! `Post` is the full-screen triangle (-1,-1) (3,-1) (-1,3): its clipped area is exactly the
//! W x H viewport. The small triangles sit on the same 32x32 grid as in the Vulkan app.
//!
//! Everything is loaded at run time the way GL loaders do it: libX11 and libGL with `dlopen`,
//! the GLX functions with `dlsym`, GL functions with `glXGetProcAddressARB`, so an `LD_PRELOAD`
//! shim sees every call it hooks. No link-time dependency on X11 or GL.
//!
//! `--span`: a debug group `Span` open across swaps: pushed after `Frame` of frame 2 (before
//! its swap), popped before `Frame` of frame 5, so frames 3 and 4 run inside it.
//!
//! `--main-draws N`: `Main` draws N times instead of 100 (to overflow bounded sample rings).
//!
//! `--own-query`: on odd frames the app runs its own pipeline-statistics queries
//! (`GL_VERTICES_SUBMITTED_ARB` around the frame, `GL_FRAGMENT_SHADER_INVOCATIONS_ARB` around
//! each region) and reads them after the swap. Every frame it checks that no query of those
//! targets is current before it begins its own (`glGetQueryiv(..., GL_CURRENT_QUERY)`), and it
//! counts `glGetError` results around every frame.
//!
//! `--present-pixmap`: after each swap the app also presents the frame with the X11 Present
//! extension's `PresentPixmap` (serial = frame number), waits for its completion (paced by the
//! refresh) and reports the completions it got (`present_pixmap`); see `present_pixmap`.
//!
//! At exit it prints one line: `glapp-result {json}` with the frame count, the known answers
//! and what the app's own queries returned.
//!
//! `--storm N`: a lifecycle storm of N cycles instead (windows, shared contexts destroyed while
//! another is current, display reopened, fork + exec of a GL child); see `storm`.

use std::ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void, CStr, CString};
use std::process::ExitCode;

mod present_pixmap;
mod storm;

/// The one GL entry point the app imports at link time (`--direct-draws`): libGL.so.1 by its
/// file name, so no development symlink is needed to build.
mod direct {
    #[link(name = "libGL.so.1", kind = "dylib", modifiers = "+verbatim")]
    extern "C" {
        pub fn glDrawArrays(mode: u32, first: i32, count: i32);
    }
}

const USAGE: &str = concat!(
    "usage: framescope-glapp [--frames N] [--width W] [--height H] [--own-query] [--span] [--main-draws N] [--finish] [--new-program-at F] [--direct-draws] [--present-pixmap]\n",
    "       framescope-glapp --storm N [--width W] [--height H] [--main-draws N]\n",
);

struct Args {
    frames: u32,
    width: u32,
    height: u32,
    own_query: bool,
    span: bool,
    main_draws: u32,
    /// `--finish`: `glFinish` before every swap (a known wait for the frame timeline).
    finish: bool,
    /// `--new-program-at F`: at the start of frame F, compile and link the scene's program
    /// anew and draw with it (a program first used mid-run).
    new_program_at: Option<u32>,
    /// `--direct-draws`: the scene's draws call `glDrawArrays` as imported from libGL at link
    /// time, as natively built games do, instead of through the looked-up table.
    direct_draws: bool,
    /// `--present-pixmap`: each frame also presented with `PresentPixmap` (`present_pixmap`).
    present_pixmap: bool,
    /// `--storm N`: N lifecycle cycles (`storm`) instead of the normal run.
    storm: u32,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        frames: 12,
        width: 320,
        height: 240,
        own_query: false,
        span: false,
        main_draws: 100,
        finish: false,
        new_program_at: None,
        direct_draws: false,
        present_pixmap: false,
        storm: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut num = |name: &str| -> Result<u32, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .filter(|&v: &u32| v > 0)
                .ok_or_else(|| format!("{name} needs a positive integer"))
        };
        match arg.as_str() {
            "--frames" => a.frames = num("--frames")?,
            "--width" => a.width = num("--width")?,
            "--height" => a.height = num("--height")?,
            "--own-query" => a.own_query = true,
            "--span" => a.span = true,
            "--main-draws" => a.main_draws = num("--main-draws")?,
            "--storm" => a.storm = num("--storm")?,
            "--finish" => a.finish = true,
            "--new-program-at" => a.new_program_at = Some(num("--new-program-at")?),
            "--direct-draws" => a.direct_draws = true,
            "--present-pixmap" => a.present_pixmap = true,
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
        }
    }
    if a.storm > 0 && (a.own_query || a.span) {
        return Err(format!("--storm takes neither --own-query nor --span\n{USAGE}"));
    }
    Ok(a)
}

// ---- the scene -----------------------------------------------------------------------------

struct Region {
    label: &'static CStr,
    draws: u32,
    vertices: i32,
    fullscreen: bool,
    color: [f32; 4],
}

const REGIONS: [Region; 3] = [
    Region {
        label: c"Shadows",
        draws: 10,
        vertices: 300,
        fullscreen: false,
        color: [0.2, 0.2, 0.2, 1.0],
    },
    Region {
        label: c"Main",
        draws: 100,
        vertices: 36,
        fullscreen: false,
        color: [0.1, 0.7, 0.3, 1.0],
    },
    Region {
        label: c"Post",
        draws: 1,
        vertices: 3,
        fullscreen: true,
        color: [0.15, 0.15, 0.4, 1.0],
    },
];

const VERTEX_SHADER: &str = r#"#version 430 core
uniform int u_cell;
uniform int u_fullscreen;
void main() {
    if (u_fullscreen != 0) {
        // (-1,-1), (3,-1), (-1,3): one triangle whose clipped area is exactly the viewport.
        vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2) * 2.0 - 1.0;
        gl_Position = vec4(p, 0.0, 1.0);
        return;
    }
    // Each draw owns a cell of a 32x32 grid; its triangles tile an 8x8 sub-grid of that cell.
    int cell = u_cell % 1024;
    int tri = (gl_VertexID / 3) % 64;
    int corner = gl_VertexID % 3;
    vec2 cell_origin = vec2(cell % 32, cell / 32) * (2.0 / 32.0) - 1.0;
    float sub = 2.0 / 32.0 / 8.0;
    vec2 tri_origin = cell_origin + vec2(tri % 8, tri / 8) * sub;
    vec2 corner_offset = vec2(corner == 1 ? 1.0 : 0.0, corner == 2 ? 1.0 : 0.0) * sub * 0.9;
    gl_Position = vec4(tri_origin + corner_offset, 0.0, 1.0);
}
"#;

const FRAGMENT_SHADER: &str = r#"#version 430 core
uniform vec4 u_color;
out vec4 o_color;
void main() {
    o_color = u_color;
}
"#;

// ---- Xlib and GLX, loaded with dlopen/dlsym --------------------------------------------------

type Display = c_void;

#[repr(C)]
struct XVisualInfo {
    visual: *mut c_void,
    visualid: c_ulong,
    screen: c_int,
    depth: c_int,
    class: c_int,
    red_mask: c_ulong,
    green_mask: c_ulong,
    blue_mask: c_ulong,
    colormap_size: c_int,
    bits_per_rgb: c_int,
}

#[repr(C)]
struct XSetWindowAttributes {
    background_pixmap: c_ulong,
    background_pixel: c_ulong,
    border_pixmap: c_ulong,
    border_pixel: c_ulong,
    bit_gravity: c_int,
    win_gravity: c_int,
    backing_store: c_int,
    backing_planes: c_ulong,
    backing_pixel: c_ulong,
    save_under: c_int,
    event_mask: c_long,
    do_not_propagate_mask: c_long,
    override_redirect: c_int,
    colormap: c_ulong,
    cursor: c_ulong,
}

const CW_BORDER_PIXEL: c_ulong = 1 << 3;
const CW_COLORMAP: c_ulong = 1 << 13;
const INPUT_OUTPUT: c_uint = 1;
const ALLOC_NONE: c_int = 0;

const GLX_DOUBLEBUFFER: c_int = 5;
const GLX_RED_SIZE: c_int = 8;
const GLX_GREEN_SIZE: c_int = 9;
const GLX_BLUE_SIZE: c_int = 10;
const GLX_DRAWABLE_TYPE: c_int = 0x8010;
const GLX_RENDER_TYPE: c_int = 0x8011;
const GLX_X_RENDERABLE: c_int = 0x8012;
const GLX_WINDOW_BIT: c_int = 1;
const GLX_RGBA_BIT: c_int = 1;
const GLX_CONTEXT_MAJOR_VERSION_ARB: c_int = 0x2091;
const GLX_CONTEXT_MINOR_VERSION_ARB: c_int = 0x2092;
const GLX_CONTEXT_PROFILE_MASK_ARB: c_int = 0x9126;
const GLX_CONTEXT_CORE_PROFILE_BIT_ARB: c_int = 1;

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a C string valid until the next dl call on this thread;
    // it is copied at once.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown dl error".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

fn open_lib(name: &CStr) -> Result<*mut c_void, String> {
    // SAFETY: dlopen with a constant NUL-terminated name.
    let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW) };
    if h.is_null() {
        return Err(format!("cannot load {name:?}: {}", dl_error()));
    }
    Ok(h)
}

/// `dlsym(lib, name)` as a function pointer of type `T`.
///
/// # Safety
/// `T` must be the fn-pointer type of `name`'s C prototype.
unsafe fn sym<T: Copy>(lib: *mut c_void, name: &CStr) -> Result<T, String> {
    // SAFETY: a live handle and a NUL-terminated name.
    let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
    if p.is_null() {
        return Err(format!("{name:?} not found: {}", dl_error()));
    }
    // SAFETY: the caller names the matching type; both are pointer-sized.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

macro_rules! fn_table {
    ($table:ident { $($field:ident : $name:literal => fn($($arg:ty),*) $(-> $ret:ty)?;)* }) => {
        struct $table {
            $($field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }
        impl $table {
            /// Loads every entry with `get` (dlsym or glXGetProcAddressARB).
            fn load(mut get: impl FnMut(&CStr) -> Result<*mut c_void, String>) -> Result<Self, String> {
                Ok($table {
                    $($field: {
                        let p = get($name)?;
                        // SAFETY: the table spells the C prototype of each name, and p is that
                        // function's non-null address.
                        unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(p) }
                    },)*
                })
            }
        }
    };
}

fn_table!(Xlib {
    open_display: c"XOpenDisplay" => fn(*const c_char) -> *mut Display;
    close_display: c"XCloseDisplay" => fn(*mut Display) -> c_int;
    default_screen: c"XDefaultScreen" => fn(*mut Display) -> c_int;
    root_window: c"XRootWindow" => fn(*mut Display, c_int) -> c_ulong;
    create_colormap: c"XCreateColormap" => fn(*mut Display, c_ulong, *mut c_void, c_int) -> c_ulong;
    free_colormap: c"XFreeColormap" => fn(*mut Display, c_ulong) -> c_int;
    create_window: c"XCreateWindow" => fn(*mut Display, c_ulong, c_int, c_int, c_uint, c_uint, c_uint, c_int, c_uint, *mut c_void, c_ulong, *mut XSetWindowAttributes) -> c_ulong;
    destroy_window: c"XDestroyWindow" => fn(*mut Display, c_ulong) -> c_int;
    map_window: c"XMapWindow" => fn(*mut Display, c_ulong) -> c_int;
    store_name: c"XStoreName" => fn(*mut Display, c_ulong, *const c_char) -> c_int;
    sync: c"XSync" => fn(*mut Display, c_int) -> c_int;
    free: c"XFree" => fn(*mut c_void) -> c_int;
});

fn_table!(Glx {
    choose_fb_config: c"glXChooseFBConfig" => fn(*mut Display, c_int, *const c_int, *mut c_int) -> *mut *mut c_void;
    get_visual: c"glXGetVisualFromFBConfig" => fn(*mut Display, *mut c_void) -> *mut XVisualInfo;
    get_proc_address: c"glXGetProcAddressARB" => fn(*const c_char) -> *mut c_void;
    make_current: c"glXMakeCurrent" => fn(*mut Display, c_ulong, *mut c_void) -> c_int;
    swap_buffers: c"glXSwapBuffers" => fn(*mut Display, c_ulong);
    destroy_context: c"glXDestroyContext" => fn(*mut Display, *mut c_void);
});

type CreateContextAttribs =
    unsafe extern "C" fn(*mut Display, *mut c_void, *mut c_void, c_int, *const c_int) -> *mut c_void;

fn_table!(Gl {
    get_error: c"glGetError" => fn() -> u32;
    get_string: c"glGetString" => fn(u32) -> *const u8;
    get_integerv: c"glGetIntegerv" => fn(u32, *mut i32);
    get_stringi: c"glGetStringi" => fn(u32, u32) -> *const u8;
    viewport: c"glViewport" => fn(i32, i32, i32, i32);
    clear_color: c"glClearColor" => fn(f32, f32, f32, f32);
    clear: c"glClear" => fn(u32);
    finish: c"glFinish" => fn();
    create_shader: c"glCreateShader" => fn(u32) -> u32;
    shader_source: c"glShaderSource" => fn(u32, i32, *const *const c_char, *const i32);
    compile_shader: c"glCompileShader" => fn(u32);
    get_shaderiv: c"glGetShaderiv" => fn(u32, u32, *mut i32);
    get_shader_info_log: c"glGetShaderInfoLog" => fn(u32, i32, *mut i32, *mut c_char);
    create_program: c"glCreateProgram" => fn() -> u32;
    attach_shader: c"glAttachShader" => fn(u32, u32);
    link_program: c"glLinkProgram" => fn(u32);
    get_programiv: c"glGetProgramiv" => fn(u32, u32, *mut i32);
    get_program_info_log: c"glGetProgramInfoLog" => fn(u32, i32, *mut i32, *mut c_char);
    use_program: c"glUseProgram" => fn(u32);
    get_uniform_location: c"glGetUniformLocation" => fn(u32, *const c_char) -> i32;
    uniform1i: c"glUniform1i" => fn(i32, i32);
    uniform4f: c"glUniform4f" => fn(i32, f32, f32, f32, f32);
    gen_vertex_arrays: c"glGenVertexArrays" => fn(i32, *mut u32);
    bind_vertex_array: c"glBindVertexArray" => fn(u32);
    draw_arrays: c"glDrawArrays" => fn(u32, i32, i32);
    push_debug_group: c"glPushDebugGroup" => fn(u32, u32, i32, *const c_char);
    pop_debug_group: c"glPopDebugGroup" => fn();
    gen_queries: c"glGenQueries" => fn(i32, *mut u32);
    begin_query: c"glBeginQuery" => fn(u32, u32);
    end_query: c"glEndQuery" => fn(u32);
    get_queryiv: c"glGetQueryiv" => fn(u32, u32, *mut i32);
    get_query_objectui64v: c"glGetQueryObjectui64v" => fn(u32, u32, *mut u64);
});

const GL_NO_ERROR: u32 = 0;
const GL_RENDERER: u32 = 0x1F01;
const GL_VERSION: u32 = 0x1F02;
const GL_EXTENSIONS: u32 = 0x1F03;
const GL_NUM_EXTENSIONS: u32 = 0x821D;
const GL_COLOR_BUFFER_BIT: u32 = 0x4000;
const GL_TRIANGLES: u32 = 0x0004;
const GL_VERTEX_SHADER: u32 = 0x8B31;
const GL_FRAGMENT_SHADER: u32 = 0x8B30;
const GL_COMPILE_STATUS: u32 = 0x8B81;
const GL_LINK_STATUS: u32 = 0x8B82;
const GL_DEBUG_SOURCE_APPLICATION: u32 = 0x824A;
const GL_VERTICES_SUBMITTED_ARB: u32 = 0x82EE;
const GL_FRAGMENT_SHADER_INVOCATIONS_ARB: u32 = 0x82F4;
const GL_CURRENT_QUERY: u32 = 0x8865;
const GL_QUERY_RESULT: u32 = 0x8866;

fn gl_string(gl: &Gl, name: u32) -> String {
    // SAFETY: glGetString returns null or a NUL-terminated string owned by the current context.
    unsafe {
        let p = (gl.get_string)(name);
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p as *const c_char).to_string_lossy().into_owned()
        }
    }
}

fn has_extension(gl: &Gl, ext: &str) -> bool {
    let mut n = 0;
    // SAFETY: valid pname in a 4.3 core context; writes `n`.
    unsafe { (gl.get_integerv)(GL_NUM_EXTENSIONS, &mut n) };
    (0..n.max(0) as u32).any(|i| {
        // SAFETY: i < GL_NUM_EXTENSIONS; the result is a context-owned C string or null.
        let p = unsafe { (gl.get_stringi)(GL_EXTENSIONS, i) };
        // SAFETY: non-null results are NUL-terminated.
        !p.is_null() && unsafe { CStr::from_ptr(p as *const c_char) }.to_bytes() == ext.as_bytes()
    })
}

fn compile(gl: &Gl, kind: u32, src: &str) -> Result<u32, String> {
    let c = CString::new(src).expect("no NUL in shader source");
    // SAFETY: plain GL calls on the current context with valid pointers for their duration.
    unsafe {
        let s = (gl.create_shader)(kind);
        let ptr = c.as_ptr();
        (gl.shader_source)(s, 1, &ptr, std::ptr::null());
        (gl.compile_shader)(s);
        let mut ok = 0;
        (gl.get_shaderiv)(s, GL_COMPILE_STATUS, &mut ok);
        if ok == 0 {
            let mut log = vec![0 as c_char; 4096];
            (gl.get_shader_info_log)(s, log.len() as i32, std::ptr::null_mut(), log.as_mut_ptr());
            return Err(format!(
                "shader does not compile: {}",
                CStr::from_ptr(log.as_ptr()).to_string_lossy()
            ));
        }
        Ok(s)
    }
}

/// The scene's program and its uniforms.
struct Program {
    prog: u32,
    cell: i32,
    fullscreen: i32,
    color: i32,
}

/// Compiles and links the scene's program in the current context.
fn build_program(gl: &Gl) -> Result<Program, String> {
    let vs = compile(gl, GL_VERTEX_SHADER, VERTEX_SHADER)?;
    let fs = compile(gl, GL_FRAGMENT_SHADER, FRAGMENT_SHADER)?;
    // SAFETY: GL calls on the current context; every pointer is valid for the call.
    unsafe {
        let prog = (gl.create_program)();
        (gl.attach_shader)(prog, vs);
        (gl.attach_shader)(prog, fs);
        (gl.link_program)(prog);
        let mut ok = 0;
        (gl.get_programiv)(prog, GL_LINK_STATUS, &mut ok);
        if ok == 0 {
            let mut log = vec![0 as c_char; 4096];
            (gl.get_program_info_log)(prog, log.len() as i32, std::ptr::null_mut(), log.as_mut_ptr());
            return Err(format!(
                "program does not link: {}",
                CStr::from_ptr(log.as_ptr()).to_string_lossy()
            ));
        }
        Ok(Program {
            prog,
            cell: (gl.get_uniform_location)(prog, c"u_cell".as_ptr()),
            fullscreen: (gl.get_uniform_location)(prog, c"u_fullscreen".as_ptr()),
            color: (gl.get_uniform_location)(prog, c"u_color".as_ptr()),
        })
    }
}

/// The app's own statistics of one frame (`--own-query`).
struct OwnQueries {
    frame: u32,
    vertices: u64,
    /// Fragment-shader invocations per region.
    fs: [u64; 3],
}

struct Report {
    frames: u32,
    gl_errors: u32,
    first_errors: Vec<u32>,
    current_query_nonzero: u32,
    own: Vec<(u32, u64, [u64; 3])>,
    /// `--present-pixmap`: (serial, ust µs, msc, mode) of each completion the app received.
    presents: Vec<(u32, u64, u64, u8)>,
    renderer: String,
    version: String,
}

/// libX11 and GLX, loaded.
struct Libs {
    x: Xlib,
    glx: Glx,
}

fn load_libs() -> Result<Libs, String> {
    let libx = open_lib(c"libX11.so.6")?;
    let libgl = open_lib(c"libGL.so.1")?;
    // SAFETY: every entry's type in the table is its Xlib/GLX prototype.
    let x = Xlib::load(|n| unsafe { sym::<*mut c_void>(libx, n) })?;
    // SAFETY: as above; dlsym goes through whatever dlsym the process has (a shim's).
    let glx = Glx::load(|n| unsafe { sym::<*mut c_void>(libgl, n) })?;
    Ok(Libs { x, glx })
}

/// An open X display with the app's GLX framebuffer config.
struct Conn {
    dpy: *mut Display,
    screen: c_int,
    config: *mut c_void,
}

fn open_display(l: &Libs) -> Result<Conn, String> {
    let (x, glx) = (&l.x, &l.glx);
    // SAFETY: Xlib/GLX calls with the display opened here; the attribute list ends with 0.
    unsafe {
        let dpy = (x.open_display)(std::ptr::null());
        if dpy.is_null() {
            return Err("cannot open the X display (is DISPLAY set?)".into());
        }
        let screen = (x.default_screen)(dpy);
        let fb_attribs = [
            GLX_X_RENDERABLE,
            1,
            GLX_DRAWABLE_TYPE,
            GLX_WINDOW_BIT,
            GLX_RENDER_TYPE,
            GLX_RGBA_BIT,
            GLX_RED_SIZE,
            8,
            GLX_GREEN_SIZE,
            8,
            GLX_BLUE_SIZE,
            8,
            GLX_DOUBLEBUFFER,
            1,
            0,
        ];
        let mut n = 0;
        let configs = (glx.choose_fb_config)(dpy, screen, fb_attribs.as_ptr(), &mut n);
        if configs.is_null() || n == 0 {
            return Err("no GLX framebuffer config".into());
        }
        let config = *configs;
        (x.free)(configs as *mut c_void);
        Ok(Conn { dpy, screen, config })
    }
}

/// A mapped window of the config's visual, and its colormap.
fn create_window(l: &Libs, c: &Conn, width: u32, height: u32) -> Result<(c_ulong, c_ulong), String> {
    let (x, glx) = (&l.x, &l.glx);
    // SAFETY: Xlib/GLX calls on the live display with objects created just before.
    unsafe {
        let vi = (glx.get_visual)(c.dpy, c.config);
        if vi.is_null() {
            return Err("no visual for the GLX config".into());
        }
        let root = (x.root_window)(c.dpy, c.screen);
        let colormap = (x.create_colormap)(c.dpy, root, (*vi).visual, ALLOC_NONE);
        let mut swa: XSetWindowAttributes = std::mem::zeroed();
        swa.colormap = colormap;
        swa.border_pixel = 0;
        let window = (x.create_window)(
            c.dpy,
            root,
            0,
            0,
            width,
            height,
            0,
            (*vi).depth,
            INPUT_OUTPUT,
            (*vi).visual,
            CW_BORDER_PIXEL | CW_COLORMAP,
            &mut swa,
        );
        (x.free)(vi as *mut c_void);
        (x.store_name)(c.dpy, window, c"framescope-glapp".as_ptr());
        (x.map_window)(c.dpy, window);
        (x.sync)(c.dpy, 0);
        Ok((window, colormap))
    }
}

/// `glXCreateContextAttribsARB`, looked up as apps do.
fn create_context_fn(l: &Libs) -> Result<CreateContextAttribs, String> {
    // SAFETY: a NUL-terminated name.
    let create = unsafe { (l.glx.get_proc_address)(c"glXCreateContextAttribsARB".as_ptr()) };
    if create.is_null() {
        return Err("no glXCreateContextAttribsARB".into());
    }
    // SAFETY: the extension's prototype.
    Ok(unsafe { std::mem::transmute::<*mut c_void, CreateContextAttribs>(create) })
}

/// A GL 4.3 core context, sharing `share`'s objects unless it is null.
fn create_context(create: CreateContextAttribs, c: &Conn, share: *mut c_void) -> Result<*mut c_void, String> {
    let ctx_attribs = [
        GLX_CONTEXT_MAJOR_VERSION_ARB,
        4,
        GLX_CONTEXT_MINOR_VERSION_ARB,
        3,
        GLX_CONTEXT_PROFILE_MASK_ARB,
        GLX_CONTEXT_CORE_PROFILE_BIT_ARB,
        0,
    ];
    // SAFETY: a live display and config, a null or live share context, a 0-terminated list.
    let ctx = unsafe { create(c.dpy, c.config, share, 1, ctx_attribs.as_ptr()) };
    if ctx.is_null() {
        return Err("cannot create a GL 4.3 core context".into());
    }
    Ok(ctx)
}

/// The GL entry points, through `glXGetProcAddressARB` (a shim's, when there is one).
fn load_gl(glx: &Glx) -> Result<Gl, String> {
    Gl::load(|n| {
        // SAFETY: glXGetProcAddressARB takes a NUL-terminated name.
        let p = unsafe { (glx.get_proc_address)(n.as_ptr()) };
        if p.is_null() {
            Err(format!("GL function {n:?} not found"))
        } else {
            Ok(p)
        }
    })
}

fn run(a: &Args) -> Result<Report, String> {
    let libs = load_libs()?;
    let (x, glx) = (&libs.x, &libs.glx);
    let conn = open_display(&libs)?;
    let dpy = conn.dpy;
    let (window, colormap) = create_window(&libs, &conn, a.width, a.height)?;
    let ctx = create_context(create_context_fn(&libs)?, &conn, std::ptr::null_mut())?;
    // SAFETY: live display, window and context.
    if unsafe { (glx.make_current)(dpy, window, ctx) } == 0 {
        return Err("glXMakeCurrent failed".into());
    }

    let gl = load_gl(glx)?;
    let renderer = gl_string(&gl, GL_RENDERER);
    let version = gl_string(&gl, GL_VERSION);
    if a.own_query && !has_extension(&gl, "GL_ARB_pipeline_statistics_query") {
        return Err("--own-query needs GL_ARB_pipeline_statistics_query".into());
    }

    let program = build_program(&gl)?;
    let mut report = Report {
        frames: 0,
        gl_errors: 0,
        first_errors: Vec::new(),
        current_query_nonzero: 0,
        own: Vec::new(),
        presents: Vec::new(),
        renderer,
        version,
    };
    let check_errors = |report: &mut Report| loop {
        // SAFETY: glGetError on the current context.
        let e = unsafe { (gl.get_error)() };
        if e == GL_NO_ERROR {
            break;
        }
        report.gl_errors += 1;
        if report.first_errors.len() < 8 {
            report.first_errors.push(e);
        }
    };
    // SAFETY: GL calls on the current context; every pointer is valid for the call.
    let (cell, fullscreen, color, queries) = unsafe {
        (gl.use_program)(program.prog);
        let mut vao = 0;
        (gl.gen_vertex_arrays)(1, &mut vao);
        (gl.bind_vertex_array)(vao);
        (gl.viewport)(0, 0, a.width as i32, a.height as i32);
        (gl.clear_color)(0.0, 0.0, 0.0, 1.0);
        let mut queries = [0u32; 4];
        (gl.gen_queries)(4, queries.as_mut_ptr());
        (program.cell, program.fullscreen, program.color, queries)
    };
    check_errors(&mut report);

    let mut presenter = if a.present_pixmap {
        Some(present_pixmap::Presenter::new(window as u32)?)
    } else {
        None
    };
    let mut pending: Option<OwnQueries> = None;
    for frame in 0..a.frames {
        check_errors(&mut report);
        if a.new_program_at == Some(frame) {
            // The same sources: the uniform locations stay those of the first program.
            let p = build_program(&gl)?;
            // SAFETY: a program just linked in the current context.
            unsafe { (gl.use_program)(p.prog) };
        }
        let own = a.own_query && frame % 2 == 1;
        // SAFETY: GL calls on the current context with valid arguments.
        unsafe {
            for target in [GL_VERTICES_SUBMITTED_ARB, GL_FRAGMENT_SHADER_INVOCATIONS_ARB] {
                let mut cur = 0;
                (gl.get_queryiv)(target, GL_CURRENT_QUERY, &mut cur);
                if cur != 0 {
                    report.current_query_nonzero += 1;
                }
            }
            if own {
                (gl.begin_query)(GL_VERTICES_SUBMITTED_ARB, queries[0]);
            }
            if a.span && frame == 5 {
                (gl.pop_debug_group)();
            }
            (gl.push_debug_group)(GL_DEBUG_SOURCE_APPLICATION, 1, -1, c"Frame".as_ptr());
            (gl.clear)(GL_COLOR_BUFFER_BIT);
            let mut draw_index = 0;
            for (r, region) in REGIONS.iter().enumerate() {
                let draws = if r == 1 { a.main_draws } else { region.draws };
                (gl.push_debug_group)(GL_DEBUG_SOURCE_APPLICATION, 2, -1, region.label.as_ptr());
                if own {
                    (gl.begin_query)(GL_FRAGMENT_SHADER_INVOCATIONS_ARB, queries[1 + r]);
                }
                let [cr, cg, cb, ca] = region.color;
                (gl.uniform4f)(color, cr, cg, cb, ca);
                (gl.uniform1i)(fullscreen, region.fullscreen as i32);
                for _ in 0..draws {
                    (gl.uniform1i)(cell, draw_index);
                    if a.direct_draws {
                        direct::glDrawArrays(GL_TRIANGLES, 0, region.vertices);
                    } else {
                        (gl.draw_arrays)(GL_TRIANGLES, 0, region.vertices);
                    }
                    draw_index += 1;
                }
                if own {
                    (gl.end_query)(GL_FRAGMENT_SHADER_INVOCATIONS_ARB);
                }
                (gl.pop_debug_group)();
            }
            (gl.pop_debug_group)();
            if a.span && frame == 2 {
                (gl.push_debug_group)(GL_DEBUG_SOURCE_APPLICATION, 3, -1, c"Span".as_ptr());
            }
            if own {
                (gl.end_query)(GL_VERTICES_SUBMITTED_ARB);
            }
        }
        check_errors(&mut report);
        if a.finish {
            // SAFETY: the context is current.
            unsafe { (gl.finish)() };
        }
        // SAFETY: live display, window and current context.
        unsafe { (glx.swap_buffers)(dpy, window) };
        if let Some(p) = presenter.as_mut() {
            p.present(frame)?;
        }
        report.frames += 1;
        if let Some(p) = pending.take() {
            report.own.push((p.frame, p.vertices, p.fs));
        }
        if own {
            // Read after the swap (waits for this frame's GPU work: fine for a test app).
            let mut v = [0u64; 4];
            for (q, out) in queries.iter().zip(v.iter_mut()) {
                // SAFETY: a query that has ended; writes `out`.
                unsafe { (gl.get_query_objectui64v)(*q, GL_QUERY_RESULT, out) };
            }
            pending = Some(OwnQueries {
                frame,
                vertices: v[0],
                fs: [v[1], v[2], v[3]],
            });
        }
    }
    if let Some(p) = pending.take() {
        report.own.push((p.frame, p.vertices, p.fs));
    }
    check_errors(&mut report);
    if let Some(p) = presenter.take() {
        report.presents = p.completions;
    }
    // SAFETY: tear-down of the objects created above, context still current for glFinish (so
    // every result an interposed library waits for is ready when the context goes).
    unsafe {
        (gl.finish)();
        (glx.destroy_context)(dpy, ctx);
        (glx.make_current)(dpy, 0, std::ptr::null_mut());
        (x.destroy_window)(dpy, window);
        (x.free_colormap)(dpy, colormap);
        (x.close_display)(dpy);
    }
    Ok(report)
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("framescope-glapp: {e}");
            return ExitCode::from(2);
        }
    };
    if args.storm > 0 {
        return match storm::storm(&args, args.storm) {
            Ok(r) => {
                println!("{}", r.line());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("framescope-glapp: error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let r = match run(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("framescope-glapp: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let draws_of = |i: usize| if i == 1 { args.main_draws } else { REGIONS[i].draws };
    let draws: u32 = (0..REGIONS.len()).map(draws_of).sum();
    let vertices: i64 = (0..REGIONS.len())
        .map(|i| i64::from(draws_of(i)) * i64::from(REGIONS[i].vertices))
        .sum();
    let own: Vec<String> = r
        .own
        .iter()
        .map(|(f, v, fs)| {
            format!(
                "{{\"frame\":{f},\"vertices_submitted\":{v},\"fs_invocations\":{{\"Shadows\":{},\"Main\":{},\"Post\":{}}}}}",
                fs[0], fs[1], fs[2]
            )
        })
        .collect();
    let presents: Vec<String> = r
        .presents
        .iter()
        .map(|(s, u, msc, m)| format!("[{s},{u},{msc},{m}]"))
        .collect();
    println!(
        "glapp-result {{\"frames\":{},\"width\":{},\"height\":{},\"draws_per_frame\":{draws},\"vertices_per_frame\":{vertices},\"gl_errors\":{},\"first_errors\":{:?},\"current_query_nonzero\":{},\"own_queries\":[{}],\"present_pixmap\":[{}],\"renderer\":{},\"version\":{}}}",
        r.frames,
        args.width,
        args.height,
        r.gl_errors,
        r.first_errors,
        r.current_query_nonzero,
        own.join(","),
        presents.join(","),
        json_str(&r.renderer),
        json_str(&r.version),
    );
    ExitCode::SUCCESS
}
