// llm: the tokenizer. Building checks the tokenizer.ggml.* metadata and indexes it (text -> id,
// merge ranks, the special tokens, what each token prints); encode() cuts the text at special
// tokens and runs SentencePiece BPE or byte-level BPE over the rest; decode() joins what the
// tokens print. Depends on the public header, fmt and llm/unicode.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <queue>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vkgrad/error.hpp>
#include <vkgrad/tokenizer.hpp>

#include "llm/unicode.hpp"

namespace vkgrad::llm {

namespace {

enum class TokenType : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// A merge of two adjacent tokens: its rank (lower merges first) and the token it makes (-1:
// the concatenation is no token, so the symbol it makes falls back to its bytes).
struct Merge {
  int32_t rank;
  int32_t result;
};
uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// The tokenizer.ggml.pre names llama.cpp knows that split as one of ours. llama-3 proper also
// adds BOS unless told not to, and takes a piece that is a whole token without merging it.
struct PreName {
  std::string_view name;
  PreTokenizer split;
  bool llama3;
};
constexpr PreName kPreNames[] = {
    {"default", PreTokenizer::default_, false},
    {"llama3", PreTokenizer::llama3, true},
    {"llama-v3", PreTokenizer::llama3, true},
    {"llama-bpe", PreTokenizer::llama3, true},
    {"falcon3", PreTokenizer::llama3, true},
    {"dbrx", PreTokenizer::llama3, false},
    {"smaug-bpe", PreTokenizer::llama3, false},
    {"qwen2", PreTokenizer::qwen2, false},
    {"stablelm2", PreTokenizer::qwen2, false},
    {"megrez", PreTokenizer::qwen2, false},
    {"deepseek-r1-qwen", PreTokenizer::qwen2, false},
    {"gpt2", PreTokenizer::gpt2, false},
    {"gpt-2", PreTokenizer::gpt2, false},
    {"phi-2", PreTokenizer::gpt2, false},
    {"mpt", PreTokenizer::gpt2, false},
    {"olmo", PreTokenizer::gpt2, false},
    {"jais", PreTokenizer::gpt2, false},
    {"roberta-bpe", PreTokenizer::gpt2, false},
    {"gigachat", PreTokenizer::gpt2, false},
    {"starcoder", PreTokenizer::starcoder, false},
    {"refact", PreTokenizer::starcoder, false},
    {"command-r", PreTokenizer::starcoder, false},
    {"smollm", PreTokenizer::starcoder, false},
    {"codeshell", PreTokenizer::starcoder, false},
    {"exaone", PreTokenizer::starcoder, false},
    {"minerva-7b", PreTokenizer::starcoder, false},
};

// Tokens llama.cpp ends generation on, found by their text; like llama.cpp we make them control
// tokens whatever type the file gives them, so they are matched in text and print nothing.
constexpr std::string_view kEndTexts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
    // DeepSeek's <｜end▁of▁sentence｜>, split where a hex escape would swallow the 'e'
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
    "<|fim_pad|>",
    "<|fim_repo|>",
    "<|repo_name|>",
    "<|file_sep|>",
};

std::string hex_bytes(std::string_view s) {
  std::string out;
  for (unsigned char b : s) out += fmt::format("{}{:02X}", out.empty() ? "" : " ", b);
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The byte a "<0xXX>" token stands for, or -1 when the text is not of that form.
int byte_of_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  const int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// SentencePiece's spelling of a normal token as text: U+2581 is a space.
std::string unescape_spaces(std::string_view t) {
  std::string out;
  for (size_t i = 0; i < t.size();) {
    if (t.substr(i, kSpaceMark.size()) == kSpaceMark) {
      out += ' ';
      i += kSpaceMark.size();
    } else {
      out += t[i++];
    }
  }
  return out;
}

// A byte-level token's characters as the bytes they stand for; a character outside GPT-2's
// alphabet (which a well-formed vocabulary never holds) is kept as its own UTF-8.
std::string unmap_bytes(std::string_view t) {
  std::string out;
  for (const Utf8Char& c : split_utf8(t)) {
    const int b = unicode_to_byte(c.code);
    if (b >= 0) {
      out += static_cast<char>(b);
    } else {
      out += t.substr(c.offset, c.size);
    }
  }
  return out;
}

// A stretch of the text being encoded: raw text [begin, end), or a special token written there.
struct Fragment {
  size_t begin, end;
  int32_t token;  // -1: raw text
};

// A symbol of a piece being merged: bytes [begin, begin + size) of the piece, the token it is
// (-1: none), and its neighbours still alive (-1 at either end). A symbol merged into its left
// neighbour has size 0.
struct Symbol {
  int32_t token;
  size_t begin, size;
  int prev, next;
};

// What the vocabulary offers for two adjacent symbols: the token their merge makes (-1: none)
// and its priority (higher merges first).
struct Offer {
  double priority;
  int32_t token;
};

// The symbols of `begin`/`size` runs, linked in order.
std::vector<Symbol> linked(std::vector<Symbol> sym) {
  for (size_t i = 0; i < sym.size(); ++i) {
    sym[i].prev = static_cast<int>(i) - 1;
    sym[i].next = i + 1 < sym.size() ? static_cast<int>(i) + 1 : -1;
  }
  return sym;
}

// BPE's loop: keep merging the adjacent pair with the highest priority that `offer_for(left,
// right)` proposes, the leftmost pair on ties, until none is left. The survivors are the symbols
// reached from symbol 0 along `next`. A queued pair whose sides have merged since is stale: its
// recorded size no longer matches.
template <class OfferFor>
void merge_symbols(std::vector<Symbol>& sym, OfferFor offer_for) {
  struct Pair {
    double priority;
    int left, right;
    size_t size;
    int32_t token;
  };
  auto worse = [](const Pair& a, const Pair& b) {
    return a.priority < b.priority || (a.priority == b.priority && a.left > b.left);
  };
  std::priority_queue<Pair, std::vector<Pair>, decltype(worse)> queue(worse);
  auto offer = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    if (const std::optional<Offer> o = offer_for(sym[left], sym[right]))
      queue.push({o->priority, left, right, sym[left].size + sym[right].size, o->token});
  };
  for (int i = 1; i < static_cast<int>(sym.size()); ++i) offer(i - 1, i);
  while (!queue.empty()) {
    const Pair p = queue.top();
    queue.pop();
    Symbol& l = sym[p.left];
    Symbol& r = sym[p.right];
    if (l.size == 0 || r.size == 0 || l.size + r.size != p.size) continue;
    l.token = p.token;
    l.size += r.size;
    r.size = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = p.left;
    offer(l.prev, p.left);
    offer(p.left, l.next);
  }
}

}  // namespace

struct Tokenizer::Impl {
  bool spm = true;  // SentencePiece BPE ("llama"); otherwise byte-level BPE ("gpt2")
  PreTokenizer split = PreTokenizer::default_;
  bool whole_piece_tokens = false;  // a piece that is a token skips merging (llama-3)
  bool add_bos = false, add_eos = false, add_space_prefix = false;
  int32_t bos = -1, eos = -1, unknown = -1;

  std::vector<std::string> text;
  std::vector<float> score;
  std::vector<TokenType> type;
  TokenIndex id_of;
  std::unordered_map<uint64_t, Merge> merges;  // by (left, right) token pair
  // SPM: each byte's <0xXX> token (else its one-byte token); BPE: the token of each byte's
  // character. -1: none.
  std::array<int32_t, 256> byte_token{};
  std::vector<int32_t> specials;     // control, user-defined and unknown tokens, longest first
  std::vector<std::string> printed;  // what decode prints for each token
  std::unordered_set<int32_t> ends;

  explicit Impl(Vocabulary v) {
    read_model(v);
    read_tokens(v);
    read_special_ids(v);
    mark_end_tokens();
    if (spm) {
      index_byte_tokens();
    } else {
      read_merges(v);
    }
    index_specials();
    print_tokens();
  }

  int32_t size() const { return static_cast<int32_t>(text.size()); }
  int32_t find(std::string_view s) const {
    auto it = id_of.find(s);
    return it == id_of.end() ? -1 : it->second;
  }

  void read_model(const Vocabulary& v);
  void read_tokens(Vocabulary& v);
  void read_special_ids(const Vocabulary& v);
  void mark_end_tokens();
  void index_byte_tokens();
  void read_merges(const Vocabulary& v);
  void index_specials();
  void print_tokens();

  std::vector<Fragment> partition(std::string_view text) const;
  void encode_spm(std::string_view fragment, bool space_prefix, std::vector<int32_t>& out) const;
  void merge_spm(std::string_view spelled, std::vector<int32_t>& out) const;
  void emit_spm_symbol(std::string_view symbol, std::vector<int32_t>& out) const;
  void encode_bpe(std::string_view fragment, std::vector<int32_t>& out) const;
  void merge_bpe(std::string_view piece, std::vector<int32_t>& out) const;
  void emit_byte(unsigned char b, std::vector<int32_t>& out) const;

  // What token `id` prints; an Error when `m` is null (an empty Tokenizer) or id is out of range.
  static const std::string& printed_of(int32_t id, const Impl* m);
};

// ---- building ---------------------------------------------------------------------------------

void Tokenizer::Impl::read_model(const Vocabulary& v) {
  if (v.model == "llama") {
    spm = true;
  } else if (v.model == "gpt2") {
    spm = false;
  } else {
    throw FormatError(fmt::format(
        "tokenizer.ggml.model: unknown tokenizer model '{}' (supported: \"llama\", \"gpt2\")",
        v.model));
  }
  bool llama3 = false;
  if (!spm) {
    const std::string_view name = v.pre.empty() ? "default" : std::string_view(v.pre);
    auto it = std::find_if(std::begin(kPreNames), std::end(kPreNames),
                           [&](const PreName& p) { return p.name == name; });
    if (it == std::end(kPreNames)) {
      throw FormatError(fmt::format("tokenizer.ggml.pre: unknown pre-tokenizer '{}'", v.pre));
    }
    split = it->split;
    whole_piece_tokens = llama3 = it->llama3;
  }
  add_bos = v.add_bos.value_or(spm || llama3);
  add_eos = v.add_eos.value_or(false);
  add_space_prefix = spm && v.add_space_prefix.value_or(true);
}

void Tokenizer::Impl::read_tokens(Vocabulary& v) {
  const size_t n = v.tokens.size();
  if (n == 0) throw FormatError("tokenizer.ggml.tokens: the vocabulary has no tokens");
  if (n > static_cast<size_t>(INT32_MAX)) {
    throw FormatError(fmt::format("tokenizer.ggml.tokens: {} tokens do not fit int32 ids", n));
  }
  if (!v.scores.empty() && v.scores.size() != n) {
    throw FormatError(
        fmt::format("tokenizer.ggml.scores: {} scores for {} tokens", v.scores.size(), n));
  }
  if (!v.token_types.empty() && v.token_types.size() != n) {
    throw FormatError(
        fmt::format("tokenizer.ggml.token_type: {} types for {} tokens", v.token_types.size(), n));
  }
  text = std::move(v.tokens);
  score = v.scores.empty() ? std::vector<float>(n, 0.0f) : std::move(v.scores);
  type.assign(n, TokenType::normal);
  id_of.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!v.token_types.empty()) {
      const int32_t t = v.token_types[i];
      if (t < 0 || t > 6) {
        throw FormatError(
            fmt::format("tokenizer.ggml.token_type: token {} ('{}') has type {} (types are 0 to 6)",
                        i, text[i], t));
      }
      type[i] = static_cast<TokenType>(t);
    }
    if (text[i].empty()) continue;  // an empty token can be neither matched nor merged into
    auto [it, fresh] = id_of.emplace(text[i], static_cast<int32_t>(i));
    if (!fresh) {
      throw FormatError(fmt::format("tokenizer.ggml.tokens: '{}' is both token {} and token {}",
                                    text[i], it->second, i));
    }
  }
}

void Tokenizer::Impl::read_special_ids(const Vocabulary& v) {
  auto checked = [&](int32_t id, std::string_view key) {
    if (id < -1 || id >= size()) {
      throw FormatError(fmt::format("tokenizer.ggml.{}: token id {} is out of range for {} tokens",
                                    key, id, size()));
    }
    return id;
  };
  bos = checked(v.bos, "bos_token_id");
  eos = checked(v.eos, "eos_token_id");
  unknown = checked(v.unknown, "unknown_token_id");
  checked(v.padding, "padding_token_id");
  if (v.add_bos.value_or(false) && bos < 0) {
    throw FormatError("tokenizer.ggml.add_bos_token: true, but there is no bos_token_id");
  }
  if (v.add_eos.value_or(false) && eos < 0) {
    throw FormatError("tokenizer.ggml.add_eos_token: true, but there is no eos_token_id");
  }
}

void Tokenizer::Impl::mark_end_tokens() {
  if (eos >= 0) ends.insert(eos);
  for (std::string_view t : kEndTexts) {
    const int32_t id = find(t);
    if (id < 0) continue;
    ends.insert(id);
    type[id] = TokenType::control;
  }
}

void Tokenizer::Impl::index_byte_tokens() {
  for (int b = 0; b < 256; ++b) {
    int32_t id = find(fmt::format("<0x{:02X}>", b));
    if (id < 0) id = find(std::string(1, static_cast<char>(b)));
    byte_token[b] = id;
  }
  for (int32_t id = 0; id < size(); ++id) {
    if (type[id] == TokenType::byte && byte_of_token(text[id]) < 0) {
      throw FormatError(fmt::format(
          "tokenizer.ggml.token_type: token {} ('{}') is a byte token but not spelled <0xXX>", id,
          text[id]));
    }
  }
}

void Tokenizer::Impl::read_merges(const Vocabulary& v) {
  for (int b = 0; b < 256; ++b) byte_token[b] = find(byte_to_unicode(static_cast<uint8_t>(b)));
  merges.reserve(v.merges.size());
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const std::string_view m = v.merges[i];
    const size_t space = m.find(' ', 1);
    if (space == std::string_view::npos) {
      throw FormatError(fmt::format(
          "tokenizer.ggml.merges: merge {} ('{}') is not two tokens separated by a space", i, m));
    }
    const std::string_view left = m.substr(0, space), right = m.substr(space + 1);
    const int32_t l = find(left), r = find(right);
    if (l < 0 || r < 0) {
      throw FormatError(fmt::format("tokenizer.ggml.merges: merge {} ('{}') names '{}', no token",
                                    i, m, l < 0 ? left : right));
    }
    std::string joined(left);
    joined += right;
    // emplace keeps the first, lowest rank of a merge listed twice
    merges.emplace(pair_key(l, r),
                   Merge{static_cast<int32_t>(std::min<size_t>(i, INT32_MAX)), find(joined)});
  }
}

void Tokenizer::Impl::index_specials() {
  for (int32_t id = 0; id < size(); ++id) {
    const TokenType t = type[id];
    const bool special =
        t == TokenType::control || t == TokenType::user_defined || t == TokenType::unknown;
    if (special && !text[id].empty()) specials.push_back(id);
  }
  std::stable_sort(specials.begin(), specials.end(),
                   [&](int32_t a, int32_t b) { return text[a].size() > text[b].size(); });
}

void Tokenizer::Impl::print_tokens() {
  printed.resize(text.size());
  for (int32_t id = 0; id < size(); ++id) {
    const std::string& t = text[id];
    switch (type[id]) {
      case TokenType::user_defined:
        printed[id] = t;
        break;
      case TokenType::normal:
        printed[id] = spm ? unescape_spaces(t) : unmap_bytes(t);
        break;
      case TokenType::byte:  // llama.cpp prints byte tokens of a byte-level vocabulary as nothing
        if (spm) printed[id] = std::string(1, static_cast<char>(byte_of_token(t)));
        break;
      default:  // control, unknown, unused and undefined tokens print nothing
        break;
    }
  }
}

// ---- encoding ---------------------------------------------------------------------------------

// Cuts `s` at every special token written in it. Longer tokens are cut first over the whole
// text, then shorter ones in what is left, each occurrence left to right, as llama.cpp does.
std::vector<Fragment> Tokenizer::Impl::partition(std::string_view s) const {
  std::vector<Fragment> fragments;
  if (!s.empty()) fragments.push_back({0, s.size(), -1});
  std::vector<Fragment> cut;
  for (int32_t id : specials) {
    const std::string& t = text[id];
    cut.clear();
    for (const Fragment& f : fragments) {
      if (f.token >= 0 || f.end - f.begin < t.size()) {
        cut.push_back(f);
        continue;
      }
      const std::string_view raw = s.substr(f.begin, f.end - f.begin);
      size_t at = 0;
      for (size_t m; (m = raw.find(t, at)) != std::string_view::npos; at = m + t.size()) {
        if (m > at) cut.push_back({f.begin + at, f.begin + m, -1});
        cut.push_back({f.begin + m, f.begin + m + t.size(), id});
      }
      if (at < raw.size()) cut.push_back({f.begin + at, f.end, -1});
    }
    fragments.swap(cut);
  }
  return fragments;
}

void Tokenizer::Impl::encode_spm(std::string_view fragment, bool space_prefix,
                                 std::vector<int32_t>& out) const {
  std::string spelled;
  spelled.reserve(fragment.size() + 3);
  if (space_prefix) spelled += kSpaceMark;
  for (char c : fragment) {
    if (c == ' ') {
      spelled += kSpaceMark;
    } else {
      spelled += c;
    }
  }
  merge_spm(spelled, out);
}

// SentencePiece BPE: start from the characters and keep merging the adjacent pair whose
// concatenation is the best-scoring token, the leftmost pair on ties.
void Tokenizer::Impl::merge_spm(std::string_view s, std::vector<int32_t>& out) const {
  std::vector<Symbol> chars;
  for (const Utf8Char& c : split_utf8(s)) chars.push_back({-1, c.offset, c.size, 0, 0});
  if (chars.empty()) return;
  std::vector<Symbol> sym = linked(std::move(chars));
  merge_symbols(sym, [&](const Symbol& l, const Symbol& r) -> std::optional<Offer> {
    const int32_t id = find(s.substr(l.begin, l.size + r.size));
    if (id < 0) return std::nullopt;
    return Offer{score[id], id};
  });
  for (int i = 0; i >= 0; i = sym[i].next) {
    if (sym[i].token >= 0) {
      out.push_back(sym[i].token);
    } else {
      emit_spm_symbol(s.substr(sym[i].begin, sym[i].size), out);
    }
  }
}

// A symbol the merging left. Merges only ever make tokens, so a symbol that is no token is one
// character of the text: its bytes' tokens when it has them all, else the unknown token.
void Tokenizer::Impl::emit_spm_symbol(std::string_view symbol, std::vector<int32_t>& out) const {
  if (const int32_t id = find(symbol); id >= 0) {
    out.push_back(id);
    return;
  }
  const bool all_bytes = std::all_of(symbol.begin(), symbol.end(), [&](char b) {
    return byte_token[static_cast<unsigned char>(b)] >= 0;
  });
  if (all_bytes) {
    for (unsigned char b : symbol) out.push_back(byte_token[b]);
  } else if (unknown >= 0) {
    out.push_back(unknown);
  } else {
    throw Error(fmt::format(
        "tokenizer: no token for the character with bytes {}: the vocabulary has no byte tokens "
        "for it and no unknown token",
        hex_bytes(symbol)));
  }
}

void Tokenizer::Impl::encode_bpe(std::string_view fragment, std::vector<int32_t>& out) const {
  std::string spelled;
  for (std::string_view piece : pre_tokenize(split, fragment)) {
    if (whole_piece_tokens) {
      spelled.clear();
      for (unsigned char b : piece) spelled += byte_to_unicode(b);
      if (const int32_t id = find(spelled); id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    merge_bpe(piece, out);
  }
}

// Byte-level BPE over one piece: start from its bytes' characters and keep applying the
// lowest-ranked merge among adjacent pairs, the leftmost pair on ties.
void Tokenizer::Impl::merge_bpe(std::string_view piece, std::vector<int32_t>& out) const {
  std::vector<Symbol> bytes;
  for (size_t i = 0; i < piece.size(); ++i)
    bytes.push_back({byte_token[static_cast<unsigned char>(piece[i])], i, 1, 0, 0});
  if (bytes.empty()) return;
  std::vector<Symbol> sym = linked(std::move(bytes));
  // A merge's rank orders it (lower first); a symbol that is no token merges no further.
  merge_symbols(sym, [&](const Symbol& l, const Symbol& r) -> std::optional<Offer> {
    if (l.token < 0 || r.token < 0) return std::nullopt;
    const auto it = merges.find(pair_key(l.token, r.token));
    if (it == merges.end()) return std::nullopt;
    return Offer{-static_cast<double>(it->second.rank), it->second.result};
  });
  for (int i = 0; i >= 0; i = sym[i].next) {
    if (sym[i].token >= 0) {
      out.push_back(sym[i].token);
      continue;
    }
    for (size_t b = sym[i].begin; b < sym[i].begin + sym[i].size; ++b) {
      emit_byte(static_cast<unsigned char>(piece[b]), out);
    }
  }
}

// One byte of a byte-level symbol that is no token: its character's token, else unknown.
void Tokenizer::Impl::emit_byte(unsigned char b, std::vector<int32_t>& out) const {
  if (byte_token[b] >= 0) {
    out.push_back(byte_token[b]);
  } else if (unknown >= 0) {
    out.push_back(unknown);
  } else {
    throw Error(
        fmt::format("tokenizer: no token for byte {:02X} (character '{}') and no unknown token", b,
                    byte_to_unicode(b)));
  }
}

// ---- the public face --------------------------------------------------------------------------

Tokenizer::Tokenizer() = default;
Tokenizer::Tokenizer(Vocabulary vocab) : impl_(std::make_shared<const Impl>(std::move(vocab))) {}
Tokenizer::Tokenizer(const Tokenizer&) = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(const Tokenizer&) = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

const Tokenizer::Impl& Tokenizer::impl() const {
  if (!impl_) throw Error("tokenizer: this Tokenizer is empty (built without a vocabulary)");
  return *impl_;
}

std::vector<int32_t> Tokenizer::encode(const std::string& text, bool add_bos) const {
  const Impl& m = impl();
  if (text.size() > static_cast<size_t>(INT32_MAX) / 4) {  // symbol links are int
    throw Error(fmt::format("tokenizer: a text of {} bytes is too long to encode", text.size()));
  }
  std::vector<int32_t> out;
  if (add_bos && m.add_bos && m.bos >= 0) out.push_back(m.bos);
  // llama.cpp prefixes a space to a fragment that starts the text or follows a special token.
  bool after_special = true;
  for (const Fragment& f : m.partition(text)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    const std::string_view raw = std::string_view(text).substr(f.begin, f.end - f.begin);
    if (m.spm) {
      m.encode_spm(raw, m.add_space_prefix && after_special, out);
    } else {
      m.encode_bpe(raw, out);
    }
    after_special = false;
  }
  if (add_bos && m.add_eos && m.eos >= 0) out.push_back(m.eos);
  return out;
}

const std::string& Tokenizer::Impl::printed_of(int32_t id, const Impl* m) {
  if (!m || id < 0 || id >= m->size()) {
    throw Error(fmt::format("tokenizer: token id {} is out of range for a vocabulary of {} tokens",
                            id, m ? m->size() : 0));
  }
  return m->printed[id];
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  // The space encode prefixed is the first printed byte: tokens printing nothing (BOS) may
  // come before it.
  bool strip_space = impl_ && impl_->add_space_prefix;
  for (int32_t id : ids) {
    const std::string& p = Impl::printed_of(id, impl_.get());
    if (p.empty()) continue;
    out.append(p, strip_space && p[0] == ' ' ? 1 : 0);
    strip_space = false;
  }
  return out;
}

std::string Tokenizer::token_text(int32_t id) const { return Impl::printed_of(id, impl_.get()); }

int32_t Tokenizer::bos() const { return impl_ ? impl_->bos : -1; }
int32_t Tokenizer::eos() const { return impl_ ? impl_->eos : -1; }
int32_t Tokenizer::size() const { return impl_ ? impl_->size() : 0; }
bool Tokenizer::is_end(int32_t id) const { return impl_ && impl_->ends.count(id) > 0; }

}  // namespace vkgrad::llm
