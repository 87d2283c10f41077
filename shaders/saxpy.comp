#version 450
// out = a * b + c over @N4@ vec4s (the `ew_axbpc_16M` reference on Vulkan). One vec4 per
// invocation: 16-byte loads and stores are what lets a GPU (and lavapipe's SIMD lanes) reach
// memory bandwidth. Placeholders: @LOCAL@ invocations per workgroup, @N4@ vec4s per array.
layout(local_size_x = @LOCAL@) in;

layout(set = 0, binding = 0, std430) writeonly buffer Out { vec4 o[]; };
layout(set = 0, binding = 1, std430) readonly buffer A { vec4 a[]; };
layout(set = 0, binding = 2, std430) readonly buffer B { vec4 b[]; };
layout(set = 0, binding = 3, std430) readonly buffer C { vec4 c[]; };

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < @N4@u) o[i] = a[i] * b[i] + c[i];
}
