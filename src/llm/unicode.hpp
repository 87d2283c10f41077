// llm: the text layer under the tokenizer. Splits UTF-8 into characters (a byte outside
// well-formed UTF-8 is a character of its own), classifies them with ICU, holds GPT-2's
// byte <-> character table and runs the pre-tokenizers (the split regexes of llama.cpp's BPE
// vocabularies) as hand-written scanners. Depends on the standard library and ICU only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vkgrad::llm {

// Character classes as the split regexes name them: \p{L}, \p{N}, \s (Unicode White_Space)
// and \p{P}. A character outside all four is what [^\s\p{L}\p{N}] matches.
enum CharClass : uint8_t {
  kLetter = 1,
  kNumber = 2,
  kSpace = 4,
  kPunctuation = 8,
};

// One character of a UTF-8 string: bytes [offset, offset + size) of it.
struct Utf8Char {
  size_t offset;
  uint32_t size;
  int32_t code;     // the code point, or -1 for a byte that is no part of well-formed UTF-8
  uint8_t classes;  // CharClass bits; none for an ill-formed byte
};

// Every character of `text` in order. Never fails: each byte of an ill-formed sequence
// (stray continuation, truncated or overlong sequence, surrogate) becomes one character.
std::vector<Utf8Char> split_utf8(std::string_view text);

// GPT-2's byte-level alphabet: the 188 printable bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand
// for themselves, the other 68 take U+0100 upward in byte order (space is U+0120 'Ġ').
// byte_to_unicode gives the UTF-8 of a byte's character; unicode_to_byte inverts it (-1: none).
std::string_view byte_to_unicode(uint8_t byte);
int unicode_to_byte(int32_t code);

// The split each tokenizer.ggml.pre family applies before merging, as llama.cpp runs it.
enum class PreTokenizer {
  // llama.cpp's fallback for "default" or a missing name: punctuation runs, then the GPT-2
  // regex, then number runs, then ASCII digit triples, each splitting the pieces of the last.
  default_,
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  gpt2,
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*
  //   |\s*[\r\n]+|\s+(?!\S)|\s+
  llama3,
  // llama3's regex with \p{N} (one digit a piece) in place of \p{N}{1,3}.
  qwen2,
  // every \p{N} alone, then the GPT-2 regex over the rest (starcoder, smollm, command-r, ...).
  starcoder,
};

// The pieces of `text` under `pre`, in order; they concatenate back to `text`.
std::vector<std::string_view> pre_tokenize(PreTokenizer pre, std::string_view text);

}  // namespace vkgrad::llm
