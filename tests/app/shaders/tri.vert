#version 450
// Vertex positions come from gl_VertexIndex/gl_InstanceIndex so no vertex
// buffers are needed. misc.x selects the full-screen triangle used by `Post`.
layout(push_constant) uniform Push {
    vec4 color;
    vec4 misc;
} pc;

void main() {
    if (pc.misc.x > 0.5) {
        // (-1,-1), (3,-1), (-1,3): one triangle whose clipped area is exactly
        // the viewport, so every pixel is shaded once and only once.
        vec2 p = vec2((gl_VertexIndex << 1) & 2, gl_VertexIndex & 2) * 2.0 - 1.0;
        gl_Position = vec4(p, 0.0, 1.0);
        return;
    }
    // Each draw (firstInstance = draw index) owns a cell of a 32x32 grid;
    // its triangles tile an 8x8 sub-grid of that cell.
    int cell = gl_InstanceIndex % 1024;
    int tri = (gl_VertexIndex / 3) % 64;
    int corner = gl_VertexIndex % 3;
    vec2 cell_origin = vec2(cell % 32, cell / 32) * (2.0 / 32.0) - 1.0;
    float sub = 2.0 / 32.0 / 8.0;
    vec2 tri_origin = cell_origin + vec2(tri % 8, tri / 8) * sub;
    vec2 corner_offset = vec2(corner == 1 ? 1.0 : 0.0, corner == 2 ? 1.0 : 0.0) * sub * 0.9;
    gl_Position = vec4(tri_origin + corner_offset, 0.0, 1.0);
}
