#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef VKG_BDA
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#endif
layout(local_size_x = 4, local_size_y = 1, local_size_z = 1) in;
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
// r_4_10
void main() {
  int gid = int(gl_WorkGroupID.x) * 4 + int(gl_LocalInvocationID.x);
  int v0 = (gid * 10);
  precise float acc0;
  acc0 = uintBitsToFloat(0xff800000u);
  for (int ridx1 = 0; ridx1 < 10; ridx1++) {
    int v1 = (v0 + ridx1);
    precise float v2 = data1[v1];
    acc0 = (((acc0 != acc0) || (v2 < acc0)) ? acc0 : v2);
  }
  precise float red0;
  red0 = uintBitsToFloat(0xff800000u);
  red0 = (((red0 != red0) || (acc0 < red0)) ? red0 : acc0);
  data0[gid] = red0;
}
#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef VKG_BDA
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#endif
layout(local_size_x = 4, local_size_y = 1, local_size_z = 1) in;
#ifdef VKG_BDA
layout(push_constant) uniform Addrs { uvec2 addr[3]; } pc;
layout(buffer_reference, std430, buffer_reference_align = 4) restrict writeonly buffer P0 { float v[]; };
#define data0 P0(pc.addr[0]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P1 { float v[]; };
#define data1 P1(pc.addr[1]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P2 { float v[]; };
#define data2 P2(pc.addr[2]).v
#else
layout(set = 0, binding = 0, std430) restrict writeonly buffer B0 { float data0[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer B1 { float data1[]; };
layout(set = 0, binding = 2, std430) restrict readonly buffer B2 { float data2[]; };
#endif
bool vkg_isnanf(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
float vkg_exp2f(float x) {
  if (vkg_isnanf(x)) return x;
  if (x >= 128.0) return uintBitsToFloat(0x7f800000u);
  if (x < -151.0) return 0.0;
  float n = roundEven(x), f = x - n;
  float p = 1.3215487e-06;
  p = fma(p, f, 1.5252734e-05);
  p = fma(p, f, 0.0001540353);
  p = fma(p, f, 0.0013333558);
  p = fma(p, f, 0.009618129);
  p = fma(p, f, 0.05550411);
  p = fma(p, f, 0.2402265);
  p = fma(p, f, 0.6931472);
  p = fma(p, f, 1.0);
  int e = int(n);
  return ldexp(ldexp(p, e / 2), e - e / 2);
}
// r_4_10
void main() {
  int gid = int(gl_WorkGroupID.x) * 4 + int(gl_LocalInvocationID.x);
  int v0 = (gid * 10);
  precise float v1 = data2[gid];
  precise float acc0;
  acc0 = 0.0;
  for (int ridx1 = 0; ridx1 < 10; ridx1++) {
    int v2 = (v0 + ridx1);
    precise float v3 = data1[v2];
    precise float v4 = (v3 - v1);
    precise float v5 = (v4 * 1.442695);
    precise float v6 = vkg_exp2f(v5);
    acc0 = (acc0 + v6);
  }
  precise float red0;
  red0 = 0.0;
  red0 = (red0 + acc0);
  data0[gid] = red0;
}
#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef VKG_BDA
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#endif
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;
#ifdef VKG_BDA
layout(push_constant) uniform Addrs { uvec2 addr[4]; } pc;
layout(buffer_reference, std430, buffer_reference_align = 4) restrict writeonly buffer P0 { float v[]; };
#define data0 P0(pc.addr[0]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P1 { float v[]; };
#define data1 P1(pc.addr[1]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P2 { float v[]; };
#define data2 P2(pc.addr[2]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P3 { float v[]; };
#define data3 P3(pc.addr[3]).v
#else
layout(set = 0, binding = 0, std430) restrict writeonly buffer B0 { float data0[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer B1 { float data1[]; };
layout(set = 0, binding = 2, std430) restrict readonly buffer B2 { float data2[]; };
layout(set = 0, binding = 3, std430) restrict readonly buffer B3 { float data3[]; };
#endif
bool vkg_isnanf(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
float vkg_exp2f(float x) {
  if (vkg_isnanf(x)) return x;
  if (x >= 128.0) return uintBitsToFloat(0x7f800000u);
  if (x < -151.0) return 0.0;
  float n = roundEven(x), f = x - n;
  float p = 1.3215487e-06;
  p = fma(p, f, 1.5252734e-05);
  p = fma(p, f, 0.0001540353);
  p = fma(p, f, 0.0013333558);
  p = fma(p, f, 0.009618129);
  p = fma(p, f, 0.05550411);
  p = fma(p, f, 0.2402265);
  p = fma(p, f, 0.6931472);
  p = fma(p, f, 1.0);
  int e = int(n);
  return ldexp(ldexp(p, e / 2), e - e / 2);
}
// E_4_10
void main() {
  int gid = int(gl_WorkGroupID.x) * 64 + int(gl_LocalInvocationID.x);
  if (gid >= 40) return;
  precise float v0 = data1[gid];
  int v1 = (gid / 10);
  precise float v2 = data2[v1];
  precise float v3 = (v0 - v2);
  precise float v4 = (v3 * 1.442695);
  precise float v5 = vkg_exp2f(v4);
  precise float v6 = data3[v1];
  precise float v7 = (v5 / v6);
  data0[gid] = v7;
}
