// The data the training examples share: MNIST read from its IDX files, or, without them, a
// deterministic synthetic look-alike (28x28 grey images in 10 classes) generated here, plus
// batch sampling and a progress line. Plain C++; vkgrad appears only where batches become
// tensors.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>
#include <vkgrad/vkgrad.hpp>

namespace mnist {

constexpr int kSide = 28, kPixels = kSide * kSide, kClasses = 10;

struct Dataset {
  std::vector<float> images;    // n * 784, values about 0..1
  std::vector<int32_t> labels;  // n, 0..9
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
};

// splitmix64: a tiny generator that gives the same numbers with every compiler and library
// (std::normal_distribution does not).
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  double normal() {  // Box-Muller
    const double u = 1.0 - uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
};

// Ten "digits": each class is a fixed set of thick strokes drawn once from the seed. A sample
// is its class's strokes shifted by up to 3 pixels each way, with random stroke intensity and
// Gaussian pixel noise, so the classes overlap a little and a model has to learn shapes rather
// than pixels.
inline Dataset synthetic(int64_t n, uint64_t seed) {
  struct Stroke {
    double x0, y0, x1, y1;
  };
  Rng proto_rng{12345};  // the classes are the same for every seed; the samples are not
  std::vector<std::vector<Stroke>> strokes(kClasses);
  for (auto& s : strokes)
    for (int k = 0; k < 3; ++k)
      s.push_back({6 + 16 * proto_rng.uniform(), 6 + 16 * proto_rng.uniform(),
                   6 + 16 * proto_rng.uniform(), 6 + 16 * proto_rng.uniform()});

  Rng rng{seed};
  Dataset d;
  d.images.assign(static_cast<size_t>(n) * kPixels, 0.0f);
  d.labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int label = rng.below(kClasses);
    d.labels[static_cast<size_t>(i)] = label;
    const double dx = rng.uniform() * 6 - 3, dy = rng.uniform() * 6 - 3;
    const double ink = 0.6 + 0.6 * rng.uniform();
    float* img = &d.images[static_cast<size_t>(i) * kPixels];
    for (int y = 0; y < kSide; ++y)
      for (int x = 0; x < kSide; ++x) {
        double v = 0;
        for (const Stroke& s : strokes[static_cast<size_t>(label)]) {
          // Distance from the pixel to the (shifted) segment; ink falls off over ~1.5 pixels.
          const double ax = s.x0 + dx, ay = s.y0 + dy, bx = s.x1 + dx, by = s.y1 + dy;
          const double len2 = (bx - ax) * (bx - ax) + (by - ay) * (by - ay) + 1e-9;
          const double t =
              std::clamp(((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / len2, 0.0, 1.0);
          const double ex = x - (ax + t * (bx - ax)), ey = y - (ay + t * (by - ay));
          v = std::max(v, std::exp(-(ex * ex + ey * ey) / 2.25));
        }
        img[y * kSide + x] =
            static_cast<float>(std::clamp(ink * v + 0.3 * rng.normal(), -1.0, 2.0));
      }
  }
  return d;
}

// The IDX files of http://yann.lecun.com/exdb/mnist/ (uncompressed): "train" or "t10k".
inline Dataset load_idx(const std::string& dir, const std::string& which) {
  auto read = [](const std::string& path, uint32_t magic, std::vector<uint32_t>& dims) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    auto be32 = [&](size_t at) {
      if (at + 4 > bytes.size()) throw std::runtime_error(path + " is truncated");
      return uint32_t{bytes[at]} << 24 | uint32_t{bytes[at + 1]} << 16 |
             uint32_t{bytes[at + 2]} << 8 | bytes[at + 3];
    };
    if (be32(0) != magic) throw std::runtime_error(path + " is not an IDX file of that kind");
    size_t count = 1, at = 4;
    for (uint32_t& d : dims) {
      d = be32(at);
      at += 4;
      count *= d;
    }
    if (bytes.size() < at + count) throw std::runtime_error(path + " is truncated");
    return std::vector<uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                                bytes.begin() + static_cast<std::ptrdiff_t>(at + count));
  };
  std::vector<uint32_t> img_dims(3), lbl_dims(1);
  const std::vector<uint8_t> pixels =
      read(dir + "/" + which + "-images-idx3-ubyte", 0x803, img_dims);
  const std::vector<uint8_t> labels =
      read(dir + "/" + which + "-labels-idx1-ubyte", 0x801, lbl_dims);
  if (img_dims[1] != kSide || img_dims[2] != kSide || img_dims[0] != lbl_dims[0])
    throw std::runtime_error("unexpected MNIST dimensions in " + dir);
  Dataset d;
  d.images.resize(pixels.size());
  for (size_t i = 0; i < pixels.size(); ++i) d.images[i] = static_cast<float>(pixels[i]) / 255.0f;
  d.labels.assign(labels.begin(), labels.end());
  return d;
}

// A training set and a held-out test set: MNIST when `dir` is given, else synthetic.
inline std::pair<Dataset, Dataset> load(const std::string& dir) {
  if (!dir.empty()) return {load_idx(dir, "train"), load_idx(dir, "t10k")};
  return {synthetic(10000, 1), synthetic(2000, 2)};
}

// `idx` rows of `d` as an (n, 784) float32 tensor and an (n,) int32 tensor on `device`.
inline std::pair<vkgrad::Tensor, vkgrad::Tensor> batch(const Dataset& d,
                                                       const std::vector<int64_t>& idx,
                                                       const std::string& device) {
  std::vector<float> x(idx.size() * kPixels);
  std::vector<int32_t> y(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    std::copy_n(&d.images[static_cast<size_t>(idx[i]) * kPixels], kPixels, &x[i * kPixels]);
    y[i] = d.labels[static_cast<size_t>(idx[i])];
  }
  const int64_t n = static_cast<int64_t>(idx.size());
  return {vkgrad::Tensor::from_vector(x, {n, kPixels}, {}, device),
          vkgrad::Tensor::from_vector(y, {n}, {}, device)};
}

// The progress of a training loop: one line rewritten in place on a terminal, a line every
// tenth of the run otherwise. Steps per second are counted from the third step on, after the
// first steps' compiling (and a Jit's capture), so they show the steady rate.
class Progress {
 public:
  explicit Progress(int steps) : steps_(steps), tty_(isatty(fileno(stdout))) {}

  void update(int step, double loss, double acc) {
    const auto now = std::chrono::steady_clock::now();
    if (step == 2) warm_ = now;
    const double rate =
        step > 2 ? (step - 2) / std::chrono::duration<double>(now - warm_).count() : 0.0;
    char line[160];
    std::snprintf(line, sizeof line, "step %d/%d  loss %.4f  accuracy %.3f  %.1f steps/s", step,
                  steps_, loss, acc, rate);
    if (tty_) {
      const int width = 30, done = width * step / steps_;
      std::printf("\r[%s%s] %s", std::string(static_cast<size_t>(done), '#').c_str(),
                  std::string(static_cast<size_t>(width - done), '.').c_str(), line);
      if (step == steps_) std::printf("\n");
    } else if (step == 1 || step == steps_ || step % std::max(1, steps_ / 10) == 0) {
      std::printf("%s\n", line);
    }
    std::fflush(stdout);
  }

 private:
  int steps_;
  bool tty_;
  std::chrono::steady_clock::time_point warm_;
};

}  // namespace mnist
