#include <stdint.h>
typedef _Bool bool_t;
void E_25_4(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
  float* restrict data0 = (float*)bufs[0];
  const float* restrict data1 = (const float*)bufs[1];
  const float* restrict data2 = (const float*)bufs[2];
  (void)vars;
  for (int64_t gidx0 = start; gidx0 < end; gidx0++) {
    int64_t v0 = (gidx0 * 4ll);
#pragma GCC unroll 64
    for (int64_t uidx2 = 0; uidx2 < 4; uidx2++) {
      int64_t v1 = (v0 + uidx2);
      float v2 = data2[v1];
      float v3 = data1[v1];
      float v4 = (v2 + v3);
      data0[v1] = v4;
    }
  }
}
