#version 450
// y = x + 1 over @N@ floats: the tiny kernel of the dispatch-cost cases, where the work is
// negligible and what is timed is launching it. Placeholders: @N@ (also the workgroup size).
layout(local_size_x = @N@) in;

layout(set = 0, binding = 0, std430) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 1, std430) readonly buffer X { float x[]; };

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < @N@u) y[i] = x[i] + 1.0;
}
