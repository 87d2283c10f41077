#include <stdint.h>
typedef _Bool bool_t;
void E_48_20(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
  float* restrict data0 = (float*)bufs[0];
  const float* restrict data1 = (const float*)bufs[1];
  (void)vars;
  for (int64_t gidx0 = start; gidx0 < end; gidx0++) {
    for (int64_t gidx1 = 0; gidx1 < 20; gidx1++) {
      int64_t v0 = (gidx0 * 20ll);
      int64_t v1 = (v0 + gidx1);
      float v2 = data1[v1];
      float v3 = (v2 * 0x1p+1f);
      float v4 = (v3 + 0x1p+0f);
      data0[v1] = v4;
    }
  }
}
