#version 450
// Copies the cached HUD (premultiplied alpha, sRGB-encoded values) 1:1 onto the swapchain
// image; blending is ONE, ONE_MINUS_SRC_ALPHA. On an *_SRGB target the hardware encodes on
// write, so the values are decoded to linear first. SRGB is a specialization constant (one
// pipeline per swapchain format): a uniform branch cost llvmpipe the pow() on every fragment.
// On UNORM targets the shader is a bare nearest texture() of an interpolated coordinate, with
// premultiplied blending and a B8G8R8A8 image: llvmpipe recognises that as a blit and
// composites with SSE row copies instead of running the shader per fragment (~10x cheaper).
// Regenerate: glslangValidator -V composite.frag -o composite.frag.spv
layout(constant_id = 0) const bool SRGB = false;
layout(set = 0, binding = 0) uniform sampler2D hud;
layout(location = 0) in vec2 uv;
layout(location = 0) out vec4 out_col;
vec3 to_linear(vec3 c) {
    return mix(c / 12.92, pow((c + 0.055) / 1.055, vec3(2.4)), step(0.04045, c));
}
void main() {
    vec4 c = texture(hud, uv);
    if (SRGB && c.a > 0.0) {
        c.rgb = to_linear(c.rgb / c.a) * c.a;
    }
    out_col = c;
}
