#include <stdint.h>
typedef _Bool bool_t;
void r_16_32(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
  float* restrict data0 = (float*)bufs[0];
  const float* restrict data1 = (const float*)bufs[1];
  (void)vars;
  for (int64_t gidx0 = start; gidx0 < end; gidx0++) {
    int64_t v0 = (gidx0 * 32ll);
    float acc0[8];
#pragma GCC unroll 64
    for (int64_t uidx2 = 0; uidx2 < 8; uidx2++) {
      acc0[uidx2] = 0x0p+0f;
    }
    for (int64_t ridx1 = 0; ridx1 < 4; ridx1++) {
#pragma GCC unroll 64
      for (int64_t uidx2 = 0; uidx2 < 8; uidx2++) {
        int64_t v1 = (ridx1 * 8ll);
        int64_t v2 = (v0 + v1);
        int64_t v3 = (v2 + uidx2);
        float v4 = data1[v3];
        acc0[uidx2] = (acc0[uidx2] + v4);
      }
    }
    float red0;
    red0 = 0x0p+0f;
#pragma GCC unroll 64
    for (int64_t uidx2 = 0; uidx2 < 8; uidx2++) {
      red0 = (red0 + acc0[uidx2]);
    }
    data0[gidx0] = red0;
  }
}
