#version 450
// Copies the cached HUD (premultiplied alpha, sRGB-encoded values) 1:1 onto the swapchain
// image; blending is ONE, ONE_MINUS_SRC_ALPHA. On an *_SRGB target the hardware encodes on
// write, so the values are decoded to linear first. SRGB is a specialization constant (one
// pipeline per swapchain format): a uniform branch cost llvmpipe the pow() on every fragment.
// Regenerate: glslangValidator -V composite.frag -o composite.frag.spv
layout(constant_id = 0) const bool SRGB = false;
layout(set = 0, binding = 0) uniform sampler2D hud;
layout(push_constant) uniform Push { vec4 rect; ivec2 origin; uint srgb; } pc;
layout(location = 0) out vec4 out_col;
vec3 to_linear(vec3 c) {
    return mix(c / 12.92, pow((c + 0.055) / 1.055, vec3(2.4)), step(0.04045, c));
}
void main() {
    vec4 c = texelFetch(hud, ivec2(gl_FragCoord.xy) - pc.origin, 0);
    if (SRGB && c.a > 0.0) {
        c.rgb = to_linear(c.rgb / c.a) * c.a;
    }
    out_col = c;
}
