#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef VKG_BDA
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#endif
layout(local_size_x = 32, local_size_y = 1, local_size_z = 1) in;
#ifdef VKG_BDA
layout(push_constant) uniform Addrs { uvec2 addr[3]; } pc;
layout(buffer_reference, std430, buffer_reference_align = 4) restrict writeonly buffer P0 { float v[]; };
#define data0 P0(pc.addr[0]).v
layout(buffer_reference, std430, buffer_reference_align = 16) restrict writeonly buffer P0v { vec4 v[]; };
#define data0_v4 P0v(pc.addr[0]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P1 { float v[]; };
#define data1 P1(pc.addr[1]).v
layout(buffer_reference, std430, buffer_reference_align = 16) restrict readonly buffer P1v { vec4 v[]; };
#define data1_v4 P1v(pc.addr[1]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P2 { float v[]; };
#define data2 P2(pc.addr[2]).v
layout(buffer_reference, std430, buffer_reference_align = 16) restrict readonly buffer P2v { vec4 v[]; };
#define data2_v4 P2v(pc.addr[2]).v
#else
layout(set = 0, binding = 0, std430) restrict writeonly buffer B0 { float data0[]; };
layout(set = 0, binding = 0, std430) restrict writeonly buffer B0v { vec4 data0_v4[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer B1 { float data1[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer B1v { vec4 data1_v4[]; };
layout(set = 0, binding = 2, std430) restrict readonly buffer B2 { float data2[]; };
layout(set = 0, binding = 2, std430) restrict readonly buffer B2v { vec4 data2_v4[]; };
#endif
// E_25_4
void main() {
  int gid = int(gl_WorkGroupID.x) * 32 + int(gl_LocalInvocationID.x);
  if (gid >= 25) return;
  vec4 v0 = data1_v4[gid];
  vec4 v1 = data2_v4[gid];
  vec4 v2;
  [[unroll]] for (int uidx2 = 0; uidx2 < 4; uidx2++) {
    precise float v3 = (v0[uidx2] + v1[uidx2]);
    v2[uidx2] = v3;
  }
  data0_v4[gid] = v2;
}
