/* bench: the plain C loops `vkgrad bench` compares with (see reference.h). Built with -O2
 * -march=native (tools/cli/CMakeLists.txt). At -O2, gcc 12 vectorizes only loops whose trip
 * count it knows, so each loop runs over fixed-size blocks that `#pragma GCC unroll` turns into
 * straight-line code for the SLP vectorizer, then finishes the tail one element at a time. */
#include "reference.h"

void vkgrad_ref_axbpc(const float* restrict a, const float* restrict b, const float* restrict c,
                      float* restrict out, int64_t n) {
  enum { kBlock = 16 };
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
#pragma GCC unroll 16
    for (int j = 0; j < kBlock; ++j) out[i + j] = a[i + j] * b[i + j] + c[i + j];
  }
  for (; i < n; ++i) out[i] = a[i] * b[i] + c[i];
}

float vkgrad_ref_sum(const float* x, int64_t n) {
  enum { kLanes = 32 };
  float acc[kLanes] = {0};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 32
    for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j];
  }
  float total = 0;
  for (int j = 0; j < kLanes; ++j) total += acc[j];
  for (; i < n; ++i) total += x[i];
  return total;
}
