#version 450
// One quad (triangle strip of 4 vertices) covering the HUD's rectangle, in NDC.
layout(push_constant) uniform Push { vec4 rect; ivec2 origin; uint srgb; } pc;
void main() {
    vec2 t = vec2(float(gl_VertexIndex & 1), float(gl_VertexIndex >> 1));
    gl_Position = vec4(mix(pc.rect.xy, pc.rect.zw, t), 0.0, 1.0);
}
