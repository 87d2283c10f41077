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
    bool v6 = (v5 < (-151.0));
    bool v7 = (129.0 < v5);
    precise float v8 = (v7 ? 129.0 : v5);
    precise float v9 = (v6 ? (-151.0) : v8);
    precise float v10 = (v9 + 12582912.0);
    int v11 = floatBitsToInt(v10);
    int v12 = (v11 + (-1262485504));
    int v13 = (v12 / 2);
    int v14 = (v13 * (-1));
    int v15 = (v11 + v14);
    int v16 = (v15 + (-1262485377));
    int v17 = (v16 << 23);
    precise float v18 = intBitsToFloat(v17);
    int v19 = (v13 + 127);
    int v20 = (v19 << 23);
    precise float v21 = intBitsToFloat(v20);
    precise float v22 = (v10 + (-12582912.0));
    precise float v23 = (v22 * (-1.0));
    precise float v24 = (v23 + v9);
    precise float v25 = (v24 * 1.5252734e-05);
    precise float v26 = (v25 + 0.0001540353);
    precise float v27 = (v26 * v24);
    precise float v28 = (v27 + 0.0013333558);
    precise float v29 = (v24 * v28);
    precise float v30 = (v29 + 0.009618129);
    precise float v31 = (v24 * v30);
    precise float v32 = (v31 + 0.05550411);
    precise float v33 = (v32 * v24);
    precise float v34 = (v33 + 0.2402265);
    precise float v35 = (v34 * v24);
    precise float v36 = (v35 + 0.6931472);
    precise float v37 = (v24 * v36);
    precise float v38 = (v37 + 1.0);
    precise float v39 = (v21 * v38);
    acc0 = fma(v18, v39, acc0);
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
// E_4_10
void main() {
  int gid = int(gl_WorkGroupID.x) * 64 + int(gl_LocalInvocationID.x);
  if (gid >= 40) return;
  precise float v0 = data1[gid];
  int v1 = (gid / 10);
  precise float v2 = data2[v1];
  precise float v3 = (v0 - v2);
  precise float v4 = (v3 * 1.442695);
  bool v5 = (v4 < (-151.0));
  bool v6 = (129.0 < v4);
  precise float v7 = (v6 ? 129.0 : v4);
  precise float v8 = (v5 ? (-151.0) : v7);
  precise float v9 = (v8 + 12582912.0);
  int v10 = floatBitsToInt(v9);
  int v11 = (v10 + (-1262485504));
  int v12 = (v11 / 2);
  int v13 = (v12 * (-1));
  int v14 = (v10 + v13);
  int v15 = (v14 + (-1262485377));
  int v16 = (v15 << 23);
  precise float v17 = intBitsToFloat(v16);
  int v18 = (v12 + 127);
  int v19 = (v18 << 23);
  precise float v20 = intBitsToFloat(v19);
  precise float v21 = (v9 + (-12582912.0));
  precise float v22 = (v21 * (-1.0));
  precise float v23 = (v22 + v8);
  precise float v24 = (v23 * 1.5252734e-05);
  precise float v25 = (v24 + 0.0001540353);
  precise float v26 = (v23 * v25);
  precise float v27 = (v26 + 0.0013333558);
  precise float v28 = (v23 * v27);
  precise float v29 = (v28 + 0.009618129);
  precise float v30 = (v29 * v23);
  precise float v31 = (v30 + 0.05550411);
  precise float v32 = (v31 * v23);
  precise float v33 = (v32 + 0.2402265);
  precise float v34 = (v33 * v23);
  precise float v35 = (v34 + 0.6931472);
  precise float v36 = (v35 * v23);
  precise float v37 = (v36 + 1.0);
  precise float v38 = (v20 * v37);
  precise float v39 = (v17 * v38);
  precise float v40 = data3[v1];
  precise float v41 = (v39 / v40);
  data0[gid] = v41;
}
