#include <stdint.h>
typedef _Bool bool_t;
void r_8_16_32(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
  float* restrict data0 = (float*)bufs[0];
  const float* restrict data1 = (const float*)bufs[1];
  const float* restrict data2 = (const float*)bufs[2];
  (void)vars;
  for (int64_t gidx0 = start; gidx0 < end; gidx0++) {
    for (int64_t gidx1 = 0; gidx1 < 2; gidx1++) {
      int64_t v0 = (gidx0 * 64ll);
      int64_t v1 = (gidx1 * 8ll);
      int64_t v2 = (v0 + v1);
      int64_t v3 = (gidx0 * 128ll);
      float acc0[4][8];
#pragma GCC unroll 64
      for (int64_t uidx3 = 0; uidx3 < 4; uidx3++) {
#pragma GCC unroll 64
        for (int64_t uidx4 = 0; uidx4 < 8; uidx4++) {
          acc0[uidx3][uidx4] = 0x0p+0f;
        }
      }
      for (int64_t ridx2 = 0; ridx2 < 32; ridx2++) {
#pragma GCC unroll 64
        for (int64_t uidx3 = 0; uidx3 < 4; uidx3++) {
#pragma GCC unroll 64
          for (int64_t uidx4 = 0; uidx4 < 8; uidx4++) {
            int64_t v4 = (ridx2 * 16ll);
            int64_t v5 = (v1 + v4);
            int64_t v6 = (v5 + uidx4);
            float v7 = data2[v6];
            int64_t v8 = (v3 + ridx2);
            int64_t v9 = (uidx3 * 32ll);
            int64_t v10 = (v8 + v9);
            float v11 = data1[v10];
            float v12 = (v7 * v11);
            acc0[uidx3][uidx4] = (acc0[uidx3][uidx4] + v12);
          }
        }
      }
      float red0[4][8];
#pragma GCC unroll 64
      for (int64_t uidx3 = 0; uidx3 < 4; uidx3++) {
#pragma GCC unroll 64
        for (int64_t uidx4 = 0; uidx4 < 8; uidx4++) {
          red0[uidx3][uidx4] = 0x0p+0f;
          red0[uidx3][uidx4] = (red0[uidx3][uidx4] + acc0[uidx3][uidx4]);
        }
      }
#pragma GCC unroll 64
      for (int64_t uidx3 = 0; uidx3 < 4; uidx3++) {
#pragma GCC unroll 64
        for (int64_t uidx4 = 0; uidx4 < 8; uidx4++) {
          int64_t v13 = (uidx3 * 16ll);
          int64_t v14 = (v2 + v13);
          int64_t v15 = (v14 + uidx4);
          data0[v15] = red0[uidx3][uidx4];
        }
      }
    }
  }
}
