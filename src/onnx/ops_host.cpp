// onnx: operators whose output shape depends on input values (NonMaxSuppression, Compress,
// Unique, ReverseSequence's lengths): they read their inputs on the host, so a model using one
// on a computed tensor runs without Jit replay (see model.cpp). MaxUnpool scatters on the device.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "onnx/graph.hpp"

namespace vkgrad::onnx {
namespace {

OpOutputs one(Tensor t) { return OpOutputs{tensor_value(std::move(t))}; }

struct Box {
  double y1, x1, y2, x2;
};

Box box_at(const HostArray& boxes, int64_t b, int64_t i, int64_t n, bool center) {
  const int64_t o = (b * n + i) * 4;
  const double a = boxes.at(o), bb = boxes.at(o + 1), cc = boxes.at(o + 2), d = boxes.at(o + 3);
  if (center) return {bb - d / 2, a - cc / 2, bb + d / 2, a + cc / 2};
  return {std::min(a, cc), std::min(bb, d), std::max(a, cc), std::max(bb, d)};
}

double iou(const Box& a, const Box& b) {
  const double ih = std::max(0.0, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const double iw = std::max(0.0, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const double inter = ih * iw;
  const double uni = (a.y2 - a.y1) * (a.x2 - a.x1) + (b.y2 - b.y1) * (b.x2 - b.x1) - inter;
  return uni <= 0 ? 0.0 : inter / uni;
}

// Lexicographic comparison of two slices (rows of `width` values).
int compare_rows(const std::vector<double>& v, int64_t a, int64_t b, int64_t width) {
  for (int64_t k = 0; k < width; k++) {
    const double x = v[static_cast<size_t>(a * width + k)],
                 y = v[static_cast<size_t>(b * width + k)];
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return 0;
}

}  // namespace

void register_host_ops(OpRegistry& r) {
  r["NonMaxSuppression"].run = [](OpContext& c) {
    const HostArray& boxes = c.host(0);
    const HostArray& scores = c.host(1);
    const int64_t max_out = c.has(2) ? c.host(2).int_at(0) : 0;
    const double iou_thr = c.has(3) ? c.host(3).at(0) : 0.0;
    const bool has_score_thr = c.has(4);
    const double score_thr = has_score_thr ? c.host(4).at(0) : 0.0;
    const bool center = c.attr_i("center_point_box", 0) != 0;
    if (boxes.shape.size() != 3 || scores.shape.size() != 3 || boxes.shape[2] != 4)
      throw ShapeError(
          fmt::format("ONNX: {}: boxes must be [B, N, 4] and scores [B, C, N]", c.node().label()));
    const int64_t nb = scores.shape[0], nc = scores.shape[1], n = scores.shape[2];
    std::vector<int64_t> out;
    for (int64_t b = 0; b < nb; b++) {
      for (int64_t cl = 0; cl < nc; cl++) {
        std::vector<int64_t> order;
        for (int64_t i = 0; i < n; i++) {
          const double s = scores.at((b * nc + cl) * n + i);
          if (!has_score_thr || s > score_thr) order.push_back(i);
        }
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return scores.at((b * nc + cl) * n + x) > scores.at((b * nc + cl) * n + y);
        });
        std::vector<int64_t> kept;
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_out) break;
          const Box bi = box_at(boxes, b, i, n, center);
          bool keep = true;
          for (int64_t k : kept)
            if (iou(bi, box_at(boxes, b, k, n, center)) > iou_thr) {
              keep = false;
              break;
            }
          if (keep) kept.push_back(i);
        }
        for (int64_t k : kept) out.insert(out.end(), {b, cl, k});
      }
    }
    const int64_t m = static_cast<int64_t>(out.size() / 3);
    return one(HostArray::of_ints(std::move(out), {m, 3}).to_tensor(c.device()));
  };

  r["Compress"].run = [](OpContext& c) {
    Tensor x = c.in(0);
    const HostArray& cond = c.host(1);
    int axis = 0;
    if (c.has_attr("axis")) {
      axis = norm_axis(c.attr_i("axis", 0), x.ndim(), c.node().label());
    } else {
      x = x.reshape({-1});
    }
    std::vector<Tensor> picked;
    const int64_t n = std::min(cond.numel(), x.shape(axis));
    for (int64_t i = 0; i < n; i++)
      if (cond.at(i) != 0) picked.push_back(x.slice(axis, i, i + 1));
    if (picked.empty()) return one(x.slice(axis, 0, 0).contiguous());
    return one(picked.size() == 1 ? picked[0].contiguous() : cat(picked, axis));
  };

  r["ReverseSequence"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    const HostArray& lens = c.host(1);
    const int batch = static_cast<int>(c.attr_i("batch_axis", 1));
    const int time = static_cast<int>(c.attr_i("time_axis", 0));
    std::vector<Tensor> rows;
    for (int64_t b = 0; b < x.shape(batch); b++) {
      const Tensor row = x.slice(batch, b, b + 1);
      const int64_t len = std::clamp<int64_t>(lens.int_at(b), 0, x.shape(time));
      std::vector<Tensor> parts;
      if (len > 0) parts.push_back(row.slice(time, 0, len).flip(time));
      if (len < x.shape(time)) parts.push_back(row.slice(time, len, x.shape(time)));
      rows.push_back(parts.size() == 1 ? parts[0] : cat(parts, time));
    }
    return one(rows.size() == 1 ? rows[0] : cat(rows, batch));
  };

  r["Unique"].run = [](OpContext& c) {
    const HostArray& x = c.host(0);
    const bool sorted = c.attr_i("sorted", 1) != 0;
    const std::vector<double> v = x.to_floats();
    // Rows: slices along `axis` (moved first), or single elements.
    int64_t rows = x.numel(), width = 1;
    Shape out_rest;
    int axis = -1;
    std::vector<double> lin = v;
    if (c.has_attr("axis")) {
      axis = norm_axis(c.attr_i("axis", 0), static_cast<int64_t>(x.shape.size()), c.node().label());
      rows = x.shape[static_cast<size_t>(axis)];
      width = rows ? x.numel() / rows : 0;
      int64_t outer = 1, inner = 1;
      for (int d = 0; d < axis; d++) outer *= x.shape[static_cast<size_t>(d)];
      for (size_t d = static_cast<size_t>(axis) + 1; d < x.shape.size(); d++) inner *= x.shape[d];
      lin.assign(v.size(), 0.0);
      for (int64_t o = 0; o < outer; o++)
        for (int64_t r2 = 0; r2 < rows; r2++)
          for (int64_t i = 0; i < inner; i++)
            lin[static_cast<size_t>(r2 * width + o * inner + i)] =
                v[static_cast<size_t>((o * rows + r2) * inner + i)];
    }
    std::vector<int64_t> first;  // index of each unique row's first occurrence, in first-seen order
    std::vector<int64_t> inverse(static_cast<size_t>(rows));
    std::vector<int64_t> counts;
    for (int64_t i = 0; i < rows; i++) {
      int64_t found = -1;
      for (size_t u = 0; u < first.size(); u++)
        if (compare_rows(lin, first[u], i, width) == 0) {
          found = static_cast<int64_t>(u);
          break;
        }
      if (found < 0) {
        found = static_cast<int64_t>(first.size());
        first.push_back(i);
        counts.push_back(0);
      }
      counts[static_cast<size_t>(found)]++;
      inverse[static_cast<size_t>(i)] = found;
    }
    std::vector<int64_t> order(first.size());
    std::iota(order.begin(), order.end(), 0);
    if (sorted)
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return compare_rows(lin, first[static_cast<size_t>(a)], first[static_cast<size_t>(b)],
                            width) < 0;
      });
    std::vector<int64_t> rank(order.size());
    for (size_t k = 0; k < order.size(); k++)
      rank[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
    const int64_t u = static_cast<int64_t>(order.size());
    std::vector<int64_t> idx_out, cnt_out, inv_out;
    for (int64_t k : order) {
      idx_out.push_back(first[static_cast<size_t>(k)]);
      cnt_out.push_back(counts[static_cast<size_t>(k)]);
    }
    for (int64_t i : inverse) inv_out.push_back(rank[static_cast<size_t>(i)]);
    // Y: the unique rows, gathered from the input (values keep their dtype).
    Tensor xt = c.in(0);
    Tensor y;
    if (axis < 0) {
      const Tensor flat = xt.reshape({-1});
      std::vector<Tensor> parts;
      for (int64_t i : idx_out) parts.push_back(flat.slice(0, i, i + 1));
      y = parts.empty() ? flat.slice(0, 0, 0) : parts.size() == 1 ? parts[0] : cat(parts, 0);
    } else {
      std::vector<Tensor> parts;
      for (int64_t i : idx_out) parts.push_back(xt.slice(axis, i, i + 1));
      y = parts.size() == 1 ? parts[0] : cat(parts, axis);
    }
    const int64_t nrows = static_cast<int64_t>(inv_out.size());
    return OpOutputs{
        tensor_value(y.contiguous()),
        tensor_value(HostArray::of_ints(std::move(idx_out), {u}).to_tensor(c.device())),
        tensor_value(HostArray::of_ints(std::move(inv_out), {nrows}).to_tensor(c.device())),
        tensor_value(HostArray::of_ints(std::move(cnt_out), {u}).to_tensor(c.device()))};
  };

  // Det: LU with partial pivoting per matrix, on the host (in double precision).
  r["Det"].run = [](OpContext& c) {
    const HostArray& a = c.host(0);
    const size_t rank = a.shape.size();
    if (rank < 2 || a.shape[rank - 1] != a.shape[rank - 2])
      throw ShapeError(fmt::format("ONNX: {}: input must be [..., n, n]", c.node().label()));
    const int64_t n = a.shape[rank - 1];
    const int64_t count = n ? a.numel() / (n * n) : 0;
    std::vector<double> dets;
    for (int64_t b = 0; b < count; b++) {
      std::vector<double> m(static_cast<size_t>(n * n));
      for (int64_t i = 0; i < n * n; i++) m[static_cast<size_t>(i)] = a.at(b * n * n + i);
      double det = 1.0;
      for (int64_t k = 0; k < n; k++) {
        int64_t piv = k;
        for (int64_t i = k + 1; i < n; i++)
          if (std::abs(m[static_cast<size_t>(i * n + k)]) >
              std::abs(m[static_cast<size_t>(piv * n + k)]))
            piv = i;
        if (m[static_cast<size_t>(piv * n + k)] == 0.0) {
          det = 0.0;
          break;
        }
        if (piv != k) {
          for (int64_t j = 0; j < n; j++)
            std::swap(m[static_cast<size_t>(k * n + j)], m[static_cast<size_t>(piv * n + j)]);
          det = -det;
        }
        const double p = m[static_cast<size_t>(k * n + k)];
        det *= p;
        for (int64_t i = k + 1; i < n; i++) {
          const double f = m[static_cast<size_t>(i * n + k)] / p;
          for (int64_t j = k; j < n; j++)
            m[static_cast<size_t>(i * n + j)] -= f * m[static_cast<size_t>(k * n + j)];
        }
      }
      dets.push_back(det);
    }
    const Shape out(a.shape.begin(), a.shape.end() - 2);
    return one(HostArray::of_floats(std::move(dets), out, dtypes::float64)
                   .cast(a.dtype)
                   .to_tensor(c.device()));
  };

  // MaxUnpool: the values scattered to their flat indices in a zero output.
  r["MaxUnpool"].run = [](OpContext& c) {
    const Tensor x = c.in(0);
    const Tensor idx = c.in(1).cast(dtypes::int64);
    // The indices address the shape the pooling came from; output_shape only pads its end.
    const auto k = c.attr_ints("kernel_shape");
    const auto strides = c.attr_ints("strides", std::vector<int64_t>(k.size(), 1));
    const auto pads = c.attr_ints("pads", std::vector<int64_t>(2 * k.size(), 0));
    Shape shape{x.shape(0), x.shape(1)};
    for (size_t i = 0; i < k.size(); i++)
      shape.push_back((x.shape(static_cast<int>(i + 2)) - 1) * strides[i] + k[i] - pads[i] -
                      pads[i + k.size()]);
    int64_t total = 1;
    for (int64_t d : shape) total *= d;
    const Tensor zeros = Tensor::zeros({total}, x.dtype(), x.device());
    Tensor y = zeros.scatter(0, idx.reshape({-1}), x.reshape({-1})).reshape(shape);
    if (c.has(2)) {
      const Shape out = c.host(2).to_ints();
      if (out.size() != shape.size()) c.fail("output_shape has the wrong rank");
      PadList p;
      for (size_t i = 0; i < out.size(); i++) {
        if (out[i] < shape[i]) c.fail("output_shape is smaller than the unpooled shape");
        p.emplace_back(0, out[i] - shape[i]);
      }
      y = y.pad(p);
    }
    return one(y);
  };
}

}  // namespace vkgrad::onnx
