#include <stdint.h>
typedef _Bool bool_t;
void r_4_10(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
  float* restrict data0 = (float*)bufs[0];
  const float* restrict data1 = (const float*)bufs[1];
  (void)vars;
  for (int64_t gidx0 = start; gidx0 < end; gidx0++) {
    int64_t v0 = (gidx0 * 10ll);
    float acc0;
    acc0 = (-__builtin_inff());
    for (int64_t ridx1 = 0; ridx1 < 10; ridx1++) {
      int64_t v1 = (v0 + ridx1);
      float v2 = data1[v1];
      acc0 = (((bool_t)((acc0 != acc0) | (v2 < acc0))) ? acc0 : v2);
    }
    float red0;
    red0 = (-__builtin_inff());
    red0 = (((bool_t)((red0 != red0) | (acc0 < red0))) ? red0 : acc0);
    data0[gidx0] = red0;
  }
}
#include <stdint.h>
typedef _Bool bool_t;
void r_4_10(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
  float* restrict data0 = (float*)bufs[0];
  const float* restrict data1 = (const float*)bufs[1];
  const float* restrict data2 = (const float*)bufs[2];
  (void)vars;
  for (int64_t gidx0 = start; gidx0 < end; gidx0++) {
    int64_t v0 = (gidx0 * 10ll);
    float v1 = data2[gidx0];
    float acc0;
    acc0 = 0x0p+0f;
    for (int64_t ridx1 = 0; ridx1 < 10; ridx1++) {
      int64_t v2 = (v0 + ridx1);
      float v3 = data1[v2];
      float v4 = (v3 - v1);
      float v5 = (v4 * 0x1.715476p+0f);
      bool_t v6 = (v5 < -0x1.2ep+7f);
      bool_t v7 = (0x1.02p+7f < v5);
      float v8 = (v7 ? 0x1.02p+7f : v5);
      float v9 = (v6 ? -0x1.2ep+7f : v8);
      float v10 = (v9 + 0x1.8p+23f);
      int32_t v11 = ({ float b_ = v10; int32_t r_; __builtin_memcpy(&r_, &b_, sizeof r_); r_; });
      int32_t v12 = ((int32_t)((uint32_t)v11 + (uint32_t)((int32_t)-1262485504)));
      int32_t v13 = ((int32_t)(v12 / ((int32_t)2)));
      int32_t v14 = ((int32_t)((uint32_t)v13 * (uint32_t)((int32_t)-1)));
      int32_t v15 = ((int32_t)((uint32_t)v11 + (uint32_t)v14));
      int32_t v16 = ((int32_t)((uint32_t)v15 + (uint32_t)((int32_t)-1262485377)));
      int32_t v17 = ((int32_t)((uint32_t)v16 << ((int32_t)23)));
      float v18 = ({ int32_t b_ = v17; float r_; __builtin_memcpy(&r_, &b_, sizeof r_); r_; });
      int32_t v19 = ((int32_t)((uint32_t)v13 + (uint32_t)((int32_t)127)));
      int32_t v20 = ((int32_t)((uint32_t)v19 << ((int32_t)23)));
      float v21 = ({ int32_t b_ = v20; float r_; __builtin_memcpy(&r_, &b_, sizeof r_); r_; });
      float v22 = (v10 + -0x1.8p+23f);
      float v23 = (v22 * -0x1p+0f);
      float v24 = (v23 + v9);
      float v25 = (v24 * 0x1.ffcbfcp-17f);
      float v26 = (v25 + 0x1.430912p-13f);
      float v27 = (v24 * v26);
      float v28 = (v27 + 0x1.5d87fep-10f);
      float v29 = (v24 * v28);
      float v30 = (v29 + 0x1.3b2ab6p-7f);
      float v31 = (v30 * v24);
      float v32 = (v31 + 0x1.c6b08ep-5f);
      float v33 = (v24 * v32);
      float v34 = (v33 + 0x1.ebfbep-3f);
      float v35 = (v34 * v24);
      float v36 = (v35 + 0x1.62e43p-1f);
      float v37 = (v36 * v24);
      float v38 = (v37 + 0x1p+0f);
      float v39 = (v21 * v38);
      float v40 = (v18 * v39);
      acc0 = (acc0 + v40);
    }
    float red0;
    red0 = 0x0p+0f;
    red0 = (red0 + acc0);
    data0[gidx0] = red0;
  }
}
#include <stdint.h>
typedef _Bool bool_t;
void E_4_10(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
  float* restrict data0 = (float*)bufs[0];
  const float* restrict data1 = (const float*)bufs[1];
  const float* restrict data2 = (const float*)bufs[2];
  const float* restrict data3 = (const float*)bufs[3];
  (void)vars;
  for (int64_t gidx0 = start; gidx0 < end; gidx0++) {
    for (int64_t gidx1 = 0; gidx1 < 10; gidx1++) {
      int64_t v0 = (gidx0 * 10ll);
      int64_t v1 = (v0 + gidx1);
      float v2 = data1[v1];
      float v3 = data2[gidx0];
      float v4 = (v2 - v3);
      float v5 = (v4 * 0x1.715476p+0f);
      bool_t v6 = (v5 < -0x1.2ep+7f);
      bool_t v7 = (0x1.02p+7f < v5);
      float v8 = (v7 ? 0x1.02p+7f : v5);
      float v9 = (v6 ? -0x1.2ep+7f : v8);
      float v10 = (v9 + 0x1.8p+23f);
      int32_t v11 = ({ float b_ = v10; int32_t r_; __builtin_memcpy(&r_, &b_, sizeof r_); r_; });
      int32_t v12 = ((int32_t)((uint32_t)v11 + (uint32_t)((int32_t)-1262485504)));
      int32_t v13 = ((int32_t)(v12 / ((int32_t)2)));
      int32_t v14 = ((int32_t)((uint32_t)v13 * (uint32_t)((int32_t)-1)));
      int32_t v15 = ((int32_t)((uint32_t)v11 + (uint32_t)v14));
      int32_t v16 = ((int32_t)((uint32_t)v15 + (uint32_t)((int32_t)-1262485377)));
      int32_t v17 = ((int32_t)((uint32_t)v16 << ((int32_t)23)));
      float v18 = ({ int32_t b_ = v17; float r_; __builtin_memcpy(&r_, &b_, sizeof r_); r_; });
      int32_t v19 = ((int32_t)((uint32_t)v13 + (uint32_t)((int32_t)127)));
      int32_t v20 = ((int32_t)((uint32_t)v19 << ((int32_t)23)));
      float v21 = ({ int32_t b_ = v20; float r_; __builtin_memcpy(&r_, &b_, sizeof r_); r_; });
      float v22 = (v10 + -0x1.8p+23f);
      float v23 = (v22 * -0x1p+0f);
      float v24 = (v23 + v9);
      float v25 = (v24 * 0x1.ffcbfcp-17f);
      float v26 = (v25 + 0x1.430912p-13f);
      float v27 = (v24 * v26);
      float v28 = (v27 + 0x1.5d87fep-10f);
      float v29 = (v24 * v28);
      float v30 = (v29 + 0x1.3b2ab6p-7f);
      float v31 = (v24 * v30);
      float v32 = (v31 + 0x1.c6b08ep-5f);
      float v33 = (v24 * v32);
      float v34 = (v33 + 0x1.ebfbep-3f);
      float v35 = (v34 * v24);
      float v36 = (v35 + 0x1.62e43p-1f);
      float v37 = (v36 * v24);
      float v38 = (v37 + 0x1p+0f);
      float v39 = (v21 * v38);
      float v40 = (v18 * v39);
      float v41 = data3[gidx0];
      float v42 = (v40 / v41);
      data0[v1] = v42;
    }
  }
}
