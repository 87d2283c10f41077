#include <stdint.h>
typedef _Bool bool_t;
#define VKG_FN static inline
#define VKG_U32 uint32_t
static inline float vkg_u2f(uint32_t u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
static inline uint32_t vkg_f2u(float f) { uint32_t u; __builtin_memcpy(&u, &f, 4); return u; }
VKG_FN float vkg_h2f(VKG_U32 h) {
  VKG_U32 s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0u) {
    if (m == 0u) u = s;
    else { e = 113u; while ((m & 0x400u) == 0u) { m <<= 1; e--; } u = s | (e << 23) | ((m & 0x3ffu) << 13); }
  } else if (e == 31u) u = s | 0x7f800000u | (m << 13);
  else u = s | ((e + 112u) << 23) | (m << 13);
  return vkg_u2f(u);
}
VKG_FN VKG_U32 vkg_f2h(float f) {
  VKG_U32 u = vkg_f2u(f);
  VKG_U32 s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return s | 0x7e00u;
  if (a >= 0x477ff000u) return s | 0x7c00u;
  if (a < 0x38800000u) {
    if (a < 0x33000000u) return s;
    VKG_U32 e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, sh = 126u - e;
    VKG_U32 r = m >> sh, rem = m & ((1u << sh) - 1u), hf = 1u << (sh - 1u);
    if (rem > hf || (rem == hf && (r & 1u) != 0u)) r++;
    return s | r;
  }
  VKG_U32 r = a - 0x38000000u, h = r >> 13, rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h++;
  return s | h;
}
VKG_FN float vkg_bf2f(VKG_U32 h) { return vkg_u2f(h << 16); }
VKG_FN VKG_U32 vkg_f2bf(float f) {
  VKG_U32 u = vkg_f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}
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
