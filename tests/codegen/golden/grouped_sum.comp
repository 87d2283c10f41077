#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#ifdef VKG_BDA
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#endif
layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;
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
shared float vkg_shared0[256];
// r_4_4096
void main() {
  int wgid = int(gl_WorkGroupID.x);
  int lidx0 = int(gl_LocalInvocationID.x);
  bool v0 = (lidx0 == 0);
  int v1 = int(gl_NumSubgroups);
  int v2 = int(gl_SubgroupID);
  bool v3 = subgroupElect();
  int v4 = (wgid * 4096);
  int v5 = (lidx0 + v4);
  precise float acc0;
  acc0 = 0.0;
  for (int ridx2 = 0; ridx2 < 16; ridx2++) {
    int v6 = (ridx2 * 256);
    int v7 = (v5 + v6);
    precise float v8 = data1[v7];
    acc0 = (acc0 + v8);
  }
  precise float red0;
  red0 = 0.0;
  red0 = (red0 + acc0);
  precise float acc1;
  acc1 = 0.0;
  precise float v9 = subgroupAdd(red0);
  if (v3) vkg_shared0[v2] = v9;
  barrier();
  for (int ridx4 = 0; ridx4 < int(gl_NumSubgroups); ridx4++) {
    precise float v10 = vkg_shared0[ridx4];
    acc1 = (acc1 + v10);
  }
  precise float red1;
  red1 = 0.0;
  red1 = (red1 + acc1);
  if (v0) data0[wgid] = red1;
}
