//! The few GL functions the shim calls, loaded per context through the real
//! `glXGetProcAddressARB`/`eglGetProcAddress`, and what the context supports.
//!
//! Every call here leaves the state the app sees as it was: timestamp queries (`glQueryCounter`)
//! never become active, reads are only made of results already available, and the one binding
//! that can redirect a query read (`GL_QUERY_BUFFER`) is saved and restored around it. No call
//! here can raise a GL error for a supported feature, so the app's `glGetError` is untouched.

use crate::frames::WinSys;
use crate::hooks::gl_proc;
use std::ffi::{c_char, CStr};

pub const GL_VENDOR: u32 = 0x1F00;
pub const GL_RENDERER: u32 = 0x1F01;
pub const GL_VERSION: u32 = 0x1F02;
pub const GL_EXTENSIONS: u32 = 0x1F03;
pub const GL_NUM_EXTENSIONS: u32 = 0x821D;
pub const GL_TIMESTAMP: u32 = 0x8E28;
pub const GL_QUERY_COUNTER_BITS: u32 = 0x8864;
pub const GL_QUERY_RESULT: u32 = 0x8866;
pub const GL_QUERY_RESULT_AVAILABLE: u32 = 0x8867;
pub const GL_QUERY_BUFFER: u32 = 0x9192;
pub const GL_QUERY_BUFFER_BINDING: u32 = 0x9193;

type GetStringFn = unsafe extern "C" fn(u32) -> *const u8;
type GetStringiFn = unsafe extern "C" fn(u32, u32) -> *const u8;
type GetIntegervFn = unsafe extern "C" fn(u32, *mut i32);
type GetInteger64vFn = unsafe extern "C" fn(u32, *mut i64);
type GenQueriesFn = unsafe extern "C" fn(i32, *mut u32);
type DeleteQueriesFn = unsafe extern "C" fn(i32, *const u32);
type QueryCounterFn = unsafe extern "C" fn(u32, u32);
type GetQueryObjectuivFn = unsafe extern "C" fn(u32, u32, *mut u32);
type GetQueryObjectui64vFn = unsafe extern "C" fn(u32, u32, *mut u64);
type GetQueryivFn = unsafe extern "C" fn(u32, u32, *mut i32);
type BindBufferFn = unsafe extern "C" fn(u32, u32);
pub type FlushFn = unsafe extern "C" fn();

/// What the context is, from its strings.
#[derive(Clone, Debug, Default)]
pub struct GlInfo {
    pub renderer: String,
    pub vendor: String,
    pub version: String,
    /// OpenGL ES (from `GL_VERSION`'s `OpenGL ES` prefix).
    pub es: bool,
    pub major: u32,
    pub minor: u32,
}

impl GlInfo {
    pub fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// llvmpipe: a query's begin or end is binned into every tile of the current scene, and a
    /// tile with any command that is not a rectangle is rasterized by the general triangle
    /// rasterizer instead of the linear one (`lp_characterize_bin`/`rasterize_bin` in Mesa's
    /// `lp_rast.c`). A timestamp of ours in the app's scene would thus change which rasterizer
    /// draws the app's pixels: piglit's `vs-vec4-main-return` fails bare on llvmpipe 22.3 (a
    /// linear-rasterizer bug) and passed with our timestamps in its scene.
    pub fn bins_queries_into_scenes(&self) -> bool {
        self.renderer.starts_with("llvmpipe")
    }

    /// Zink (GL on Vulkan): the Vulkan layer measures these frames, so the shim stays out.
    pub fn is_zink(&self) -> bool {
        self.renderer.to_ascii_lowercase().contains("zink")
    }

    /// `x.y.z` after `Mesa ` in the version string, encoded like a Vulkan version.
    pub fn mesa_version_raw(&self) -> u32 {
        let Some(rest) = self.version.split("Mesa ").nth(1) else {
            return 0;
        };
        let mut n = rest
            .split(|c: char| !c.is_ascii_digit())
            .take(3)
            .map(|s| s.parse::<u32>().unwrap_or(0));
        let (a, b, c) = (n.next().unwrap_or(0), n.next().unwrap_or(0), n.next().unwrap_or(0));
        (a.min(127) << 22) | (b.min(1023) << 12) | c.min(4095)
    }
}

/// `glFlush` when `flush` is set (see [`GlFns::scene_break`]).
pub fn scene_break(flush: Option<FlushFn>) {
    if let Some(f) = flush {
        // SAFETY: glFlush of the current context takes no arguments. It does not wait for the
        // GPU to finish: llvmpipe queues the scene to its rasterizer threads (waiting only when
        // all its scenes are in flight, as the app's own flushes and swaps would).
        unsafe { f() };
    }
}

/// Parses `major.minor` from a `GL_VERSION` string (`4.5 (Compatibility Profile) Mesa 22.3.6`,
/// `OpenGL ES 3.2 Mesa 22.3.6`, `OpenGL ES-CM 1.1 ...`).
pub fn parse_version(v: &str) -> (bool, u32, u32) {
    let es = v.starts_with("OpenGL ES");
    let numbers = if es {
        v.split_whitespace()
            .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
            .unwrap_or("")
    } else {
        v.split_whitespace().next().unwrap_or("")
    };
    let mut parts = numbers.split('.').map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u32>()
            .unwrap_or(0)
    });
    (es, parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// The GL entry points of one context.
pub struct GlFns {
    get_string: GetStringFn,
    get_stringi: Option<GetStringiFn>,
    get_integerv: GetIntegervFn,
    get_integer64v: Option<GetInteger64vFn>,
    gen_queries: Option<GenQueriesFn>,
    delete_queries: Option<DeleteQueriesFn>,
    query_counter: Option<QueryCounterFn>,
    get_query_objectuiv: Option<GetQueryObjectuivFn>,
    get_query_objectui64v: Option<GetQueryObjectui64vFn>,
    get_queryiv: Option<GetQueryivFn>,
    bind_buffer: Option<BindBufferFn>,
    /// `glFlush`, only on drivers where a query of ours must not share a scene with the
    /// app's commands (see [`GlFns::scene_break`]).
    flush: Option<FlushFn>,
}

pub(crate) fn load<T: Copy>(ws: WinSys, name: &CStr) -> Option<T> {
    let p = gl_proc(ws, name);
    if p == 0 {
        return None;
    }
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<usize>());
    // SAFETY: T is always one of the fn-pointer types above, matching `name`'s GL signature,
    // and p is that function's non-null address.
    Some(unsafe { std::mem::transmute_copy::<usize, T>(&p) })
}

impl GlFns {
    /// Loads the basic queries; `None` if even `glGetString` is missing.
    pub fn load_basic(ws: WinSys) -> Option<GlFns> {
        Some(GlFns {
            get_string: load(ws, c"glGetString")?,
            get_integerv: load(ws, c"glGetIntegerv")?,
            get_stringi: None,
            get_integer64v: None,
            gen_queries: None,
            delete_queries: None,
            query_counter: None,
            get_query_objectuiv: None,
            get_query_objectui64v: None,
            get_queryiv: None,
            bind_buffer: None,
            flush: None,
        })
    }

    /// Loads the rest once the context's version is known (GLES uses the `EXT` names of
    /// `GL_EXT_disjoint_timer_query`).
    pub fn load_rest(&mut self, ws: WinSys, info: &GlInfo) {
        if info.major >= 3 {
            self.get_stringi = load(ws, c"glGetStringi");
        }
        if info.es {
            self.get_integer64v = load(ws, c"glGetInteger64vEXT").or_else(|| load(ws, c"glGetInteger64v"));
            self.gen_queries = load(ws, c"glGenQueriesEXT");
            self.delete_queries = load(ws, c"glDeleteQueriesEXT");
            self.query_counter = load(ws, c"glQueryCounterEXT");
            self.get_query_objectuiv = load(ws, c"glGetQueryObjectuivEXT");
            self.get_query_objectui64v = load(ws, c"glGetQueryObjectui64vEXT");
            self.get_queryiv = load(ws, c"glGetQueryivEXT");
        } else {
            self.get_integer64v = load(ws, c"glGetInteger64v");
            self.gen_queries = load(ws, c"glGenQueries");
            self.delete_queries = load(ws, c"glDeleteQueries");
            self.query_counter = load(ws, c"glQueryCounter");
            self.get_query_objectuiv = load(ws, c"glGetQueryObjectuiv");
            self.get_query_objectui64v = load(ws, c"glGetQueryObjectui64v");
            self.get_queryiv = load(ws, c"glGetQueryiv");
        }
        self.bind_buffer = load(ws, c"glBindBuffer");
        if info.bins_queries_into_scenes() {
            self.flush = load(ws, c"glFlush");
        }
    }

    /// `glFlush` where our queries need scenes of their own, else `None`.
    pub fn scene_break_fn(&self) -> Option<FlushFn> {
        self.flush
    }

    /// Ends the driver's current scene, so that a query of ours written next lands in a scene
    /// without the app's commands (only where [`GlInfo::bins_queries_into_scenes`]). Two in a
    /// row cost nothing: the second finds no scene to flush.
    pub fn scene_break(&self) {
        scene_break(self.flush);
    }

    /// A `glGetString` value, or empty.
    pub fn string(&self, name: u32) -> String {
        // SAFETY: glGetString returns null or a NUL-terminated string owned by the context,
        // which is current on this thread.
        unsafe {
            let p = (self.get_string)(name);
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p as *const c_char).to_string_lossy().into_owned()
            }
        }
    }

    pub fn info(&self) -> GlInfo {
        let version = self.string(GL_VERSION);
        let (es, major, minor) = parse_version(&version);
        GlInfo {
            renderer: self.string(GL_RENDERER),
            vendor: self.string(GL_VENDOR),
            version,
            es,
            major,
            minor,
        }
    }

    /// Whether the context lists `ext`. Uses `glGetStringi` on GL/GLES 3+ (where core profiles
    /// reject `glGetString(GL_EXTENSIONS)`), else the one string. Initialisation only.
    pub fn has_extension(&self, info: &GlInfo, ext: &str) -> bool {
        if info.major >= 3 {
            if let Some(gsi) = self.get_stringi {
                let mut n = 0i32;
                // SAFETY: valid pname on GL/GLES 3+; writes one integer into `n`.
                unsafe { (self.get_integerv)(GL_NUM_EXTENSIONS, &mut n) };
                return (0..n.max(0) as u32).any(|i| {
                    // SAFETY: i < GL_NUM_EXTENSIONS; the result is a context-owned C string or null.
                    let p = unsafe { gsi(GL_EXTENSIONS, i) };
                    // SAFETY: non-null results are NUL-terminated.
                    !p.is_null() && unsafe { CStr::from_ptr(p as *const c_char) }.to_bytes() == ext.as_bytes()
                });
            }
        }
        self.string(GL_EXTENSIONS).split_whitespace().any(|e| e == ext)
    }

    /// Whether timestamp queries can be used: the entry points exist, the context has timer
    /// queries (GL 3.3, `GL_ARB_timer_query`, or `GL_EXT_disjoint_timer_query` on GLES) and
    /// `GL_TIMESTAMP` has counter bits.
    pub fn supports_timestamps(&self, info: &GlInfo) -> bool {
        let entry_points = self.gen_queries.is_some()
            && self.delete_queries.is_some()
            && self.query_counter.is_some()
            && self.get_query_objectuiv.is_some()
            && self.get_query_objectui64v.is_some();
        if !entry_points {
            return false;
        }
        let ext = if info.es {
            self.has_extension(info, "GL_EXT_disjoint_timer_query")
        } else {
            info.at_least(3, 3) || self.has_extension(info, "GL_ARB_timer_query")
        };
        if !ext {
            return false;
        }
        let Some(giv) = self.get_queryiv else {
            return false;
        };
        let mut bits = 0i32;
        // SAFETY: (GL_TIMESTAMP, GL_QUERY_COUNTER_BITS) is valid with timer queries; writes `bits`.
        unsafe { giv(GL_TIMESTAMP, GL_QUERY_COUNTER_BITS, &mut bits) };
        bits > 0
    }

    /// Whether a buffer can be bound to `GL_QUERY_BUFFER` (which would redirect query reads).
    pub fn has_query_buffer(&self, info: &GlInfo) -> bool {
        self.bind_buffer.is_some()
            && ((!info.es && info.at_least(4, 4))
                || self.has_extension(info, "GL_ARB_query_buffer_object")
                || self.has_extension(info, "GL_AMD_query_buffer_object"))
    }

    pub fn gen_queries(&self, out: &mut [u32]) {
        if let Some(f) = self.gen_queries {
            // SAFETY: writes out.len() names into `out`.
            unsafe { f(out.len() as i32, out.as_mut_ptr()) };
        }
    }

    pub fn delete_queries(&self, ids: &[u32]) {
        if let Some(f) = self.delete_queries {
            // SAFETY: reads ids.len() names; deleting our own query names only.
            unsafe { f(ids.len() as i32, ids.as_ptr()) };
        }
    }

    /// `glQueryCounter(id, GL_TIMESTAMP)`: never an active query.
    pub fn timestamp(&self, id: u32) {
        if let Some(f) = self.query_counter {
            // SAFETY: id is one of our generated query names, never active.
            unsafe { f(id, GL_TIMESTAMP) };
        }
    }

    /// [`GlFns::timestamp`] in a scene of its own where the driver needs it: for the frame's
    /// timestamps, written where the swap ends the app's scene anyway (just before it, and
    /// just after it, before the app's next command).
    pub fn timestamp_own_scene(&self, id: u32) {
        self.scene_break();
        self.timestamp(id);
        self.scene_break();
    }

    /// Whether the result of an issued query is available (never waits).
    pub fn available(&self, id: u32) -> bool {
        let Some(f) = self.get_query_objectuiv else {
            return false;
        };
        let mut v = 0u32;
        // SAFETY: id has been issued; GL_QUERY_RESULT_AVAILABLE never blocks; writes `v`.
        unsafe { f(id, GL_QUERY_RESULT_AVAILABLE, &mut v) };
        v != 0
    }

    /// The result of a query whose result is available (so this does not wait).
    pub fn result(&self, id: u32) -> u64 {
        let Some(f) = self.get_query_objectui64v else {
            return 0;
        };
        let mut v = 0u64;
        // SAFETY: only called after `available(id)` returned true; writes `v`.
        unsafe { f(id, GL_QUERY_RESULT, &mut v) };
        v
    }

    /// The buffer bound to `GL_QUERY_BUFFER`; only call when [`GlFns::has_query_buffer`].
    pub fn query_buffer_binding(&self) -> u32 {
        let mut b = 0i32;
        // SAFETY: valid pname with query buffer objects; writes `b`.
        unsafe { (self.get_integerv)(GL_QUERY_BUFFER_BINDING, &mut b) };
        b as u32
    }

    pub fn bind_query_buffer(&self, buffer: u32) {
        if let Some(f) = self.bind_buffer {
            // SAFETY: binds 0 or the buffer the app had bound there.
            unsafe { f(GL_QUERY_BUFFER, buffer) };
        }
    }

    /// The GPU clock now (`glGetInteger64v(GL_TIMESTAMP)`, does not wait for the GPU).
    pub fn gpu_now(&self) -> Option<i64> {
        let f = self.get_integer64v?;
        let mut v = 0i64;
        // SAFETY: GL_TIMESTAMP is a valid pname with timer queries; writes `v`.
        unsafe { f(GL_TIMESTAMP, &mut v) };
        (v > 0).then_some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("4.5 (Compatibility Profile) Mesa 22.3.6"), (false, 4, 5));
        assert_eq!(parse_version("OpenGL ES 3.2 Mesa 22.3.6"), (true, 3, 2));
        assert_eq!(parse_version("OpenGL ES-CM 1.1 Mesa 22.3.6"), (true, 1, 1));
        assert_eq!(parse_version("4.6.0 NVIDIA 550.54.14"), (false, 4, 6));
        assert_eq!(parse_version(""), (false, 0, 0));
    }

    #[test]
    fn mesa_version_and_zink() {
        let i = GlInfo {
            version: "4.5 (Compatibility Profile) Mesa 22.3.6".into(),
            renderer: "zink (llvmpipe (LLVM 15.0.6, 256 bits))".into(),
            ..GlInfo::default()
        };
        assert_eq!(i.mesa_version_raw(), (22 << 22) | (3 << 12) | 6);
        assert!(i.is_zink());
    }
}
