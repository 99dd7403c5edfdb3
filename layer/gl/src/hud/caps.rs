//! What the current context supports, read once when its HUD is set up. Every optional GL call
//! and every state query of the HUD is gated here: querying or setting state the context does
//! not have would raise a GL error the app could see with `glGetError`.

use super::fns::{self as gl, Fns};
use super::shaders::Dialect;

#[derive(Clone, Debug, Default)]
pub struct Caps {
    pub es: bool,
    pub major: u32,
    pub minor: u32,
    pub dialect: Dialect,
    /// Desktop compatibility profile: fixed-function enables (alpha test, polygon stipple)
    /// exist and still apply to shader draws.
    pub compat: bool,
    /// Shaders and framebuffer objects (GL 2.0 with GL 3.0 or `GL_ARB_framebuffer_object`, or
    /// GLES 2): without them there is no HUD, only screenshots.
    pub drawable: bool,
    /// Our own vertex array objects (else the app's attribute arrays 0..2 are saved instead).
    pub vao: bool,
    /// Framebuffer objects: the app may have some bound (GL 3.0, `GL_ARB_framebuffer_object`,
    /// GLES 2).
    pub fbo: bool,
    /// Separate draw and read framebuffer bindings (GLES 2 has one binding).
    pub split_fb: bool,
    /// `glBlitFramebuffer` (GL 3.0, `GL_ARB_framebuffer_object`, GLES 3.0): an opaque HUD can be
    /// composited with a copy.
    pub blit: bool,
    /// Screenshots read back into a buffer and fetched once a fence says the GPU is done
    /// (`glMapBufferRange` and sync objects: GL 3.2, GLES 3.0), instead of a `glReadPixels`
    /// that waits.
    pub async_readback: bool,
    /// Textures can be stored as B8G8R8A8 (desktop: pixel format `GL_BGRA` with an unsized
    /// `GL_RGBA`; GLES: `GL_EXT_texture_format_BGRA8888`), the layout of window-system buffers.
    pub bgra: bool,
    pub sampler_objects: bool,
    /// `GL_FRAMEBUFFER_SRGB` exists (desktop, or `GL_EXT_sRGB_write_control`).
    pub srgb_toggle: bool,
    /// The window's back buffer encodes sRGB on write and that cannot be turned off.
    pub srgb_target: bool,
    pub polygon_mode: bool,
    pub primitive_restart: bool,
    pub primitive_restart_fixed: bool,
    pub rasterizer_discard: bool,
    pub logic_op: bool,
    pub sample_mask: bool,
    /// User clip planes / clip distances that can be enabled (at most 8 are looked at).
    pub clip_planes: u32,
    /// `glEnablei`/`glColorMaski` for draw buffer 0 (GL 3.0, GLES 3.2).
    pub indexed_enable: bool,
    /// `glBlendFuncSeparatei`/`glBlendEquationSeparatei` (GL 4.0, GLES 3.2).
    pub indexed_blend: bool,
    /// Viewport arrays: viewport and scissor 0 are set and restored by index (GL 4.1).
    pub viewport_array: bool,
    /// The default framebuffer's draw/read buffer can be set (desktop, GLES 3).
    pub draw_buffer: bool,
    pub clip_control: bool,
    pub pixel_buffers: bool,
    /// `GL_PACK_ROW_LENGTH` and friends (desktop, GLES 3).
    pub row_length: bool,
    pub transform_feedback: bool,
    /// Generic vertex attributes whose arrays are saved when there are no VAOs (max 32).
    pub attribs: u32,
    pub max_texture: i32,
    pub max_viewport: [i32; 2],
    /// Desktop: whether the default framebuffer is double-buffered (single-buffered windows
    /// get no HUD: it would accumulate on the front buffer).
    pub double_buffered: bool,
}

/// The context's extensions, read once.
struct Extensions(Vec<String>);

impl Extensions {
    fn read(f: &Fns, major: u32) -> Extensions {
        let mut list = Vec::new();
        if major >= 3 {
            let n = f.int(gl::NUM_EXTENSIONS).max(0) as u32;
            for i in 0..n {
                list.push(f.stringi(gl::EXTENSIONS, i));
            }
        } else {
            list.extend(f.string(gl::EXTENSIONS).split_whitespace().map(str::to_string));
        }
        Extensions(list)
    }

    fn has(&self, name: &str) -> bool {
        self.0.iter().any(|e| e == name)
    }
}

/// `(major, minor)` of a `GL_SHADING_LANGUAGE_VERSION` string (`4.50`, `OpenGL ES GLSL ES 3.20`,
/// `1.20 NVIDIA via Cg compiler`).
pub fn parse_glsl(v: &str) -> (u32, u32) {
    let Some(word) = v
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
    else {
        return (0, 0);
    };
    let mut parts = word.split('.');
    let major = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts
        .next()
        .map(|p| p.chars().take_while(char::is_ascii_digit).collect::<String>())
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // "4.5" and "4.50" are the same version.
    (major, if minor < 10 { minor * 10 } else { minor })
}

/// Whether the default framebuffer's back buffer encodes writes as sRGB: a GLES window
/// surface created with EGL_GL_COLORSPACE_SRGB does, and the composite then decodes the cached
/// values first (as the Vulkan HUD does on *_SRGB swapchains). Desktop GL turns the encoding
/// off with GL_FRAMEBUFFER_SRGB instead.
fn srgb_window(f: &Fns) -> bool {
    f.get_framebuffer_attachment_parameteriv.is_some()
        && f.uint(gl::FRAMEBUFFER_BINDING) == 0
        && f.attachment_int(
            gl::DRAW_FRAMEBUFFER,
            gl::BACK,
            gl::FRAMEBUFFER_ATTACHMENT_COLOR_ENCODING,
        ) == gl::SRGB
}

/// Per-draw-buffer and per-viewport state the HUD must save and restore, where the context
/// has it.
struct Indexed {
    enable: bool,
    blend: bool,
    viewports: bool,
}

impl Indexed {
    fn read(f: &Fns, es: bool, version: (u32, u32), ext: &Extensions) -> Indexed {
        let v = |a: u32, b: u32| version >= (a, b);
        Indexed {
            enable: f.enablei.is_some()
                && f.is_enabledi.is_some()
                && f.color_maski.is_some()
                && f.get_booleani_v.is_some()
                && (if es { v(3, 2) } else { v(3, 0) }),
            blend: f.blend_func_separatei.is_some()
                && f.blend_equation_separatei.is_some()
                && f.get_integeri_v.is_some()
                && (if es { v(3, 2) } else { v(4, 0) }),
            viewports: !es
                && f.viewport_indexedf.is_some()
                && f.scissor_indexed.is_some()
                && f.get_floati_v.is_some()
                && f.get_integeri_v.is_some()
                && f.enablei.is_some()
                && f.is_enabledi.is_some()
                && (v(4, 1) || ext.has("GL_ARB_viewport_array")),
        }
    }
}

impl Caps {
    /// Reads the current context's version, extensions and limits. Setup only (allocates).
    pub fn read(f: &Fns) -> Caps {
        let (es, major, minor) = crate::gl::parse_version(&f.string(gl::VERSION));
        let v = |a: u32, b: u32| (major, minor) >= (a, b);
        let ext = Extensions::read(f, major);
        let glsl = parse_glsl(&f.string(gl::SHADING_LANGUAGE_VERSION));
        let desktop = !es;
        let compat = desktop
            && (!v(3, 1)
                || (!v(3, 2) && ext.has("GL_ARB_compatibility"))
                || (v(3, 2) && f.int(gl::CONTEXT_PROFILE_MASK) & gl::CONTEXT_COMPATIBILITY_PROFILE_BIT != 0));
        let vao = f.has_vao()
            && if es {
                v(3, 0) || ext.has("GL_OES_vertex_array_object")
            } else {
                v(3, 0) || ext.has("GL_ARB_vertex_array_object")
            };
        let clip_planes = if desktop || ext.has("GL_EXT_clip_cull_distance") || ext.has("GL_APPLE_clip_distance") {
            (f.int(gl::MAX_CLIP_PLANES).max(0) as u32).min(8)
        } else {
            0
        };
        let attribs = if vao {
            0
        } else {
            (f.int(gl::MAX_VERTEX_ATTRIBS).max(0) as u32).min(32)
        };
        // GLX hands out the core names of GL_ARB_framebuffer_object even where only the EXT
        // version exists; those contexts get no HUD rather than GL errors.
        let fbo = if es {
            v(2, 0)
        } else {
            v(3, 0) || ext.has("GL_ARB_framebuffer_object")
        };
        let indexed = Indexed::read(f, es, (major, minor), &ext);
        let mut c = Caps {
            es,
            major,
            minor,
            dialect: Dialect::pick(es, (major, minor), glsl),
            compat,
            drawable: fbo && v(2, 0),
            vao,
            fbo,
            split_fb: fbo && (desktop || v(3, 0)),
            // Desktop contexts with framebuffer objects have it (GL 3.0 or the ARB extension,
            // which both include it).
            blit: fbo && (desktop || v(3, 0)) && f.blit_framebuffer.is_some(),
            async_readback: (if es { v(3, 0) } else { v(3, 2) })
                && f.map_buffer_range.is_some()
                && f.unmap_buffer.is_some()
                && f.fence_sync.is_some()
                && f.client_wait_sync.is_some()
                && f.delete_sync.is_some(),
            bgra: desktop || ext.has("GL_EXT_texture_format_BGRA8888"),
            sampler_objects: f.bind_sampler.is_some()
                && (if es {
                    v(3, 0)
                } else {
                    v(3, 3) || ext.has("GL_ARB_sampler_objects")
                }),
            srgb_toggle: if es {
                ext.has("GL_EXT_sRGB_write_control")
            } else {
                v(3, 0) || ext.has("GL_ARB_framebuffer_sRGB") || ext.has("GL_EXT_framebuffer_sRGB")
            },
            srgb_target: false,
            polygon_mode: desktop && f.polygon_mode.is_some(),
            primitive_restart: desktop && v(3, 1),
            primitive_restart_fixed: if es {
                v(3, 0)
            } else {
                v(4, 3) || ext.has("GL_ARB_ES3_compatibility")
            },
            rasterizer_discard: v(3, 0),
            logic_op: desktop,
            sample_mask: if es {
                v(3, 1)
            } else {
                v(3, 2) || ext.has("GL_ARB_texture_multisample")
            },
            clip_planes,
            indexed_enable: indexed.enable,
            indexed_blend: indexed.blend,
            viewport_array: indexed.viewports,
            draw_buffer: if es {
                v(3, 0) && f.draw_buffers.is_some()
            } else {
                f.draw_buffer.is_some()
            },
            clip_control: if es {
                ext.has("GL_EXT_clip_control")
            } else {
                v(4, 5) || ext.has("GL_ARB_clip_control")
            },
            pixel_buffers: if es {
                v(3, 0)
            } else {
                v(2, 1) || ext.has("GL_ARB_pixel_buffer_object")
            },
            row_length: desktop || v(3, 0),
            transform_feedback: if es {
                v(3, 0)
            } else {
                v(4, 0) || ext.has("GL_ARB_transform_feedback2")
            },
            attribs,
            max_texture: f.int(gl::MAX_TEXTURE_SIZE),
            max_viewport: f.ints::<2>(gl::MAX_VIEWPORT_DIMS),
            double_buffered: true,
        };
        if desktop {
            c.double_buffered = f.bools::<1>(gl::DOUBLEBUFFER)[0];
        }
        c.srgb_target = es && v(3, 0) && !c.srgb_toggle && srgb_window(f);
        c
    }

    /// Capability names for the setup log line.
    pub fn describe(&self) -> String {
        format!(
            "{} {}.{}, {}, {}{}",
            if self.es { "GLES" } else { "GL" },
            self.major,
            self.minor,
            self.dialect.name(),
            if self.vao { "VAO" } else { "no VAO" },
            if self.compat { ", compatibility profile" } else { "" },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glsl_versions_parse() {
        assert_eq!(parse_glsl("4.50"), (4, 50));
        assert_eq!(parse_glsl("OpenGL ES GLSL ES 3.20"), (3, 20));
        assert_eq!(parse_glsl("OpenGL ES GLSL ES 1.0.16"), (1, 0));
        assert_eq!(parse_glsl("1.20 NVIDIA via Cg compiler"), (1, 20));
        assert_eq!(parse_glsl("4.6"), (4, 60));
        assert_eq!(parse_glsl(""), (0, 0));
    }
}
