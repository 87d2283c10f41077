#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef VKG_BDA
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#endif
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;
#ifdef VKG_BDA
layout(push_constant) uniform Addrs { uvec2 addr[3]; } pc;
layout(buffer_reference, std430, buffer_reference_align = 4) restrict writeonly buffer P0 { float v[]; };
#define data0 P0(pc.addr[0]).v
layout(buffer_reference, std430, buffer_reference_align = 16) restrict writeonly buffer P0v { vec4 v[]; };
#define data0_v4 P0v(pc.addr[0]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P1 { float v[]; };
#define data1 P1(pc.addr[1]).v
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer P2 { float v[]; };
#define data2 P2(pc.addr[2]).v
layout(buffer_reference, std430, buffer_reference_align = 16) restrict readonly buffer P2v { vec4 v[]; };
#define data2_v4 P2v(pc.addr[2]).v
#else
layout(set = 0, binding = 0, std430) restrict writeonly buffer B0 { float data0[]; };
layout(set = 0, binding = 0, std430) restrict writeonly buffer B0v { vec4 data0_v4[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer B1 { float data1[]; };
layout(set = 0, binding = 2, std430) restrict readonly buffer B2 { float data2[]; };
layout(set = 0, binding = 2, std430) restrict readonly buffer B2v { vec4 data2_v4[]; };
#endif
// r_64_128_256
void main() {
  int gid = int(gl_WorkGroupID.x) * 64 + int(gl_LocalInvocationID.x);
  int v0 = (gid / 16);
  int v1 = (v0 * 256);
  int v2 = (gid % 16);
  int v3 = (v2 * 2);
  int v4 = (v1 + v3);
  int v5 = (v0 * 2048);
  precise float acc0[8][2][4];
  [[unroll]] for (int uidx3 = 0; uidx3 < 8; uidx3++) {
    [[unroll]] for (int uidx4 = 0; uidx4 < 2; uidx4++) {
      [[unroll]] for (int uidx5 = 0; uidx5 < 4; uidx5++) {
        acc0[uidx3][uidx4][uidx5] = 0.0;
      }
    }
  }
  for (int ridx2 = 0; ridx2 < 256; ridx2++) {
    int v6 = (ridx2 * 32);
    int v7 = (v3 + v6);
    int v8 = (v5 + ridx2);
    [[unroll]] for (int uidx3 = 0; uidx3 < 8; uidx3++) {
      int v9 = (uidx3 * 256);
      int v10 = (v8 + v9);
      precise float v11 = data1[v10];
      [[unroll]] for (int uidx4 = 0; uidx4 < 2; uidx4++) {
        int v12 = (v7 + uidx4);
        vec4 v13 = data2_v4[v12];
        [[unroll]] for (int uidx5 = 0; uidx5 < 4; uidx5++) {
          precise float v14 = (v13[uidx5] * v11);
          acc0[uidx3][uidx4][uidx5] = (acc0[uidx3][uidx4][uidx5] + v14);
        }
      }
    }
  }
  precise float red0[8][2][4];
  [[unroll]] for (int uidx3 = 0; uidx3 < 8; uidx3++) {
    [[unroll]] for (int uidx4 = 0; uidx4 < 2; uidx4++) {
      [[unroll]] for (int uidx5 = 0; uidx5 < 4; uidx5++) {
        red0[uidx3][uidx4][uidx5] = 0.0;
        red0[uidx3][uidx4][uidx5] = (red0[uidx3][uidx4][uidx5] + acc0[uidx3][uidx4][uidx5]);
      }
    }
  }
  [[unroll]] for (int uidx3 = 0; uidx3 < 8; uidx3++) {
    int v15 = (uidx3 * 32);
    int v16 = (v4 + v15);
    [[unroll]] for (int uidx4 = 0; uidx4 < 2; uidx4++) {
      int v17 = (v16 + uidx4);
      vec4 v18;
      [[unroll]] for (int uidx5 = 0; uidx5 < 4; uidx5++) {
        bool v19 = (red0[uidx3][uidx4][uidx5] < 0.0);
        precise float v20 = (v19 ? 0.0 : red0[uidx3][uidx4][uidx5]);
        v18[uidx5] = v20;
      }
      data0_v4[v17] = v18;
    }
  }
}
