#include <stdint.h>
typedef _Bool bool_t;
void E_7(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
  int32_t* restrict data0 = (int32_t*)bufs[0];
  const int32_t* restrict data1 = (const int32_t*)bufs[1];
  const int32_t* restrict data2 = (const int32_t*)bufs[2];
  (void)vars;
  if (start >= end) return;
#pragma GCC unroll 64
  for (int64_t uidx1 = 0; uidx1 < 7; uidx1++) {
    int32_t v0 = data1[uidx1];
    bool_t v1 = (v0 == ((int32_t)0));
    bool_t v2 = (v0 == ((int32_t)-1));
    int32_t v3 = data2[uidx1];
    int32_t v4 = ((int32_t)(0 - (uint32_t)v3));
    bool_t v5 = ((bool_t)(v1 | v2));
    int32_t v6 = (v5 ? ((int32_t)1) : v0);
    int32_t v7 = ((int32_t)(v3 / v6));
    int32_t v8 = (v2 ? v4 : v7);
    int32_t v9 = (v1 ? ((int32_t)0) : v8);
    data0[uidx1] = v9;
  }
}
