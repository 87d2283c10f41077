#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef VKG_BDA
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#endif
layout(local_size_x = 16, local_size_y = 1, local_size_z = 1) in;
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
// r_64_128_256
void main() {
  int gidx0 = int(gl_WorkGroupID.x);
  int lidx0 = int(gl_LocalInvocationID.x);
  int v0 = (gidx0 * 256);
  int v1 = (lidx0 * 2);
  int v2 = (v0 + v1);
  int v3 = (gidx0 * 512);
  precise float acc0[8][2][4];
  [[unroll]] for (int uidx3 = 0; uidx3 < 8; uidx3++) {
    [[unroll]] for (int uidx5 = 0; uidx5 < 2; uidx5++) {
      [[unroll]] for (int uidx6 = 0; uidx6 < 4; uidx6++) {
        acc0[uidx3][uidx5][uidx6] = 0.0;
      }
    }
  }
  for (int ridx2 = 0; ridx2 < 64; ridx2++) {
    int v4 = (v3 + ridx2);
    int v5 = (ridx2 * 128);
    int v6 = (v1 + v5);
    vec4 ld0[8];
    [[unroll]] for (int uidx3 = 0; uidx3 < 8; uidx3++) {
      int v7 = (uidx3 * 64);
      int v8 = (v4 + v7);
      ld0[uidx3] = data1_v4[v8];
    }
    vec4 ld1[2][4];
    [[unroll]] for (int uidx5 = 0; uidx5 < 2; uidx5++) {
      int v9 = (v6 + uidx5);
      [[unroll]] for (int uidx7 = 0; uidx7 < 4; uidx7++) {
        int v10 = (uidx7 * 32);
        int v11 = (v9 + v10);
        ld1[uidx5][uidx7] = data2_v4[v11];
      }
    }
    [[unroll]] for (int uidx3 = 0; uidx3 < 8; uidx3++) {
      int v12 = (uidx3 * 64);
      int v13 = (v4 + v12);
      [[unroll]] for (int uidx5 = 0; uidx5 < 2; uidx5++) {
        int v14 = (v6 + uidx5);
        [[unroll]] for (int uidx6 = 0; uidx6 < 4; uidx6++) {
          [[unroll]] for (int uidx7 = 0; uidx7 < 4; uidx7++) {
            int v15 = (uidx7 * 32);
            int v16 = (v14 + v15);
            acc0[uidx3][uidx5][uidx6] = fma(ld0[uidx3][uidx7], ld1[uidx5][uidx7][uidx6], acc0[uidx3][uidx5][uidx6]);
          }
        }
      }
    }
  }
  precise float red0[8][2][4];
  [[unroll]] for (int uidx3 = 0; uidx3 < 8; uidx3++) {
    [[unroll]] for (int uidx5 = 0; uidx5 < 2; uidx5++) {
      [[unroll]] for (int uidx6 = 0; uidx6 < 4; uidx6++) {
        red0[uidx3][uidx5][uidx6] = 0.0;
        red0[uidx3][uidx5][uidx6] = (red0[uidx3][uidx5][uidx6] + acc0[uidx3][uidx5][uidx6]);
      }
    }
  }
  [[unroll]] for (int uidx3 = 0; uidx3 < 8; uidx3++) {
    int v17 = (uidx3 * 32);
    int v18 = (v2 + v17);
    [[unroll]] for (int uidx5 = 0; uidx5 < 2; uidx5++) {
      int v19 = (v18 + uidx5);
      vec4 v20;
      [[unroll]] for (int uidx6 = 0; uidx6 < 4; uidx6++) {
        bool v21 = (red0[uidx3][uidx5][uidx6] < 0.0);
        precise float v22 = (v21 ? 0.0 : red0[uidx3][uidx5][uidx6]);
        v20[uidx6] = v22;
      }
      data0_v4[v19] = v20;
    }
  }
}
