// The op list (ops.def) and its groups.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ir/ops.hpp"

using namespace vkgrad;

namespace {

TEST(Ops, Names) {
  EXPECT_EQ(op_name(Ops::ADD), "ADD");
  EXPECT_EQ(op_name(Ops::CMPLT), "CMPLT");
  EXPECT_EQ(op_name(Ops::DEFINE_VAR), "DEFINE_VAR");
  EXPECT_EQ(op_name(Ops::SINK), "SINK");
  EXPECT_EQ(op_name(Ops::MULACC), "MULACC");
  EXPECT_EQ(op_name(Ops::GRAD_RULE), "GRAD_RULE");
  EXPECT_EQ(op_name(static_cast<Ops>(kNumOps - 1)), "GRAD_RULE");
  // Every name is distinct and non-empty.
  std::set<std::string> names;
  for (int i = 0; i < kNumOps; ++i) {
    std::string_view n = op_name(static_cast<Ops>(i));
    EXPECT_FALSE(n.empty());
    names.emplace(n);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumOps));
}

TEST(Ops, AddIsBinaryAluCommutativeAssociative) {
  EXPECT_TRUE(is_binary(Ops::ADD));
  EXPECT_TRUE(is_alu(Ops::ADD));
  EXPECT_TRUE(is_commutative(Ops::ADD));
  EXPECT_TRUE(is_associative(Ops::ADD));
  EXPECT_FALSE(is_unary(Ops::ADD));
  EXPECT_FALSE(is_ternary(Ops::ADD));
  EXPECT_FALSE(is_comparison(Ops::ADD));
  EXPECT_FALSE(is_idempotent(Ops::ADD));
  EXPECT_TRUE(is_idempotent(Ops::MAX));
  EXPECT_TRUE(is_idempotent(Ops::AND));
}

TEST(Ops, Comparisons) {
  EXPECT_TRUE(is_comparison(Ops::CMPLT));
  EXPECT_TRUE(is_binary(Ops::CMPLT));
  EXPECT_FALSE(is_commutative(Ops::CMPLT));
  EXPECT_TRUE(is_commutative(Ops::CMPNE));
  EXPECT_TRUE(is_commutative(Ops::CMPEQ));
  EXPECT_FALSE(is_comparison(Ops::MAX));
  for (Ops op : {Ops::SUB, Ops::IDIV, Ops::FDIV, Ops::MOD, Ops::POW, Ops::SHL, Ops::SHR})
    EXPECT_FALSE(is_commutative(op)) << op_name(op);
}

TEST(Ops, ArityAndAlu) {
  for (Ops op : {Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT, Ops::RECIPROCAL, Ops::NEG, Ops::TRUNC})
    EXPECT_TRUE(is_unary(op) && is_alu(op)) << op_name(op);
  EXPECT_TRUE(is_ternary(Ops::WHERE) && is_alu(Ops::WHERE));
  EXPECT_TRUE(is_ternary(Ops::MULACC));
  for (Ops op : {Ops::CONST, Ops::CAST, Ops::BITCAST, Ops::LOAD, Ops::RANGE, Ops::SINK})
    EXPECT_FALSE(is_alu(op)) << op_name(op);
  // Each ALU op has exactly one arity.
  for (int i = 0; i < kNumOps; ++i) {
    Ops op = static_cast<Ops>(i);
    int arities = is_unary(op) + is_binary(op) + is_ternary(op);
    EXPECT_EQ(arities, is_alu(op) ? 1 : 0) << op_name(op);
  }
}

TEST(Ops, Movement) {
  for (Ops op : {Ops::RESHAPE, Ops::PERMUTE, Ops::EXPAND, Ops::PAD, Ops::SHRINK, Ops::FLIP})
    EXPECT_TRUE(is_movement(op)) << op_name(op);
  EXPECT_FALSE(is_movement(Ops::VIEW));
  EXPECT_FALSE(is_movement(Ops::ADD));
  EXPECT_EQ(OpSet::group(kMovement),
            (OpSet{Ops::RESHAPE, Ops::PERMUTE, Ops::EXPAND, Ops::PAD, Ops::SHRINK, Ops::FLIP}));
}

TEST(Ops, OpSet) {
  OpSet s{Ops::ADD, Ops::MUL};
  EXPECT_TRUE(s.contains(Ops::ADD));
  EXPECT_TRUE(s.contains(Ops::MUL));
  EXPECT_FALSE(s.contains(Ops::SUB));
  EXPECT_FALSE(s.empty());
  EXPECT_TRUE(OpSet{}.empty());
  OpSet u = s | OpSet{Ops::SUB};
  EXPECT_TRUE(u.contains(Ops::SUB) && u.contains(Ops::ADD));
  EXPECT_EQ(OpSet::group(kComparison), (OpSet{Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ}));
  OpSet all = OpSet::all();
  for (int i = 0; i < kNumOps; ++i) EXPECT_TRUE(all.contains(static_cast<Ops>(i)));
}

}  // namespace
