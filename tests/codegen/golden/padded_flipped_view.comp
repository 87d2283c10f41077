#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef VKG_BDA
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#endif
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;
#ifdef VKG_BDA
layout(push_constant) uniform Addrs { uvec2 addr[2]; } pc;
layout(buffer_reference, std430, buffer_reference_align = 4) restrict writeonly buffer P0 { float v[]; };
#define data0 P0(pc.addr[0]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P1 { float v[]; };
#define data1 P1(pc.addr[1]).v
#else
layout(set = 0, binding = 0, std430) restrict writeonly buffer B0 { float data0[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer B1 { float data1[]; };
#endif
// E_5_7
void main() {
  int gid = int(gl_WorkGroupID.x) * 64 + int(gl_LocalInvocationID.x);
  if (gid >= 35) return;
  int gidx0 = (gid / 7);
  int gidx1 = gid % 7;
  int v0 = (gidx0 * 7);
  int v1 = (v0 + gidx1);
  bool v2 = (gidx0 < 4);
  bool v3 = (gidx0 < 1);
  bool v4 = (v3 != true);
  bool v5 = (v2 && v4);
  bool v6 = (gidx1 < 5);
  bool v7 = (v5 && v6);
  int v8 = (gidx1 * (-3));
  int v9 = (gidx0 + v8);
  int v10 = (v9 + 11);
  precise float v11 = (v7 ? data1[v10] : 0.0);
  precise float v12 = (v7 ? v11 : 0.0);
  data0[v1] = v12;
}
