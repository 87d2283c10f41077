#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef VKG_BDA
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#endif
layout(local_size_x = 8, local_size_y = 1, local_size_z = 1) in;
#ifdef VKG_BDA
layout(push_constant) uniform Addrs { uvec2 addr[3]; } pc;
layout(buffer_reference, std430, buffer_reference_align = 4) restrict writeonly buffer P0 { int v[]; };
#define data0 P0(pc.addr[0]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P1 { int v[]; };
#define data1 P1(pc.addr[1]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P2 { int v[]; };
#define data2 P2(pc.addr[2]).v
#else
layout(set = 0, binding = 0, std430) restrict writeonly buffer B0 { int data0[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer B1 { int data1[]; };
layout(set = 0, binding = 2, std430) restrict readonly buffer B2 { int data2[]; };
#endif
// E_7
void main() {
  int gid = int(gl_WorkGroupID.x) * 8 + int(gl_LocalInvocationID.x);
  if (gid >= 7) return;
  int v0 = data1[gid];
  bool v1 = (v0 == 0);
  bool v2 = (v0 == (-1));
  int v3 = data2[gid];
  int v4 = (-v3);
  bool v5 = (v2 || v1);
  int v6 = (v5 ? 1 : v0);
  int v7 = (v3 / v6);
  int v8 = (v2 ? v4 : v7);
  int v9 = (v1 ? 0 : v8);
  data0[gid] = v9;
}
