//! The app's GL state around the HUD: everything the HUD's draws depend on or change is read
//! before ([`capture`]), set to what the HUD needs ([`prepare`]), and put back exactly after
//! ([`restore`]), so the app cannot tell the HUD was drawn.
//!
//! Covered: draw and read framebuffer bindings (and the default framebuffer's draw/read buffer
//! when changed), program, vertex array object (or, without VAOs, attribute arrays 0..2, every
//! other enabled array, and the element buffer), array buffer, active texture unit with the 2D
//! texture and sampler of unit 0, blend enable/functions/equations (draw buffer 0 by index where
//! state is per draw buffer), colour mask, scissor test and box, viewport (index 0 where there
//! are viewport arrays), depth test, stencil test, face culling, `GL_FRAMEBUFFER_SRGB`, polygon
//! mode, primitive restart (both kinds), rasterizer discard, logic op, alpha-to-coverage,
//! sample coverage, sample mask, clip planes/distances 0..7, alpha test and polygon stipple
//! (compatibility profiles), the clear colour, and pack/unpack pixel store state with the pixel
//! buffer bindings. Depth writes need no change: with the depth test off nothing is written.
//! Nothing here allocates.

use super::caps::Caps;
use super::fns::{self as gl, Fns};

/// Attribute arrays the HUD's programs use (positions, texture coordinates, colours).
pub const OUR_ATTRIBS: u32 = 3;

/// One generic attribute array (contexts without VAOs only).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Attrib {
    pub enabled: bool,
    pub size: i32,
    pub ty: u32,
    pub normalized: bool,
    pub stride: i32,
    pub buffer: u32,
    pub pointer: usize,
}

/// Pixel store state of one direction (pack or unpack) and its pixel buffer binding.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PixelStore {
    pub alignment: i32,
    pub row_length: i32,
    pub skip_rows: i32,
    pub skip_pixels: i32,
    pub buffer: u32,
}

/// Whether a context has a piece of state.
type Has = fn(&Caps) -> bool;

/// Enables that are switched off for the HUD's draws when on, each with its capability check.
const TOGGLES: &[(u32, Has)] = &[
    (gl::DEPTH_TEST, |_| true),
    (gl::STENCIL_TEST, |_| true),
    (gl::CULL_FACE, |_| true),
    (gl::SAMPLE_ALPHA_TO_COVERAGE, |_| true),
    (gl::SAMPLE_COVERAGE, |_| true),
    (gl::FRAMEBUFFER_SRGB, |c| c.srgb_toggle),
    (gl::PRIMITIVE_RESTART, |c| c.primitive_restart),
    (gl::PRIMITIVE_RESTART_FIXED_INDEX, |c| c.primitive_restart_fixed),
    (gl::RASTERIZER_DISCARD, |c| c.rasterizer_discard),
    (gl::COLOR_LOGIC_OP, |c| c.logic_op),
    (gl::SAMPLE_MASK, |c| c.sample_mask),
    (gl::ALPHA_TEST, |c| c.compat),
    (gl::POLYGON_STIPPLE, |c| c.compat),
];

/// What the app had, plus what was changed lazily (the `Option`s are `Some` only when the HUD
/// changed that state and must put it back).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Saved {
    pub draw_fb: u32,
    pub read_fb: u32,
    pub program: u32,
    pub vao: u32,
    pub array_buffer: u32,
    /// Without VAOs: the element buffer, attributes 0..2, and the other enabled arrays (bits).
    pub element_buffer: u32,
    pub attribs: [Attrib; OUR_ATTRIBS as usize],
    pub other_enabled: u32,
    pub active_texture: u32,
    pub texture: u32,
    pub sampler: u32,
    pub blend: bool,
    /// src rgb, dst rgb, src alpha, dst alpha.
    pub blend_func: [u32; 4],
    pub blend_eq: [u32; 2],
    pub color_mask: [bool; 4],
    pub scissor_test: bool,
    pub scissor: [i32; 4],
    pub viewport: [f32; 4],
    /// Bit i: `TOGGLES[i]` was on.
    pub toggles: u32,
    /// Bit i: clip plane / distance i was on.
    pub clip: u8,
    pub polygon_mode: [u32; 2],
    /// The default framebuffer's draw buffer, when the HUD had to set it to `GL_BACK`.
    pub fb0_draw_buffer: Option<u32>,
    pub fb0_read_buffer: Option<u32>,
    pub clear_color: Option<[f32; 4]>,
    pub unpack: Option<PixelStore>,
    pub pack: Option<PixelStore>,
}

fn enabled_idx(f: &Fns, cap: u32, indexed: bool) -> bool {
    if indexed {
        f.is_enabledi(cap, 0) != 0
    } else {
        f.is_enabled(cap) != 0
    }
}

fn set_enabled(f: &Fns, cap: u32, on: bool) {
    if on {
        f.enable(cap)
    } else {
        f.disable(cap)
    }
}

fn set_enabled_idx(f: &Fns, cap: u32, on: bool, indexed: bool) {
    match (indexed, on) {
        (true, true) => f.enablei(cap, 0),
        (true, false) => f.disablei(cap, 0),
        (false, on) => set_enabled(f, cap, on),
    }
}

fn b(v: bool) -> u8 {
    u8::from(v)
}

/// Reads the app's state (everything [`restore`] puts back, except the lazily saved parts).
/// Leaves texture unit 0 active (its binding is only readable there): follow with [`restore`],
/// or [`leave`] when nothing is drawn after all.
pub fn capture(f: &Fns, c: &Caps) -> Saved {
    let mut s = Saved::default();
    if c.split_fb {
        s.draw_fb = f.uint(gl::FRAMEBUFFER_BINDING);
        s.read_fb = f.uint(gl::READ_FRAMEBUFFER_BINDING);
    } else if c.fbo {
        s.draw_fb = f.uint(gl::FRAMEBUFFER_BINDING);
        s.read_fb = s.draw_fb;
    }
    s.program = f.uint(gl::CURRENT_PROGRAM);
    s.array_buffer = f.uint(gl::ARRAY_BUFFER_BINDING);
    if c.vao {
        s.vao = f.uint(gl::VERTEX_ARRAY_BINDING);
    } else {
        s.element_buffer = f.uint(gl::ELEMENT_ARRAY_BUFFER_BINDING);
        for (i, a) in s.attribs.iter_mut().enumerate() {
            let i = i as u32;
            *a = Attrib {
                enabled: f.attrib_int(i, gl::VERTEX_ATTRIB_ARRAY_ENABLED) != 0,
                size: f.attrib_int(i, gl::VERTEX_ATTRIB_ARRAY_SIZE),
                ty: f.attrib_int(i, gl::VERTEX_ATTRIB_ARRAY_TYPE) as u32,
                normalized: f.attrib_int(i, gl::VERTEX_ATTRIB_ARRAY_NORMALIZED) != 0,
                stride: f.attrib_int(i, gl::VERTEX_ATTRIB_ARRAY_STRIDE),
                buffer: f.attrib_int(i, gl::VERTEX_ATTRIB_ARRAY_BUFFER_BINDING) as u32,
                pointer: f.attrib_pointer(i),
            };
        }
        for i in OUR_ATTRIBS..c.attribs {
            if f.attrib_int(i, gl::VERTEX_ATTRIB_ARRAY_ENABLED) != 0 {
                s.other_enabled |= 1 << i;
            }
        }
    }
    s.active_texture = f.uint(gl::ACTIVE_TEXTURE);
    if s.active_texture != gl::TEXTURE0 {
        f.active_texture(gl::TEXTURE0);
    }
    s.texture = f.uint(gl::TEXTURE_BINDING_2D);
    if c.sampler_objects {
        s.sampler = f.uint(gl::SAMPLER_BINDING);
    }
    s.blend = enabled_idx(f, gl::BLEND, c.indexed_enable);
    if c.indexed_blend {
        s.blend_func = [
            f.ints_i::<1>(gl::BLEND_SRC_RGB, 0)[0] as u32,
            f.ints_i::<1>(gl::BLEND_DST_RGB, 0)[0] as u32,
            f.ints_i::<1>(gl::BLEND_SRC_ALPHA, 0)[0] as u32,
            f.ints_i::<1>(gl::BLEND_DST_ALPHA, 0)[0] as u32,
        ];
        s.blend_eq = [
            f.ints_i::<1>(gl::BLEND_EQUATION_RGB, 0)[0] as u32,
            f.ints_i::<1>(gl::BLEND_EQUATION_ALPHA, 0)[0] as u32,
        ];
    } else {
        s.blend_func = [
            f.uint(gl::BLEND_SRC_RGB),
            f.uint(gl::BLEND_DST_RGB),
            f.uint(gl::BLEND_SRC_ALPHA),
            f.uint(gl::BLEND_DST_ALPHA),
        ];
        s.blend_eq = [f.uint(gl::BLEND_EQUATION_RGB), f.uint(gl::BLEND_EQUATION_ALPHA)];
    }
    s.color_mask = if c.indexed_enable {
        f.bools_i::<4>(gl::COLOR_WRITEMASK, 0)
    } else {
        f.bools::<4>(gl::COLOR_WRITEMASK)
    };
    if c.viewport_array {
        s.scissor_test = f.is_enabledi(gl::SCISSOR_TEST, 0) != 0;
        s.scissor = f.ints_i::<4>(gl::SCISSOR_BOX, 0);
        s.viewport = f.floats_i::<4>(gl::VIEWPORT, 0);
    } else {
        s.scissor_test = f.is_enabled(gl::SCISSOR_TEST) != 0;
        s.scissor = f.ints::<4>(gl::SCISSOR_BOX);
        let v = f.ints::<4>(gl::VIEWPORT);
        s.viewport = [v[0] as f32, v[1] as f32, v[2] as f32, v[3] as f32];
    }
    for (i, (cap, has)) in TOGGLES.iter().enumerate() {
        if has(c) && f.is_enabled(*cap) != 0 {
            s.toggles |= 1 << i;
        }
    }
    for i in 0..c.clip_planes {
        if f.is_enabled(gl::CLIP_DISTANCE0 + i) != 0 {
            s.clip |= 1 << i;
        }
    }
    if c.polygon_mode {
        let m = f.ints::<2>(gl::POLYGON_MODE);
        s.polygon_mode = [m[0] as u32, m[1] as u32];
    }
    s
}

/// Whether the HUD must not draw this frame: the app's program was deleted while in use (un-
/// binding it would free it for good), or transform feedback is recording (our draws would be
/// captured).
pub fn must_skip(f: &Fns, c: &Caps, s: &Saved) -> bool {
    if s.program != 0 && f.program_int(s.program, gl::DELETE_STATUS) != 0 {
        return true;
    }
    c.transform_feedback
        && f.bools::<1>(gl::TRANSFORM_FEEDBACK_ACTIVE)[0]
        && !f.bools::<1>(gl::TRANSFORM_FEEDBACK_PAUSED)[0]
}

/// Undoes what [`capture`] itself changed (the active texture unit).
pub fn leave(f: &Fns, s: &Saved) {
    if s.active_texture != gl::TEXTURE0 {
        f.active_texture(s.active_texture);
    }
}

/// Sets what both HUD passes need and that the app may have set otherwise. Texture unit 0 is
/// active afterwards (`capture` already switched to it).
pub fn prepare(f: &Fns, c: &Caps, s: &Saved) {
    for (i, (cap, _)) in TOGGLES.iter().enumerate() {
        if s.toggles & (1 << i) != 0 {
            f.disable(*cap);
        }
    }
    for i in 0..c.clip_planes {
        if s.clip & (1 << i) != 0 {
            f.disable(gl::CLIP_DISTANCE0 + i);
        }
    }
    if c.polygon_mode && s.polygon_mode != [gl::FILL, gl::FILL] {
        f.polygon_mode(gl::FRONT_AND_BACK, gl::FILL);
    }
    if s.color_mask != [true; 4] {
        if c.indexed_enable {
            f.color_maski(0, gl::TRUE, gl::TRUE, gl::TRUE, gl::TRUE);
        } else {
            f.color_mask(gl::TRUE, gl::TRUE, gl::TRUE, gl::TRUE);
        }
    }
    if c.sampler_objects && s.sampler != 0 {
        f.bind_sampler(0, 0);
    }
    if !s.blend {
        set_enabled_idx(f, gl::BLEND, true, c.indexed_enable);
    }
    if s.scissor_test {
        set_enabled_idx(f, gl::SCISSOR_TEST, false, c.viewport_array);
    }
    if !c.vao {
        for i in OUR_ATTRIBS..c.attribs {
            if s.other_enabled & (1 << i) != 0 {
                f.disable_vertex_attrib_array(i);
            }
        }
    }
}

/// Blend functions and equations for draw buffer 0 (all buffers where state is not per buffer).
pub fn set_blend(f: &Fns, c: &Caps, func: [u32; 4], eq: [u32; 2]) {
    if c.indexed_blend {
        f.blend_func_separatei(0, func[0], func[1], func[2], func[3]);
        f.blend_equation_separatei(0, eq[0], eq[1]);
    } else {
        f.blend_func_separate(func[0], func[1], func[2], func[3]);
        f.blend_equation_separate(eq[0], eq[1]);
    }
}

pub fn set_viewport(f: &Fns, c: &Caps, v: [f32; 4]) {
    if c.viewport_array {
        f.viewport_indexedf(0, v[0], v[1], v[2], v[3]);
    } else {
        f.viewport(v[0] as i32, v[1] as i32, v[2] as i32, v[3] as i32);
    }
}

/// Scissor test on with this box (the content pass clips ImGui's commands).
pub fn set_scissor(f: &Fns, c: &Caps, on: bool, r: [i32; 4]) {
    set_enabled_idx(f, gl::SCISSOR_TEST, on, c.viewport_array);
    if on {
        if c.viewport_array {
            f.scissor_indexed(0, r[0], r[1], r[2], r[3]);
        } else {
            f.scissor(r[0], r[1], r[2], r[3]);
        }
    }
}

/// Binds `fb` for drawing (and, on GLES 2, reading: it has one binding).
pub fn bind_draw_fb(f: &Fns, c: &Caps, fb: u32) {
    if c.fbo {
        f.bind_framebuffer(
            if c.split_fb {
                gl::DRAW_FRAMEBUFFER
            } else {
                gl::FRAMEBUFFER
            },
            fb,
        );
    }
}

/// Binds `fb` for reading.
pub fn bind_read_fb(f: &Fns, c: &Caps, fb: u32) {
    if c.fbo {
        f.bind_framebuffer(
            if c.split_fb {
                gl::READ_FRAMEBUFFER
            } else {
                gl::FRAMEBUFFER
            },
            fb,
        );
    }
}

/// With the default framebuffer bound for drawing: makes its back buffer the draw buffer.
pub fn draw_to_back(f: &Fns, c: &Caps, s: &mut Saved) {
    if !c.draw_buffer || s.fb0_draw_buffer.is_some() {
        return;
    }
    let current = f.uint(if c.es { gl::DRAW_BUFFER0 } else { gl::DRAW_BUFFER });
    if current != gl::BACK {
        f.set_draw_buffer(c.es, gl::BACK);
        s.fb0_draw_buffer = Some(current);
    }
}

/// With the default framebuffer bound for reading: reads its back buffer (single-buffered
/// windows: the front buffer, their only one).
pub fn read_from_back(f: &Fns, c: &Caps, s: &mut Saved) {
    if !c.draw_buffer || !c.double_buffered || s.fb0_read_buffer.is_some() {
        return;
    }
    let current = f.uint(gl::READ_BUFFER);
    if current != gl::BACK {
        f.read_buffer(gl::BACK);
        s.fb0_read_buffer = Some(current);
    }
}

pub fn clear_transparent(f: &Fns, s: &mut Saved) {
    if s.clear_color.is_none() {
        s.clear_color = Some(f.floats::<4>(gl::COLOR_CLEAR_VALUE));
    }
    f.clear_color(0.0, 0.0, 0.0, 0.0);
}

const UNPACK: [u32; 5] = [
    gl::UNPACK_ALIGNMENT,
    gl::UNPACK_ROW_LENGTH,
    gl::UNPACK_SKIP_ROWS,
    gl::UNPACK_SKIP_PIXELS,
    gl::PIXEL_UNPACK_BUFFER_BINDING,
];
const PACK: [u32; 5] = [
    gl::PACK_ALIGNMENT,
    gl::PACK_ROW_LENGTH,
    gl::PACK_SKIP_ROWS,
    gl::PACK_SKIP_PIXELS,
    gl::PIXEL_PACK_BUFFER_BINDING,
];

fn read_store(f: &Fns, c: &Caps, names: &[u32; 5]) -> PixelStore {
    let mut p = PixelStore {
        alignment: f.int(names[0]),
        ..PixelStore::default()
    };
    if c.row_length {
        p.row_length = f.int(names[1]);
        p.skip_rows = f.int(names[2]);
        p.skip_pixels = f.int(names[3]);
    }
    if c.pixel_buffers {
        p.buffer = f.uint(names[4]);
    }
    p
}

fn write_store(f: &Fns, c: &Caps, names: &[u32; 5], target: u32, p: &PixelStore) {
    f.pixel_storei(names[0], p.alignment);
    if c.row_length {
        f.pixel_storei(names[1], p.row_length);
        f.pixel_storei(names[2], p.skip_rows);
        f.pixel_storei(names[3], p.skip_pixels);
    }
    if c.pixel_buffers {
        f.bind_buffer(target, p.buffer);
    }
}

/// Tightly packed RGBA rows from client memory for texture uploads.
pub fn unpack_plain(f: &Fns, c: &Caps, s: &mut Saved) {
    if s.unpack.is_none() {
        s.unpack = Some(read_store(f, c, &UNPACK));
    }
    write_store(
        f,
        c,
        &UNPACK,
        gl::PIXEL_UNPACK_BUFFER,
        &PixelStore {
            alignment: 4,
            ..PixelStore::default()
        },
    );
}

/// Tightly packed RGBA rows into client memory for `glReadPixels`.
pub fn pack_plain(f: &Fns, c: &Caps, s: &mut Saved) {
    if s.pack.is_none() {
        s.pack = Some(read_store(f, c, &PACK));
    }
    write_store(
        f,
        c,
        &PACK,
        gl::PIXEL_PACK_BUFFER,
        &PixelStore {
            alignment: 4,
            ..PixelStore::default()
        },
    );
}

/// Puts back everything [`capture`] read and everything changed lazily since.
pub fn restore(f: &Fns, c: &Caps, s: &Saved) {
    if let Some(p) = &s.unpack {
        write_store(f, c, &UNPACK, gl::PIXEL_UNPACK_BUFFER, p);
    }
    if let Some(p) = &s.pack {
        write_store(f, c, &PACK, gl::PIXEL_PACK_BUFFER, p);
    }
    if let Some(cc) = s.clear_color {
        f.clear_color(cc[0], cc[1], cc[2], cc[3]);
    }
    // The default framebuffer's own draw/read buffer: put back while it is bound.
    if s.fb0_draw_buffer.is_some() || s.fb0_read_buffer.is_some() {
        bind_draw_fb(f, c, 0);
        bind_read_fb(f, c, 0);
        if let Some(d) = s.fb0_draw_buffer {
            f.set_draw_buffer(c.es, d);
        }
        if let Some(r) = s.fb0_read_buffer {
            f.read_buffer(r);
        }
    }
    if c.split_fb {
        f.bind_framebuffer(gl::DRAW_FRAMEBUFFER, s.draw_fb);
        f.bind_framebuffer(gl::READ_FRAMEBUFFER, s.read_fb);
    } else if c.fbo {
        f.bind_framebuffer(gl::FRAMEBUFFER, s.draw_fb);
    }
    f.use_program(s.program);
    if c.vao {
        f.bind_vertex_array(s.vao);
    } else {
        for (i, a) in s.attribs.iter().enumerate() {
            let i = i as u32;
            f.bind_buffer(gl::ARRAY_BUFFER, a.buffer);
            f.attrib_pointer_set(i, a.size, a.ty, a.normalized, a.stride, a.pointer);
            if a.enabled {
                f.enable_vertex_attrib_array(i);
            } else {
                f.disable_vertex_attrib_array(i);
            }
        }
        for i in OUR_ATTRIBS..c.attribs {
            if s.other_enabled & (1 << i) != 0 {
                f.enable_vertex_attrib_array(i);
            }
        }
        f.bind_buffer(gl::ELEMENT_ARRAY_BUFFER, s.element_buffer);
    }
    f.bind_buffer(gl::ARRAY_BUFFER, s.array_buffer);
    f.active_texture(gl::TEXTURE0);
    f.bind_texture(gl::TEXTURE_2D, s.texture);
    if c.sampler_objects && s.sampler != 0 {
        f.bind_sampler(0, s.sampler);
    }
    if s.active_texture != gl::TEXTURE0 {
        f.active_texture(s.active_texture);
    }
    set_blend(f, c, s.blend_func, [s.blend_eq[0], s.blend_eq[1]]);
    if !s.blend {
        set_enabled_idx(f, gl::BLEND, false, c.indexed_enable);
    }
    if s.color_mask != [true; 4] {
        let m = s.color_mask;
        if c.indexed_enable {
            f.color_maski(0, b(m[0]), b(m[1]), b(m[2]), b(m[3]));
        } else {
            f.color_mask(b(m[0]), b(m[1]), b(m[2]), b(m[3]));
        }
    }
    let r = s.scissor;
    if c.viewport_array {
        f.scissor_indexed(0, r[0], r[1], r[2], r[3]);
    } else {
        f.scissor(r[0], r[1], r[2], r[3]);
    }
    set_enabled_idx(f, gl::SCISSOR_TEST, s.scissor_test, c.viewport_array);
    set_viewport(f, c, s.viewport);
    for (i, (cap, _)) in TOGGLES.iter().enumerate() {
        if s.toggles & (1 << i) != 0 {
            f.enable(*cap);
        }
    }
    for i in 0..c.clip_planes {
        if s.clip & (1 << i) != 0 {
            f.enable(gl::CLIP_DISTANCE0 + i);
        }
    }
    if c.polygon_mode && s.polygon_mode != [gl::FILL, gl::FILL] {
        let [front, back] = s.polygon_mode;
        if front == back || !c.compat {
            f.polygon_mode(gl::FRONT_AND_BACK, front);
        } else {
            f.polygon_mode(gl::FRONT, front);
            f.polygon_mode(gl::BACK, back);
        }
    }
}

/// Everything app-visible that the HUD could change, for the self-check
/// (`FRAMESCOPE_GL_HUD_CHECK=1`): [`capture`] plus the lazily saved parts as they are now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub saved: Saved,
    pub draw_buffer: u32,
    pub read_buffer: u32,
    pub clear_color: [f32; 4],
    pub unpack: PixelStore,
    pub pack: PixelStore,
}

pub fn snapshot(f: &Fns, c: &Caps) -> Snapshot {
    let saved = capture(f, c);
    leave(f, &saved);
    Snapshot {
        saved,
        draw_buffer: if c.draw_buffer {
            f.uint(if c.es { gl::DRAW_BUFFER0 } else { gl::DRAW_BUFFER })
        } else {
            0
        },
        read_buffer: if c.draw_buffer { f.uint(gl::READ_BUFFER) } else { 0 },
        clear_color: f.floats::<4>(gl::COLOR_CLEAR_VALUE),
        unpack: read_store(f, c, &UNPACK),
        pack: read_store(f, c, &PACK),
    }
}
