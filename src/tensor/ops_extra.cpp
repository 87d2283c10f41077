// tensor: the functions model importers need beyond the core set, composed from it: erf, the
// inverse and hyperbolic trig functions, isnan/isinf, tril/triu, cumprod, sort/argsort/topk,
// scatter/scatter_reduce, einsum, pad modes and interpolate. Names and semantics follow tinygrad
// (and PyTorch where tinygrad has none). Float composites of half inputs run in float32 and round
// once, as in ops_math.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vkgrad/tensor.hpp>

#include "tensor/tensor_impl.hpp"

namespace vkgrad {
namespace {

constexpr double kPi = 3.14159265358979323846;

using tensor::math_operand;
using tensor::math_result;

// atan on [-1, 1] after reducing |x| > tan(pi/8) with atan(x) = pi/4 + atan((x-1)/(x+1)):
// an odd Taylor polynomial on |u| <= tan(pi/8) (error below 1e-8).
Tensor atan_unit(const Tensor& x) {
  const Tensor ax = x.abs();
  const Tensor big = ax > 0.41421356237309503;
  const Tensor u = big.where((ax - 1.0) / (ax + 1.0), ax);
  const Tensor w = u * u;
  // atan(u) = u (1 - w/3 + w^2/5 - ... + w^8/17), Horner from the top.
  Tensor p = Tensor(1.0 / 17);
  for (int k = 7; k >= 0; k--) p = (k % 2 ? -1.0 : 1.0) / (2 * k + 1) + w * p;
  const Tensor r = big.where(kPi / 4 + u * p, u * p);
  return x.sign() * r;
}

Tensor atan_of(const Tensor& x) {
  const Tensor ax = x.abs();
  const Tensor inv = ax > 1.0;
  const Tensor r = inv.where(kPi / 2 - atan_unit(ax.reciprocal()), atan_unit(ax));
  return (x < 0).where(-r, r);
}

// Moves axis `a` of x to the end; back_order undoes it.
std::vector<int> to_last(int rank, int a) {
  std::vector<int> order;
  for (int i = 0; i < rank; i++)
    if (i != a) order.push_back(i);
  order.push_back(a);
  return order;
}
std::vector<int> inverse(const std::vector<int>& order) {
  std::vector<int> inv(order.size());
  for (size_t i = 0; i < order.size(); i++)
    inv[static_cast<size_t>(order[i])] = static_cast<int>(i);
  return inv;
}

Tensor triangle(const Tensor& x, int64_t k, bool lower, const char* op) {
  if (x.ndim() < 2)
    throw ShapeError(fmt::format("{}: needs at least 2 dimensions, got shape {}", op,
                                 tensor::shape_str(x.shape())));
  const int64_t rows = x.shape(-2), cols = x.shape(-1);
  const Tensor i = tensor::iota(rows, dtypes::int64, x.device()).reshape({rows, 1});
  const Tensor j = tensor::iota(cols, dtypes::int64, x.device()).reshape({1, cols});
  const Tensor keep = lower ? (j - i) <= k : (j - i) >= k;
  return keep.where(x, Tensor::zeros({}, x.dtype(), x.device())).cast(x.dtype());
}

}  // namespace

// Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7), odd.
Tensor Tensor::erf() const {
  const Tensor x = math_operand(*this);
  const Tensor ax = x.abs();
  const Tensor t = (1.0 + 0.3275911 * ax).reciprocal();
  const Tensor poly =
      t *
      (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const Tensor y = 1.0 - poly * (-(ax * ax)).exp();
  return (x < 0).where(-y, y).cast(math_result(*this));
}

Tensor Tensor::atan() const { return atan_of(math_operand(*this)).cast(math_result(*this)); }

Tensor Tensor::asin() const {
  const Tensor x = math_operand(*this);
  // atan(x / sqrt(1 - x^2)); |x| > 1 gives NaN through the sqrt.
  const Tensor c = ((1.0 - x) * (1.0 + x)).sqrt();
  const Tensor r = atan_of(x / c);
  return (c == 0).where(x.sign() * (kPi / 2), r).cast(math_result(*this));
}

Tensor Tensor::acos() const {
  return (kPi / 2 - math_operand(*this).asin()).cast(math_result(*this));
}

Tensor Tensor::sinh() const {
  const Tensor x = math_operand(*this);
  const Tensor e = x.exp();
  return ((e - e.reciprocal()) * 0.5).cast(math_result(*this));
}

Tensor Tensor::cosh() const {
  const Tensor x = math_operand(*this);
  const Tensor e = x.exp();
  return ((e + e.reciprocal()) * 0.5).cast(math_result(*this));
}

Tensor Tensor::asinh() const {
  const Tensor x = math_operand(*this);
  const Tensor ax = x.abs();
  const Tensor r = (ax + (ax * ax + 1.0).sqrt()).log();
  return (x < 0).where(-r, r).cast(math_result(*this));
}

Tensor Tensor::acosh() const {
  const Tensor x = math_operand(*this);
  return (x + (x * x - 1.0).sqrt()).log().cast(math_result(*this));
}

Tensor Tensor::atanh() const {
  const Tensor x = math_operand(*this);
  return (((1.0 + x) / (1.0 - x)).log() * 0.5).cast(math_result(*this));
}

Tensor Tensor::isnan() const {
  if (!dtype().is_float()) return Tensor::zeros(shape(), dtypes::bool_, device());
  return *this != *this;
}

Tensor Tensor::isinf(bool detect_positive, bool detect_negative) const {
  if (!dtype().is_float()) return Tensor::zeros(shape(), dtypes::bool_, device());
  const double inf = std::numeric_limits<double>::infinity();
  Tensor r = Tensor::zeros(shape(), dtypes::bool_, device());
  if (detect_positive) r = r.logical_or(*this == inf);
  if (detect_negative) r = r.logical_or(*this == -inf);
  return r;
}

Tensor Tensor::tril(int64_t diagonal) const { return triangle(*this, diagonal, true, "tril"); }
Tensor Tensor::triu(int64_t diagonal) const { return triangle(*this, diagonal, false, "triu"); }

// out[i] = prod over j <= i: the input laid out against itself, the upper triangle set to 1.
Tensor Tensor::cumprod(int axis) const {
  if (ndim() == 0) return *this;
  const int a = tensor::normalize_axis(axis, shape(), "cumprod");
  const int64_t n = shape(a);
  const std::vector<int> order = to_last(ndim(), a);
  const Tensor x = permute(order).unsqueeze(-2);  // [..., 1, n]
  Shape full = x.shape();
  full[full.size() - 2] = n;
  const Tensor i = tensor::iota(n, dtypes::int64, device()).reshape({n, 1});
  const Tensor j = tensor::iota(n, dtypes::int64, device()).reshape({1, n});
  const Tensor picked = (j <= i).where(x.expand(full), Tensor::ones({}, dtype(), device()));
  return picked.cast(dtype()).prod(-1).cast(dtype()).permute(inverse(order));
}

// The k largest (or smallest) along `dim`, ties to the lower index. Each element's rank is the
// number of elements that come before it; position r then picks the element of rank r. The
// work is n^2 per row (a comparison of every pair), which suits the short rows of detection
// heads and test cases; a bitonic network would be the way for long rows.
std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int dim, bool largest, bool sorted) const {
  (void)sorted;  // the result is always sorted
  if (ndim() == 0) {
    if (k > 1)
      throw ShapeError(fmt::format("topk: k = {} exceeds the 1 element of a 0-d tensor", k));
    return {*this, Tensor::zeros({}, dtypes::int64, device())};
  }
  const int a = tensor::normalize_axis(dim, shape(), "topk");
  const int64_t n = shape(a);
  if (k < 0 || k > n)
    throw ShapeError(
        fmt::format("topk: k = {} is out of range for dimension {} of size {} "
                    "(shape {})",
                    k, a, n, tensor::shape_str(shape())));
  const std::vector<int> order = to_last(ndim(), a);
  const Tensor x = permute(order);              // [..., n]
  const Tensor xi = x.unsqueeze(-1);            // [..., n(i), 1]
  const Tensor xj = x.unsqueeze(-2);            // [..., 1, n(j)]
  Tensor before = largest ? xj > xi : xj < xi;  // j comes before i
  if (dtype().is_float()) {                     // NaN first when largest, last otherwise
    const Tensor ni = xi != xi, nj = xj != xj;
    before =
        largest ? nj.logical_and(ni.logical_not()).logical_or(before)
                : before.logical_and(nj.logical_not()).logical_or(ni.logical_and(nj.logical_not()));
  }
  const Tensor ii = tensor::iota(n, dtypes::int64, device()).reshape({n, 1});
  const Tensor jj = tensor::iota(n, dtypes::int64, device()).reshape({1, n});
  const Tensor tie = (xj == xi).logical_or((xj != xj).logical_and(xi != xi));
  before = before.logical_or(tie.logical_and(jj < ii));
  const Tensor rank = before.cast(dtypes::int64).sum(-1);  // [..., n(i)]
  const Tensor r = tensor::iota(k, dtypes::int64, device()).reshape({1, k});
  const Tensor hit = rank.unsqueeze(-1) == r;  // [..., n(i), k]
  const Tensor zero = Tensor::zeros({}, dtype(), device());
  const Tensor values = hit.where(x.unsqueeze(-1), zero).cast(dtype()).sum(-2).cast(dtype());
  const Tensor idx = hit.where(ii, Tensor::zeros({}, dtypes::int64, device())).sum(-2);
  const std::vector<int> back = inverse(order);
  return {values.permute(back), idx.cast(dtypes::int64).permute(back)};
}

std::pair<Tensor, Tensor> Tensor::sort(int dim, bool descending) const {
  const int64_t n = ndim() == 0 ? 1 : shape(dim);
  return topk(n, dim, descending, true);
}

Tensor Tensor::argsort(int dim, bool descending) const { return sort(dim, descending).second; }

// out = this, with out[.., index[i], ..] (along `dim`) combined with src[i] by `reduce`:
// "none" replaces (duplicates undefined, as in PyTorch), "sum"/"add", "prod"/"mul", "amax"/"max",
// "amin"/"min" combine with the current value when include_self, else with the other sources
// only. Each index is compared with every position along `dim` (a one-hot along a new axis).
Tensor Tensor::scatter_reduce(int dim, const Tensor& index, const Tensor& src,
                              const std::string& reduce, bool include_self) const {
  const char* op = "scatter_reduce";
  if (!index.dtype().is_int())
    throw DTypeError(
        fmt::format("{}: index must be an integer tensor, got {}", op, index.dtype().name()));
  if (index.ndim() != ndim() || src.ndim() != ndim())
    throw ShapeError(
        fmt::format("{}: input {}, index {} and src {} must have the same number of "
                    "dimensions",
                    op, tensor::shape_str(shape()), tensor::shape_str(index.shape()),
                    tensor::shape_str(src.shape())));
  if (ndim() == 0) {
    return scatter_reduce(0, index.reshape({1}), src.reshape({1}), reduce, include_self)
        .reshape({});
  }
  const int a = tensor::normalize_axis(dim, shape(), op);
  for (int d = 0; d < ndim(); d++) {
    if (index.shape(d) > src.shape(d) || (d != a && index.shape(d) > shape(d)))
      throw ShapeError(fmt::format("{}: index {} does not fit input {} and src {}", op,
                                   tensor::shape_str(index.shape()), tensor::shape_str(shape()),
                                   tensor::shape_str(src.shape())));
  }
  std::string red = reduce;
  if (red == "add") red = "sum";
  if (red == "mul") red = "prod";
  if (red == "max") red = "amax";
  if (red == "min") red = "amin";
  if (red != "none" && red != "sum" && red != "prod" && red != "amax" && red != "amin" &&
      red != "mean")
    throw Error(
        fmt::format("{}: unknown reduction '{}' (none, sum, prod, mean, amax, amin)", op, reduce));
  const int64_t n = shape(a);
  PadList take;
  for (int d = 0; d < ndim(); d++) take.emplace_back(0, index.shape(d));
  const Tensor s = src.shrink(take).cast(dtype());
  // Negative indices count from the end of the axis.
  Tensor idx = index.cast(dtypes::int64);
  idx = (idx < 0).where(idx + n, idx);
  const std::vector<int> order = to_last(ndim(), a);
  const Tensor ip = idx.permute(order);              // [..., q]
  const Tensor sp = s.permute(order).unsqueeze(-1);  // [..., q, 1]
  const Tensor pos = tensor::iota(n, dtypes::int64, device()).reshape({1, n});
  const Tensor mask = ip.unsqueeze(-1) == pos;  // [..., q, n]
  // The input cut to the index's extent in the other dims, laid out like the mask's [..., n].
  PadList cut;
  for (int d = 0; d < ndim(); d++) cut.emplace_back(0, d == a ? n : index.shape(d));
  const Tensor self = shrink(cut).permute(order).unsqueeze(-2);  // [..., 1, n]
  const Tensor hit = mask.any(-2);                               // [..., n]
  Tensor combined;
  const Tensor zero = Tensor::zeros({}, dtype(), device());
  if (red == "none") {
    combined = mask.where(sp, zero).cast(dtype()).sum(-2).cast(dtype());
  } else if (red == "sum" || red == "mean") {
    combined = mask.where(sp, zero).cast(dtype()).sum(-2).cast(dtype());
    if (include_self) combined = combined + self.squeeze(-2);
    if (red == "mean") {
      Tensor count = mask.cast(dtypes::int64).sum(-2) + (include_self ? 1 : 0);
      count = (count == 0).where(1, count);
      combined = dtype().is_float() ? combined / count.cast(dtype())
                                    : combined.div(count.cast(dtype()), "floor");
    }
  } else if (red == "prod") {
    combined =
        mask.where(sp, Tensor::ones({}, dtype(), device())).cast(dtype()).prod(-2).cast(dtype());
    if (include_self) combined = combined * self.squeeze(-2);
  } else {
    // Non-hits take a value that cannot win: the input's own, or the row's extreme source.
    const bool is_max = red == "amax";
    const Tensor filler = include_self ? self : (is_max ? sp.min(-2, true) : sp.max(-2, true));
    const Tensor cand = mask.where(sp, filler).cast(dtype());
    combined = is_max ? cand.max(-2) : cand.min(-2);
    if (include_self)
      combined = is_max ? combined.maximum(self.squeeze(-2)) : combined.minimum(self.squeeze(-2));
  }
  // Back to the input's layout; positions outside the index's extent keep the input.
  const std::vector<int> back = inverse(order);
  Tensor out_val = combined.cast(dtype()).permute(back);
  Tensor out_hit = hit.permute(back);
  PadList pad;
  for (int d = 0; d < ndim(); d++) pad.emplace_back(0, shape(d) - out_val.shape(d));
  out_val = out_val.pad(pad);
  out_hit = out_hit.pad(pad);
  return out_hit.where(out_val, *this).cast(dtype());
}

Tensor Tensor::scatter(int dim, const Tensor& index, const Tensor& src) const {
  return scatter_reduce(dim, index, src, "none", true);
}

// Padding with the tensor's own values, one axis at a time, by joining slices: "reflect"
// mirrors without repeating the edge, "replicate" repeats the edge, "circular" wraps around.
Tensor Tensor::pad(const PadList& padding, const std::string& mode, double value) const {
  if (mode == "constant") return pad(padding, value);
  if (mode != "reflect" && mode != "replicate" && mode != "circular")
    throw Error(
        fmt::format("pad: unknown mode '{}' (constant, reflect, replicate, circular)", mode));
  if (static_cast<int>(padding.size()) != ndim())
    throw ShapeError(fmt::format("pad: {} (before, after) pairs for a tensor of shape {}",
                                 padding.size(), tensor::shape_str(shape())));
  Tensor x = *this;
  for (int d = 0; d < ndim(); d++) {
    const auto [before, after] = padding[static_cast<size_t>(d)];
    const int64_t n = shape(d);
    if (before < 0 || after < 0)
      throw ShapeError(fmt::format("pad: negative padding ({}, {}) on dimension {} of {}", before,
                                   after, d, tensor::shape_str(shape())));
    if (!before && !after) continue;
    const int64_t limit = mode == "reflect" ? n - 1 : mode == "circular" ? n : INT64_MAX;
    if (n == 0 || before > limit || after > limit)
      throw ShapeError(
          fmt::format("pad: {} padding ({}, {}) of dimension {} of {} needs at most {} "
                      "per side",
                      mode, before, after, d, tensor::shape_str(shape()), n == 0 ? 0 : limit));
    auto edge = [&](int64_t at, int64_t count) {
      Shape s = x.shape();
      s[static_cast<size_t>(d)] = count;
      return x.slice(d, at, at + 1).expand(s);
    };
    std::vector<Tensor> parts;
    if (before > 0)
      parts.push_back(mode == "replicate" ? edge(0, before)
                      : mode == "reflect" ? x.slice(d, 1, before + 1).flip(d)
                                          : x.slice(d, n - before, n));
    parts.push_back(x);
    if (after > 0)
      parts.push_back(mode == "replicate" ? edge(n - 1, after)
                      : mode == "reflect" ? x.slice(d, n - 1 - after, n - 1).flip(d)
                                          : x.slice(d, 0, after));
    x = cat(parts, d);
  }
  return x;
}

// Resizes the last size.size() dims: each is one product with an [out, in] weight matrix
// computed on the host ("linear": two taps, half-pixel centers unless align_corners; "nearest":
// floor(i * in / out); "nearest-exact": floor((i + 0.5) * in / out)).
Tensor Tensor::interpolate(const Shape& size, const std::string& mode, bool align_corners) const {
  if (mode != "linear" && mode != "nearest" && mode != "nearest-exact")
    throw Error(
        fmt::format("interpolate: unknown mode '{}' (linear, nearest, nearest-exact)", mode));
  if (static_cast<int>(size.size()) > ndim())
    throw ShapeError(fmt::format("interpolate: {} sizes for a tensor of shape {}", size.size(),
                                 tensor::shape_str(shape())));
  const DType ft = dtype().is_float() ? dtype() : dtypes::float32;
  Tensor y = cast(ft);
  const int first = ndim() - static_cast<int>(size.size());
  for (int d = first; d < ndim(); d++) {
    const int64_t in = shape(d), out = size[static_cast<size_t>(d - first)];
    if (out < 0 || (in == 0 && out > 0))
      throw ShapeError(fmt::format("interpolate: cannot resize dimension {} of {} to {}", d,
                                   tensor::shape_str(shape()), out));
    if (in == out) continue;
    std::vector<double> w(static_cast<size_t>(out * in), 0.0);
    const double scale = static_cast<double>(in) / static_cast<double>(out);
    for (int64_t i = 0; i < out; i++) {
      double* row = &w[static_cast<size_t>(i * in)];
      if (mode == "linear") {
        double x = align_corners ? (out > 1 ? static_cast<double>(i) * static_cast<double>(in - 1) /
                                                  static_cast<double>(out - 1)
                                            : 0.0)
                                 : (static_cast<double>(i) + 0.5) * scale - 0.5;
        x = std::clamp(x, 0.0, static_cast<double>(in - 1));
        const int64_t x0 = static_cast<int64_t>(std::floor(x));
        const int64_t x1 = std::min(x0 + 1, in - 1);
        row[x0] += 1.0 - (x - static_cast<double>(x0));
        row[x1] += x - static_cast<double>(x0);
      } else {
        const double x = mode == "nearest" ? static_cast<double>(i) * scale
                                           : (static_cast<double>(i) + 0.5) * scale;
        row[std::min<int64_t>(static_cast<int64_t>(std::floor(x)), in - 1)] = 1.0;
      }
    }
    std::vector<float> w32(w.begin(), w.end());
    Tensor wt = Tensor::from_vector(w32, {out, in}, std::nullopt, device()).cast(ft);
    const std::vector<int> order = to_last(ndim(), d);
    y = y.permute(order).matmul(wt.transpose(0, 1)).permute(inverse(order));
  }
  return dtype().is_float() ? y.cast(dtype()) : y.round().cast(dtype());
}

// Einstein summation: "ij,jk->ik", "bij,bjk", "ii->i", "...ij,...jk->...ik". Each operand's
// letters are laid out over one shared axis order (a repeated letter takes the diagonal), the
// operands are multiplied with broadcasting, and the letters missing from the output are
// summed. Without "->", the output is the letters that appear once, in alphabetical order.
Tensor einsum(const std::string& formula, const std::vector<Tensor>& operands) {
  const char* op = "einsum";
  std::string spec;
  for (char c : formula)
    if (c != ' ') spec += c;
  std::string lhs = spec, rhs;
  const bool explicit_out = spec.find("->") != std::string::npos;
  if (explicit_out) {
    lhs = spec.substr(0, spec.find("->"));
    rhs = spec.substr(spec.find("->") + 2);
  }
  std::vector<std::string> terms;
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(
        lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size())
    throw Error(fmt::format("{}: '{}' names {} operands, {} given", op, formula, terms.size(),
                            operands.size()));
  // Expand "..." into capital letters (never used by a formula), right-aligned per operand.
  int ell = 0;
  for (size_t t = 0; t < terms.size(); t++) {
    const size_t dots = terms[t].find("...");
    if (dots == std::string::npos) continue;
    const int named = static_cast<int>(terms[t].size()) - 3;
    ell = std::max(ell, operands[t].ndim() - named);
  }
  auto expand_dots = [&](const std::string& term, int rank) {
    const size_t dots = term.find("...");
    if (dots == std::string::npos) return term;
    const int here = rank < 0 ? ell : rank - (static_cast<int>(term.size()) - 3);
    std::string mid;
    for (int i = ell - here; i < ell; i++) mid += static_cast<char>('A' + i);
    return term.substr(0, dots) + mid + term.substr(dots + 3);
  };
  for (size_t t = 0; t < terms.size(); t++) terms[t] = expand_dots(terms[t], operands[t].ndim());
  std::map<char, int> count;
  std::map<char, int64_t> size;
  for (size_t t = 0; t < terms.size(); t++) {
    if (static_cast<int>(terms[t].size()) != operands[t].ndim())
      throw ShapeError(fmt::format("{}: term '{}' has {} letters for operand {} of shape {}", op,
                                   terms[t], terms[t].size(), t,
                                   tensor::shape_str(operands[t].shape())));
    for (size_t i = 0; i < terms[t].size(); i++) {
      const char c = terms[t][i];
      count[c]++;
      const int64_t s = operands[t].shape(static_cast<int>(i));
      if (size.count(c) && size[c] != s && size[c] != 1 && s != 1)
        throw ShapeError(fmt::format("{}: letter '{}' has sizes {} and {}", op, c, size[c], s));
      if (!size.count(c) || size[c] == 1) size[c] = s;
    }
  }
  if (explicit_out) {
    rhs = expand_dots(rhs, -1);
  } else {
    for (int i = 0; i < ell; i++) rhs += static_cast<char>('A' + i);
    for (const auto& [c, k] : count)
      if (k == 1 && !(c >= 'A' && c <= 'Z')) rhs += c;
  }
  // The shared order: output letters first, then the summed ones.
  std::string all = rhs;
  for (const auto& [c, k] : count)
    if (all.find(c) == std::string::npos) all += c;
  Tensor prod;
  for (size_t t = 0; t < terms.size(); t++) {
    Tensor x = operands[t];
    std::string letters = terms[t];
    // A repeated letter within a term: take the diagonal of the two axes.
    for (size_t i = 0; i < letters.size(); i++) {
      for (size_t j = i + 1; j < letters.size(); j++) {
        if (letters[j] != letters[i]) continue;
        const int64_t n = x.shape(static_cast<int>(i));
        const Tensor eye = Tensor::eye(n, dtypes::bool_, x.device());
        Shape es(static_cast<size_t>(x.ndim()), 1);
        es[i] = n;
        es[j] = n;
        x = eye.reshape(es)
                .where(x, Tensor::zeros({}, x.dtype(), x.device()))
                .sum(static_cast<int>(j))
                .cast(x.dtype());
        letters.erase(j, 1);
        j--;
      }
    }
    std::vector<int> perm;
    Shape view;
    for (char c : all) {
      const size_t p = letters.find(c);
      if (p != std::string::npos) perm.push_back(static_cast<int>(p));
    }
    x = x.permute(perm);
    int k = 0;
    for (char c : all) {
      if (letters.find(c) != std::string::npos)
        view.push_back(x.shape(k++));
      else
        view.push_back(1);
    }
    x = x.reshape(view);
    prod = prod.defined() ? prod * x : x;
  }
  std::vector<int> summed;
  for (size_t i = rhs.size(); i < all.size(); i++) summed.push_back(static_cast<int>(i));
  Shape out_shape;
  for (char c : rhs) out_shape.push_back(size[c]);
  Tensor out = summed.empty() ? prod : prod.sum(summed);
  return out.expand(out_shape).contiguous().cast(prod.dtype());
}

}  // namespace vkgrad
