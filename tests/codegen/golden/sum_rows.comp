#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef VKG_BDA
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#endif
layout(local_size_x = 16, local_size_y = 1, local_size_z = 1) in;
#ifdef VKG_BDA
layout(push_constant) uniform Addrs { uvec2 addr[2]; } pc;
layout(buffer_reference, std430, buffer_reference_align = 4) restrict writeonly buffer P0 { float v[]; };
#define data0 P0(pc.addr[0]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P1 { float v[]; };
#define data1 P1(pc.addr[1]).v
layout(buffer_reference, std430, buffer_reference_align = 16) restrict readonly buffer P1v { vec4 v[]; };
#define data1_v4 P1v(pc.addr[1]).v
#else
layout(set = 0, binding = 0, std430) restrict writeonly buffer B0 { float data0[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer B1 { float data1[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer B1v { vec4 data1_v4[]; };
#endif
// r_16_32
void main() {
  int gid = int(gl_WorkGroupID.x) * 16 + int(gl_LocalInvocationID.x);
  int v0 = (gid * 8);
  precise float acc0;
  acc0 = 0.0;
  for (int ridx1 = 0; ridx1 < 8; ridx1++) {
    int v1 = (v0 + ridx1);
    vec4 v2 = data1_v4[v1];
    [[unroll]] for (int uidx2 = 0; uidx2 < 4; uidx2++) {
      acc0 = (acc0 + v2[uidx2]);
    }
  }
  precise float red0;
  red0 = 0.0;
  red0 = (red0 + acc0);
  data0[gid] = red0;
}
