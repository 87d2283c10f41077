// tests/llm: the tokenizer on small vocabularies built here — SentencePiece merging by score,
// byte fallback and the unknown token, special tokens in text, BOS/EOS and the decode space rule;
// byte-level BPE merging by rank, each pre-tokenizer's splits, GPT-2's byte table; round trips
// over awkward text (multi-byte UTF-8, emoji, ill-formed bytes) and every FormatError case.
// Expected outputs are worked out by hand from the vocabularies' scores and merges.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>
#include <vkgrad/error.hpp>
#include <vkgrad/tokenizer.hpp>

#include "llm/unicode.hpp"

namespace vkgrad::llm {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int32_t kNormal = 1, kUnknownType = 2, kControl = 3, kUserDefined = 4, kByte = 6;

// A vocabulary under construction: tokens are added with a score and a type, and looked up by
// text when writing expected ids.
struct Vocab {
  Vocabulary v;

  int32_t add(const std::string& text, float score = 0.0f, int32_t type = kNormal) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.token_types.push_back(type);
    return static_cast<int32_t>(v.tokens.size() - 1);
  }
  int32_t id(const std::string& text) const {
    auto it = std::find(v.tokens.begin(), v.tokens.end(), text);
    if (it == v.tokens.end()) ADD_FAILURE() << "the test vocabulary has no token '" << text << "'";
    return static_cast<int32_t>(it - v.tokens.begin());
  }
  std::vector<int32_t> ids(const std::vector<std::string>& texts) const {
    std::vector<int32_t> out;
    for (const std::string& t : texts) out.push_back(id(t));
    return out;
  }
};

std::string byte_token(int b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

// SentencePiece: <unk> 0, <s> 1, </s> 2, then (with_bytes) the 256 <0xXX> tokens.
Vocab spm_vocab(bool with_bytes = true) {
  Vocab t;
  t.v.model = "llama";
  t.v.unknown = t.add("<unk>", 0, kUnknownType);
  t.v.bos = t.add("<s>", 0, kControl);
  t.v.eos = t.add("</s>", 0, kControl);
  if (with_bytes) {
    for (int b = 0; b < 256; ++b) t.add(byte_token(b), 0, kByte);
  }
  return t;
}

// Byte-level BPE: token b is byte b's character, so a byte's id is the byte itself.
Vocab bpe_vocab(const std::string& pre, std::vector<std::string> merges = {}) {
  Vocab t;
  t.v.model = "gpt2";
  t.v.pre = pre;
  for (int b = 0; b < 256; ++b) t.add(std::string(byte_to_unicode(static_cast<uint8_t>(b))));
  t.v.merges = std::move(merges);
  return t;
}

template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

std::vector<std::string> split(PreTokenizer pre, const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view piece : pre_tokenize(pre, text)) out.emplace_back(piece);
  return out;
}

const std::string kSample = "Hello world's 12345 test!!\n\n  x";

const std::vector<std::string> kAwkward = {
    "",
    "a",
    " ",
    "Hello world",
    "  two leading spaces",
    "trailing spaces   ",
    "multiple    inner   spaces",
    "new\nlines\n\n\r\nand\ttabs",
    "h\xC3\xA9llo w\xC3\xB6rld",                                // héllo wörld
    "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E",                     // 日本語
    "emoji \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD!",  // 😀👍🏽
    "digits 1234567 and it's DONE'LL",
    "bad \xFF bytes \xC3( and \xE2\x82",
    "\x80\xBF lone continuations",
};

// ---- SentencePiece BPE ------------------------------------------------------------------------

TEST(SpmTokenizer, MergesTheBestScoringPairFirst) {
  Vocab t = spm_vocab();
  t.v.add_space_prefix = false;
  for (const char* s : {"a", "b", "c"}) t.add(s);
  const int32_t ab = t.add("ab", 1.0f);
  t.add("bc", 2.0f);
  // pairs ab (1) and bc (2): bc merges, and "a"+"bc" is no token
  EXPECT_EQ(Tokenizer(t.v).encode("abc", false), t.ids({"a", "bc"}));
  t.v.scores[ab] = 3.0f;  // now ab wins, and "ab"+"c" is no token
  EXPECT_EQ(Tokenizer(t.v).encode("abc", false), t.ids({"ab", "c"}));
}

TEST(SpmTokenizer, TiesGoToTheLeftmostPair) {
  Vocab t = spm_vocab();
  t.v.add_space_prefix = false;
  for (const char* s : {"a", "b"}) t.add(s);
  t.add("ab", 1.0f);
  t.add("ba", 1.0f);
  // "ab" at 0 and "ba" at 1 score alike: ab merges, leaving "aba" (no token) unmerged
  EXPECT_EQ(Tokenizer(t.v).encode("aba", false), t.ids({"ab", "a"}));
}

TEST(SpmTokenizer, MergedSymbolsMergeFurther) {
  Vocab t = spm_vocab();
  t.v.add_space_prefix = false;
  for (const char* s : {"a", "b"}) t.add(s);
  t.add("ab", 1.0f);
  t.add("abab", 2.0f);
  // ab at 0, then ab at 2, then the two ab's into abab
  EXPECT_EQ(Tokenizer(t.v).encode("abab", false), t.ids({"abab"}));
  EXPECT_EQ(Tokenizer(t.v).encode("ababa", false), t.ids({"abab", "a"}));
}

TEST(SpmTokenizer, SpacesBecomeU2581WithAPrefixedOne) {
  Vocab t = spm_vocab();
  for (const char* s : {"▁", "h", "i"}) t.add(s);
  t.add("▁h", 1.0f);
  t.add("hi", 2.0f);
  t.add("▁hi", 3.0f);
  // "▁hi▁hi": hi (2) at 1, then ▁hi (3) at 0, then hi at 4, then ▁hi at 3
  EXPECT_EQ(Tokenizer(t.v).encode("hi hi", false), t.ids({"▁hi", "▁hi"}));
  t.v.add_space_prefix = false;  // "hi▁hi": hi at 0, hi at 3, then ▁+hi
  EXPECT_EQ(Tokenizer(t.v).encode("hi hi", false), t.ids({"hi", "▁hi"}));
}

TEST(SpmTokenizer, MissingCharacterFallsBackToByteTokens) {
  Vocab t = spm_vocab();
  t.add("▁");
  t.add("a");
  EXPECT_EQ(Tokenizer(t.v).encode("\xC3\xA9", false), t.ids({"▁", "<0xC3>", "<0xA9>"}));  // é
  EXPECT_EQ(Tokenizer(t.v).encode("a\xF0\x9F\x98\x80", false),                            // a😀
            t.ids({"▁", "a", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>"}));
}

TEST(SpmTokenizer, MissingCharacterIsUnknownWithoutByteTokens) {
  Vocab t = spm_vocab(/*with_bytes=*/false);
  for (const char* s : {"▁", "a", "b"}) t.add(s);
  // one <unk> per character, whatever its length in bytes
  EXPECT_EQ(Tokenizer(t.v).encode("a\xC3\xA9"
                                  "b\xF0\x9F\x98\x80",
                                  false),
            t.ids({"▁", "a", "<unk>", "b", "<unk>"}));
}

TEST(SpmTokenizer, MissingCharacterWithNeitherBytesNorUnknownIsAnError) {
  Vocab t = spm_vocab(/*with_bytes=*/false);
  t.v.unknown = -1;
  t.add("▁");
  const Tokenizer tok(t.v);
  EXPECT_THAT(error_of<Error>([&] { tok.encode("\xC3\xA9"); }), HasSubstr("C3 A9"));
}

TEST(SpmTokenizer, SpecialTokensInTextAreMatchedFirst) {
  Vocab t = spm_vocab();
  for (const char* s : {"▁", "a", "b"}) t.add(s);
  t.add("ab", 1.0f);
  t.add("▁ab", 2.0f);
  t.add("<|x|>", 0, kControl);
  t.add("<u>", 0, kUserDefined);
  // Each fragment that starts the text or follows a special token gets the space prefix, as in
  // llama.cpp (and HF's legacy SentencePiece): "▁ab", <|x|>, "▁ab", <u>, "▁b".
  EXPECT_EQ(Tokenizer(t.v).encode("ab<|x|>ab<u>b"),
            t.ids({"<s>", "▁ab", "<|x|>", "▁ab", "<u>", "▁", "b"}));
  // BOS and EOS written in text are control tokens too
  EXPECT_EQ(Tokenizer(t.v).encode("<s>ab</s>", false), t.ids({"<s>", "▁ab", "</s>"}));
}

TEST(SpmTokenizer, LongerSpecialTokensWin) {
  Vocab t = spm_vocab();
  t.v.add_space_prefix = false;
  t.add("<|a|>", 0, kControl);
  t.add("<|a|>x", 0, kUserDefined);
  EXPECT_EQ(Tokenizer(t.v).encode("<|a|>x<|a|>", false), t.ids({"<|a|>x", "<|a|>"}));
}

TEST(SpmTokenizer, BosAndEosFollowTheVocabulary) {
  Vocab t = spm_vocab();
  t.add("▁a");
  EXPECT_EQ(Tokenizer(t.v).encode("a"), t.ids({"<s>", "▁a"}));  // add_bos absent: true
  EXPECT_EQ(Tokenizer(t.v).encode("a", false), t.ids({"▁a"}));
  EXPECT_EQ(Tokenizer(t.v).encode(""), t.ids({"<s>"}));
  EXPECT_TRUE(Tokenizer(t.v).encode("", false).empty());
  t.v.add_bos = false;
  t.v.add_eos = true;
  EXPECT_EQ(Tokenizer(t.v).encode("a"), t.ids({"▁a", "</s>"}));
  EXPECT_EQ(Tokenizer(t.v).encode("a", false), t.ids({"▁a"}));
}

TEST(SpmTokenizer, DecodeDropsTheSpaceEncodePrefixed) {
  Vocab t = spm_vocab();
  for (const char* s : {"▁", "ab", "▁ab"}) t.add(s);
  t.add("<u>", 0, kUserDefined);
  const Tokenizer tok(t.v);
  EXPECT_EQ(tok.decode(t.ids({"<s>", "▁ab", "▁ab", "</s>"})), "ab ab");
  EXPECT_EQ(tok.decode(t.ids({"▁ab"})), "ab");
  EXPECT_EQ(tok.decode(t.ids({"ab", "▁ab"})), "ab ab");
  EXPECT_EQ(tok.decode(t.ids({"▁", "▁ab"})), " ab");  // only the first space goes
  EXPECT_EQ(tok.decode(t.ids({"<u>", "▁ab"})), "<u> ab");
  t.v.add_space_prefix = false;
  EXPECT_EQ(Tokenizer(t.v).decode(t.ids({"<s>", "▁ab"})), " ab");
}

TEST(SpmTokenizer, TokenTextPrintsBytesAndHidesControlTokens) {
  Vocab t = spm_vocab();
  t.add("▁a▁b");
  t.add("<u>", 0, kUserDefined);
  t.add("<pad>", 0, 5);  // unused
  const Tokenizer tok(t.v);
  EXPECT_EQ(tok.token_text(t.id("▁a▁b")), " a b");
  EXPECT_EQ(tok.token_text(t.id("<0x0A>")), "\n");
  EXPECT_EQ(tok.token_text(t.id("<0xFF>")), "\xFF");
  EXPECT_EQ(tok.token_text(t.id("<u>")), "<u>");
  for (const char* hidden : {"<s>", "</s>", "<unk>", "<pad>"}) {
    EXPECT_EQ(tok.token_text(t.id(hidden)), "") << hidden;
  }
  EXPECT_EQ(tok.decode(t.ids({"<0xC3>", "<0xA9>"})), "\xC3\xA9");
}

TEST(SpmTokenizer, DecodeInvertsEncode) {
  Vocab t = spm_vocab();
  for (const char* s : {"▁", "H", "e", "l", "o", "▁H", "ll", "llo", "▁Hello", "▁w", "or"}) {
    t.add(s, static_cast<float>(std::string(s).size()));
  }
  for (bool prefix : {true, false}) {
    t.v.add_space_prefix = prefix;
    const Tokenizer tok(t.v);
    for (const std::string& s : kAwkward) {
      EXPECT_EQ(tok.decode(tok.encode(s)), s) << "'" << s << "' prefix " << prefix;
      EXPECT_EQ(tok.decode(tok.encode(s, false)), s) << "'" << s << "' prefix " << prefix;
    }
  }
}

TEST(SpmTokenizer, IllFormedUtf8IsOneByteACharacter) {
  Vocab t = spm_vocab();
  t.v.add_space_prefix = false;
  t.add("a");
  const Tokenizer tok(t.v);
  // a lone lead byte before ASCII, a truncated sequence at the end, a stray continuation byte
  EXPECT_EQ(tok.encode("\xC3"
                       "a\xE2\x82",
                       false),
            t.ids({"<0xC3>", "a", "<0xE2>", "<0x82>"}));
  EXPECT_EQ(tok.encode("\x80", false), t.ids({"<0x80>"}));
  EXPECT_EQ(tok.encode("\xED\xA0\x80", false),  // an encoded surrogate
            t.ids({"<0xED>", "<0xA0>", "<0x80>"}));
}

// ---- GPT-2 byte-level BPE ---------------------------------------------------------------------

TEST(ByteTable, PrintableBytesStandForThemselves) {
  EXPECT_EQ(byte_to_unicode('A'), "A");
  EXPECT_EQ(byte_to_unicode('!'), "!");
  EXPECT_EQ(byte_to_unicode('~'), "~");
  EXPECT_EQ(byte_to_unicode(0xA1), "\xC2\xA1");  // ¡
  EXPECT_EQ(byte_to_unicode(0xAC), "\xC2\xAC");  // ¬
  EXPECT_EQ(byte_to_unicode(0xAE), "\xC2\xAE");  // ®
  EXPECT_EQ(byte_to_unicode(0xFF), "\xC3\xBF");  // ÿ
}

TEST(ByteTable, OtherBytesTakeU0100Upward) {
  // 0x00..0x20 are the first 33, 0x7F..0xA0 the next 34, 0xAD the last
  EXPECT_EQ(byte_to_unicode(0x00), "\xC4\x80");  // U+0100 Ā
  EXPECT_EQ(byte_to_unicode('\n'), "\xC4\x8A");  // U+010A Ċ
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");   // U+0120 Ġ
  EXPECT_EQ(byte_to_unicode(0x7F), "\xC4\xA1");  // U+0121 ġ
  EXPECT_EQ(byte_to_unicode(0xA0), "\xC5\x82");  // U+0142 ł
  EXPECT_EQ(byte_to_unicode(0xAD), "\xC5\x83");  // U+0143 Ń
  EXPECT_EQ(unicode_to_byte(0x120), ' ');
  EXPECT_EQ(unicode_to_byte(' '), -1);  // space itself is no character of the alphabet
  EXPECT_EQ(unicode_to_byte(0x144), -1);
  EXPECT_EQ(unicode_to_byte(-1), -1);
}

TEST(ByteTable, RoundTripsEveryByte) {
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string_view c = byte_to_unicode(static_cast<uint8_t>(b));
    const std::vector<Utf8Char> chars = split_utf8(c);
    ASSERT_EQ(chars.size(), 1u) << b;
    EXPECT_EQ(unicode_to_byte(chars[0].code), b);
    seen.emplace(c);
  }
  EXPECT_EQ(seen.size(), 256u);
}

TEST(BpeTokenizer, MergesByRankLowestFirst) {
  Vocab t = bpe_vocab("gpt2", {"b c", "a b"});
  t.add("ab");
  t.add("bc");
  EXPECT_EQ(Tokenizer(t.v).encode("abc"), t.ids({"a", "bc"}));
  t.v.merges = {"a b", "b c"};
  EXPECT_EQ(Tokenizer(t.v).encode("abc"), t.ids({"ab", "c"}));
}

TEST(BpeTokenizer, MergesChainAndTiesGoLeftmost) {
  Vocab t = bpe_vocab("gpt2", {"l l", "h e", "he ll", "hell o", "a a"});
  for (const char* s : {"ll", "he", "hell", "hello", "aa"}) t.add(s);
  // ll (rank 0), then he (1), then he+ll (2), then hell+o (3)
  EXPECT_EQ(Tokenizer(t.v).encode("hello"), t.ids({"hello"}));
  EXPECT_EQ(Tokenizer(t.v).encode("aaa"), t.ids({"aa", "a"}));
}

TEST(BpeTokenizer, SpacesAreSpelledAsTheirByteCharacter) {
  Vocab t = bpe_vocab("gpt2", {"Ġ w", "Ġw o"});
  t.add("Ġw");
  t.add("Ġwo");
  // pieces "hi", " world"
  EXPECT_EQ(Tokenizer(t.v).encode("hi world"), t.ids({"h", "i", "Ġwo", "r", "l", "d"}));
}

TEST(BpeTokenizer, MergesNeverCrossPieces) {
  Vocab t = bpe_vocab("gpt2", {"i Ġ", "3 4"});
  t.add("iĠ");
  t.add("34");
  // "hi world": i and the space are in different pieces ("hi", " world")
  EXPECT_EQ(Tokenizer(t.v).encode("hi w"), t.ids({"h", "i", "Ġ", "w"}));
  // "1234" under llama-3 is "123" + "4": 3 and 4 never meet; under gpt2 it is one piece
  t.v.pre = "llama3";
  EXPECT_EQ(Tokenizer(t.v).encode("1234", false), t.ids({"1", "2", "3", "4"}));
  t.v.pre = "gpt2";
  EXPECT_EQ(Tokenizer(t.v).encode("1234"), t.ids({"1", "2", "34"}));
}

TEST(BpeTokenizer, NumberSplitsShowInTokens) {
  Vocab t = bpe_vocab("", {"1 2", "12 3", "123 4"});
  for (const char* s : {"12", "123", "1234"}) t.add(s);
  auto encode = [&](const char* pre) {
    t.v.pre = pre;
    return Tokenizer(t.v).encode("1234", false);
  };
  EXPECT_EQ(encode("gpt2"), t.ids({"1234"}));
  EXPECT_EQ(encode("llama3"), t.ids({"123", "4"}));
  EXPECT_EQ(encode("qwen2"), t.ids({"1", "2", "3", "4"}));
  EXPECT_EQ(encode("smollm"), t.ids({"1", "2", "3", "4"}));
  EXPECT_EQ(encode("default"), t.ids({"123", "4"}));  // the ASCII digit-triple stage
}

TEST(BpeTokenizer, Llama3TakesWholePieceTokensWithoutMerging) {
  Vocab t = bpe_vocab("llama3");
  t.add("abc");  // no merge reaches it
  EXPECT_EQ(Tokenizer(t.v).encode("abc", false), t.ids({"abc"}));
  t.v.pre = "gpt2";
  EXPECT_EQ(Tokenizer(t.v).encode("abc"), t.ids({"a", "b", "c"}));
}

TEST(BpeTokenizer, BosDefaultsFollowLlamaCpp) {
  Vocab t = bpe_vocab("llama3");
  t.v.bos = t.add("<|begin_of_text|>", 0, kControl);
  EXPECT_EQ(Tokenizer(t.v).encode("a"), t.ids({"<|begin_of_text|>", "a"}));
  t.v.pre = "qwen2";  // add_bos absent: false for byte-level vocabularies but llama-3's
  EXPECT_EQ(Tokenizer(t.v).encode("a"), t.ids({"a"}));
  t.v.add_bos = true;
  EXPECT_EQ(Tokenizer(t.v).encode("a"), t.ids({"<|begin_of_text|>", "a"}));
  EXPECT_EQ(Tokenizer(t.v).encode("a", false), t.ids({"a"}));
}

TEST(BpeTokenizer, SpecialTokensAndEndOfTurn) {
  Vocab t = bpe_vocab("qwen2");
  t.v.eos = t.add("<|endoftext|>", 0, kControl);
  t.add("<|im_start|>", 0, kControl);
  const int32_t im_end = t.add("<|im_end|>");  // given as normal: llama.cpp makes it control
  const Tokenizer tok(t.v);
  EXPECT_EQ(tok.encode("<|im_start|>hi<|im_end|>\n"),
            t.ids({"<|im_start|>", "h", "i", "<|im_end|>", "Ċ"}));
  EXPECT_EQ(tok.decode(tok.encode("<|im_start|>hi<|im_end|>\n")), "hi\n");
  EXPECT_TRUE(tok.is_end(t.v.eos));
  EXPECT_TRUE(tok.is_end(im_end));
  EXPECT_FALSE(tok.is_end(t.id("<|im_start|>")));
  EXPECT_FALSE(tok.is_end('h'));
  EXPECT_FALSE(tok.is_end(-3));
  EXPECT_FALSE(tok.is_end(1 << 20));
  EXPECT_EQ(tok.eos(), t.v.eos);
  EXPECT_EQ(tok.bos(), -1);
}

TEST(BpeTokenizer, DecodeInvertsEncodeUnderEveryPreTokenizer) {
  for (const char* pre : {"default", "gpt2", "llama3", "qwen2", "smollm"}) {
    Vocab t = bpe_vocab(pre, {"Ġ t", "h e", "Ġt he", "1 2"});
    for (const char* s : {"Ġt", "he", "Ġthe", "12"}) t.add(s);
    const Tokenizer tok(t.v);
    for (const std::string& s : kAwkward) EXPECT_EQ(tok.decode(tok.encode(s)), s) << pre;
  }
}

TEST(BpeTokenizer, IllFormedUtf8KeepsItsBytes) {
  const Tokenizer tok(bpe_vocab("gpt2").v);
  // every byte's id is the byte
  EXPECT_EQ(tok.encode("a\xFF"
                       "b\xE2\x82"),
            (std::vector<int32_t>{'a', 0xFF, 'b', 0xE2, 0x82}));
  EXPECT_THAT(split(PreTokenizer::gpt2,
                    "a\xFF"
                    "b"),
              ElementsAre("a", "\xFF", "b"));
  // an ill-formed byte is [^\s\p{L}\p{N}]: it can follow the optional space, or lead a word
  EXPECT_THAT(split(PreTokenizer::llama3,
                    "a \xC3"
                    "b"),
              ElementsAre("a", " \xC3", "b"));
  EXPECT_THAT(split(PreTokenizer::llama3,
                    "a\xC3"
                    "b"),
              ElementsAre("a",
                          "\xC3"
                          "b"));
}

// ---- pre-tokenizers ---------------------------------------------------------------------------

TEST(PreTokenize, Llama3) {
  EXPECT_THAT(split(PreTokenizer::llama3, kSample),
              ElementsAre("Hello", " world", "'s", " ", "123", "45", " test", "!!\n\n", " ", " x"));
}

TEST(PreTokenize, Qwen2SplitsEveryDigit) {
  EXPECT_THAT(split(PreTokenizer::qwen2, kSample),
              ElementsAre("Hello", " world", "'s", " ", "1", "2", "3", "4", "5", " test", "!!\n\n",
                          " ", " x"));
}

TEST(PreTokenize, Gpt2) {
  EXPECT_THAT(split(PreTokenizer::gpt2, kSample),
              ElementsAre("Hello", " world", "'s", " 12345", " test", "!!", "\n\n ", " x"));
}

TEST(PreTokenize, DefaultChainsFourStages) {
  // punctuation runs cut "'" and "!!" out first, then GPT-2, then " " from "12345", then 123|45
  EXPECT_THAT(
      split(PreTokenizer::default_, kSample),
      ElementsAre("Hello", " world", "'", "s", " ", "123", "45", " test", "!!", "\n\n ", " x"));
}

TEST(PreTokenize, StarcoderIsolatesDigits) {
  EXPECT_THAT(split(PreTokenizer::starcoder, kSample),
              ElementsAre("Hello", " world", "'s", " ", "1", "2", "3", "4", "5", " test", "!!",
                          "\n\n ", " x"));
}

TEST(PreTokenize, ContractionsFoldCaseOnlyForLlama3) {
  EXPECT_THAT(split(PreTokenizer::llama3, "I'M we'RE"), ElementsAre("I", "'M", " we", "'RE"));
  EXPECT_THAT(split(PreTokenizer::gpt2, "I'M we're"), ElementsAre("I", "'", "M", " we", "'re"));
}

TEST(PreTokenize, UnicodeClassesComeFromIcu) {
  const std::string text = "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xD9\xA1\xD9\xA2\xD9\xA3\xD9\xA4";
  // café 中文 ١٢٣٤ (Arabic-Indic digits are \p{N})
  EXPECT_THAT(split(PreTokenizer::llama3, text),
              ElementsAre("caf\xC3\xA9", " \xE4\xB8\xAD\xE6\x96\x87", " ",
                          "\xD9\xA1\xD9\xA2\xD9\xA3", "\xD9\xA4"));
  EXPECT_THAT(
      split(PreTokenizer::gpt2, text),
      ElementsAre("caf\xC3\xA9", " \xE4\xB8\xAD\xE6\x96\x87", " \xD9\xA1\xD9\xA2\xD9\xA3\xD9\xA4"));
  // U+3000 IDEOGRAPHIC SPACE is \s: llama-3 lets it lead a word, GPT-2 only lets ' ' do so
  EXPECT_THAT(split(PreTokenizer::llama3,
                    "a\xE3\x80\x80"
                    "b"),
              ElementsAre("a",
                          "\xE3\x80\x80"
                          "b"));
  EXPECT_THAT(split(PreTokenizer::gpt2,
                    "a\xE3\x80\x80"
                    "b"),
              ElementsAre("a", "\xE3\x80\x80", "b"));
}

TEST(PreTokenize, LineBreaksAndTrailingSpace) {
  EXPECT_THAT(split(PreTokenizer::llama3, "a\r\n\r\nb"), ElementsAre("a", "\r\n\r\n", "b"));
  EXPECT_THAT(split(PreTokenizer::llama3, "a \n b"), ElementsAre("a", " \n", " b"));
  EXPECT_THAT(split(PreTokenizer::llama3, "x   "), ElementsAre("x", "   "));
  EXPECT_THAT(split(PreTokenizer::gpt2, "x   "), ElementsAre("x", "   "));
  EXPECT_TRUE(split(PreTokenizer::gpt2, "").empty());
}

// ---- errors -----------------------------------------------------------------------------------

TEST(TokenizerErrors, BadVocabulariesNameTheirKey) {
  auto error_for = [](Vocabulary v) {
    return error_of<FormatError>([&] { Tokenizer tok(std::move(v)); });
  };
  const Vocab spm = spm_vocab();
  const Vocab bpe = bpe_vocab("gpt2");
  Vocabulary v;

  v = spm.v, v.model = "bert";
  EXPECT_THAT(error_for(v), HasSubstr("tokenizer.ggml.model"));
  v = bpe.v, v.pre = "no-such-pre";
  EXPECT_THAT(error_for(v), AllOf(HasSubstr("tokenizer.ggml.pre"), HasSubstr("no-such-pre")));
  v = bpe.v, v.merges = {"a zz"};
  EXPECT_THAT(error_for(v), AllOf(HasSubstr("tokenizer.ggml.merges"), HasSubstr("zz")));
  v = bpe.v, v.merges = {"ab"};
  EXPECT_THAT(error_for(v), HasSubstr("tokenizer.ggml.merges"));
  v = spm.v, v.bos = static_cast<int32_t>(v.tokens.size());
  EXPECT_THAT(error_for(v), HasSubstr("tokenizer.ggml.bos_token_id"));
  v = spm.v, v.eos = -7;
  EXPECT_THAT(error_for(v), HasSubstr("tokenizer.ggml.eos_token_id"));
  v = spm.v, v.unknown = 100000;
  EXPECT_THAT(error_for(v), HasSubstr("tokenizer.ggml.unknown_token_id"));
  v = spm.v, v.padding = 100000;
  EXPECT_THAT(error_for(v), HasSubstr("tokenizer.ggml.padding_token_id"));
  v = spm.v, v.scores.pop_back();
  EXPECT_THAT(error_for(v), HasSubstr("tokenizer.ggml.scores"));
  v = spm.v, v.token_types.push_back(kNormal);
  EXPECT_THAT(error_for(v), HasSubstr("tokenizer.ggml.token_type"));
  v = spm.v, v.token_types[5] = 9;
  EXPECT_THAT(error_for(v), HasSubstr("tokenizer.ggml.token_type"));
  v = spm.v, v.tokens[5] = "<s>";
  EXPECT_THAT(error_for(v), AllOf(HasSubstr("tokenizer.ggml.tokens"), HasSubstr("<s>")));
  v = spm.v, v.tokens[5] = "<0xZZ>";  // type 6
  EXPECT_THAT(error_for(v), HasSubstr("<0xZZ>"));
  v = spm.v, v.bos = -1, v.add_bos = true;
  EXPECT_THAT(error_for(v), HasSubstr("tokenizer.ggml.add_bos_token"));
  v = spm.v, v.eos = -1, v.add_eos = true;
  EXPECT_THAT(error_for(v), HasSubstr("tokenizer.ggml.add_eos_token"));
  v = Vocabulary{}, v.model = "llama";
  EXPECT_THAT(error_for(v), HasSubstr("tokenizer.ggml.tokens"));
}

TEST(TokenizerErrors, IdsOutOfRangeAreErrors) {
  const Vocab t = spm_vocab();
  const Tokenizer tok(t.v);
  const int32_t n = tok.size();
  EXPECT_EQ(n, static_cast<int32_t>(t.v.tokens.size()));
  EXPECT_THAT(error_of<Error>([&] { tok.decode({1, n}); }), HasSubstr(std::to_string(n)));
  EXPECT_THAT(error_of<Error>([&] { tok.token_text(-1); }), HasSubstr("-1"));
}

TEST(TokenizerErrors, AnEmptyTokenizerRefusesToEncode) {
  const Tokenizer tok;
  EXPECT_EQ(tok.size(), 0);
  EXPECT_EQ(tok.bos(), -1);
  EXPECT_FALSE(tok.is_end(0));
  EXPECT_EQ(tok.decode({}), "");
  EXPECT_THROW(tok.encode("a"), Error);
  EXPECT_THROW(tok.decode({0}), Error);
}

TEST(Tokenizer, CopiesShareTheVocabulary) {
  Vocab t = spm_vocab();
  t.add("▁a");
  Tokenizer copy;
  {
    const Tokenizer original(t.v);
    copy = original;
  }
  EXPECT_EQ(copy.encode("a"), t.ids({"<s>", "▁a"}));
  Tokenizer moved = std::move(copy);
  EXPECT_EQ(moved.decode(t.ids({"<s>", "▁a"})), "a");
}

}  // namespace
}  // namespace vkgrad::llm
