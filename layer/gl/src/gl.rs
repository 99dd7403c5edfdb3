//! The GL entry points of one context, in one typed table ([`GlFns`]) loaded once when the
//! context is first measured, through the real `glXGetProcAddressARB`/`eglGetProcAddress`
//! (`winsys::gl_proc`), and shared (`Arc`) by everything that calls GL in that context: the
//! frame timestamps (`frames`), samples and statistics (`samples`, `stats`) and the HUD (whose
//! wrappers are in `hud::fns`). Also what the context is ([`GlInfo`]).
//!
//! A loaded pointer says nothing about support (GLX hands out a stub for any `gl*` name), so
//! whether an optional function may be called is decided from the context's version and
//! extensions; the wrappers only guard against a missing pointer.
//!
//! Every call here leaves the state the app sees as it was: timestamp queries (`glQueryCounter`)
//! never become active, reads are only made of results already available, and the one binding
//! that can redirect a query read (`GL_QUERY_BUFFER`) is saved and restored around it. No call
//! here can raise a GL error for a supported feature, so the app's `glGetError` is untouched.

use crate::loader::{gl_table, load};
use crate::winsys::{gl_proc, WinSys};
use std::ffi::{c_char, c_void, CStr};

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

    /// The driver's version in its own notation, from the vendor's part of `GL_VERSION`: the
    /// last number there (`4.5 (Compatibility Profile) Mesa 22.3.6` -> `22.3.6`,
    /// `4.6.0 NVIDIA 580.159.04` -> `580.159.04`); `None` when there is only the GL version.
    pub fn driver_version(&self) -> Option<String> {
        let mut numbers = self
            .version
            .split_whitespace()
            .filter(|w| w.starts_with(|c: char| c.is_ascii_digit()));
        numbers.next()?;
        numbers.next_back().map(str::to_string)
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

type E = u32; // GLenum
type I = i32; // GLint, GLsizei
type U = u32; // GLuint
type B = u8; // GLboolean
type F = f32; // GLfloat

gl_table! {
    /// The GL entry points of one context (`None` where the context gave no address).
    /// `required` marks the GL 2.0 / GLES 2.0 core functions (plus framebuffer objects)
    /// without which there is no HUD.
    pub struct GlFns {
        // Frame timestamps, samples and statistics (on GLES the query functions are those of
        // `GL_EXT_disjoint_timer_query`, see `GlFns::load`).
        get_string = c"glGetString": fn(E) -> *const u8, required;
        get_stringi = c"glGetStringi": fn(E, U) -> *const u8;
        get_integerv = c"glGetIntegerv": fn(E, *mut I), required;
        get_integer64v = c"glGetInteger64v": fn(E, *mut i64);
        gen_queries = c"glGenQueries": fn(I, *mut U);
        delete_queries = c"glDeleteQueries": fn(I, *const U);
        query_counter = c"glQueryCounter": fn(U, E);
        get_query_objectuiv = c"glGetQueryObjectuiv": fn(U, E, *mut U);
        get_query_objectui64v = c"glGetQueryObjectui64v": fn(U, E, *mut u64);
        get_queryiv = c"glGetQueryiv": fn(E, E, *mut I);
        begin_query = c"glBeginQuery": fn(E, U);
        end_query = c"glEndQuery": fn(E);
        /// Only on drivers where a query of ours must not share a scene with the app's
        /// commands (see [`GlFns::scene_break`]); `None` elsewhere.
        flush = c"glFlush": fn();
        // The HUD (see `hud::fns` for its wrappers).
        get_error = c"glGetError": fn() -> E;
        get_floatv = c"glGetFloatv": fn(E, *mut F), required;
        get_booleanv = c"glGetBooleanv": fn(E, *mut B), required;
        get_integeri_v = c"glGetIntegeri_v": fn(E, U, *mut I);
        get_floati_v = c"glGetFloati_v": fn(E, U, *mut F);
        get_booleani_v = c"glGetBooleani_v": fn(E, U, *mut B);
        is_enabled = c"glIsEnabled": fn(E) -> B, required;
        is_enabledi = c"glIsEnabledi": fn(E, U) -> B;
        enable = c"glEnable": fn(E), required;
        disable = c"glDisable": fn(E), required;
        enablei = c"glEnablei": fn(E, U);
        disablei = c"glDisablei": fn(E, U);
        active_texture = c"glActiveTexture": fn(E), required;
        bind_texture = c"glBindTexture": fn(E, U), required;
        gen_textures = c"glGenTextures": fn(I, *mut U), required;
        delete_textures = c"glDeleteTextures": fn(I, *const U), required;
        is_texture = c"glIsTexture": fn(U) -> B;
        tex_image_2d = c"glTexImage2D": fn(E, I, I, I, I, I, E, E, *const c_void), required;
        tex_parameteri = c"glTexParameteri": fn(E, E, I), required;
        pixel_storei = c"glPixelStorei": fn(E, I), required;
        read_pixels = c"glReadPixels": fn(I, I, I, I, E, E, *mut c_void), required;
        bind_sampler = c"glBindSampler": fn(U, U);
        create_shader = c"glCreateShader": fn(E) -> U, required;
        shader_source = c"glShaderSource": fn(U, I, *const *const c_char, *const I), required;
        compile_shader = c"glCompileShader": fn(U), required;
        get_shaderiv = c"glGetShaderiv": fn(U, E, *mut I), required;
        get_shader_info_log = c"glGetShaderInfoLog": fn(U, I, *mut I, *mut c_char);
        delete_shader = c"glDeleteShader": fn(U), required;
        create_program = c"glCreateProgram": fn() -> U, required;
        attach_shader = c"glAttachShader": fn(U, U), required;
        bind_attrib_location = c"glBindAttribLocation": fn(U, U, *const c_char), required;
        bind_frag_data_location = c"glBindFragDataLocation": fn(U, U, *const c_char);
        link_program = c"glLinkProgram": fn(U), required;
        get_programiv = c"glGetProgramiv": fn(U, E, *mut I), required;
        get_program_info_log = c"glGetProgramInfoLog": fn(U, I, *mut I, *mut c_char);
        delete_program = c"glDeleteProgram": fn(U), required;
        is_program = c"glIsProgram": fn(U) -> B;
        use_program = c"glUseProgram": fn(U), required;
        get_uniform_location = c"glGetUniformLocation": fn(U, *const c_char) -> I, required;
        uniform1i = c"glUniform1i": fn(I, I), required;
        uniform4f = c"glUniform4f": fn(I, F, F, F, F), required;
        gen_buffers = c"glGenBuffers": fn(I, *mut U), required;
        delete_buffers = c"glDeleteBuffers": fn(I, *const U), required;
        is_buffer = c"glIsBuffer": fn(U) -> B;
        bind_buffer = c"glBindBuffer": fn(E, U), required;
        buffer_data = c"glBufferData": fn(E, isize, *const c_void, E), required;
        buffer_sub_data = c"glBufferSubData": fn(E, isize, isize, *const c_void), required;
        gen_vertex_arrays = c"glGenVertexArrays": fn(I, *mut U);
        delete_vertex_arrays = c"glDeleteVertexArrays": fn(I, *const U);
        bind_vertex_array = c"glBindVertexArray": fn(U);
        vertex_attrib_pointer = c"glVertexAttribPointer": fn(U, I, E, B, I, *const c_void), required;
        enable_vertex_attrib_array = c"glEnableVertexAttribArray": fn(U), required;
        disable_vertex_attrib_array = c"glDisableVertexAttribArray": fn(U), required;
        get_vertex_attribiv = c"glGetVertexAttribiv": fn(U, E, *mut I), required;
        get_vertex_attrib_pointerv = c"glGetVertexAttribPointerv": fn(U, E, *mut *mut c_void), required;
        draw_elements = c"glDrawElements": fn(E, I, E, *const c_void), required;
        draw_arrays = c"glDrawArrays": fn(E, I, I), required;
        viewport = c"glViewport": fn(I, I, I, I), required;
        viewport_indexedf = c"glViewportIndexedf": fn(U, F, F, F, F);
        scissor = c"glScissor": fn(I, I, I, I), required;
        scissor_indexed = c"glScissorIndexed": fn(U, I, I, I, I);
        clear = c"glClear": fn(U), required;
        clear_color = c"glClearColor": fn(F, F, F, F), required;
        blend_func_separate = c"glBlendFuncSeparate": fn(E, E, E, E), required;
        blend_func_separatei = c"glBlendFuncSeparatei": fn(U, E, E, E, E);
        blend_equation_separate = c"glBlendEquationSeparate": fn(E, E), required;
        blend_equation_separatei = c"glBlendEquationSeparatei": fn(U, E, E);
        color_mask = c"glColorMask": fn(B, B, B, B), required;
        color_maski = c"glColorMaski": fn(U, B, B, B, B);
        polygon_mode = c"glPolygonMode": fn(E, E);
        map_buffer_range = c"glMapBufferRange": fn(E, isize, isize, U) -> *mut c_void;
        unmap_buffer = c"glUnmapBuffer": fn(E) -> B;
        fence_sync = c"glFenceSync": fn(E, U) -> *const c_void;
        client_wait_sync = c"glClientWaitSync": fn(*const c_void, U, u64) -> E;
        delete_sync = c"glDeleteSync": fn(*const c_void);
        gen_framebuffers = c"glGenFramebuffers": fn(I, *mut U), required;
        delete_framebuffers = c"glDeleteFramebuffers": fn(I, *const U), required;
        is_framebuffer = c"glIsFramebuffer": fn(U) -> B;
        bind_framebuffer = c"glBindFramebuffer": fn(E, U), required;
        framebuffer_texture_2d = c"glFramebufferTexture2D": fn(E, E, E, U, I), required;
        check_framebuffer_status = c"glCheckFramebufferStatus": fn(E) -> E, required;
        blit_framebuffer = c"glBlitFramebuffer": fn(I, I, I, I, I, I, I, I, U, E);
        get_framebuffer_attachment_parameteriv = c"glGetFramebufferAttachmentParameteriv": fn(E, E, E, *mut I);
        draw_buffer = c"glDrawBuffer": fn(E);
        draw_buffers = c"glDrawBuffers": fn(I, *const E);
        read_buffer = c"glReadBuffer": fn(E);
        /// `GLX_MESA_query_renderer` (Mesa's GLX): the current renderer's PCI ids. Looked up
        /// through glXGetProcAddress, which answers NULL for a glX name no vendor library has.
        query_renderer_integer = c"glXQueryCurrentRendererIntegerMESA": fn(I, *mut U) -> I;
    }
}

impl GlFns {
    /// Loads every entry point of the context of `ws` current on this thread, once, and reads
    /// what the context is; `None` if even `glGetString` or `glGetIntegerv` is missing.
    pub fn load(ws: WinSys) -> Option<(GlFns, GlInfo)> {
        let mut lookup = |name: &CStr| gl_proc(ws, name);
        let mut f = GlFns::load_with(&mut lookup);
        if f.get_string.is_none() || f.get_integerv.is_none() {
            return None;
        }
        let info = f.info();
        if info.es {
            // GLES: the timer queries of GL_EXT_disjoint_timer_query.
            f.get_integer64v = load(&mut lookup, c"glGetInteger64vEXT").or(f.get_integer64v);
            f.gen_queries = load(&mut lookup, c"glGenQueriesEXT");
            f.delete_queries = load(&mut lookup, c"glDeleteQueriesEXT");
            f.query_counter = load(&mut lookup, c"glQueryCounterEXT");
            f.get_query_objectuiv = load(&mut lookup, c"glGetQueryObjectuivEXT");
            f.get_query_objectui64v = load(&mut lookup, c"glGetQueryObjectui64vEXT");
            f.get_queryiv = load(&mut lookup, c"glGetQueryivEXT");
            if info.major < 3 {
                // GLES 2: the vertex array objects of GL_OES_vertex_array_object.
                f.gen_vertex_arrays = load(&mut lookup, c"glGenVertexArraysOES");
                f.delete_vertex_arrays = load(&mut lookup, c"glDeleteVertexArraysOES");
                f.bind_vertex_array = load(&mut lookup, c"glBindVertexArrayOES");
            }
        }
        if !info.bins_queries_into_scenes() {
            f.flush = None;
        }
        Some((f, info))
    }

    /// Ends the driver's current scene, so that a query of ours written next lands in a scene
    /// without the app's commands (only where [`GlInfo::bins_queries_into_scenes`]). Two in a
    /// row cost nothing: the second finds no scene to flush.
    pub fn scene_break(&self) {
        if let Some(f) = self.flush {
            // SAFETY: glFlush of the current context takes no arguments. It does not wait for
            // the GPU to finish: llvmpipe queues the scene to its rasterizer threads (waiting
            // only when all its scenes are in flight, as the app's own flushes and swaps would).
            unsafe { f() };
        }
    }

    /// A `glGetString` value, or empty.
    pub fn string(&self, name: u32) -> String {
        let Some(f) = self.get_string else {
            return String::new();
        };
        // SAFETY: glGetString returns null or a NUL-terminated string owned by the context,
        // which is current on this thread.
        unsafe {
            let p = f(name);
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

    /// The current renderer's PCI vendor and device ids (`GLX_MESA_query_renderer`); `None`
    /// without the extension or where the driver has none (llvmpipe answers 0xffffffff).
    pub fn renderer_ids(&self) -> Option<(u32, u32)> {
        const VENDOR_ID: i32 = 0x8183;
        const DEVICE_ID: i32 = 0x8184;
        let f = self.query_renderer_integer?;
        let (mut vendor, mut device) = (0u32, 0u32);
        // SAFETY: two single-value attributes of the extension, each into one u32, for the
        // context current on this thread.
        let ok = unsafe { f(VENDOR_ID, &mut vendor) != 0 && f(DEVICE_ID, &mut device) != 0 };
        (ok && vendor != 0 && vendor != u32::MAX).then_some((vendor, device))
    }

    /// Whether the context lists `ext`. Uses `glGetStringi` on GL/GLES 3+ (where core profiles
    /// reject `glGetString(GL_EXTENSIONS)`), else the one string. Initialisation only.
    pub fn has_extension(&self, info: &GlInfo, ext: &str) -> bool {
        if info.major >= 3 {
            if let Some(gsi) = self.get_stringi {
                // Valid pname on GL/GLES 3+.
                let n = self.integer(GL_NUM_EXTENSIONS).unwrap_or(0);
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
        if self.get_queryiv.is_none() {
            return false;
        }
        // (GL_TIMESTAMP, GL_QUERY_COUNTER_BITS) is valid with timer queries.
        self.query_int(GL_TIMESTAMP, GL_QUERY_COUNTER_BITS) > 0
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
        self.integer(GL_QUERY_BUFFER_BINDING).unwrap_or(0) as u32
    }

    /// `glGetIntegerv` of a single-valued `pname` the context has (else a GL error the app
    /// could see); `None` without the entry point.
    pub fn integer(&self, pname: u32) -> Option<i32> {
        let f = self.get_integerv?;
        let mut v = 0i32;
        // SAFETY: the caller asks only single-valued pnames; writes one integer into `v`.
        unsafe { f(pname, &mut v) };
        Some(v)
    }

    /// A query's result if it is available, without waiting (`GL_QUERY_RESULT_NO_WAIT`, GL 4.4
    /// or `GL_ARB_query_buffer_object`: only call where the context has it).
    pub fn result_no_wait(&self, id: u32) -> Option<u64> {
        const GL_QUERY_RESULT_NO_WAIT: u32 = 0x9194;
        let f = self.get_query_objectui64v?;
        // NO_WAIT writes nothing while the result is not available; no timestamp or statistic
        // is ever u64::MAX.
        let mut v = u64::MAX;
        // SAFETY: `id` is one of our issued queries; NO_WAIT never blocks; writes `v`.
        unsafe { f(id, GL_QUERY_RESULT_NO_WAIT, &mut v) };
        (v != u64::MAX).then_some(v)
    }

    /// `glGetQueryiv(target, pname)` (0 without the entry point).
    pub fn query_int(&self, target: u32, pname: u32) -> i32 {
        let Some(f) = self.get_queryiv else { return 0 };
        let mut v = 0i32;
        // SAFETY: the callers pass valid target/pname pairs of single values; writes `v`.
        unsafe { f(target, pname, &mut v) };
        v
    }

    /// `glBeginQuery` of one of our own query names (a no-op without the entry point).
    pub fn begin_own_query(&self, target: u32, id: u32) {
        if let Some(f) = self.begin_query {
            // SAFETY: plain values; our own query name on a target the caller found idle.
            unsafe { f(target, id) };
        }
    }

    /// `glEndQuery` of our own active query of `target`.
    pub fn end_own_query(&self, target: u32) {
        if let Some(f) = self.end_query {
            // SAFETY: plain value; the caller's query of this target is the active one.
            unsafe { f(target) };
        }
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

    #[test]
    fn driver_versions_come_from_the_vendor_part() {
        let v = |s: &str| {
            GlInfo {
                version: s.into(),
                ..GlInfo::default()
            }
            .driver_version()
        };
        assert_eq!(v("4.5 (Compatibility Profile) Mesa 22.3.6").as_deref(), Some("22.3.6"));
        assert_eq!(v("4.6.0 NVIDIA 580.159.04").as_deref(), Some("580.159.04"));
        assert_eq!(v("OpenGL ES 3.2 Mesa 22.3.6").as_deref(), Some("22.3.6"));
        assert_eq!(v("3.3"), None, "only the GL version");
        assert_eq!(v(""), None);
    }
}
