#include <stdint.h>
typedef _Bool bool_t;
typedef float vkg_f32x16 __attribute__((vector_size(64)));
typedef float vkg_f32x16u __attribute__((vector_size(64), aligned(4)));
static inline vkg_f32x16 vkg_fma16(float a, vkg_f32x16 b, vkg_f32x16 c) {
  vkg_f32x16 r;
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) r[i] = __builtin_fmaf(a, b[i], c[i]);
  return r;
}
void r_64_128_256(void** bufs, const int64_t* vars, int64_t start, int64_t end) {
  float* restrict data0 = (float*)bufs[0];
  const float* restrict data1 = (const float*)bufs[1];
  const float* restrict data2 = (const float*)bufs[2];
  (void)vars;
  float* restrict pack_a = (float*)bufs[3] + 0;
  float* restrict pack_b = (float*)bufs[3] + 0;
  float* restrict tile_c = (float*)bufs[3] + 32768;
  const int64_t m_lo = 0, m_hi = 64;
  const int64_t n_lo = start * 64, n_hi = (end * 64 < 128 ? end * 64 : 128);
  for (int64_t jc = n_lo; jc < n_hi; jc += 128) {
    const int64_t nc = n_hi - jc < 128 ? n_hi - jc : 128;
    for (int64_t jr = 0; jr < nc; jr += 64) {
      const int64_t nr = nc - jr < 64 ? nc - jr : 64;
      float* restrict pb = pack_b + jr * 256;
      for (int64_t kk = 0; kk < 256; kk += 1) {
        const int64_t ridx2 = (kk);
        for (int64_t w = 0; w < nr; w += 1) {
          const int64_t gidx1 = (jc + jr + w);
          int64_t v0 = (ridx2 * 128ll);
          int64_t v1 = (gidx1 + v0);
          float v2 = data2[v1];
          pb[kk * 64 + w] = v2;
        }
        for (int64_t w = nr; w < 64; w += 1) {
          pb[kk * 64 + w] = 0.0f;
        }
      }
    }
    for (int64_t ic = m_lo; ic < m_hi; ic += 192) {
      const int64_t mc = m_hi - ic < 192 ? m_hi - ic : 192;
      for (int64_t pc = 0; pc < 256; pc += 256) {
        const int64_t kc = 256 - pc < 256 ? 256 - pc : 256;
        for (int64_t ir = 0; ir < mc; ir += 4) {
          for (int64_t jr = 0; jr < nc; jr += 64) {
            const float* ar[4];
            const int64_t mr = mc - ir < 4 ? mc - ir : 4;
            for (int64_t w = 0; w < mr; w += 1) {
              const int64_t gidx0 = (ic + ir + w);
              int64_t v3 = (gidx0 * 256ll);
              ar[w] = data1 + v3 + pc;
            }
            for (int64_t w = mr; w < 4; w += 1) {
              ar[w] = ar[0];
            }
            const float* restrict bp = pack_b + jr * 256 + pc * 64;
            float* restrict cp = tile_c + ir * 128 + jr;
            vkg_f32x16 acc[4][4];
#pragma GCC unroll 64
            for (int64_t i = 0; i < 4; i += 1) {
#pragma GCC unroll 64
              for (int64_t j = 0; j < 4; j += 1) {
                acc[i][j] = pc == 0 ? (vkg_f32x16){0} : *(vkg_f32x16*)(cp + i * 128 + j * 16);
              }
            }
            for (int64_t kk = 0; kk < kc; kk += 1) {
#pragma GCC unroll 64
              for (int64_t i = 0; i < 4; i += 1) {
#pragma GCC unroll 64
                for (int64_t j = 0; j < 4; j += 1) {
                  acc[i][j] = vkg_fma16(ar[i][kk], *(const vkg_f32x16*)(bp + kk * 64 + j * 16), acc[i][j]);
                }
              }
            }
#pragma GCC unroll 64
            for (int64_t i = 0; i < 4; i += 1) {
#pragma GCC unroll 64
              for (int64_t j = 0; j < 4; j += 1) {
                *(vkg_f32x16*)(cp + i * 128 + j * 16) = acc[i][j];
              }
            }
          }
        }
      }
      for (int64_t i = 0; i < mc; i += 1) {
        for (int64_t j = 0; j < nc; j += 1) {
          const int64_t gidx0 = (ic + i); const int64_t gidx1 = (jc + j);
          const float red = tile_c[i * 128 + j];
          int64_t v4 = (gidx0 * 128ll);
          int64_t v5 = (v4 + gidx1);
          bool_t v6 = (red < 0x0p+0f);
          float v7 = (v6 ? 0x0p+0f : red);
          data0[v5] = v7;
        }
      }
    }
  }
}
