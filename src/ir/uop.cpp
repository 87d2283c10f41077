// UOp interning, lifetime and builders.
#include "ir/uop.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cstring>
#include <mutex>
#include <vkgrad/error.hpp>

#include "ir/node_index.hpp"
#include "ir/scalar.hpp"

namespace vkgrad {

// ---------------------------------------------------------------- Arg equality and hashing

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // 64-bit mix in the style of boost::hash_combine with a stronger finalizer.
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 29);
}

uint64_t hash_string(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

std::string_view axis_type_name(AxisType t) {
  static constexpr std::array<std::string_view, 8> names = {
      "global", "local", "loop", "reduce", "upcast", "unroll", "group_reduce", "stage"};
  return names[static_cast<size_t>(t)];
}

bool arg_equal(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<double>(&a))
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b));
  return a == b;
}

uint64_t arg_hash(const Arg& a) {
  uint64_t h = a.index();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
        } else if constexpr (std::is_same_v<T, bool>) {
          h = mix(h, v);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          h = mix(h, static_cast<uint64_t>(v));
        } else if constexpr (std::is_same_v<T, double>) {
          h = mix(h, std::bit_cast<uint64_t>(v));
        } else if constexpr (std::is_same_v<T, Ops>) {
          h = mix(h, static_cast<uint64_t>(v));
        } else if constexpr (std::is_same_v<T, std::string>) {
          h = mix(h, hash_string(v));
        } else if constexpr (std::is_same_v<T, IntTuple>) {
          for (int64_t x : v) h = mix(h, static_cast<uint64_t>(x));
        } else if constexpr (std::is_same_v<T, PairTuple>) {
          for (auto [x, y] : v) h = mix(mix(h, static_cast<uint64_t>(x)), static_cast<uint64_t>(y));
        } else if constexpr (std::is_same_v<T, VarArg>) {
          h = mix(mix(mix(h, hash_string(v.name)), static_cast<uint64_t>(v.min)),
                  static_cast<uint64_t>(v.max));
        } else if constexpr (std::is_same_v<T, AxisArg>) {
          h = mix(mix(h, static_cast<uint64_t>(v.id)), static_cast<uint64_t>(v.type));
        }
      },
      a);
  return h;
}

// ---------------------------------------------------------------- the intern table

namespace {

std::atomic<size_t> g_live{0};

struct LookupKey {
  Ops op;
  DType dtype;
  const std::vector<UOp>* src;
  const Arg* arg;
  uint64_t key;
};

uint64_t structural_key(Ops op, DType dtype, const std::vector<UOp>& src, const Arg& arg) {
  uint64_t h = mix(static_cast<uint64_t>(op) + 1, dtype.hash());
  h = mix(h, arg_hash(arg));
  for (const UOp& s : src) h = mix(h, s.key());
  return h;
}

bool same(const UOpNode* n, const LookupKey& k) {
  if (n->op != k.op || !(n->dtype == k.dtype) || n->src.size() != k.src->size()) return false;
  for (size_t i = 0; i < n->src.size(); ++i)
    if (n->src[i] != (*k.src)[i]) return false;
  return arg_equal(n->arg, *k.arg);
}

}  // namespace

// The intern table: 64 shards, each an open-addressing hash table of (structural key, node)
// under its own mutex. A slot keeps the key beside the pointer, so a probe touches a node only
// when the keys agree, and a miss leaves the free slot where the new node goes.
namespace {
std::atomic<BufferFreeHook> g_buffer_free_hook{nullptr};
}  // namespace

struct InternTable {
  static constexpr size_t kShards = 64;
  struct Slot {
    uint64_t key = 0;
    const UOpNode* node = nullptr;
  };
  struct Shard {
    std::mutex mu;
    std::vector<Slot> slots;
    size_t count = 0;
    size_t mask = 0;
    int shift = 64;

    size_t home(uint64_t key) const {  // the shard used bits 7..12; mix them all again
      return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift);
    }
    // The slot holding a node equal to `k`, or the empty slot where it would go.
    size_t probe(const LookupKey& k) const {
      size_t i = home(k.key);
      while (slots[i].node && !(slots[i].key == k.key && same(slots[i].node, k)))
        i = (i + 1) & mask;
      return i;
    }
    void grow() {
      std::vector<Slot> old = std::move(slots);
      size_t cap = old.empty() ? 64 : old.size() * 2;
      slots.assign(cap, Slot{});
      mask = cap - 1;
      shift = 64 - __builtin_ctzll(cap);
      for (const Slot& s : old) {
        if (!s.node) continue;
        size_t i = home(s.key);
        while (slots[i].node) i = (i + 1) & mask;
        slots[i] = s;
      }
    }
    // Empty slot i, moving later entries of its probe run back (no tombstones).
    void erase_at(size_t i) {
      size_t j = i;
      for (;;) {
        j = (j + 1) & mask;
        if (!slots[j].node) break;
        size_t h = home(slots[j].key);
        // Move j back to i unless its home lies cyclically in (i, j].
        bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
          slots[i] = slots[j];
          i = j;
        }
      }
      slots[i] = Slot{};
      --count;
    }
  };
  std::array<Shard, kShards> shards;

  static InternTable& get() {
    static InternTable* table = new InternTable;  // never destroyed: nodes may outlive statics
    return *table;
  }
  Shard& shard(uint64_t key) { return shards[(key >> 7) % kShards]; }

  UOp intern(Ops op, DType dtype, std::vector<UOp>&& src, Arg&& arg) {
    uint64_t key = structural_key(op, dtype, src, arg);
    Shard& sh = shard(key);
    std::lock_guard lock(sh.mu);
    if ((sh.count + 1) * 8 > sh.slots.size() * 5) sh.grow();  // load factor at most 5/8
    size_t i = sh.probe(LookupKey{op, dtype, &src, &arg, key});
    if (const UOpNode* n = sh.slots[i].node) {
      // Take a reference only if the node is not already dying.
      uint32_t r = n->refs_.load(std::memory_order_relaxed);
      while (r != 0)
        if (n->refs_.compare_exchange_weak(r, r + 1, std::memory_order_acquire)) return UOp(n);
      sh.erase_at(i);  // dying: its destroyer will find it gone
      i = sh.probe(LookupKey{op, dtype, &src, &arg, key});
    }
    auto* n = new UOpNode(op, dtype, std::move(src), std::move(arg), key);
    g_live.fetch_add(1, std::memory_order_relaxed);
    sh.slots[i] = {key, n};
    ++sh.count;
    return UOp(n);
  }

  void destroy(const UOpNode* n) {
    {
      Shard& sh = shard(n->key);
      std::lock_guard lock(sh.mu);
      if (!sh.slots.empty()) {
        size_t i = sh.home(n->key);
        while (sh.slots[i].node && sh.slots[i].node != n) i = (i + 1) & sh.mask;
        if (sh.slots[i].node == n) sh.erase_at(i);
      }
    }
    g_live.fetch_sub(1, std::memory_order_relaxed);
    if (n->op == Ops::BUFFER) {
      if (BufferFreeHook hook = g_buffer_free_hook.load(std::memory_order_acquire)) hook(*n);
    }
    delete n;  // releases the sources; they queue up in UOp::release, never recurse deeply
  }
};

namespace {
// The worklist of the release that is freeing a graph on this thread, if any. A plain pointer
// (nothing to destroy at thread exit), so handles in other thread-locals can still be released.
thread_local std::vector<const UOpNode*>* t_dying = nullptr;
}  // namespace

void UOp::release() noexcept {
  const UOpNode* n = std::exchange(p_, nullptr);
  if (!n || n->refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // Free a dead graph with a worklist, so a million-node chain does not recurse: sources that
  // die while a node is destroyed join the worklist of the outermost release.
  if (t_dying) {
    t_dying->push_back(n);
    return;
  }
  std::vector<const UOpNode*> dying;  // allocates only if a source dies too
  t_dying = &dying;
  InternTable::get().destroy(n);
  while (!dying.empty()) {
    const UOpNode* d = dying.back();
    dying.pop_back();
    InternTable::get().destroy(d);
  }
  t_dying = nullptr;
}

void set_buffer_free_hook(BufferFreeHook hook) { g_buffer_free_hook.store(hook); }

size_t UOp::live_count() { return g_live.load(std::memory_order_relaxed); }

UOp UOp::make(Ops op, DType dtype, std::vector<UOp> src, Arg arg) {
  for (const UOp& s : src)
    if (!s) throw InternalError(fmt::format("UOp::make({}): null source", op_name(op)));
  return InternTable::get().intern(op, dtype, std::move(src), std::move(arg));
}

// ---------------------------------------------------------------- builders

UOp UOp::const_(DType dtype, ConstValue v) {
  ConstValue c = convert_value(v, dtype.scalar());
  Arg arg = std::visit([](auto x) -> Arg { return x; }, c);
  return make(Ops::CONST, dtype, {}, std::move(arg));
}

ConstValue UOp::const_value() const {
  if (!is_const()) throw InternalError(fmt::format("const_value of {}", op_name(op())));
  const Arg& a = arg();
  if (auto* b = std::get_if<bool>(&a)) return *b;
  if (auto* i = std::get_if<int64_t>(&a)) return *i;
  return std::get<double>(a);
}

bool UOp::is_const(int64_t v) const {
  if (!is_const()) return false;
  return arg_equal(arg(), std::visit([](auto x) -> Arg { return x; },
                                     convert_value(ConstValue{v}, dtype().scalar())));
}

UOp UOp::variable(std::string name, int64_t min, int64_t max, DType dtype) {
  if (min > max) throw ShapeError(fmt::format("variable '{}': min {} > max {}", name, min, max));
  return make(Ops::DEFINE_VAR, dtype, {}, VarArg{std::move(name), min, max});
}

UOp UOp::range(UOp end, int64_t id, AxisType type) {
  DType dt = end.dtype();
  return make(Ops::RANGE, dt, {std::move(end)}, AxisArg{id, type});
}

UOp UOp::range(int64_t end, int64_t id, AxisType type) {
  return range(const_(dtypes::index, end), id, type);
}

UOp UOp::special(std::string name, UOp size) {
  DType dt = size.dtype();
  return make(Ops::SPECIAL, dt, {std::move(size)}, std::move(name));
}

UOp UOp::sink(std::vector<UOp> src) { return make(Ops::SINK, dtypes::void_, std::move(src)); }

UOp UOp::define_global(DType ptr_dtype, int64_t slot) {
  if (!ptr_dtype.is_ptr())
    throw DTypeError(fmt::format("define_global needs a pointer dtype, got {}", ptr_dtype.name()));
  return make(Ops::DEFINE_GLOBAL, ptr_dtype, {}, slot);
}

UOp UOp::index(UOp idx) const { return make(Ops::INDEX, dtype(), {*this, std::move(idx)}); }
UOp UOp::index(UOp idx, UOp valid) const {
  return make(Ops::INDEX, dtype(), {*this, std::move(idx), std::move(valid)});
}
UOp UOp::load() const { return make(Ops::LOAD, dtype().base(), {*this}); }
UOp UOp::store(UOp value) const {
  return make(Ops::STORE, dtypes::void_, {*this, std::move(value)});
}
UOp UOp::end(std::vector<UOp> ranges) const {
  std::vector<UOp> src{*this};
  src.insert(src.end(), ranges.begin(), ranges.end());
  return make(Ops::END, dtypes::void_, std::move(src));
}
UOp UOp::bind(int64_t value) const {
  return make(Ops::BIND, dtype(), {*this, const_(dtype(), value)});
}
UOp UOp::cast(DType dt) const { return make(Ops::CAST, dt, {*this}); }
UOp UOp::bitcast(DType dt) const { return make(Ops::BITCAST, dt, {*this}); }

UOp UOp::alu(Ops op, UOp other) const {
  if (!(dtype() == other.dtype()))
    throw DTypeError(fmt::format("UOp {}: operand dtypes differ ({} and {})", op_name(op),
                                 dtype().name(), other.dtype().name()));
  DType out = is_comparison(op) ? dtypes::bool_.vec(dtype().count()) : dtype();
  if (out.count() == 1) out = out.scalar();
  return make(op, out, {*this, std::move(other)});
}

UOp UOp::alu(Ops op) const { return make(op, dtype(), {*this}); }

UOp UOp::where(UOp a, UOp b) const {
  if (!dtype().is_bool() || !(a.dtype() == b.dtype()))
    throw DTypeError(
        fmt::format("UOp WHERE: need bool condition and equal branch dtypes, got {}, "
                    "{}, {}",
                    dtype().name(), a.dtype().name(), b.dtype().name()));
  DType dt = a.dtype();
  return make(Ops::WHERE, dt, {*this, std::move(a), std::move(b)});
}

UOp UOp::replace(std::vector<UOp> new_src) const {
  return make(op(), dtype(), std::move(new_src), arg());
}
UOp UOp::replace(Ops op, DType dtype, std::vector<UOp> new_src, Arg arg) const {
  return make(op, dtype, std::move(new_src), std::move(arg));
}

UOp UOp::lt(const UOp& o) const { return alu(Ops::CMPLT, o); }
UOp UOp::gt(const UOp& o) const { return o.lt(*this); }
UOp UOp::le(const UOp& o) const { return o.lt(*this).logical_not(); }
UOp UOp::ge(const UOp& o) const { return lt(o).logical_not(); }
UOp UOp::eq(const UOp& o) const { return alu(Ops::CMPEQ, o); }
UOp UOp::ne(const UOp& o) const { return alu(Ops::CMPNE, o); }
UOp UOp::logical_not() const { return ne(const_like(true)); }
UOp UOp::maximum(const UOp& o) const { return alu(Ops::MAX, o); }
UOp UOp::minimum(const UOp& o) const {
  if (dtype().is_bool()) return alu(Ops::AND, o);
  // min(a, b) == r(max(r(a), r(b))) for an order-reversing r: -x for floats and for index (which
  // never overflows), ~x for fixed-width integers, where -x wraps (at INT_MIN, and at 0 when
  // unsigned).
  if (dtype().is_int() && dtype().scalar() != dtypes::index) {
    UOp ones = const_like(int64_t{-1});
    return (*this ^ ones).maximum(o ^ ones) ^ ones;
  }
  return -((-*this).maximum(-o));
}

UOp operator+(const UOp& a, const UOp& b) { return a.alu(Ops::ADD, b); }
UOp operator*(const UOp& a, const UOp& b) { return a.alu(Ops::MUL, b); }
UOp operator-(const UOp& a) {
  if (a.dtype().is_bool()) return a.logical_not();
  return a * a.const_like(int64_t{-1});
}
UOp operator-(const UOp& a, const UOp& b) { return a + (-b); }
UOp operator/(const UOp& a, const UOp& b) {
  if (a.dtype().is_bool()) throw DTypeError(fmt::format("UOp division of {}", a.dtype().name()));
  return a.alu(a.dtype().is_float() ? Ops::FDIV : Ops::IDIV, b);
}
UOp operator%(const UOp& a, const UOp& b) { return a.alu(Ops::MOD, b); }
UOp operator&(const UOp& a, const UOp& b) { return a.alu(Ops::AND, b); }
UOp operator|(const UOp& a, const UOp& b) { return a.alu(Ops::OR, b); }
UOp operator^(const UOp& a, const UOp& b) { return a.alu(Ops::XOR, b); }
UOp operator<<(const UOp& a, const UOp& b) { return a.alu(Ops::SHL, b); }
UOp operator>>(const UOp& a, const UOp& b) { return a.alu(Ops::SHR, b); }

// ---------------------------------------------------------------- toposort

std::vector<UOp> toposort(std::span<const UOp> roots) {
  std::vector<UOp> order;
  NodeIndex seen;
  bool added = false;
  std::vector<std::pair<const UOpNode*, size_t>> stack;  // node, next source to visit
  for (const UOp& r : roots) {
    if (!r || (seen.insert(r.get(), &added), !added)) continue;
    stack.emplace_back(r.get(), 0);
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      if (i < n->src.size()) {
        const UOpNode* s = n->src[i++].get();
        seen.insert(s, &added);
        if (added) stack.emplace_back(s, 0);
        continue;
      }
      // Every node on the stack is kept alive by its parent (or the root handle).
      const UOp* self = nullptr;
      if (stack.size() >= 2) {
        const UOpNode* parent = stack[stack.size() - 2].first;
        self = &parent->src[stack[stack.size() - 2].second - 1];
      } else {
        self = &r;
      }
      order.push_back(*self);
      stack.pop_back();
    }
  }
  return order;
}

std::vector<UOp> toposort(const UOp& root) { return toposort(std::span<const UOp>(&root, 1)); }

}  // namespace vkgrad
