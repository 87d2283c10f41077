#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef VKG_BDA
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#endif
layout(local_size_x = 4, local_size_y = 8, local_size_z = 1) in;
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
// E_48_20
void main() {
  int gidx0 = int(gl_WorkGroupID.x);
  int gidx1 = int(gl_WorkGroupID.y);
  int lidx0 = int(gl_LocalInvocationID.x);
  int lidx1 = int(gl_LocalInvocationID.y);
  int v0 = (gidx0 * 4);
  int v1 = (gidx1 * 160);
  int v2 = (v0 + v1);
  int v3 = (v2 + lidx0);
  int v4 = (lidx1 * 20);
  int v5 = (v3 + v4);
  precise float v6 = data1[v5];
  precise float v7 = (v6 * 2.0);
  precise float v8 = (v7 + 1.0);
  data0[v5] = v8;
}
