// llm: UTF-8 splitting, character classes, GPT-2's byte table and the pre-tokenizer scanners.
// Each split regex is a scanner that, at a position, returns where the regex's leftmost match
// there ends, trying the alternatives in the regex's order; a pre-tokenizer is an ordered list
// of stages, each splitting every piece the last one made.
#include "llm/unicode.hpp"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>

namespace vkgrad::llm {

namespace {

uint8_t classify(UChar32 c) {
  const uint32_t mask = U_GET_GC_MASK(c);
  uint8_t classes = 0;
  if (mask & U_GC_L_MASK) classes |= kLetter;
  if (mask & U_GC_N_MASK) classes |= kNumber;
  if (mask & U_GC_P_MASK) classes |= kPunctuation;
  if (u_isUWhiteSpace(c)) classes |= kSpace;
  return classes;
}

struct ByteTable {
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 0x144> to_byte;  // every character of the table is below U+0144

  ByteTable() {
    to_byte.fill(-1);
    int next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const int code = printable ? b : next++;
      char buf[4];
      int32_t n = 0;
      U8_APPEND_UNSAFE(buf, n, code);
      to_utf8[b].assign(buf, n);
      to_byte[code] = static_cast<int16_t>(b);
    }
  }
};

const ByteTable& byte_table() {
  static const ByteTable table;
  return table;
}

// The characters [lo, hi) of one piece. Reads at or past hi see no character (code -1, no
// class), which is how a regex confined to the piece sees the piece's end.
struct Span {
  const std::vector<Utf8Char>& chars;
  size_t lo, hi;

  int32_t code(size_t i) const { return i < hi ? chars[i].code : -1; }
  bool is(size_t i, uint8_t classes) const { return i < hi && (chars[i].classes & classes); }
  // [^\s\p{L}\p{N}]: a character that is neither whitespace, letter nor number.
  bool other(size_t i) const {
    return i < hi && !(chars[i].classes & (kLetter | kNumber | kSpace));
  }
  bool line_break(size_t i) const { return code(i) == '\r' || code(i) == '\n'; }

  size_t run(size_t i, uint8_t classes) const {
    while (is(i, classes)) ++i;
    return i;
  }
  size_t run_other(size_t i) const {
    while (other(i)) ++i;
    return i;
  }
};

// 's|'t|'re|'ve|'m|'ll|'d at p (ASCII case folded when `fold`): the length matched, or 0.
size_t contraction(const Span& s, size_t p, bool fold) {
  if (s.code(p) != '\'') return 0;
  auto lower = [&](size_t i) {
    const int32_t c = s.code(i);
    return fold && c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
  };
  const int32_t a = lower(p + 1), b = lower(p + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S)|\s+ at the whitespace character p: the whole run when the piece ends after it or
// the run is one character, else the run less its last character (left to prefix the next word).
size_t whitespace(const Span& s, size_t p) {
  size_t end = s.run(p, kSpace);
  if (end - p > 1 && end < s.hi) --end;
  return end;
}

size_t next_gpt2(const Span& s, size_t p) {
  if (size_t n = contraction(s, p, false)) return p + n;
  const size_t q = s.code(p) == ' ' ? p + 1 : p;  // the optional leading space
  if (s.is(q, kLetter)) return s.run(q, kLetter);
  if (s.is(q, kNumber)) return s.run(q, kNumber);
  if (s.other(q)) return s.run_other(q);
  return whitespace(s, p);
}

size_t next_llama3_family(const Span& s, size_t p, size_t max_digits) {
  if (size_t n = contraction(s, p, true)) return p + n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!s.line_break(p) && !s.is(p, kNumber)) {
    if (s.is(p, kLetter)) return s.run(p, kLetter);
    if (s.is(p + 1, kLetter)) return s.run(p + 1, kLetter);
  }
  // \p{N}{1,max_digits}
  if (s.is(p, kNumber)) {
    size_t end = p;
    while (end - p < max_digits && s.is(end, kNumber)) ++end;
    return end;
  }
  // ?[^\s\p{L}\p{N}]+[\r\n]*
  const size_t q = s.code(p) == ' ' ? p + 1 : p;
  if (s.other(q)) {
    size_t end = s.run_other(q);
    while (s.line_break(end)) ++end;
    return end;
  }
  // \s*[\r\n]+: the whitespace run up to its last line break, when it holds one
  size_t through_break = 0;
  for (size_t i = p; s.is(i, kSpace); ++i) {
    if (s.line_break(i)) through_break = i + 1;
  }
  return through_break ? through_break : whitespace(s, p);
}

size_t next_llama3(const Span& s, size_t p) { return next_llama3_family(s, p, 3); }
size_t next_qwen2(const Span& s, size_t p) { return next_llama3_family(s, p, 1); }

using Ends = std::vector<size_t>;  // the end (in characters) of every piece

// A regex whose alternatives cover every character: consecutive matches are the pieces.
void scan(const Span& s, size_t (*next)(const Span&, size_t), Ends& ends) {
  for (size_t p = s.lo; p < s.hi;) {
    p = std::max(next(s, p), p + 1);
    ends.push_back(p);
  }
}

// A regex matching runs of one kind of character, min to max long (leftmost, greedy): each
// match is a piece and so is the text between two matches, as llama.cpp splits with std::regex.
void split_runs(const Span& s, bool (*in_run)(const Utf8Char&), size_t min, size_t max,
                Ends& ends) {
  size_t gap = s.lo;  // where the text not yet matched starts
  for (size_t p = s.lo; p < s.hi;) {
    size_t end = p;
    while (end < s.hi && end - p < max && in_run(s.chars[end])) ++end;
    if (end == p || end - p < min) {
      ++p;
      continue;
    }
    if (gap < p) ends.push_back(p);
    ends.push_back(end);
    p = gap = end;
  }
  if (gap < s.hi) ends.push_back(s.hi);
}

bool is_number(const Utf8Char& c) { return c.classes & kNumber; }
bool is_ascii_digit(const Utf8Char& c) { return c.code >= '0' && c.code <= '9'; }
// [\p{P}\$\+<=>\^~\|]
bool is_punctuation_run(const Utf8Char& c) {
  return (c.classes & kPunctuation) ||
         (c.code > 0 && c.code < 0x80 && std::strchr("$+<=>^~|", static_cast<char>(c.code)));
}

constexpr size_t kUnbounded = SIZE_MAX;

void stage_gpt2(const Span& s, Ends& ends) { scan(s, next_gpt2, ends); }
void stage_llama3(const Span& s, Ends& ends) { scan(s, next_llama3, ends); }
void stage_qwen2(const Span& s, Ends& ends) { scan(s, next_qwen2, ends); }
void stage_punctuation_runs(const Span& s, Ends& ends) {
  split_runs(s, is_punctuation_run, 1, kUnbounded, ends);
}
void stage_number_runs(const Span& s, Ends& ends) { split_runs(s, is_number, 1, kUnbounded, ends); }
void stage_single_numbers(const Span& s, Ends& ends) { split_runs(s, is_number, 1, 1, ends); }
void stage_ascii_digit_triples(const Span& s, Ends& ends) {
  split_runs(s, is_ascii_digit, 3, 3, ends);
}

using Stage = void (*)(const Span&, Ends&);

std::span<const Stage> stages_of(PreTokenizer pre) {
  static constexpr Stage kDefault[] = {stage_punctuation_runs, stage_gpt2, stage_number_runs,
                                       stage_ascii_digit_triples};
  static constexpr Stage kGpt2[] = {stage_gpt2};
  static constexpr Stage kLlama3[] = {stage_llama3};
  static constexpr Stage kQwen2[] = {stage_qwen2};
  static constexpr Stage kStarcoder[] = {stage_single_numbers, stage_gpt2};
  switch (pre) {
    case PreTokenizer::default_:
      return kDefault;
    case PreTokenizer::gpt2:
      return kGpt2;
    case PreTokenizer::llama3:
      return kLlama3;
    case PreTokenizer::qwen2:
      return kQwen2;
    case PreTokenizer::starcoder:
      return kStarcoder;
  }
  return kDefault;
}

}  // namespace

std::vector<Utf8Char> split_utf8(std::string_view text) {
  std::vector<Utf8Char> chars;
  chars.reserve(text.size());
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  const int64_t n = static_cast<int64_t>(text.size());
  for (int64_t i = 0; i < n;) {
    const int64_t start = i;
    UChar32 c;
    U8_NEXT(bytes, i, n, c);
    if (c < 0) {
      i = start + 1;  // an ill-formed sequence: only its first byte becomes a character
      chars.push_back({static_cast<size_t>(start), 1, -1, 0});
    } else {
      chars.push_back(
          {static_cast<size_t>(start), static_cast<uint32_t>(i - start), c, classify(c)});
    }
  }
  return chars;
}

std::string_view byte_to_unicode(uint8_t byte) { return byte_table().to_utf8[byte]; }

int unicode_to_byte(int32_t code) {
  const auto& table = byte_table().to_byte;
  return code >= 0 && code < static_cast<int32_t>(table.size()) ? table[code] : -1;
}

std::vector<std::string_view> pre_tokenize(PreTokenizer pre, std::string_view text) {
  const std::vector<Utf8Char> chars = split_utf8(text);
  if (chars.empty()) return {};
  Ends ends = {chars.size()};
  for (Stage stage : stages_of(pre)) {
    Ends split;
    size_t lo = 0;
    for (size_t hi : ends) {
      stage(Span{chars, lo, hi}, split);
      lo = hi;
    }
    ends = std::move(split);
  }
  std::vector<std::string_view> pieces;
  pieces.reserve(ends.size());
  size_t lo = 0;
  for (size_t hi : ends) {
    const size_t begin = chars[lo].offset;
    const size_t end = hi < chars.size() ? chars[hi].offset : text.size();
    pieces.push_back(text.substr(begin, end - begin));
    lo = hi;
  }
  return pieces;
}

}  // namespace vkgrad::llm
