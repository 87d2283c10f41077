/* bench: plain C reference loops that `vkgrad bench` times beside vkgrad's kernels
 * (bench/reference.c, compiled with -O2 -march=native). Each is one call on one thread.
 * Depends on the C standard library only. */
#ifndef VKGRAD_BENCH_REFERENCE_H
#define VKGRAD_BENCH_REFERENCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = a[i] * b[i] + c[i] for i in [0, n). The arrays must not overlap. */
void vkgrad_ref_axbpc(const float* a, const float* b, const float* c, float* out, int64_t n);

/* The sum of x[0..n) in float, with 32 partial sums (so the compiler can keep them in vector
 * registers) added together at the end. */
float vkgrad_ref_sum(const float* x, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* VKGRAD_BENCH_REFERENCE_H */
