#version 450
// C = A B for row-major @N@ x @N@ float matrices (the matmul reference on Vulkan). Register
// blocking, no shared memory: each invocation computes an 8 x 8 block of C in 16 vec4
// accumulators, reading A eight rows at a time as vec4s along k and B as two vec4s per k.
// Every A element loaded feeds 8 multiply-adds and every B vec4 feeds 32, which is what a GPU
// needs from its registers; on lavapipe shared memory costs a per-lane loop per access and a
// coroutine switch per barrier, so this is also the fast kernel there.
// Placeholders: @N@ (a multiple of 64). Dispatch N/64 x N/64 workgroups of 8 x 8.
layout(local_size_x = 8, local_size_y = 8) in;

layout(set = 0, binding = 0, std430) writeonly buffer Cm { vec4 c[]; };
layout(set = 0, binding = 1, std430) readonly buffer Am { vec4 a[]; };
layout(set = 0, binding = 2, std430) readonly buffer Bm { vec4 b[]; };

const uint N = @N@u;
const uint N4 = N / 4u;  // vec4s per row

// The block is written out row by row so that every index is a constant: a loop over an
// array of accumulators could leave them in memory instead of registers.
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define ROWS_OF(X, c) X(0, c) X(1, c) X(2, c) X(3, c) X(4, c) X(5, c) X(6, c) X(7, c)
#define DECLARE(r) vec4 acc##r##0 = vec4(0.0), acc##r##1 = vec4(0.0); vec4 a##r;
#define LOAD_A(r) a##r = a[(row + uint(r)) * N4 + k4];
#define FMA(r, c) acc##r##0 += a##r.c * b0; acc##r##1 += a##r.c * b1;
#define STEP(kk, c)                                        \
  {                                                        \
    uint bi = (k4 * 4u + kk) * N4 + col4;                  \
    vec4 b0 = b[bi], b1 = b[bi + 1u];                      \
    ROWS_OF(FMA, c)                                        \
  }
#define STORE(r) c[(row + uint(r)) * N4 + col4] = acc##r##0; \
                 c[(row + uint(r)) * N4 + col4 + 1u] = acc##r##1;

void main() {
  uint col4 = gl_GlobalInvocationID.x * 2u;  // first of the block's two vec4 columns
  uint row = gl_GlobalInvocationID.y * 8u;   // first of the block's eight rows
  ROWS(DECLARE)
  for (uint k4 = 0u; k4 < N4; ++k4) {
    ROWS(LOAD_A)
    STEP(0u, x) STEP(1u, y) STEP(2u, z) STEP(3u, w)
  }
  ROWS(STORE)
}
