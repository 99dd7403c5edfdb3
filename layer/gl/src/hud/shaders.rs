//! The HUD's two GLSL programs, written once and compiled in the dialect the context speaks:
//! GLSL 1.10 (GL 2.x), 1.30 (GL 3.0/3.1), 1.50 (GL 3.2+, core and compatibility), GLSL ES 1.00
//! (GLES 2) or 3.00 (GLES 3). The bodies are the same; a prelude maps `IN`/`OUT`/`TEX`/`FRAG`
//! onto each dialect's keywords.
//!
//! `imgui`: ImGui's vertex lists into the cached HUD texture (straight-alpha vertex colours
//! times the font atlas). `composite`: one textured quad copying the cached, premultiplied HUD
//! 1:1 onto the back buffer; nothing depends on `gl_FragCoord`, so neither the window origin nor
//! `glClipControl` matters (the caller flips y for an upper-left clip origin). With `SRGB`
//! defined, the cached sRGB-encoded values are decoded first because the target re-encodes on
//! write (as the Vulkan HUD's composite does on *_SRGB swapchains).

/// Attribute locations, bound before linking.
pub const POS: u32 = 0;
pub const UV: u32 = 1;
pub const COLOR: u32 = 2;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dialect {
    #[default]
    Glsl110,
    Glsl130,
    Glsl150,
    Essl100,
    Essl300,
}

impl Dialect {
    /// From the context's API, GL version and GLSL version.
    pub fn pick(es: bool, gl: (u32, u32), glsl: (u32, u32)) -> Dialect {
        if es {
            if gl >= (3, 0) && glsl >= (3, 0) {
                Dialect::Essl300
            } else {
                Dialect::Essl100
            }
        } else if gl >= (3, 2) && glsl >= (1, 50) {
            Dialect::Glsl150
        } else if gl >= (3, 0) && glsl >= (1, 30) {
            Dialect::Glsl130
        } else {
            Dialect::Glsl110
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dialect::Glsl110 => "GLSL 1.10",
            Dialect::Glsl130 => "GLSL 1.30",
            Dialect::Glsl150 => "GLSL 1.50",
            Dialect::Essl100 => "GLSL ES 1.00",
            Dialect::Essl300 => "GLSL ES 3.00",
        }
    }

    /// Whether the fragment output is a user `out` variable (bound to colour number 0).
    pub fn has_frag_out(self) -> bool {
        matches!(self, Dialect::Glsl130 | Dialect::Glsl150 | Dialect::Essl300)
    }

    fn vertex_prelude(self) -> &'static str {
        match self {
            Dialect::Glsl110 => "#version 110\n#define IN attribute\n#define OUT varying\n",
            Dialect::Glsl130 => "#version 130\n#define IN in\n#define OUT out\n",
            Dialect::Glsl150 => "#version 150\n#define IN in\n#define OUT out\n",
            Dialect::Essl100 => "#version 100\nprecision highp float;\n#define IN attribute\n#define OUT varying\n",
            Dialect::Essl300 => "#version 300 es\nprecision highp float;\n#define IN in\n#define OUT out\n",
        }
    }

    fn fragment_prelude(self) -> &'static str {
        match self {
            Dialect::Glsl110 => "#version 110\n#define IN varying\n#define TEX texture2D\n#define FRAG gl_FragColor\n",
            Dialect::Glsl130 => "#version 130\n#define IN in\n#define TEX texture\nout vec4 o_color;\n#define FRAG o_color\n",
            Dialect::Glsl150 => "#version 150\n#define IN in\n#define TEX texture\nout vec4 o_color;\n#define FRAG o_color\n",
            // highp where the GPU has it: texture coordinates must address single texels of a
            // canvas up to 4096 wide.
            Dialect::Essl100 => "#version 100\n#ifdef GL_FRAGMENT_PRECISION_HIGH\nprecision highp float;\n#else\nprecision mediump float;\n#endif\n#define IN varying\n#define TEX texture2D\n#define FRAG gl_FragColor\n",
            Dialect::Essl300 => "#version 300 es\nprecision highp float;\n#define IN in\n#define TEX texture\nout vec4 o_color;\n#define FRAG o_color\n",
        }
    }
}

/// `u_xform`: pixel-to-NDC scale (xy) and offset (zw).
const IMGUI_VS: &str = "
IN vec2 a_pos;
IN vec2 a_uv;
IN vec4 a_color;
uniform vec4 u_xform;
OUT vec2 v_uv;
OUT vec4 v_color;
void main() {
    v_uv = a_uv;
    v_color = a_color;
    gl_Position = vec4(a_pos * u_xform.xy + u_xform.zw, 0.0, 1.0);
}
";

const IMGUI_FS: &str = "
uniform sampler2D u_tex;
IN vec2 v_uv;
IN vec4 v_color;
void main() {
    FRAG = v_color * TEX(u_tex, v_uv);
}
";

/// `a_pos` is a corner of the unit square; `u_rect` the quad in NDC (x0, y0, x1, y1) and
/// `u_uv` its texture coordinates.
const COMPOSITE_VS: &str = "
IN vec2 a_pos;
uniform vec4 u_rect;
uniform vec4 u_uv;
OUT vec2 v_uv;
void main() {
    v_uv = mix(u_uv.xy, u_uv.zw, a_pos);
    gl_Position = vec4(mix(u_rect.xy, u_rect.zw, a_pos), 0.0, 1.0);
}
";

const COMPOSITE_FS: &str = "
uniform sampler2D u_tex;
IN vec2 v_uv;
vec3 to_linear(vec3 c) {
    return mix(c / 12.92, pow((c + 0.055) / 1.055, vec3(2.4)), step(0.04045, c));
}
void main() {
    vec4 c = TEX(u_tex, v_uv);
#ifdef SRGB
    if (c.a > 0.0) {
        c.rgb = to_linear(c.rgb / c.a) * c.a;
    }
#endif
    FRAG = c;
}
";

/// (vertex, fragment) source of the ImGui program.
pub fn imgui(d: Dialect) -> (String, String) {
    (
        format!("{}{IMGUI_VS}", d.vertex_prelude()),
        format!("{}{IMGUI_FS}", d.fragment_prelude()),
    )
}

/// (vertex, fragment) source of the composite program.
pub fn composite(d: Dialect, srgb: bool) -> (String, String) {
    let define = if srgb { "#define SRGB 1\n" } else { "" };
    (
        format!("{}{COMPOSITE_VS}", d.vertex_prelude()),
        format!("{}{define}{COMPOSITE_FS}", d.fragment_prelude()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialects_follow_the_context() {
        assert_eq!(Dialect::pick(false, (4, 5), (4, 50)), Dialect::Glsl150);
        assert_eq!(Dialect::pick(false, (3, 1), (1, 40)), Dialect::Glsl130);
        assert_eq!(Dialect::pick(false, (2, 1), (1, 20)), Dialect::Glsl110);
        // A 3.3 context whose compiler claims less than 1.50 gets what it claims.
        assert_eq!(Dialect::pick(false, (3, 3), (1, 30)), Dialect::Glsl130);
        assert_eq!(Dialect::pick(true, (3, 2), (3, 20)), Dialect::Essl300);
        assert_eq!(Dialect::pick(true, (2, 0), (1, 0)), Dialect::Essl100);
    }

    #[test]
    fn sources_start_with_their_version_line() {
        for d in [
            Dialect::Glsl110,
            Dialect::Glsl130,
            Dialect::Glsl150,
            Dialect::Essl100,
            Dialect::Essl300,
        ] {
            let (vs, fs) = imgui(d);
            assert!(vs.starts_with("#version ") && fs.starts_with("#version "), "{d:?}");
            let (_, fs) = composite(d, true);
            assert!(fs.contains("#define SRGB"), "{d:?}");
            assert_eq!(d.has_frag_out(), fs.contains("out vec4 o_color"), "{d:?}");
        }
    }
}
