//! The GL enums the HUD uses and thin safe wrappers over the entry points it calls. The entry
//! points are the context's one table (`crate::gl::GlFns`, declared there with their GL names
//! and signatures), loaded once per context.
//!
//! A loaded pointer says nothing about support (GLX hands out a stub for any `gl*` name), so
//! whether an optional function may be called is decided by [`super::caps::Caps`], from the
//! context's version and extensions; the wrappers only guard against a missing pointer. Every
//! wrapper must be called with the context it was loaded from current on the calling thread
//! (the HUD runs inside the swap hook, where it is).

pub use crate::gl::GlFns as Fns;
use std::ffi::{c_char, c_void, CStr};
use std::num::NonZeroUsize;

// ---- enums ----------------------------------------------------------------------------------

pub const NO_ERROR: u32 = 0;
pub const TRUE: u8 = 1;
pub const FLOAT: u32 = 0x1406;
pub const UNSIGNED_BYTE: u32 = 0x1401;
pub const UNSIGNED_SHORT: u32 = 0x1403;
pub const TRIANGLES: u32 = 0x0004;
pub const TRIANGLE_STRIP: u32 = 0x0005;
pub const RGBA: u32 = 0x1908;
pub const RGBA8: u32 = 0x8058;
/// `GL_BGRA` (desktop pixel format) and `GL_BGRA_EXT` (GLES `GL_EXT_texture_format_BGRA8888`
/// internal and pixel format): the same value.
pub const BGRA: u32 = 0x80E1;
pub const BACK: u32 = 0x0405;
pub const FILL: u32 = 0x1B02;
pub const FRONT: u32 = 0x0404;
pub const FRONT_AND_BACK: u32 = 0x0408;
pub const COLOR_BUFFER_BIT: u32 = 0x4000;

pub const VERSION: u32 = 0x1F02;
pub const RENDERER: u32 = 0x1F01;
pub const EXTENSIONS: u32 = 0x1F03;
pub const NUM_EXTENSIONS: u32 = 0x821D;
pub const SHADING_LANGUAGE_VERSION: u32 = 0x8B8C;
pub const CONTEXT_PROFILE_MASK: u32 = 0x9126;
pub const CONTEXT_COMPATIBILITY_PROFILE_BIT: i32 = 0x2;
pub const MAX_TEXTURE_SIZE: u32 = 0x0D33;
pub const MAX_VIEWPORT_DIMS: u32 = 0x0D3A;
pub const MAX_CLIP_PLANES: u32 = 0x0D32;
pub const MAX_VERTEX_ATTRIBS: u32 = 0x8869;
pub const DOUBLEBUFFER: u32 = 0x0C32;
pub const SAMPLE_BUFFERS: u32 = 0x80A8;

pub const FRAMEBUFFER: u32 = 0x8D40;
pub const READ_FRAMEBUFFER: u32 = 0x8CA8;
pub const DRAW_FRAMEBUFFER: u32 = 0x8CA9;
pub const FRAMEBUFFER_BINDING: u32 = 0x8CA6;
pub const READ_FRAMEBUFFER_BINDING: u32 = 0x8CAA;
pub const FRAMEBUFFER_COMPLETE: u32 = 0x8CD5;
pub const COLOR_ATTACHMENT0: u32 = 0x8CE0;
pub const FRAMEBUFFER_ATTACHMENT_COLOR_ENCODING: u32 = 0x8210;
pub const SRGB: i32 = 0x8C40;
pub const DRAW_BUFFER: u32 = 0x0C01;
pub const DRAW_BUFFER0: u32 = 0x8825;
pub const READ_BUFFER: u32 = 0x0C02;

pub const CURRENT_PROGRAM: u32 = 0x8B8D;
pub const DELETE_STATUS: u32 = 0x8B80;
pub const COMPILE_STATUS: u32 = 0x8B81;
pub const LINK_STATUS: u32 = 0x8B82;
pub const VERTEX_SHADER: u32 = 0x8B31;
pub const FRAGMENT_SHADER: u32 = 0x8B30;

pub const ARRAY_BUFFER: u32 = 0x8892;
pub const ELEMENT_ARRAY_BUFFER: u32 = 0x8893;
pub const ARRAY_BUFFER_BINDING: u32 = 0x8894;
pub const ELEMENT_ARRAY_BUFFER_BINDING: u32 = 0x8895;
pub const PIXEL_PACK_BUFFER: u32 = 0x88EB;
pub const PIXEL_UNPACK_BUFFER: u32 = 0x88EC;
pub const PIXEL_PACK_BUFFER_BINDING: u32 = 0x88ED;
pub const PIXEL_UNPACK_BUFFER_BINDING: u32 = 0x88EF;
pub const STATIC_DRAW: u32 = 0x88E4;
pub const STREAM_DRAW: u32 = 0x88E0;
pub const STREAM_READ: u32 = 0x88E1;
pub const VERTEX_ARRAY_BINDING: u32 = 0x85B5;

pub const VERTEX_ATTRIB_ARRAY_ENABLED: u32 = 0x8622;
pub const VERTEX_ATTRIB_ARRAY_SIZE: u32 = 0x8623;
pub const VERTEX_ATTRIB_ARRAY_STRIDE: u32 = 0x8624;
pub const VERTEX_ATTRIB_ARRAY_TYPE: u32 = 0x8625;
pub const VERTEX_ATTRIB_ARRAY_NORMALIZED: u32 = 0x886A;
pub const VERTEX_ATTRIB_ARRAY_POINTER: u32 = 0x8645;
pub const VERTEX_ATTRIB_ARRAY_BUFFER_BINDING: u32 = 0x889F;

pub const TEXTURE_2D: u32 = 0x0DE1;
pub const TEXTURE0: u32 = 0x84C0;
pub const ACTIVE_TEXTURE: u32 = 0x84E0;
pub const TEXTURE_BINDING_2D: u32 = 0x8069;
pub const SAMPLER_BINDING: u32 = 0x8919;
pub const TEXTURE_MIN_FILTER: u32 = 0x2801;
pub const TEXTURE_MAG_FILTER: u32 = 0x2800;
pub const TEXTURE_WRAP_S: u32 = 0x2802;
pub const TEXTURE_WRAP_T: u32 = 0x2803;
pub const NEAREST: i32 = 0x2600;
pub const LINEAR: i32 = 0x2601;
pub const CLAMP_TO_EDGE: i32 = 0x812F;

pub const BLEND: u32 = 0x0BE2;
pub const BLEND_SRC_RGB: u32 = 0x80C9;
pub const BLEND_DST_RGB: u32 = 0x80C8;
pub const BLEND_SRC_ALPHA: u32 = 0x80CB;
pub const BLEND_DST_ALPHA: u32 = 0x80CA;
pub const BLEND_EQUATION_RGB: u32 = 0x8009;
pub const BLEND_EQUATION_ALPHA: u32 = 0x883D;
pub const FUNC_ADD: u32 = 0x8006;
pub const ZERO: u32 = 0;
pub const ONE: u32 = 1;
pub const SRC_ALPHA: u32 = 0x0302;
pub const ONE_MINUS_SRC_ALPHA: u32 = 0x0303;
pub const COLOR_WRITEMASK: u32 = 0x0C23;
pub const COLOR_CLEAR_VALUE: u32 = 0x0C22;

pub const SCISSOR_TEST: u32 = 0x0C11;
pub const SCISSOR_BOX: u32 = 0x0C10;
pub const VIEWPORT: u32 = 0x0BA2;
pub const DEPTH_TEST: u32 = 0x0B71;
pub const STENCIL_TEST: u32 = 0x0B90;
pub const CULL_FACE: u32 = 0x0B44;
pub const FRAMEBUFFER_SRGB: u32 = 0x8DB9;
pub const POLYGON_MODE: u32 = 0x0B40;
pub const PRIMITIVE_RESTART: u32 = 0x8F9D;
pub const PRIMITIVE_RESTART_FIXED_INDEX: u32 = 0x8D69;
pub const RASTERIZER_DISCARD: u32 = 0x8C89;
pub const COLOR_LOGIC_OP: u32 = 0x0BF2;
pub const SAMPLE_ALPHA_TO_COVERAGE: u32 = 0x809E;
pub const SAMPLE_COVERAGE: u32 = 0x80A0;
pub const SAMPLE_MASK: u32 = 0x8E51;
pub const ALPHA_TEST: u32 = 0x0BC0;
pub const POLYGON_STIPPLE: u32 = 0x0B42;
pub const CLIP_DISTANCE0: u32 = 0x3000;
pub const CLIP_ORIGIN: u32 = 0x935C;
pub const UPPER_LEFT: i32 = 0x8CA2;
pub const TRANSFORM_FEEDBACK_ACTIVE: u32 = 0x8E24;
pub const TRANSFORM_FEEDBACK_PAUSED: u32 = 0x8E23;

pub const UNPACK_ALIGNMENT: u32 = 0x0CF5;
pub const UNPACK_ROW_LENGTH: u32 = 0x0CF2;
pub const UNPACK_SKIP_ROWS: u32 = 0x0CF3;
pub const UNPACK_SKIP_PIXELS: u32 = 0x0CF4;
pub const PACK_ALIGNMENT: u32 = 0x0D05;
pub const PACK_ROW_LENGTH: u32 = 0x0D02;
pub const PACK_SKIP_ROWS: u32 = 0x0D03;
pub const PACK_SKIP_PIXELS: u32 = 0x0D04;

// ---- entry points ---------------------------------------------------------------------------

type E = u32; // GLenum
type I = i32; // GLint, GLsizei
type U = u32; // GLuint
type B = u8; // GLboolean
type F = f32; // GLfloat

impl Fns {
    /// Whether the vertex array object entry points exist.
    pub fn has_vao(&self) -> bool {
        self.gen_vertex_arrays.is_some() && self.bind_vertex_array.is_some() && self.delete_vertex_arrays.is_some()
    }
}

/// Calls of functions whose arguments are plain values: GL checks them, so a bad one is a GL
/// error, never undefined behaviour. A missing pointer makes the call a no-op.
macro_rules! value_calls {
    ($( $method:ident($($a:ident: $t:ty),*) $(-> $r:ty)?; )*) => {
        impl Fns {
            $(
                #[inline]
                pub fn $method(&self, $($a: $t),*) $(-> $r)? {
                    match self.$method {
                        // SAFETY: loaded from the context current on this thread with the
                        // signature of the GL registry; every argument is a plain value.
                        Some(f) => unsafe { f($($a),*) },
                        None => Default::default(),
                    }
                }
            )*
        }
    };
}

value_calls! {
    get_error() -> E;
    is_enabled(cap: E) -> B;
    is_enabledi(cap: E, index: U) -> B;
    enable(cap: E);
    disable(cap: E);
    enablei(cap: E, index: U);
    disablei(cap: E, index: U);
    active_texture(unit: E);
    bind_texture(target: E, texture: U);
    is_texture(texture: U) -> B;
    tex_parameteri(target: E, pname: E, param: I);
    pixel_storei(pname: E, param: I);
    bind_sampler(unit: U, sampler: U);
    create_shader(kind: E) -> U;
    compile_shader(shader: U);
    delete_shader(shader: U);
    create_program() -> U;
    attach_shader(program: U, shader: U);
    link_program(program: U);
    delete_program(program: U);
    is_program(program: U) -> B;
    use_program(program: U);
    uniform1i(location: I, v: I);
    uniform4f(location: I, x: F, y: F, z: F, w: F);
    is_buffer(buffer: U) -> B;
    bind_buffer(target: E, buffer: U);
    bind_vertex_array(vao: U);
    enable_vertex_attrib_array(index: U);
    disable_vertex_attrib_array(index: U);
    viewport(x: I, y: I, w: I, h: I);
    viewport_indexedf(index: U, x: F, y: F, w: F, h: F);
    scissor(x: I, y: I, w: I, h: I);
    scissor_indexed(index: U, x: I, y: I, w: I, h: I);
    clear(mask: U);
    clear_color(r: F, g: F, b: F, a: F);
    blend_func_separate(src_rgb: E, dst_rgb: E, src_a: E, dst_a: E);
    blend_func_separatei(buf: U, src_rgb: E, dst_rgb: E, src_a: E, dst_a: E);
    blend_equation_separate(rgb: E, alpha: E);
    blend_equation_separatei(buf: U, rgb: E, alpha: E);
    color_mask(r: B, g: B, b: B, a: B);
    color_maski(buf: U, r: B, g: B, b: B, a: B);
    polygon_mode(face: E, mode: E);
    is_framebuffer(fb: U) -> B;
    bind_framebuffer(target: E, fb: U);
    framebuffer_texture_2d(target: E, attachment: E, textarget: E, texture: U, level: I);
    check_framebuffer_status(target: E) -> E;
    draw_buffer(buf: E);
    read_buffer(buf: E);
}

/// A sync object of ours from [`Fns::fence`], alive until [`Fns::delete_fence`] consumes it.
#[derive(Debug)]
pub struct Fence(NonZeroUsize);

/// Room for any query's values (the largest we make returns 4).
const QUERY: usize = 16;

impl Fns {
    /// `glGetStringi(name, i)` as bytes (empty when missing); the string is owned by the
    /// context and must not outlive the call site's use.
    pub fn stringi(&self, name: E, index: U) -> String {
        let Some(f) = self.get_stringi else {
            return String::new();
        };
        // SAFETY: as glGetString; index is below the count the caller read.
        unsafe {
            let p = f(name, index);
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p as *const c_char).to_string_lossy().into_owned()
            }
        }
    }

    /// The first `N` values of an integer query.
    #[inline]
    pub fn ints<const N: usize>(&self, pname: E) -> [I; N] {
        let mut v = [0; QUERY];
        if let Some(f) = self.get_integerv {
            // SAFETY: writes at most QUERY values for any pname we pass.
            unsafe { f(pname, v.as_mut_ptr()) };
        }
        let mut out = [0; N];
        out.copy_from_slice(&v[..N]);
        out
    }

    #[inline]
    pub fn int(&self, pname: E) -> I {
        self.ints::<1>(pname)[0]
    }

    #[inline]
    pub fn uint(&self, pname: E) -> U {
        self.int(pname) as U
    }

    #[inline]
    pub fn floats<const N: usize>(&self, pname: E) -> [F; N] {
        let mut v = [0.0; QUERY];
        if let Some(f) = self.get_floatv {
            // SAFETY: writes at most QUERY values for any pname we pass.
            unsafe { f(pname, v.as_mut_ptr()) };
        }
        let mut out = [0.0; N];
        out.copy_from_slice(&v[..N]);
        out
    }

    #[inline]
    pub fn bools<const N: usize>(&self, pname: E) -> [bool; N] {
        let mut v = [0u8; QUERY];
        if let Some(f) = self.get_booleanv {
            // SAFETY: writes at most QUERY values for any pname we pass.
            unsafe { f(pname, v.as_mut_ptr()) };
        }
        let mut out = [false; N];
        for (o, b) in out.iter_mut().zip(v) {
            *o = b != 0;
        }
        out
    }

    #[inline]
    pub fn ints_i<const N: usize>(&self, pname: E, index: U) -> [I; N] {
        let mut v = [0; QUERY];
        if let Some(f) = self.get_integeri_v {
            // SAFETY: writes at most QUERY values for any pname we pass.
            unsafe { f(pname, index, v.as_mut_ptr()) };
        }
        let mut out = [0; N];
        out.copy_from_slice(&v[..N]);
        out
    }

    #[inline]
    pub fn floats_i<const N: usize>(&self, pname: E, index: U) -> [F; N] {
        let mut v = [0.0; QUERY];
        if let Some(f) = self.get_floati_v {
            // SAFETY: writes at most QUERY values for any pname we pass.
            unsafe { f(pname, index, v.as_mut_ptr()) };
        }
        let mut out = [0.0; N];
        out.copy_from_slice(&v[..N]);
        out
    }

    #[inline]
    pub fn bools_i<const N: usize>(&self, pname: E, index: U) -> [bool; N] {
        let mut v = [0u8; QUERY];
        if let Some(f) = self.get_booleani_v {
            // SAFETY: writes at most QUERY values for any pname we pass.
            unsafe { f(pname, index, v.as_mut_ptr()) };
        }
        let mut out = [false; N];
        for (o, b) in out.iter_mut().zip(v) {
            *o = b != 0;
        }
        out
    }

    #[inline]
    pub fn attrib_int(&self, index: U, pname: E) -> I {
        let mut v = [0; QUERY];
        if let Some(f) = self.get_vertex_attribiv {
            // SAFETY: writes at most 4 values (CURRENT_VERTEX_ATTRIB, never asked) for a pname.
            unsafe { f(index, pname, v.as_mut_ptr()) };
        }
        v[0]
    }

    #[inline]
    pub fn attrib_pointer(&self, index: U) -> usize {
        let mut p: *mut c_void = std::ptr::null_mut();
        if let Some(f) = self.get_vertex_attrib_pointerv {
            // SAFETY: writes one pointer.
            unsafe { f(index, VERTEX_ATTRIB_ARRAY_POINTER, &mut p) };
        }
        p as usize
    }

    /// `glVertexAttribPointer` with the pointer as an address: an offset into the bound array
    /// buffer, or (restoring an app's client-side array) the app's own pointer, which GL only
    /// dereferences when the app draws.
    #[inline]
    pub fn attrib_pointer_set(&self, index: U, size: I, ty: E, normalized: bool, stride: I, pointer: usize) {
        if let Some(f) = self.vertex_attrib_pointer {
            // SAFETY: GL stores the address; nothing is read at this call.
            unsafe { f(index, size, ty, u8::from(normalized), stride, pointer as *const c_void) };
        }
    }

    pub fn program_int(&self, program: U, pname: E) -> I {
        let mut v = [0; QUERY];
        if let Some(f) = self.get_programiv {
            // SAFETY: writes one value for the pnames we pass.
            unsafe { f(program, pname, v.as_mut_ptr()) };
        }
        v[0]
    }

    pub fn shader_int(&self, shader: U, pname: E) -> I {
        let mut v = [0; QUERY];
        if let Some(f) = self.get_shaderiv {
            // SAFETY: writes one value for the pnames we pass.
            unsafe { f(shader, pname, v.as_mut_ptr()) };
        }
        v[0]
    }

    pub fn shader_log(&self, shader: U) -> String {
        let mut buf = [0 as c_char; 512];
        let mut len = 0;
        if let Some(f) = self.get_shader_info_log {
            // SAFETY: writes at most buf.len() bytes including the NUL, and the length.
            unsafe { f(shader, buf.len() as I, &mut len, buf.as_mut_ptr()) };
        }
        let bytes: Vec<u8> = buf[..len.clamp(0, 511) as usize].iter().map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).trim().to_string()
    }

    pub fn program_log(&self, program: U) -> String {
        let mut buf = [0 as c_char; 512];
        let mut len = 0;
        if let Some(f) = self.get_program_info_log {
            // SAFETY: writes at most buf.len() bytes including the NUL, and the length.
            unsafe { f(program, buf.len() as I, &mut len, buf.as_mut_ptr()) };
        }
        let bytes: Vec<u8> = buf[..len.clamp(0, 511) as usize].iter().map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).trim().to_string()
    }

    pub fn set_source(&self, shader: U, source: &str) {
        let ptrs = [source.as_ptr() as *const c_char];
        let lens = [source.len() as I];
        if let Some(f) = self.shader_source {
            // SAFETY: one string with its explicit length (no NUL needed); GL copies it.
            unsafe { f(shader, 1, ptrs.as_ptr(), lens.as_ptr()) };
        }
    }

    pub fn attrib_location(&self, program: U, index: U, name: &CStr) {
        if let Some(f) = self.bind_attrib_location {
            // SAFETY: NUL-terminated name; GL copies it.
            unsafe { f(program, index, name.as_ptr()) };
        }
    }

    pub fn frag_data_location(&self, program: U, name: &CStr) {
        if let Some(f) = self.bind_frag_data_location {
            // SAFETY: NUL-terminated name; GL copies it.
            unsafe { f(program, 0, name.as_ptr()) };
        }
    }

    pub fn uniform_location(&self, program: U, name: &CStr) -> I {
        match self.get_uniform_location {
            // SAFETY: NUL-terminated name.
            Some(f) => unsafe { f(program, name.as_ptr()) },
            None => -1,
        }
    }

    /// One new name from a `glGen*` function (0 when it gave none).
    fn gen_one(f: Option<unsafe extern "C" fn(I, *mut U)>) -> U {
        let mut n = 0;
        if let Some(f) = f {
            // SAFETY: writes one name.
            unsafe { f(1, &mut n) };
        }
        n
    }

    fn delete_one(f: Option<unsafe extern "C" fn(I, *const U)>, name: U) {
        if name != 0 {
            if let Some(f) = f {
                // SAFETY: reads one name (one of ours).
                unsafe { f(1, &name) };
            }
        }
    }

    pub fn gen_texture(&self) -> U {
        Self::gen_one(self.gen_textures)
    }
    pub fn gen_buffer(&self) -> U {
        Self::gen_one(self.gen_buffers)
    }
    pub fn gen_framebuffer(&self) -> U {
        Self::gen_one(self.gen_framebuffers)
    }
    pub fn gen_vertex_array(&self) -> U {
        Self::gen_one(self.gen_vertex_arrays)
    }
    pub fn delete_texture(&self, t: U) {
        Self::delete_one(self.delete_textures, t)
    }
    pub fn delete_buffer(&self, b: U) {
        Self::delete_one(self.delete_buffers, b)
    }
    pub fn delete_framebuffer(&self, f: U) {
        Self::delete_one(self.delete_framebuffers, f)
    }
    pub fn delete_vertex_array(&self, v: U) {
        Self::delete_one(self.delete_vertex_arrays, v)
    }

    /// `glTexImage2D` of an 8-bit, 4-channel image in pixel `format` (`GL_RGBA` or `GL_BGRA`);
    /// `pixels` must hold `w * h * 4` bytes (rows tightly packed: the caller has set the unpack
    /// state and unbound any unpack buffer).
    pub fn tex_image_8888(&self, internal: I, w: I, h: I, format: E, pixels: Option<&[u8]>) {
        let need = (w.max(0) as usize) * (h.max(0) as usize) * 4;
        let ptr = match pixels {
            Some(p) if p.len() >= need => p.as_ptr() as *const c_void,
            Some(_) => return,
            None => std::ptr::null(),
        };
        if let Some(f) = self.tex_image_2d {
            // SAFETY: null (storage only) or a buffer of at least w*h*4 bytes read with
            // alignment 4 and no row length/skips.
            unsafe { f(TEXTURE_2D, 0, internal, w, h, 0, format, UNSIGNED_BYTE, ptr) };
        }
    }

    /// `glReadPixels` of RGBA8 into `out` (`w * h * 4` bytes; pack state set by the caller,
    /// no pack buffer bound).
    pub fn read_rgba(&self, w: I, h: I, out: &mut [u8]) -> bool {
        let need = (w.max(0) as usize) * (h.max(0) as usize) * 4;
        if out.len() < need {
            return false;
        }
        if let Some(f) = self.read_pixels {
            // SAFETY: out holds w*h*4 bytes written with alignment 4 and no row length/skips.
            unsafe { f(0, 0, w, h, RGBA, UNSIGNED_BYTE, out.as_mut_ptr() as *mut c_void) };
            return true;
        }
        false
    }

    /// `glReadPixels` of RGBA8 into the bound pixel pack buffer, at offset 0 (pack state set by
    /// the caller).
    pub fn read_rgba_into_pack_buffer(&self, w: I, h: I) {
        if let Some(f) = self.read_pixels {
            // SAFETY: with a pack buffer bound the pointer is an offset into it, which the
            // caller sized for w*h*4 bytes.
            unsafe { f(0, 0, w, h, RGBA, UNSIGNED_BYTE, std::ptr::null_mut()) };
        }
    }

    /// `glFenceSync` after the commands so far (`None`: no fence).
    pub fn fence(&self) -> Option<Fence> {
        const SYNC_GPU_COMMANDS_COMPLETE: E = 0x9117;
        let f = self.fence_sync?;
        // SAFETY: valid condition and flags; returns a sync object or null.
        let sync = unsafe { f(SYNC_GPU_COMMANDS_COMPLETE, 0) };
        NonZeroUsize::new(sync as usize).map(Fence)
    }

    /// Whether `sync` has signalled, waiting at most `timeout_ns` (0: a poll that never
    /// waits); `None` if the wait failed.
    pub fn signalled(&self, sync: &Fence, timeout_ns: u64) -> Option<bool> {
        const SYNC_FLUSH_COMMANDS_BIT: U = 1;
        const ALREADY_SIGNALED: E = 0x911A;
        const TIMEOUT_EXPIRED: E = 0x911B;
        const CONDITION_SATISFIED: E = 0x911C;
        let f = self.client_wait_sync?;
        // SAFETY: `sync` is a live sync object of ours (a `Fence` is only made by `fence` and
        // deleted by value); the flush bit makes a poll progress.
        match unsafe { f(sync.0.get() as *const c_void, SYNC_FLUSH_COMMANDS_BIT, timeout_ns) } {
            ALREADY_SIGNALED | CONDITION_SATISFIED => Some(true),
            TIMEOUT_EXPIRED => Some(false),
            _ => None,
        }
    }

    pub fn delete_fence(&self, sync: Fence) {
        if let Some(f) = self.delete_sync {
            // SAFETY: a live sync object of ours, deleted once (the `Fence` is consumed).
            unsafe { f(sync.0.get() as *const c_void) };
        }
    }

    /// Copies the first `out.len()` bytes of the buffer bound to `target` into `out` through a
    /// read mapping; false if it cannot be mapped.
    pub fn copy_from_buffer(&self, target: E, out: &mut [u8]) -> bool {
        const MAP_READ_BIT: U = 1;
        let (Some(map), Some(unmap)) = (self.map_buffer_range, self.unmap_buffer) else {
            return false;
        };
        // SAFETY: a read mapping of the first out.len() bytes of our buffer, which holds at
        // least that many; null on failure.
        let p = unsafe { map(target, 0, out.len() as isize, MAP_READ_BIT) };
        if p.is_null() {
            return false;
        }
        // SAFETY: the mapping is out.len() readable bytes until the unmap below.
        out.copy_from_slice(unsafe { std::slice::from_raw_parts(p as *const u8, out.len()) });
        // SAFETY: unmaps the mapping made above.
        unsafe { unmap(target) };
        true
    }

    /// `glBufferData` with no data (storage of `size` bytes).
    pub fn buffer_storage(&self, target: E, size: usize, usage: E) {
        if let Some(f) = self.buffer_data {
            // SAFETY: a null data pointer only allocates.
            unsafe { f(target, size as isize, std::ptr::null(), usage) };
        }
    }

    /// `glBufferSubData` at offset 0; the buffer bound to `target` must hold `data.len()` bytes.
    pub fn buffer_write(&self, target: E, data: &[u8]) {
        if let Some(f) = self.buffer_sub_data {
            // SAFETY: GL copies data.len() bytes from data; it fails (GL error) rather than
            // writing past a buffer that is too small.
            unsafe { f(target, 0, data.len() as isize, data.as_ptr() as *const c_void) };
        }
    }

    /// `glDrawElements` with 16-bit indices at byte `offset` of the bound element buffer.
    /// The caller guarantees that every index read lies in its bound vertex buffer.
    pub fn draw_indexed_u16(&self, count: I, offset: usize) {
        if let Some(f) = self.draw_elements {
            // SAFETY: an element buffer of ours is bound (the pointer is an offset into it) and
            // holds `count` indices from `offset`, each naming a vertex of our vertex buffer.
            unsafe { f(TRIANGLES, count, UNSIGNED_SHORT, offset as *const c_void) };
        }
    }

    /// `glDrawArrays` of our 4-vertex strip (attribute 0 reads our quad buffer).
    pub fn draw_quad(&self) {
        if let Some(f) = self.draw_arrays {
            // SAFETY: the only enabled array is ours, a buffer of 4 vertices.
            unsafe { f(TRIANGLE_STRIP, 0, 4) };
        }
    }

    /// `glBlitFramebuffer` of rectangle `src` (x0, y0, x1, y1) of the read framebuffer onto
    /// rectangle `dst` of the draw framebuffer.
    pub fn blit(&self, src: [I; 4], dst: [I; 4], mask: U, filter: E) {
        if let Some(f) = self.blit_framebuffer {
            // SAFETY: loaded from the context current on this thread with the registry's
            // signature; every argument is a plain value that GL checks.
            unsafe {
                f(
                    src[0], src[1], src[2], src[3], dst[0], dst[1], dst[2], dst[3], mask, filter,
                )
            };
        }
    }

    /// Sets the draw buffer of the bound draw framebuffer (desktop: `glDrawBuffer`; GLES 3:
    /// `glDrawBuffers` with one entry).
    pub fn set_draw_buffer(&self, es: bool, buf: E) {
        if !es {
            self.draw_buffer(buf);
        } else if let Some(f) = self.draw_buffers {
            // SAFETY: reads one enum.
            unsafe { f(1, &buf) };
        }
    }

    pub fn attachment_int(&self, target: E, attachment: E, pname: E) -> I {
        let mut v = [0; QUERY];
        if let Some(f) = self.get_framebuffer_attachment_parameteriv {
            // SAFETY: writes one value.
            unsafe { f(target, attachment, pname, v.as_mut_ptr()) };
        }
        v[0]
    }
}
