// The README's quick start: lazy tensors, fused kernels, results in double-checked values.
#include <cstdio>
#include <vkgrad/vkgrad.hpp>

int main() {
  using vkgrad::Tensor;
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor w = Tensor::from_vector<float>({0.5f, -1, 2, 0, 1, 1}, {3, 2});
  Tensor b = Tensor::from_vector<float>({0.25f, -0.25f}, {2});

  Tensor y = x.matmul(w).add(b).relu();  // lazy: nothing has run yet
  Tensor p = y.softmax(-1);              // still lazy

  std::printf("kernels to run: %zu\n", p.schedule().size());
  std::vector<float> probs = p.to_vector<float>();  // schedules, compiles, runs
  std::printf("y = %s\n", y.to_string().c_str());
  std::printf("softmax rows: [%.4f %.4f] [%.4f %.4f]\n", probs[0], probs[1], probs[2], probs[3]);
  std::printf("row sums: %s\n", p.sum(1).to_string().c_str());
  return 0;
}
