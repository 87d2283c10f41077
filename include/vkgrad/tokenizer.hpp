// Public: the LLM tokenizer. Vocabulary holds a GGUF file's tokenizer.ggml.* metadata as plain
// values; Tokenizer builds SentencePiece BPE ("llama") or GPT-2 byte-level BPE ("gpt2") from it
// and encodes and decodes text as llama.cpp's llama-vocab does. Depends on error.hpp only: it
// never sees tensors or the GGUF reader (whoever reads the file fills the Vocabulary).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <vkgrad/error.hpp>

namespace vkgrad::llm {

// The tokenizer.ggml.* keys, one field each. Ids of -1 and empty optionals are absent keys.
struct Vocabulary {
  std::string model;                 // tokenizer.ggml.model: "llama" or "gpt2"
  std::string pre;                   // tokenizer.ggml.pre (gpt2 model only; empty: "default")
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens
  std::vector<float> scores;         // tokenizer.ggml.scores (empty: all 0)
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (empty: all normal):
                                     // 1 normal, 2 unknown, 3 control, 4 user defined,
                                     // 5 unused, 6 byte
  std::vector<std::string> merges;   // tokenizer.ggml.merges, "left right" (gpt2 model)
  int32_t bos = -1, eos = -1, unknown = -1, padding = -1;  // tokenizer.ggml.*_token_id
  std::optional<bool> add_bos, add_eos;  // tokenizer.ggml.add_bos_token / add_eos_token
  std::optional<bool> add_space_prefix;  // tokenizer.ggml.add_space_prefix (llama model)
};

// Text <-> token ids. Immutable once built; copies share one vocabulary.
//
// Encoding first cuts the text at every control, user-defined or unknown token written in it
// (longer tokens first) and emits those as their ids. A "llama" vocabulary then writes each
// other fragment with spaces as U+2581, prefixed by one when add_space_prefix holds and the
// fragment starts the text or follows such a token, and merges adjacent symbols by best score;
// a character that is no token becomes its <0xXX> byte tokens, else the unknown token. A "gpt2"
// vocabulary splits each fragment with the pre-tokenizer of `pre`, spells each piece's bytes in
// GPT-2's byte alphabet and merges by merge rank. Ill-formed UTF-8 is read one byte a character.
class Tokenizer {
 public:
  Tokenizer();  // empty: size() 0, encode throws
  // Checks the vocabulary: an unknown model or pre-tokenizer, a token listed twice, a merge that
  // is not two tokens, an id out of range or arrays whose sizes disagree is a FormatError
  // naming the key.
  explicit Tokenizer(Vocabulary vocab);
  Tokenizer(const Tokenizer&);
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(const Tokenizer&);
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // add_bos: add what the vocabulary asks for, BOS first (add_bos_token; absent: true for
  // "llama" and the llama-3 pre-tokenizers, else false) and EOS last (add_eos_token).
  std::vector<int32_t> encode(const std::string& text, bool add_bos = true) const;
  // The concatenated bytes of token_text(id) for every id; a "llama" vocabulary with
  // add_space_prefix drops the one space its encoding prefixed (the first printed byte, when it
  // is a space). An id out of range is a vkgrad::Error naming it.
  std::string decode(const std::vector<int32_t>& ids) const;
  // One token's bytes as decode prints it: control, unknown and unused tokens print nothing,
  // U+2581 prints a space, <0xXX> its byte, a gpt2 token the bytes its characters spell.
  std::string token_text(int32_t id) const;

  int32_t bos() const;  // -1: none
  int32_t eos() const;  // -1: none
  int32_t size() const;
  // EOS, or a token that ends a turn in llama.cpp's list (<|eot_id|>, <|im_end|>, <|end|>,
  // <end_of_turn>, <|endoftext|>, <|eom_id|>, <EOT>, ...).
  bool is_end(int32_t id) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;

  const Impl& impl() const;
};

}  // namespace vkgrad::llm
