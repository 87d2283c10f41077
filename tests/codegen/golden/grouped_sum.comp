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
  int gid = int(gl_WorkGroupID.x);
  int lid = int(gl_LocalInvocationID.x);
  int v0 = (gid * 4096);
  precise float acc0 = 0.0;
  for (int rflat0 = lid; rflat0 < 4096; rflat0 += 256) {
    int ridx1 = rflat0;
    int v1 = (v0 + ridx1);
    precise float v2 = data1[v1];
    acc0 = (acc0 + v2);
  }
  acc0 = subgroupAdd(acc0);
  if (subgroupElect()) vkg_shared0[gl_SubgroupID] = acc0;
  barrier();
  precise float red0 = 0.0;
  for (int s = 0; s < int(gl_NumSubgroups); s++) red0 = (red0 + vkg_shared0[s]);
  if (lid == 0) data0[gid] = red0;
}
