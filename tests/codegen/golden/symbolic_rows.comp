#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef VKG_BDA
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#endif
layout(local_size_x = 32, local_size_y = 1, local_size_z = 1) in;
#ifdef VKG_BDA
layout(push_constant) uniform Addrs { uvec2 addr[2]; int vars[1]; } pc;
layout(buffer_reference, std430, buffer_reference_align = 4) restrict writeonly buffer P0 { float v[]; };
#define data0 P0(pc.addr[0]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P1 { float v[]; };
#define data1 P1(pc.addr[1]).v
layout(buffer_reference, std430, buffer_reference_align = 16) restrict readonly buffer P1v { vec4 v[]; };
#define data1_v4 P1v(pc.addr[1]).v
#else
layout(push_constant) uniform Vars { int vars[1]; } pc;
layout(set = 0, binding = 0, std430) restrict writeonly buffer B0 { float data0[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer B1 { float data1[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer B1v { vec4 data1_v4[]; };
#endif
// r_n_24
void main() {
  int var_n = pc.vars[0];
  int gid = int(gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z)) * 32 + int(gl_LocalInvocationID.x);
  if (gid >= var_n) return;
  int v0 = (gid * 6);
  precise float acc0;
  acc0 = 0.0;
  for (int ridx1 = 0; ridx1 < 6; ridx1++) {
    int v1 = (v0 + ridx1);
    vec4 v2 = data1_v4[v1];
    [[unroll]] for (int uidx2 = 0; uidx2 < 4; uidx2++) {
      acc0 = (acc0 + v2[uidx2]);
    }
  }
  precise float red0;
  red0 = 0.0;
  red0 = (red0 + acc0);
  precise float v3 = (red0 * 3.0);
  data0[gid] = v3;
}
