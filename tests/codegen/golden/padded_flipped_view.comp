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
  bool v0 = (gid < 28);
  bool v1 = (gid < 7);
  bool v2 = (v1 != true);
  bool v3 = (v0 && v2);
  int v4 = (gid % 7);
  bool v5 = (v4 < 5);
  bool v6 = (v3 && v5);
  int v7 = (gid / 7);
  int v8 = (v4 * (-3));
  int v9 = (v7 + v8);
  int v10 = (v9 + 11);
  precise float v11 = mix(0.0, data1[(v6 ? v10 : 0)], v6);
  precise float v12 = (v6 ? v11 : 0.0);
  data0[gid] = v12;
}
