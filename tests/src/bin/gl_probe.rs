//! `gl_probe`: a GLX test app for the GL HUD tests (libX11 and libGL are dlopen'ed, as glmark2
//! does, so the shim hands out its hooks through `dlsym`/`glXGetProcAddressARB`).
//!
//! Every frame it draws the same image (a triangle on a plain background), then sets a long
//! list of GL state to unusual values, swaps, reads all of it back and checks `glGetError`:
//! whatever a HUD drawn at the swap changed and did not put back, or any GL error it raised,
//! is reported. Odd and even frames use different framebuffer set-ups (an FBO of ours bound for
//! reading, or the default framebuffer with `GL_FRONT` as its read buffer). On GL 4.5 the clip
//! origin is upper-left at the swap, so a HUD that depends on it is drawn flipped.
//!
//! `--legacy` (compat): every frame also draws in immediate mode and calls display lists, with
//! known counts (see `Legacy::frame`).
//!
//! `--wait-for PATH`: after the last swap, wait (up to 30 s, presenting nothing) for PATH.
//!
//! `gl_probe --profile core|compat [--frames N] [--size WxH] [--legacy] [--wait-for PATH]`: `core` is a 3.3 core profile
//! context (VAO required), `compat` the default GLX context; with `MESA_GL_VERSION_OVERRIDE=2.1`
//! and no `GL_ARB_vertex_array_object`, `compat` runs without VAOs and sets attribute arrays
//! instead. Prints `GL_VERSION` and `probe: N frames, state preserved` (exit 0), or the first
//! differences (exit 1).

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr};

type E = u32;
type I = i32;
type U = u32;
type B = u8;
type F = f32;

macro_rules! gl_table {
    ($table:ident { $( $name:ident : fn($($t:ty),*) $(-> $r:ty)?; )* }) => {
        #[allow(non_snake_case)]
        struct $table {
            $( $name: unsafe extern "C" fn($($t),*) $(-> $r)?, )*
        }

        impl $table {
            /// # Safety
            /// `gpa` is the real `glXGetProcAddressARB`; a context is current.
            unsafe fn load(gpa: GetProc) -> $table {
                $table {
                    $( $name: {
                        let name = concat!(stringify!($name), "\0");
                        // SAFETY: NUL-terminated name; the result is that GL function or null.
                        let p = unsafe { gpa(name.as_ptr() as *const c_char) };
                        assert!(!p.is_null(), "no {}", stringify!($name));
                        // SAFETY: the registry signature of the function of that name.
                        unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($t),*) $(-> $r)?>(p) }
                    }, )*
                }
            }
        }
    };
}

type GetProc = unsafe extern "C" fn(*const c_char) -> *mut c_void;

gl_table! { Gl {
    glGetError: fn() -> E;
    glGetString: fn(E) -> *const u8;
    glGetIntegerv: fn(E, *mut I);
    glGetFloatv: fn(E, *mut F);
    glGetBooleanv: fn(E, *mut B);
    glGetIntegeri_v: fn(E, U, *mut I);
    glIsEnabled: fn(E) -> B;
    glEnable: fn(E);
    glDisable: fn(E);
    glClear: fn(U);
    glClearColor: fn(F, F, F, F);
    glViewport: fn(I, I, I, I);
    glScissor: fn(I, I, I, I);
    glColorMask: fn(B, B, B, B);
    glDepthMask: fn(B);
    glDepthFunc: fn(E);
    glCullFace: fn(E);
    glLogicOp: fn(E);
    glPolygonMode: fn(E, E);
    glBlendFuncSeparate: fn(E, E, E, E);
    glBlendEquationSeparate: fn(E, E);
    glPixelStorei: fn(E, I);
    glActiveTexture: fn(E);
    glGenTextures: fn(I, *mut U);
    glBindTexture: fn(E, U);
    glTexImage2D: fn(E, I, I, I, I, I, E, E, *const c_void);
    glGenBuffers: fn(I, *mut U);
    glBindBuffer: fn(E, U);
    glBufferData: fn(E, isize, *const c_void, E);
    glCreateShader: fn(E) -> U;
    glShaderSource: fn(U, I, *const *const c_char, *const I);
    glCompileShader: fn(U);
    glGetShaderiv: fn(U, E, *mut I);
    glCreateProgram: fn() -> U;
    glAttachShader: fn(U, U);
    glBindAttribLocation: fn(U, U, *const c_char);
    glLinkProgram: fn(U);
    glGetProgramiv: fn(U, E, *mut I);
    glUseProgram: fn(U);
    glVertexAttribPointer: fn(U, I, E, B, I, *const c_void);
    glEnableVertexAttribArray: fn(U);
    glDisableVertexAttribArray: fn(U);
    glGetVertexAttribiv: fn(U, E, *mut I);
    glGetVertexAttribPointerv: fn(U, E, *mut *mut c_void);
    glDrawArrays: fn(E, I, I);
    glDrawBuffer: fn(E);
    glReadBuffer: fn(E);
} }

// Functions of GL 3.3 (VAOs, FBOs, samplers, sample mask), loaded only where they exist.
gl_table! { Legacy {
    glGenLists: fn(I) -> U;
    glNewList: fn(U, E);
    glEndList: fn();
    glBegin: fn(E);
    glVertex2f: fn(F, F);
    glEnd: fn();
    glCallList: fn(U);
    glCallLists: fn(I, E, *const c_void);
}}

const COMPILE: E = 0x1300;
const COMPILE_AND_EXECUTE: E = 0x1301;
const UNSIGNED_INT: E = 0x1405;

impl Legacy {
    /// One immediate-mode triangle, off the probed pixels' way.
    unsafe fn triangle(&self) {
        // SAFETY: a compatibility context is current.
        unsafe {
            (self.glBegin)(TRIANGLES);
            self.vertices();
            (self.glEnd)();
        }
    }

    unsafe fn vertices(&self) {
        // SAFETY: inside glBegin/glEnd or a list being compiled.
        unsafe {
            (self.glVertex2f)(-1.0, -1.0);
            (self.glVertex2f)(-0.99, -1.0);
            (self.glVertex2f)(-1.0, -0.99);
        }
    }

    /// Frame 0: three lists: `base` (a triangle, compiled only), `base + 1` (a triangle,
    /// compiled and executed: one immediate draw) and `base + 2` (vertices only, compiled).
    unsafe fn lists(&self) -> U {
        // SAFETY: a compatibility context is current; list names from glGenLists.
        unsafe {
            let base = (self.glGenLists)(3);
            (self.glNewList)(base, COMPILE);
            self.triangle();
            (self.glEndList)();
            (self.glNewList)(base + 1, COMPILE_AND_EXECUTE);
            self.triangle();
            (self.glEndList)();
            (self.glNewList)(base + 2, COMPILE);
            self.vertices();
            (self.glEndList)();
            base
        }
    }

    /// Every frame: 3 immediate draws (two triangles, one primitive fed by a list) and 3 list
    /// calls (`glCallList` and a `glCallLists` of two).
    unsafe fn frame(&self, base: U) {
        // SAFETY: a compatibility context is current; `base` is from `lists`.
        unsafe {
            self.triangle();
            self.triangle();
            (self.glCallList)(base);
            let two = [base, base + 1];
            (self.glCallLists)(2, UNSIGNED_INT, two.as_ptr() as *const c_void);
            (self.glBegin)(TRIANGLES);
            (self.glCallList)(base + 2);
            (self.glEnd)();
        }
    }
}

gl_table! { Modern {
    glGenVertexArrays: fn(I, *mut U);
    glBindVertexArray: fn(U);
    glGenFramebuffers: fn(I, *mut U);
    glBindFramebuffer: fn(E, U);
    glFramebufferTexture2D: fn(E, E, E, U, I);
    glGenSamplers: fn(I, *mut U);
    glBindSampler: fn(U, U);
    glSampleMaski: fn(U, U);
} }

// GL 4.5: the clip origin the HUD must not depend on.
gl_table! { Gl45 {
    glClipControl: fn(E, E);
} }

// GL enums.
const COLOR_BUFFER_BIT: U = 0x4000;
const DEPTH_BUFFER_BIT: U = 0x0100;
const TRIANGLES: E = 0x0004;
const FLOAT: E = 0x1406;
const UNSIGNED_BYTE: E = 0x1401;
const SHORT: E = 0x1402;
const RGBA: E = 0x1908;
const TEXTURE_2D: E = 0x0DE1;
const TEXTURE0: E = 0x84C0;
const TEXTURE3: E = 0x84C3;
const ARRAY_BUFFER: E = 0x8892;
const ELEMENT_ARRAY_BUFFER: E = 0x8893;
const PIXEL_PACK_BUFFER: E = 0x88EB;
const PIXEL_UNPACK_BUFFER: E = 0x88EC;
const STATIC_DRAW: E = 0x88E4;
const FRAMEBUFFER: E = 0x8D40;
const READ_FRAMEBUFFER: E = 0x8CA8;
const DRAW_FRAMEBUFFER: E = 0x8CA9;
const COLOR_ATTACHMENT0: E = 0x8CE0;
const FRONT: E = 0x0404;
const BACK: E = 0x0405;
const LINE: E = 0x1B01;
const FILL: E = 0x1B02;
const FRONT_AND_BACK: E = 0x0408;
const GREATER: E = 0x0204;
const XOR: E = 0x1506;
const DST_COLOR: E = 0x0306;
const ONE_MINUS_SRC_COLOR: E = 0x0301;
const CONSTANT_ALPHA: E = 0x8003;
const ZERO: E = 0;
const FUNC_REVERSE_SUBTRACT: E = 0x800B;
const MAX: E = 0x8008;
const VERTEX_SHADER: E = 0x8B31;
const FRAGMENT_SHADER: E = 0x8B30;
const COMPILE_STATUS: E = 0x8B81;
const LINK_STATUS: E = 0x8B82;
const VERSION: E = 0x1F02;
const LOWER_LEFT: E = 0x8CA1;
const UPPER_LEFT: E = 0x8CA2;
const NEGATIVE_ONE_TO_ONE: E = 0x935E;
const ZERO_TO_ONE: E = 0x935F;
const CLIP_ORIGIN: E = 0x935C;
const CLIP_DEPTH_MODE: E = 0x935D;

const BLEND: E = 0x0BE2;
const SCISSOR_TEST: E = 0x0C11;
const DEPTH_TEST: E = 0x0B71;
const STENCIL_TEST: E = 0x0B90;
const CULL_FACE: E = 0x0B44;
const FRAMEBUFFER_SRGB: E = 0x8DB9;
const PRIMITIVE_RESTART: E = 0x8F9D;
const PRIMITIVE_RESTART_FIXED_INDEX: E = 0x8D69;
const RASTERIZER_DISCARD: E = 0x8C89;
const COLOR_LOGIC_OP: E = 0x0BF2;
const SAMPLE_ALPHA_TO_COVERAGE: E = 0x809E;
const SAMPLE_COVERAGE: E = 0x80A0;
const SAMPLE_MASK: E = 0x8E51;
const CLIP_DISTANCE0: E = 0x3000;
const CLIP_DISTANCE2: E = 0x3002;
const ALPHA_TEST: E = 0x0BC0;
const POLYGON_STIPPLE: E = 0x0B42;

// Queries.
const DRAW_FRAMEBUFFER_BINDING: E = 0x8CA6;
const READ_FRAMEBUFFER_BINDING: E = 0x8CAA;
const CURRENT_PROGRAM: E = 0x8B8D;
const VERTEX_ARRAY_BINDING: E = 0x85B5;
const ARRAY_BUFFER_BINDING: E = 0x8894;
const ELEMENT_ARRAY_BUFFER_BINDING: E = 0x8895;
const ACTIVE_TEXTURE: E = 0x84E0;
const TEXTURE_BINDING_2D: E = 0x8069;
const SAMPLER_BINDING: E = 0x8919;
const BLEND_SRC_RGB: E = 0x80C9;
const BLEND_DST_RGB: E = 0x80C8;
const BLEND_SRC_ALPHA: E = 0x80CB;
const BLEND_DST_ALPHA: E = 0x80CA;
const BLEND_EQUATION_RGB: E = 0x8009;
const BLEND_EQUATION_ALPHA: E = 0x883D;
const COLOR_WRITEMASK: E = 0x0C23;
const SCISSOR_BOX: E = 0x0C10;
const VIEWPORT: E = 0x0BA2;
const DEPTH_WRITEMASK: E = 0x0B72;
const DEPTH_FUNC: E = 0x0B74;
const CULL_FACE_MODE: E = 0x0B45;
const LOGIC_OP_MODE: E = 0x0BF0;
const POLYGON_MODE: E = 0x0B40;
const COLOR_CLEAR_VALUE: E = 0x0C22;
const DRAW_BUFFER: E = 0x0C01;
const READ_BUFFER: E = 0x0C02;
const SAMPLE_MASK_VALUE: E = 0x8E52;
const UNPACK_ALIGNMENT: E = 0x0CF5;
const UNPACK_ROW_LENGTH: E = 0x0CF2;
const UNPACK_SKIP_ROWS: E = 0x0CF3;
const UNPACK_SKIP_PIXELS: E = 0x0CF4;
const PACK_ALIGNMENT: E = 0x0D05;
const PACK_ROW_LENGTH: E = 0x0D02;
const PACK_SKIP_ROWS: E = 0x0D03;
const PACK_SKIP_PIXELS: E = 0x0D04;
const PIXEL_PACK_BUFFER_BINDING: E = 0x88ED;
const PIXEL_UNPACK_BUFFER_BINDING: E = 0x88EF;
const VERTEX_ATTRIB_ARRAY_ENABLED: E = 0x8622;
const VERTEX_ATTRIB_ARRAY_SIZE: E = 0x8623;
const VERTEX_ATTRIB_ARRAY_STRIDE: E = 0x8624;
const VERTEX_ATTRIB_ARRAY_TYPE: E = 0x8625;
const VERTEX_ATTRIB_ARRAY_NORMALIZED: E = 0x886A;
const VERTEX_ATTRIB_ARRAY_POINTER: E = 0x8645;
const VERTEX_ATTRIB_ARRAY_BUFFER_BINDING: E = 0x889F;

/// A client-side vertex array the legacy mode leaves attribute 0 pointing at.
static CLIENT_ARRAY: [f32; 12] = [0.0; 12];

struct Args {
    core: bool,
    /// `--legacy`: immediate-mode draws and display lists every frame (compat only).
    legacy: bool,
    /// `--wait-for PATH`: after the last swap, with the context still current and nothing
    /// presented any more (as an app that draws only on expose), wait up to 30 s for PATH to
    /// appear; prints `waited: found` or `waited: missing`.
    wait_for: Option<String>,
    frames: u32,
    size: [u32; 2],
}

fn args() -> Args {
    let mut a = Args {
        core: false,
        legacy: false,
        wait_for: None,
        frames: 60,
        size: [320, 240],
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < v.len() {
        let next = v.get(i + 1).map(String::as_str).unwrap_or("");
        match v[i].as_str() {
            "--profile" => a.core = next == "core",
            "--legacy" => {
                a.legacy = true;
                i += 1;
                continue;
            }
            "--frames" => a.frames = next.parse().expect("--frames N"),
            "--wait-for" => a.wait_for = Some(next.to_string()),
            "--size" => {
                let (w, h) = next.split_once('x').expect("--size WxH");
                a.size = [w.parse().expect("width"), h.parse().expect("height")];
            }
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    a
}

/// The app's objects.
struct Objects {
    program: U,
    vao: U,
    triangle: U,
    spare: [U; 5],
    textures: [U; 2],
    fbo: U,
    sampler: U,
}

/// The unusual state set before every swap, as read back.
#[derive(Debug, Default, PartialEq)]
struct State {
    draw_fb: I,
    read_fb: I,
    program: I,
    vao: I,
    array_buffer: I,
    element_buffer: I,
    active_texture: I,
    texture_unit0: I,
    texture_unit3: I,
    sampler_unit0: I,
    enables: Vec<(E, bool)>,
    blend_func: [I; 4],
    blend_eq: [I; 2],
    color_mask: [B; 4],
    scissor: [I; 4],
    viewport: [I; 4],
    depth_mask: B,
    depth_func: I,
    cull_face: I,
    logic_op: I,
    polygon_mode: [I; 2],
    clear_color: [F; 4],
    draw_buffer: I,
    read_buffer: I,
    sample_mask: I,
    clip_control: [I; 2],
    unpack: [I; 5],
    pack: [I; 5],
    attribs: Vec<[usize; 7]>,
}

struct Probe {
    gl: Gl,
    modern: Option<Modern>,
    core: bool,
    gl43: bool,
    gl45: Option<Gl45>,
    o: Objects,
    size: [u32; 2],
}

impl Probe {
    /// # Safety
    /// The probe's context is current on this thread.
    unsafe fn ints<const N: usize>(&self, pname: E) -> [I; N] {
        let mut v = [0; 16];
        // SAFETY: at most 16 values for any pname asked here.
        unsafe { (self.gl.glGetIntegerv)(pname, v.as_mut_ptr()) };
        let mut out = [0; N];
        out.copy_from_slice(&v[..N]);
        out
    }

    unsafe fn int(&self, pname: E) -> I {
        // SAFETY: caller's contract.
        unsafe { self.ints::<1>(pname)[0] }
    }

    /// The enables this context has.
    fn toggles(&self) -> Vec<E> {
        let mut t = vec![
            BLEND,
            SCISSOR_TEST,
            DEPTH_TEST,
            STENCIL_TEST,
            CULL_FACE,
            COLOR_LOGIC_OP,
            SAMPLE_ALPHA_TO_COVERAGE,
            SAMPLE_COVERAGE,
            CLIP_DISTANCE0,
            CLIP_DISTANCE2,
        ];
        if self.modern.is_some() {
            t.extend([FRAMEBUFFER_SRGB, PRIMITIVE_RESTART, RASTERIZER_DISCARD, SAMPLE_MASK]);
        }
        if self.gl43 {
            t.push(PRIMITIVE_RESTART_FIXED_INDEX);
        }
        if !self.core {
            t.extend([ALPHA_TEST, POLYGON_STIPPLE]);
        }
        t
    }

    /// Draws the frame's image: the same every frame.
    unsafe fn draw(&self) {
        let g = &self.gl;
        // SAFETY: valid GL calls on the current context with objects of ours.
        unsafe {
            if let Some(m) = &self.modern {
                (m.glBindFramebuffer)(FRAMEBUFFER, 0);
                (m.glBindVertexArray)(self.o.vao);
            } else {
                (g.glBindBuffer)(ARRAY_BUFFER, self.o.triangle);
                (g.glVertexAttribPointer)(0, 2, FLOAT, 0, 8, std::ptr::null());
                (g.glEnableVertexAttribArray)(0);
                for i in 1..3 {
                    (g.glDisableVertexAttribArray)(i);
                }
                (g.glDisableVertexAttribArray)(5);
            }
            (g.glDrawBuffer)(BACK);
            (g.glReadBuffer)(BACK);
            if let Some(x) = &self.gl45 {
                (x.glClipControl)(LOWER_LEFT, NEGATIVE_ONE_TO_ONE);
            }
            for t in self.toggles() {
                (g.glDisable)(t);
            }
            (g.glColorMask)(1, 1, 1, 1);
            (g.glDepthMask)(1);
            (g.glPolygonMode)(FRONT_AND_BACK, FILL);
            (g.glViewport)(0, 0, self.size[0] as I, self.size[1] as I);
            (g.glClearColor)(0.1, 0.15, 0.35, 1.0);
            (g.glClear)(COLOR_BUFFER_BIT | DEPTH_BUFFER_BIT);
            (g.glUseProgram)(self.o.program);
            (g.glDrawArrays)(TRIANGLES, 0, 3);
        }
    }

    /// Sets the unusual state; `odd` frames read from the default framebuffer's front buffer,
    /// even ones from an FBO of ours.
    unsafe fn set(&self, odd: bool) {
        let g = &self.gl;
        let o = &self.o;
        // SAFETY: valid GL calls on the current context with objects of ours.
        unsafe {
            if let Some(m) = &self.modern {
                (m.glBindFramebuffer)(DRAW_FRAMEBUFFER, 0);
                (g.glDrawBuffer)(FRONT);
                if odd {
                    (m.glBindFramebuffer)(READ_FRAMEBUFFER, 0);
                    (g.glReadBuffer)(FRONT);
                } else {
                    (m.glBindFramebuffer)(READ_FRAMEBUFFER, o.fbo);
                }
                (m.glBindVertexArray)(o.vao);
                (g.glBindBuffer)(ELEMENT_ARRAY_BUFFER, o.spare[1]);
                (m.glBindSampler)(0, o.sampler);
                (m.glSampleMaski)(0, 0x5);
                (g.glBindBuffer)(PIXEL_UNPACK_BUFFER, o.spare[2]);
                (g.glBindBuffer)(PIXEL_PACK_BUFFER, o.spare[3]);
            } else {
                (g.glDrawBuffer)(FRONT);
                (g.glReadBuffer)(FRONT);
                // Attribute arrays as a GL 2 app leaves them: a client array, a buffer array
                // that is disabled, an odd format, and an array beyond the HUD's three.
                (g.glBindBuffer)(ARRAY_BUFFER, 0);
                (g.glVertexAttribPointer)(0, 3, FLOAT, 0, 12, CLIENT_ARRAY.as_ptr() as *const c_void);
                (g.glEnableVertexAttribArray)(0);
                (g.glBindBuffer)(ARRAY_BUFFER, o.spare[4]);
                (g.glVertexAttribPointer)(1, 4, UNSIGNED_BYTE, 1, 16, 8 as *const c_void);
                (g.glDisableVertexAttribArray)(1);
                (g.glVertexAttribPointer)(2, 2, SHORT, 0, 0, 4 as *const c_void);
                (g.glEnableVertexAttribArray)(2);
                (g.glEnableVertexAttribArray)(5);
                (g.glBindBuffer)(ELEMENT_ARRAY_BUFFER, o.spare[1]);
            }
            if let Some(x) = &self.gl45 {
                // Window y flipped: a HUD placed through NDC without knowing would land upside
                // down at the bottom.
                (x.glClipControl)(UPPER_LEFT, ZERO_TO_ONE);
            }
            (g.glUseProgram)(o.program);
            (g.glBindBuffer)(ARRAY_BUFFER, o.spare[0]);
            (g.glActiveTexture)(TEXTURE0);
            (g.glBindTexture)(TEXTURE_2D, o.textures[0]);
            (g.glActiveTexture)(TEXTURE3);
            (g.glBindTexture)(TEXTURE_2D, o.textures[1]);
            for t in self.toggles() {
                (g.glEnable)(t);
            }
            (g.glBlendFuncSeparate)(DST_COLOR, ONE_MINUS_SRC_COLOR, CONSTANT_ALPHA, ZERO);
            (g.glBlendEquationSeparate)(FUNC_REVERSE_SUBTRACT, MAX);
            (g.glColorMask)(1, 0, 1, 0);
            (g.glScissor)(3, 4, 50, 60);
            (g.glViewport)(1, 2, 100, 90);
            (g.glDepthMask)(0);
            (g.glDepthFunc)(GREATER);
            (g.glCullFace)(FRONT);
            (g.glLogicOp)(XOR);
            (g.glPolygonMode)(FRONT_AND_BACK, LINE);
            (g.glClearColor)(0.25, 0.5, 0.75, 1.0);
            (g.glPixelStorei)(UNPACK_ALIGNMENT, 1);
            (g.glPixelStorei)(UNPACK_ROW_LENGTH, 9);
            (g.glPixelStorei)(UNPACK_SKIP_ROWS, 2);
            (g.glPixelStorei)(UNPACK_SKIP_PIXELS, 3);
            (g.glPixelStorei)(PACK_ALIGNMENT, 2);
            (g.glPixelStorei)(PACK_ROW_LENGTH, 11);
            (g.glPixelStorei)(PACK_SKIP_ROWS, 1);
            (g.glPixelStorei)(PACK_SKIP_PIXELS, 5);
        }
    }

    unsafe fn read(&self) -> State {
        let g = &self.gl;
        // SAFETY: queries valid on this context (gated by its version and profile), each
        // writing at most 16 values.
        unsafe {
            let mut s = State {
                draw_fb: self.int(DRAW_FRAMEBUFFER_BINDING),
                program: self.int(CURRENT_PROGRAM),
                array_buffer: self.int(ARRAY_BUFFER_BINDING),
                element_buffer: self.int(ELEMENT_ARRAY_BUFFER_BINDING),
                active_texture: self.int(ACTIVE_TEXTURE),
                texture_unit3: self.int(TEXTURE_BINDING_2D),
                ..State::default()
            };
            (g.glActiveTexture)(TEXTURE0);
            s.texture_unit0 = self.int(TEXTURE_BINDING_2D);
            if self.modern.is_some() {
                s.read_fb = self.int(READ_FRAMEBUFFER_BINDING);
                s.vao = self.int(VERTEX_ARRAY_BINDING);
                s.sampler_unit0 = self.int(SAMPLER_BINDING);
                let mut v = [0; 16];
                (g.glGetIntegeri_v)(SAMPLE_MASK_VALUE, 0, v.as_mut_ptr());
                s.sample_mask = v[0];
            }
            (g.glActiveTexture)(s.active_texture as E);
            if self.gl45.is_some() {
                s.clip_control = [self.int(CLIP_ORIGIN), self.int(CLIP_DEPTH_MODE)];
            }
            s.enables = self
                .toggles()
                .into_iter()
                .map(|t| (t, (g.glIsEnabled)(t) != 0))
                .collect();
            s.blend_func = [
                self.int(BLEND_SRC_RGB),
                self.int(BLEND_DST_RGB),
                self.int(BLEND_SRC_ALPHA),
                self.int(BLEND_DST_ALPHA),
            ];
            s.blend_eq = [self.int(BLEND_EQUATION_RGB), self.int(BLEND_EQUATION_ALPHA)];
            let mut m = [0u8; 16];
            (g.glGetBooleanv)(COLOR_WRITEMASK, m.as_mut_ptr());
            s.color_mask.copy_from_slice(&m[..4]);
            (g.glGetBooleanv)(DEPTH_WRITEMASK, m.as_mut_ptr());
            s.depth_mask = m[0];
            s.scissor = self.ints::<4>(SCISSOR_BOX);
            s.viewport = self.ints::<4>(VIEWPORT);
            s.depth_func = self.int(DEPTH_FUNC);
            s.cull_face = self.int(CULL_FACE_MODE);
            s.logic_op = self.int(LOGIC_OP_MODE);
            s.polygon_mode = self.ints::<2>(POLYGON_MODE);
            let mut c = [0.0f32; 16];
            (g.glGetFloatv)(COLOR_CLEAR_VALUE, c.as_mut_ptr());
            s.clear_color.copy_from_slice(&c[..4]);
            s.draw_buffer = self.int(DRAW_BUFFER);
            s.read_buffer = self.int(READ_BUFFER);
            s.unpack = [
                self.int(UNPACK_ALIGNMENT),
                self.int(UNPACK_ROW_LENGTH),
                self.int(UNPACK_SKIP_ROWS),
                self.int(UNPACK_SKIP_PIXELS),
                if self.modern.is_some() {
                    self.int(PIXEL_UNPACK_BUFFER_BINDING)
                } else {
                    0
                },
            ];
            s.pack = [
                self.int(PACK_ALIGNMENT),
                self.int(PACK_ROW_LENGTH),
                self.int(PACK_SKIP_ROWS),
                self.int(PACK_SKIP_PIXELS),
                if self.modern.is_some() {
                    self.int(PIXEL_PACK_BUFFER_BINDING)
                } else {
                    0
                },
            ];
            if self.modern.is_none() {
                for i in [0u32, 1, 2, 5] {
                    let a = |p: E| {
                        let mut v = [0; 16];
                        (g.glGetVertexAttribiv)(i, p, v.as_mut_ptr());
                        v[0] as usize
                    };
                    let mut ptr = std::ptr::null_mut();
                    (g.glGetVertexAttribPointerv)(i, VERTEX_ATTRIB_ARRAY_POINTER, &mut ptr);
                    s.attribs.push([
                        a(VERTEX_ATTRIB_ARRAY_ENABLED),
                        a(VERTEX_ATTRIB_ARRAY_SIZE),
                        a(VERTEX_ATTRIB_ARRAY_TYPE),
                        a(VERTEX_ATTRIB_ARRAY_NORMALIZED),
                        a(VERTEX_ATTRIB_ARRAY_STRIDE),
                        a(VERTEX_ATTRIB_ARRAY_BUFFER_BINDING),
                        ptr as usize,
                    ]);
                }
            }
            s
        }
    }
}

/// # Safety
/// `gl` is loaded from the current context.
unsafe fn compile(g: &Gl, kind: E, src: &str) -> U {
    // SAFETY: valid GL calls; the source pointer and length describe `src`.
    unsafe {
        let sh = (g.glCreateShader)(kind);
        let p = src.as_ptr() as *const c_char;
        let len = src.len() as I;
        (g.glShaderSource)(sh, 1, &p, &len);
        (g.glCompileShader)(sh);
        let mut ok = 0;
        (g.glGetShaderiv)(sh, COMPILE_STATUS, &mut ok);
        assert!(ok != 0, "probe shader does not compile:\n{src}");
        sh
    }
}

/// # Safety
/// `gl` is loaded from the current context.
unsafe fn objects(g: &Gl, modern: Option<&Modern>, core: bool) -> Objects {
    let (vs, fs) = if core {
        (
            "#version 330 core\nlayout(location = 0) in vec2 p;\nvoid main() { gl_Position = vec4(p, 0.0, 1.0); }\n",
            "#version 330 core\nout vec4 c;\nvoid main() { c = vec4(1.0, 0.55, 0.1, 1.0); }\n",
        )
    } else {
        (
            "#version 110\nattribute vec2 p;\nvoid main() { gl_Position = vec4(p, 0.0, 1.0); }\n",
            "#version 110\nvoid main() { gl_FragColor = vec4(1.0, 0.55, 0.1, 1.0); }\n",
        )
    };
    let tri: [f32; 6] = [-0.6, -0.5, 0.6, -0.5, 0.0, 0.7];
    // SAFETY: valid GL calls on the current context; every pointer describes live data of
    // the size given.
    unsafe {
        let program = (g.glCreateProgram)();
        (g.glAttachShader)(program, compile(g, VERTEX_SHADER, vs));
        (g.glAttachShader)(program, compile(g, FRAGMENT_SHADER, fs));
        (g.glBindAttribLocation)(program, 0, c"p".as_ptr());
        (g.glLinkProgram)(program);
        let mut ok = 0;
        (g.glGetProgramiv)(program, LINK_STATUS, &mut ok);
        assert!(ok != 0, "probe program does not link");
        let mut bufs = [0u32; 6];
        (g.glGenBuffers)(6, bufs.as_mut_ptr());
        for &b in &bufs {
            (g.glBindBuffer)(ARRAY_BUFFER, b);
            (g.glBufferData)(ARRAY_BUFFER, 64, std::ptr::null(), STATIC_DRAW);
        }
        (g.glBindBuffer)(ARRAY_BUFFER, bufs[0]);
        (g.glBufferData)(ARRAY_BUFFER, 24, tri.as_ptr() as *const c_void, STATIC_DRAW);
        let mut textures = [0u32; 2];
        (g.glGenTextures)(2, textures.as_mut_ptr());
        for &t in &textures {
            (g.glBindTexture)(TEXTURE_2D, t);
            (g.glTexImage2D)(TEXTURE_2D, 0, RGBA as I, 4, 4, 0, RGBA, UNSIGNED_BYTE, std::ptr::null());
        }
        let mut o = Objects {
            program,
            vao: 0,
            triangle: bufs[0],
            spare: [bufs[1], bufs[2], bufs[3], bufs[4], bufs[5]],
            textures,
            fbo: 0,
            sampler: 0,
        };
        if let Some(m) = modern {
            (m.glGenVertexArrays)(1, &mut o.vao);
            (m.glBindVertexArray)(o.vao);
            (g.glBindBuffer)(ARRAY_BUFFER, o.triangle);
            (g.glVertexAttribPointer)(0, 2, FLOAT, 0, 8, std::ptr::null());
            (g.glEnableVertexAttribArray)(0);
            (m.glGenFramebuffers)(1, &mut o.fbo);
            (m.glBindFramebuffer)(FRAMEBUFFER, o.fbo);
            (m.glFramebufferTexture2D)(FRAMEBUFFER, COLOR_ATTACHMENT0, TEXTURE_2D, textures[1], 0);
            (m.glBindFramebuffer)(FRAMEBUFFER, 0);
            (m.glGenSamplers)(1, &mut o.sampler);
        }
        o
    }
}

#[repr(C)]
struct XVisualInfo {
    visual: *mut c_void,
    visualid: c_ulong,
    screen: c_int,
    depth: c_int,
}

#[repr(C)]
#[derive(Default)]
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
    event_mask: std::ffi::c_long,
    do_not_propagate_mask: std::ffi::c_long,
    override_redirect: c_int,
    colormap: c_ulong,
    cursor: c_ulong,
}

/// `dlsym` that panics on a missing symbol.
///
/// # Safety
/// `T` is the function type of `name`.
unsafe fn sym<T: Copy>(lib: *mut c_void, name: &CStr) -> T {
    // SAFETY: lib is a dlopen handle; name is NUL-terminated.
    let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
    assert!(!p.is_null(), "no {name:?}");
    // SAFETY: caller's contract; T is a function pointer type (pointer-sized).
    unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) }
}

fn main() {
    let a = args();
    // SAFETY: the whole program is FFI with libX11 and libGL, called as their documentation
    // says: every pointer passed is to live data of the right layout, every function pointer
    // comes from dlsym/glXGetProcAddressARB under its own name.
    let failed = unsafe { run(&a) };
    std::process::exit(i32::from(failed));
}

/// Returns whether any check failed.
unsafe fn run(a: &Args) -> bool {
    // SAFETY: see main.
    unsafe {
        let x11 = libc::dlopen(c"libX11.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
        let libgl = libc::dlopen(c"libGL.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
        assert!(!x11.is_null() && !libgl.is_null(), "cannot load libX11/libGL");
        let x_open: unsafe extern "C" fn(*const c_char) -> *mut c_void = sym(x11, c"XOpenDisplay");
        let x_screen: unsafe extern "C" fn(*mut c_void) -> c_int = sym(x11, c"XDefaultScreen");
        let x_root: unsafe extern "C" fn(*mut c_void) -> c_ulong = sym(x11, c"XDefaultRootWindow");
        let x_colormap: unsafe extern "C" fn(*mut c_void, c_ulong, *mut c_void, c_int) -> c_ulong =
            sym(x11, c"XCreateColormap");
        #[allow(clippy::type_complexity)]
        let x_window: unsafe extern "C" fn(
            *mut c_void,
            c_ulong,
            c_int,
            c_int,
            c_uint,
            c_uint,
            c_uint,
            c_int,
            c_uint,
            *mut c_void,
            c_ulong,
            *mut XSetWindowAttributes,
        ) -> c_ulong = sym(x11, c"XCreateWindow");
        let x_map: unsafe extern "C" fn(*mut c_void, c_ulong) -> c_int = sym(x11, c"XMapWindow");
        let x_sync: unsafe extern "C" fn(*mut c_void, c_int) -> c_int = sym(x11, c"XSync");
        let choose: unsafe extern "C" fn(*mut c_void, c_int, *const c_int, *mut c_int) -> *mut *mut c_void =
            sym(libgl, c"glXChooseFBConfig");
        let visual_of: unsafe extern "C" fn(*mut c_void, *mut c_void) -> *mut XVisualInfo =
            sym(libgl, c"glXGetVisualFromFBConfig");
        let gpa: GetProc = sym(libgl, c"glXGetProcAddressARB");
        let make_current: unsafe extern "C" fn(*mut c_void, c_ulong, *mut c_void) -> c_int =
            sym(libgl, c"glXMakeCurrent");
        let swap: unsafe extern "C" fn(*mut c_void, c_ulong) = sym(libgl, c"glXSwapBuffers");
        let destroy: unsafe extern "C" fn(*mut c_void, *mut c_void) = sym(libgl, c"glXDestroyContext");

        let dpy = x_open(std::ptr::null());
        assert!(!dpy.is_null(), "cannot open the X display");
        let fb_attribs: [c_int; 19] = [
            0x8012, 1, // GLX_X_RENDERABLE
            0x8010, 1, // GLX_DRAWABLE_TYPE: GLX_WINDOW_BIT
            0x8011, 1, // GLX_RENDER_TYPE: GLX_RGBA_BIT
            5, 1, // GLX_DOUBLEBUFFER
            8, 8, // GLX_RED_SIZE
            9, 8, // GLX_GREEN_SIZE
            10, 8, // GLX_BLUE_SIZE
            12, 24, // GLX_DEPTH_SIZE
            13, 8, // GLX_STENCIL_SIZE
            0,
        ];
        let mut n = 0;
        let configs = choose(dpy, x_screen(dpy), fb_attribs.as_ptr(), &mut n);
        assert!(!configs.is_null() && n > 0, "no GLX framebuffer config");
        let config = *configs;
        let vi = visual_of(dpy, config);
        assert!(!vi.is_null(), "no visual for the config");
        let root = x_root(dpy);
        let mut swa = XSetWindowAttributes {
            colormap: x_colormap(dpy, root, (*vi).visual, 0),
            ..XSetWindowAttributes::default()
        };
        // CWBorderPixel | CWColormap; InputOutput.
        let win = x_window(
            dpy,
            root,
            0,
            0,
            a.size[0],
            a.size[1],
            0,
            (*vi).depth,
            1,
            (*vi).visual,
            (1 << 3) | (1 << 13),
            &mut swa,
        );
        x_map(dpy, win);
        x_sync(dpy, 0);

        let ctx = if a.core {
            let create: unsafe extern "C" fn(
                *mut c_void,
                *mut c_void,
                *mut c_void,
                c_int,
                *const c_int,
            ) -> *mut c_void = std::mem::transmute::<*mut c_void, _>(gpa(c"glXCreateContextAttribsARB".as_ptr()));
            let attribs: [c_int; 7] = [0x2091, 3, 0x2092, 3, 0x9126, 1, 0];
            create(dpy, config, std::ptr::null_mut(), 1, attribs.as_ptr())
        } else {
            let create: unsafe extern "C" fn(*mut c_void, *mut c_void, c_int, *mut c_void, c_int) -> *mut c_void =
                sym(libgl, c"glXCreateNewContext");
            create(dpy, config, 0x8014, std::ptr::null_mut(), 1)
        };
        assert!(!ctx.is_null(), "cannot create the GL context");
        assert!(make_current(dpy, win, ctx) != 0, "glXMakeCurrent failed");

        let gl = Gl::load(gpa);
        let version = CStr::from_ptr((gl.glGetString)(VERSION) as *const c_char)
            .to_string_lossy()
            .into_owned();
        println!("GL_VERSION {version}");
        let (_, major, minor) = parse(&version);
        let modern = ((major, minor) >= (3, 3)).then(|| Modern::load(gpa));
        let o = objects(&gl, modern.as_ref(), a.core);
        let p = Probe {
            gl,
            modern,
            core: a.core,
            gl43: (major, minor) >= (4, 3),
            gl45: ((major, minor) >= (4, 5)).then(|| Gl45::load(gpa)),
            o,
            size: a.size,
        };
        let legacy = (a.legacy && !a.core).then(|| Legacy::load(gpa));
        let lists = legacy.as_ref().map(|l| l.lists());
        let mut failures = 0;
        for frame in 0..a.frames {
            p.draw();
            if let (Some(l), Some(base)) = (&legacy, lists) {
                l.frame(base);
            }
            p.set(frame % 2 == 1);
            let expected = p.read();
            let err = (p.gl.glGetError)();
            assert_eq!(err, 0, "the probe's own calls raised GL error 0x{err:04X}");
            swap(dpy, win);
            let got = p.read();
            let err = (p.gl.glGetError)();
            if got != expected || err != 0 {
                failures += 1;
                if failures <= 3 {
                    println!("frame {frame}: GL error 0x{err:04X}");
                    println!("frame {frame}: expected {expected:?}");
                    println!("frame {frame}: got      {got:?}");
                }
            }
        }
        if let Some(path) = &a.wait_for {
            let start = std::time::Instant::now();
            let path = std::path::Path::new(path);
            while !path.exists() && start.elapsed() < std::time::Duration::from_secs(30) {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            println!("waited: {}", if path.exists() { "found" } else { "missing" });
        }
        // The context is destroyed while current, as glmark2 does.
        destroy(dpy, ctx);
        if failures == 0 {
            println!("probe: {} frames, state preserved", a.frames);
        } else {
            println!("probe: {failures} of {} frames with changed state", a.frames);
        }
        failures > 0
    }
}

/// `(es, major, minor)` of a `GL_VERSION` string.
fn parse(v: &str) -> (bool, u32, u32) {
    let word = v.split_whitespace().next().unwrap_or("");
    let mut it = word.split('.').map(|p| p.parse().unwrap_or(0));
    (false, it.next().unwrap_or(0), it.next().unwrap_or(0))
}
