#version 450
// One quad (triangle strip of 4 vertices) covering the HUD's rectangle, in NDC, sampling the
// cached HUD 1:1 (uv_max: the HUD's size over the cached image's).
// Regenerate: glslangValidator -V composite.vert -o composite.vert.spv
layout(push_constant) uniform Push { vec4 rect; vec2 uv_max; uint srgb; } pc;
layout(location = 0) out vec2 uv;
void main() {
    vec2 t = vec2(float(gl_VertexIndex & 1), float(gl_VertexIndex >> 1));
    uv = t * pc.uv_max;
    gl_Position = vec4(mix(pc.rect.xy, pc.rect.zw, t), 0.0, 1.0);
}
