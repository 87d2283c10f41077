#include <stdint.h>
typedef _Bool bool_t;
void E_5_7(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
  float* restrict data0 = (float*)bufs[0];
  const float* restrict data1 = (const float*)bufs[1];
  (void)vars;
  for (int64_t gidx0 = start; gidx0 < end; gidx0++) {
    int64_t v0 = (gidx0 * 7ll);
    bool_t v1 = (gidx0 < 4ll);
    bool_t v2 = (gidx0 < 1ll);
    bool_t v3 = (v2 != 1);
    bool_t v4 = ((bool_t)(v1 & v3));
#pragma GCC unroll 64
    for (int64_t uidx2 = 0; uidx2 < 7; uidx2++) {
      int64_t v5 = (v0 + uidx2);
      bool_t v6 = (uidx2 < 5ll);
      bool_t v7 = ((bool_t)(v4 & v6));
      int64_t v8 = (uidx2 * -3ll);
      int64_t v9 = (gidx0 + v8);
      int64_t v10 = (v9 + 11ll);
      float v11 = (v7 ? data1[v10] : (float)0x0p+0f);
      float v12 = (v7 ? v11 : 0x0p+0f);
      data0[v5] = v12;
    }
  }
}
