//! The GL objects of one context's HUD and its passes, as in the Vulkan HUD: ImGui's lists
//! are drawn into a cached texture (through a framebuffer object) only when the content is
//! refreshed, and every swap composites that texture onto the back buffer: with a copy
//! ([`Renderer::composite_copy`], `glBlitFramebuffer`) when the HUD is opaque on llvmpipe, else
//! with one blended quad ([`Renderer::composite`]; the choice is `copy_path` in the parent).
//!
//! Blending matches the Vulkan pipelines: the content pass blends ImGui's straight-alpha
//! colours over a transparent clear (`SRC_ALPHA, ONE_MINUS_SRC_ALPHA` for colour, `ONE,
//! ONE_MINUS_SRC_ALPHA` for alpha), which leaves premultiplied values; the composite quad blends
//! those with `ONE, ONE_MINUS_SRC_ALPHA` and keeps the window's alpha (`ZERO, ONE`). With an
//! opaque background (`hud_alpha=1`) every cached pixel has alpha 1, so the blend gives the
//! cached bytes themselves and the copy is exact (it also writes alpha 1 there).
//!
//! The cached texture's row 0 holds the HUD's top row (ImGui's y is used as window y in the
//! content pass): the layout of the window's buffers in memory on Mesa, whose window-system
//! buffers are stored top row first, while texture row 0 is GL's bottom row. The composite quad
//! maps it back so the HUD appears upright, and the copy is a blit flipped in GL coordinates,
//! which is a straight row copy in memory. On llvmpipe (Mesa 22.3) that blit, from a B8G8R8A8
//! texture with `GL_FRAMEBUFFER_SRGB` off, becomes `resource_copy_region`, one `memcpy` per row:
//! measured ~40k instructions for a 280x200 HUD, against ~1.2M for an unflipped blit or from
//! R8G8B8A8 storage (llvmpipe then draws a textured quad) and ~2.3M with `GL_FRAMEBUFFER_SRGB`
//! on (a quad that converts); the blended quad costs ~2.5M per glxgears frame. Every function
//! here runs between `state::prepare` and `state::restore`, with texture unit 0 active.

use super::caps::Caps;
use super::fns::{self as gl, Fence, Fns};
use super::shaders;
use super::state::{self, Saved};
use framescope_overlay::{layout, DrawOutput, DrawVert, FontAtlas};

/// One compiled and linked program with its uniform locations.
#[derive(Default)]
struct Program {
    id: u32,
    /// imgui: `u_xform`; composite: `u_rect`.
    a: i32,
    /// composite: `u_uv`.
    b: i32,
}

#[derive(Default)]
pub struct Renderer {
    /// Side of the square cached texture, in pixels.
    pub canvas: u32,
    /// The cached texture is stored as B8G8R8A8 (see [`Caps::bgra`]).
    pub bgra: bool,
    /// The window-system drawable whose multisampling was last read, and whether it is
    /// multisampled (a blit into it is an error: it gets the quad).
    fb0_checked: usize,
    fb0_multisampled: bool,
    font: u32,
    content: u32,
    fbo: u32,
    imgui: Program,
    composite: Program,
    vao_imgui: u32,
    vao_quad: u32,
    quad: u32,
    vbuf: u32,
    vbuf_cap: usize,
    ibuf: u32,
    ibuf_cap: usize,
}

/// Where the composite puts the cached HUD.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    /// The back buffer's size.
    pub target: [u32; 2],
    /// The HUD's top-left pixel (y down).
    pub origin: [i32; 2],
    /// The HUD's size.
    pub size: [u32; 2],
    /// The clip origin is upper-left: NDC y is negated.
    pub flip: bool,
}

const STRIDE: i32 = std::mem::size_of::<DrawVert>() as i32;

fn compile(f: &Fns, kind: u32, src: &str) -> Result<u32, String> {
    let sh = f.create_shader(kind);
    if sh == 0 {
        return Err("glCreateShader failed".into());
    }
    f.set_source(sh, src);
    f.compile_shader(sh);
    if f.shader_int(sh, gl::COMPILE_STATUS) == 0 {
        let log = f.shader_log(sh);
        f.delete_shader(sh);
        let what = if kind == gl::VERTEX_SHADER {
            "vertex"
        } else {
            "fragment"
        };
        return Err(format!("{what} shader does not compile: {log}"));
    }
    Ok(sh)
}

fn link(f: &Fns, c: &Caps, (vs, fs): (String, String), uniforms: [&std::ffi::CStr; 2]) -> Result<Program, String> {
    let v = compile(f, gl::VERTEX_SHADER, &vs)?;
    let s = match compile(f, gl::FRAGMENT_SHADER, &fs) {
        Ok(s) => s,
        Err(e) => {
            f.delete_shader(v);
            return Err(e);
        }
    };
    let p = f.create_program();
    if p == 0 {
        f.delete_shader(v);
        f.delete_shader(s);
        return Err("glCreateProgram failed".into());
    }
    f.attach_shader(p, v);
    f.attach_shader(p, s);
    f.attrib_location(p, shaders::POS, c"a_pos");
    f.attrib_location(p, shaders::UV, c"a_uv");
    f.attrib_location(p, shaders::COLOR, c"a_color");
    if c.dialect.has_frag_out() && !c.es {
        f.frag_data_location(p, c"o_color");
    }
    f.link_program(p);
    // Flagged for deletion now, freed with the program.
    f.delete_shader(v);
    f.delete_shader(s);
    if f.program_int(p, gl::LINK_STATUS) == 0 {
        let log = f.program_log(p);
        f.delete_program(p);
        return Err(format!("program does not link: {log}"));
    }
    f.use_program(p);
    f.uniform1i(f.uniform_location(p, c"u_tex"), 0);
    Ok(Program {
        id: p,
        a: f.uniform_location(p, uniforms[0]),
        b: f.uniform_location(p, uniforms[1]),
    })
}

fn texture(f: &Fns, c: &Caps, s: &mut Saved, size: [u32; 2], filter: i32, pixels: Option<&[u8]>) -> u32 {
    let t = f.gen_texture();
    if t == 0 {
        return 0;
    }
    f.bind_texture(gl::TEXTURE_2D, t);
    f.tex_parameteri(gl::TEXTURE_2D, gl::TEXTURE_MIN_FILTER, filter);
    f.tex_parameteri(gl::TEXTURE_2D, gl::TEXTURE_MAG_FILTER, filter);
    f.tex_parameteri(gl::TEXTURE_2D, gl::TEXTURE_WRAP_S, gl::CLAMP_TO_EDGE);
    f.tex_parameteri(gl::TEXTURE_2D, gl::TEXTURE_WRAP_T, gl::CLAMP_TO_EDGE);
    storage(f, c, s, size, false, pixels);
    t
}

/// (Re)specifies the bound 2D texture's level 0: RGBA8, or with `bgra` B8G8R8A8 (storage
/// only). On desktop GL an unsized `GL_RGBA` with `GL_BGRA`/`GL_UNSIGNED_BYTE` data is what
/// makes Mesa pick the format that matches the data, B8G8R8A8 (a sized `GL_RGBA8` gives
/// R8G8B8A8 whatever the data); GLES names it `GL_BGRA_EXT` for both.
fn storage(f: &Fns, c: &Caps, s: &mut Saved, size: [u32; 2], bgra: bool, pixels: Option<&[u8]>) {
    let (internal, format) = match (bgra, c.es) {
        (true, false) => (gl::RGBA, gl::BGRA),
        (true, true) => (gl::BGRA, gl::BGRA),
        // GLES 2 has no sized RGBA8 internal format; GL_RGBA/UNSIGNED_BYTE is RGBA8 there.
        (false, true) => (gl::RGBA, gl::RGBA),
        (false, false) => (gl::RGBA8, gl::RGBA),
    };
    // Also for storage only: with a pixel unpack buffer bound, a null pointer is an offset.
    state::unpack_plain(f, c, s);
    f.tex_image_8888(internal as i32, size[0] as i32, size[1] as i32, format, pixels);
}

/// Sets attributes 0..2 to ImGui vertices starting at vertex `base` of the bound array buffer.
fn imgui_attribs(f: &Fns, base: u32) {
    let off = base as usize * STRIDE as usize;
    f.attrib_pointer_set(shaders::POS, 2, gl::FLOAT, false, STRIDE, off);
    f.attrib_pointer_set(shaders::UV, 2, gl::FLOAT, false, STRIDE, off + 8);
    f.attrib_pointer_set(shaders::COLOR, 4, gl::UNSIGNED_BYTE, true, STRIDE, off + 16);
}

fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: T is DrawVert (repr(C), plain floats and bytes, no padding) or u16 / f32; every
    // byte of the slice is initialised and the length covers exactly the slice.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

impl Renderer {
    /// Creates every object; on failure deletes what was made. `scale` is `hud_scale`.
    pub fn new(f: &Fns, c: &Caps, s: &mut Saved, atlas: &FontAtlas, scale: f32) -> Result<Renderer, String> {
        let mut r = Renderer::default();
        match r.build(f, c, s, atlas, scale) {
            Ok(()) => Ok(r),
            Err(e) => {
                r.destroy(f, false);
                Err(e)
            }
        }
    }

    fn build(&mut self, f: &Fns, c: &Caps, s: &mut Saved, atlas: &FontAtlas, scale: f32) -> Result<(), String> {
        // As the Vulkan HUD: a 1024-pixel canvas (more when scaled up), within the limits.
        let limit = c.max_texture.min(c.max_viewport[0]).min(c.max_viewport[1]).max(0) as u32;
        self.canvas = ((1024.0 * scale.max(1.0)).min(4096.0) as u32).min(limit);
        if self.canvas < 64 {
            return Err(format!("textures are limited to {limit} pixels"));
        }
        self.imgui = link(f, c, shaders::imgui(c.dialect), [c"u_xform", c"u_xform"])?;
        self.composite = link(f, c, shaders::composite(c.dialect, c.srgb_target), [c"u_rect", c"u_uv"])?;
        if atlas.width as i32 > c.max_texture || atlas.height as i32 > c.max_texture {
            return Err("the font atlas is larger than the largest texture".into());
        }
        self.font = texture(f, c, s, [atlas.width, atlas.height], gl::LINEAR, Some(&atlas.pixels));
        self.content = texture(f, c, s, [self.canvas, self.canvas], gl::NEAREST, None);
        if self.font == 0 || self.content == 0 {
            return Err("glGenTextures gave no name".into());
        }
        self.fbo = f.gen_framebuffer();
        if self.fbo == 0 {
            return Err("glGenFramebuffers gave no name".into());
        }
        let target = if c.split_fb {
            gl::DRAW_FRAMEBUFFER
        } else {
            gl::FRAMEBUFFER
        };
        f.bind_framebuffer(target, self.fbo);
        f.framebuffer_texture_2d(target, gl::COLOR_ATTACHMENT0, gl::TEXTURE_2D, self.content, 0);
        // B8G8R8A8 where it can be rendered to, else RGBA8 (the texture is still bound).
        let size = [self.canvas, self.canvas];
        let mut status = gl::FRAMEBUFFER_COMPLETE;
        for bgra in [true, false] {
            if bgra && !c.bgra {
                continue;
            }
            storage(f, c, s, size, bgra, None);
            status = f.check_framebuffer_status(target);
            if status == gl::FRAMEBUFFER_COMPLETE {
                self.bgra = bgra;
                break;
            }
        }
        if status != gl::FRAMEBUFFER_COMPLETE {
            return Err(format!("the HUD's framebuffer is incomplete (0x{status:04X})"));
        }
        self.quad = f.gen_buffer();
        self.vbuf = f.gen_buffer();
        self.ibuf = f.gen_buffer();
        if self.quad == 0 || self.vbuf == 0 || self.ibuf == 0 {
            return Err("glGenBuffers gave no name".into());
        }
        let corners: [f32; 8] = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        f.bind_buffer(gl::ARRAY_BUFFER, self.quad);
        f.buffer_storage(gl::ARRAY_BUFFER, 32, gl::STATIC_DRAW);
        f.buffer_write(gl::ARRAY_BUFFER, as_bytes(&corners));
        if c.vao {
            self.vao_imgui = f.gen_vertex_array();
            self.vao_quad = f.gen_vertex_array();
            if self.vao_imgui == 0 || self.vao_quad == 0 {
                return Err("glGenVertexArrays gave no name".into());
            }
            // The element buffer binding belongs to the VAO: it is only ever set with ours bound.
            f.bind_vertex_array(self.vao_imgui);
            f.bind_buffer(gl::ELEMENT_ARRAY_BUFFER, self.ibuf);
            for a in [shaders::POS, shaders::UV, shaders::COLOR] {
                f.enable_vertex_attrib_array(a);
            }
            f.bind_vertex_array(self.vao_quad);
            f.attrib_pointer_set(shaders::POS, 2, gl::FLOAT, false, 8, 0);
            f.enable_vertex_attrib_array(shaders::POS);
        }
        Ok(())
    }

    /// Draws ImGui's lists into the cached texture (its `size` top-left pixels).
    pub fn refresh(&mut self, f: &Fns, c: &Caps, s: &mut Saved, draw: &DrawOutput, size: [u32; 2], flip: bool) {
        state::bind_draw_fb(f, c, self.fbo);
        let side = self.canvas as f32;
        state::set_viewport(f, c, [0.0, 0.0, side, side]);
        state::set_scissor(f, c, true, [0, 0, size[0] as i32, size[1] as i32]);
        state::clear_transparent(f, s);
        f.clear(gl::COLOR_BUFFER_BIT);
        if draw.cmds.is_empty() || draw.indices.is_empty() {
            return;
        }
        f.use_program(self.imgui.id);
        let y = if flip { -1.0 } else { 1.0 };
        f.uniform4f(self.imgui.a, 2.0 / side, y * 2.0 / side, -1.0, -y);
        state::set_blend(
            f,
            c,
            [gl::SRC_ALPHA, gl::ONE_MINUS_SRC_ALPHA, gl::ONE, gl::ONE_MINUS_SRC_ALPHA],
            [gl::FUNC_ADD, gl::FUNC_ADD],
        );
        f.bind_texture(gl::TEXTURE_2D, self.font);
        if c.vao {
            f.bind_vertex_array(self.vao_imgui);
        } else {
            // Restored from `Saved` afterwards.
            f.bind_buffer(gl::ELEMENT_ARRAY_BUFFER, self.ibuf);
            for a in [shaders::POS, shaders::UV, shaders::COLOR] {
                f.enable_vertex_attrib_array(a);
            }
        }
        let vbytes = as_bytes(&draw.vertices);
        let ibytes = as_bytes(&draw.indices);
        // New storage on every refresh (orphaning): the previous contents may still be read by
        // the GPU, and writing into them would make the driver wait.
        self.vbuf_cap = self.vbuf_cap.max(vbytes.len().next_power_of_two());
        self.ibuf_cap = self.ibuf_cap.max(ibytes.len().next_power_of_two());
        f.bind_buffer(gl::ARRAY_BUFFER, self.vbuf);
        f.buffer_storage(gl::ARRAY_BUFFER, self.vbuf_cap, gl::STREAM_DRAW);
        f.buffer_write(gl::ARRAY_BUFFER, vbytes);
        f.buffer_storage(gl::ELEMENT_ARRAY_BUFFER, self.ibuf_cap, gl::STREAM_DRAW);
        f.buffer_write(gl::ELEMENT_ARRAY_BUFFER, ibytes);
        let nverts = draw.vertices.len() as u64;
        let mut base = None;
        for cmd in &draw.cmds {
            let x0 = cmd.clip[0].max(0.0);
            let y0 = cmd.clip[1].max(0.0);
            let x1 = cmd.clip[2].min(size[0] as f32);
            let y1 = cmd.clip[3].min(size[1] as f32);
            let end = cmd.first_index as usize + cmd.count as usize;
            if x1 <= x0 || y1 <= y0 || cmd.count == 0 || end > draw.indices.len() {
                continue;
            }
            // Every index of the command must name a vertex of the buffer.
            let top = draw.indices[cmd.first_index as usize..end]
                .iter()
                .max()
                .copied()
                .unwrap_or(0);
            if u64::from(cmd.vertex_offset) + u64::from(top) >= nverts {
                continue;
            }
            if base != Some(cmd.vertex_offset) {
                imgui_attribs(f, cmd.vertex_offset);
                base = Some(cmd.vertex_offset);
            }
            state::set_scissor(
                f,
                c,
                true,
                [x0 as i32, y0 as i32, (x1 - x0).ceil() as i32, (y1 - y0).ceil() as i32],
            );
            f.draw_indexed_u16(cmd.count as i32, cmd.first_index as usize * 2);
        }
    }

    /// Draws the cached HUD onto the back buffer of the default framebuffer.
    pub fn composite(&self, f: &Fns, c: &Caps, s: &mut Saved, at: &Placement) {
        let Placement {
            target,
            origin,
            size,
            flip,
        } = *at;
        state::bind_draw_fb(f, c, 0);
        state::draw_to_back(f, c, s);
        let (tw, th) = (target[0] as f32, target[1] as f32);
        state::set_viewport(f, c, [0.0, 0.0, tw, th]);
        state::set_scissor(f, c, false, [0; 4]);
        let y = if flip { -1.0 } else { 1.0 };
        let ndc_x = |px: f32| 2.0 * px / tw - 1.0;
        let ndc_y = |px: f32| y * (2.0 * px / th - 1.0);
        let x0 = origin[0] as f32;
        let x1 = x0 + size[0] as f32;
        // Window rows count from the bottom.
        let top = th - origin[1] as f32;
        let bottom = top - size[1] as f32;
        let side = self.canvas as f32;
        f.use_program(self.composite.id);
        f.uniform4f(self.composite.a, ndc_x(x0), ndc_y(bottom), ndc_x(x1), ndc_y(top));
        f.uniform4f(self.composite.b, 0.0, size[1] as f32 / side, size[0] as f32 / side, 0.0);
        state::set_blend(
            f,
            c,
            [gl::ONE, gl::ONE_MINUS_SRC_ALPHA, gl::ZERO, gl::ONE],
            [gl::FUNC_ADD, gl::FUNC_ADD],
        );
        f.bind_texture(gl::TEXTURE_2D, self.content);
        if c.vao {
            f.bind_vertex_array(self.vao_quad);
        } else {
            f.bind_buffer(gl::ARRAY_BUFFER, self.quad);
            f.attrib_pointer_set(shaders::POS, 2, gl::FLOAT, false, 8, 0);
            f.enable_vertex_attrib_array(shaders::POS);
            f.disable_vertex_attrib_array(shaders::UV);
            f.disable_vertex_attrib_array(shaders::COLOR);
        }
        f.draw_quad();
    }

    /// Copies the cached HUD onto the back buffer of the default framebuffer with one
    /// `glBlitFramebuffer` (opaque HUDs: see the module comment), clipped to the drawable.
    /// Returns false, having drawn nothing, where the blit is not possible (a multisampled
    /// window, read once per `drawable`): the caller composites with the quad instead.
    ///
    /// The blit honours the scissor test and, with `GL_FRAMEBUFFER_SRGB` on, would encode the
    /// values into an sRGB back buffer: the scissor test is switched off here and
    /// `state::prepare` has switched `GL_FRAMEBUFFER_SRGB` off, so the cached bytes (sRGB-encoded
    /// values, as ImGui's colours are) land unchanged, as the Vulkan HUD's copy does. Contexts
    /// whose back buffer encodes without that switch (`Caps::srgb_target`) never get here.
    pub fn composite_copy(&mut self, f: &Fns, c: &Caps, s: &mut Saved, at: &Placement, drawable: usize) -> bool {
        let Placement {
            target,
            origin,
            size,
            flip: _,
        } = *at;
        let Some((x, y, w, h)) = layout::visible(origin, size, target) else {
            return true;
        };
        state::bind_draw_fb(f, c, 0);
        if self.fb0_checked != drawable {
            self.fb0_checked = drawable;
            self.fb0_multisampled = f.int(gl::SAMPLE_BUFFERS) > 0;
        }
        if self.fb0_multisampled {
            return false;
        }
        state::bind_read_fb(f, c, self.fbo);
        state::draw_to_back(f, c, s);
        state::set_scissor(f, c, false, [0; 4]);
        // Source: texture rows count from the HUD's top (y down), so the visible rows
        // sy..sy+h are texture rows sy..sy+h, given top row first (srcY0 > srcY1: a flip in GL
        // terms, a straight copy in memory). Destination: window rows count from the bottom.
        let sx = (x as i64 - origin[0] as i64) as i32;
        let sy = (y as i64 - origin[1] as i64) as i32;
        let (x, w, h) = (x as i32, w as i32, h as i32);
        let top = target[1] as i32 - y as i32;
        f.blit(
            [sx, sy + h, sx + w, sy],
            [x, top - h, x + w, top],
            gl::COLOR_BUFFER_BIT,
            gl::NEAREST as u32,
        );
        true
    }

    /// How many of our objects exist (the self-check after deleting them).
    fn alive(&self, f: &Fns) -> usize {
        let textures = [self.font, self.content]
            .iter()
            .filter(|&&t| t != 0 && f.is_texture(t) != 0)
            .count();
        let buffers = [self.quad, self.vbuf, self.ibuf]
            .iter()
            .filter(|&&b| b != 0 && f.is_buffer(b) != 0)
            .count();
        let programs = [self.imgui.id, self.composite.id]
            .iter()
            .filter(|&&p| p != 0 && f.is_program(p) != 0)
            .count();
        let fbo = usize::from(self.fbo != 0 && f.is_framebuffer(self.fbo) != 0);
        textures + buffers + programs + fbo
    }

    /// Deletes every object (none is bound anywhere the app can see); returns how many, and
    /// with `verify` how many still exist after (`glIs*`).
    pub fn destroy(&mut self, f: &Fns, verify: bool) -> (usize, Option<usize>) {
        let mut n = 0;
        let mut count = |name: u32| n += usize::from(name != 0);
        for name in [
            self.font,
            self.content,
            self.fbo,
            self.imgui.id,
            self.composite.id,
            self.vao_imgui,
            self.vao_quad,
            self.quad,
            self.vbuf,
            self.ibuf,
        ] {
            count(name);
        }
        f.delete_vertex_array(self.vao_imgui);
        f.delete_vertex_array(self.vao_quad);
        f.delete_framebuffer(self.fbo);
        f.delete_texture(self.font);
        f.delete_texture(self.content);
        for p in [self.imgui.id, self.composite.id] {
            if p != 0 {
                f.delete_program(p);
            }
        }
        f.delete_buffer(self.quad);
        f.delete_buffer(self.vbuf);
        f.delete_buffer(self.ibuf);
        let left = verify.then(|| self.alive(f));
        let (canvas, bgra) = (self.canvas, self.bgra);
        *self = Renderer {
            canvas,
            bgra,
            ..Renderer::default()
        };
        (n, left)
    }
}

/// Starts reading the default framebuffer's back buffer (`size`, rows bottom-up) as RGBA8 into a
/// new pixel pack buffer, followed by a fence; nothing waits. `(buffer, fence)`, fetched with
/// [`fetch`] once the fence has signalled. The caller's state restore puts the app's pack
/// buffer binding back.
pub fn read_back_async(f: &Fns, c: &Caps, s: &mut Saved, size: [u32; 2]) -> Option<(u32, Fence)> {
    state::bind_read_fb(f, c, 0);
    state::read_from_back(f, c, s);
    state::pack_plain(f, c, s);
    let pbo = f.gen_buffer();
    if pbo == 0 {
        return None;
    }
    f.bind_buffer(gl::PIXEL_PACK_BUFFER, pbo);
    f.buffer_storage(
        gl::PIXEL_PACK_BUFFER,
        size[0] as usize * size[1] as usize * 4,
        gl::STREAM_READ,
    );
    f.read_rgba_into_pack_buffer(size[0] as i32, size[1] as i32);
    let sync = f.fence();
    f.bind_buffer(gl::PIXEL_PACK_BUFFER, 0);
    let Some(sync) = sync else {
        f.delete_buffer(pbo);
        return None;
    };
    Some((pbo, sync))
}

/// The pixels of a [`read_back_async`] whose fence has signalled (mapping the buffer then
/// waits for nothing); the app's pack buffer binding is put back. Frees the buffer and fence.
pub fn fetch(f: &Fns, pbo: u32, sync: Fence, len: usize) -> Option<Vec<u8>> {
    let app = f.int(gl::PIXEL_PACK_BUFFER_BINDING).max(0) as u32;
    f.bind_buffer(gl::PIXEL_PACK_BUFFER, pbo);
    let mut px = vec![0u8; len];
    let ok = f.copy_from_buffer(gl::PIXEL_PACK_BUFFER, &mut px);
    f.bind_buffer(gl::PIXEL_PACK_BUFFER, app);
    f.delete_buffer(pbo);
    f.delete_fence(sync);
    ok.then_some(px)
}

/// Reads the default framebuffer's back buffer (`size`, rows bottom-up) as RGBA8. It waits for
/// the GPU: only for contexts without [`read_back_async`] (GLES 2, GL before 3.2), and only in
/// the screenshot frame.
pub fn read_back(f: &Fns, c: &Caps, s: &mut Saved, size: [u32; 2]) -> Option<Vec<u8>> {
    state::bind_read_fb(f, c, 0);
    state::read_from_back(f, c, s);
    state::pack_plain(f, c, s);
    let mut px = vec![0u8; size[0] as usize * size[1] as usize * 4];
    f.read_rgba(size[0] as i32, size[1] as i32, &mut px).then_some(px)
}
