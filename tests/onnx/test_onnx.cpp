// tests/onnx: the importer on every device — the shared light models against their expected
// outputs, the error cases (truncated files, unknown ops, bad inputs, missing external data),
// host folding of shape arithmetic, Jit replay and a dynamic batch served by one capture.
// Small models are built here with libonnx's protobuf messages.
#include <onnx/onnx_pb.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "../tensor/harness.hpp"

namespace vkgrad {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::make_tensor;
using testing::random_values;
using testing::values_of;

// ONNX's light models live beside the repository (../shared/onnx-models), or VKGRAD_ONNX_MODELS.
fs::path models_dir() {
  const char* env = std::getenv("VKGRAD_ONNX_MODELS");
  return env ? fs::path(env) : fs::path(VKGRAD_SOURCE_DIR) / ".." / "shared" / "onnx-models";
}

class OnnxTest : public testing::DeviceTest {
 protected:
  // Files the test writes, in a folder of this process's that TearDown removes.
  fs::path tmp(const std::string& name) const {
    fs::create_directories(tmp_dir());
    return tmp_dir() / name;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(tmp_dir(), ignored);
    testing::DeviceTest::TearDown();
  }

 private:
  static fs::path tmp_dir() {
    return fs::temp_directory_path() / ("vkgrad_onnx_test_" + std::to_string(getpid()));
  }
};

// ---- building small models ------------------------------------------------------------------

struct Builder {
  ::onnx::ModelProto m;
  ::onnx::GraphProto* g;
  explicit Builder(int64_t opset = 17) {
    m.set_ir_version(8);
    auto* op = m.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    g = m.mutable_graph();
    g->set_name("test");
  }
  void io(::onnx::ValueInfoProto* v, const std::string& name, int elem,
          const std::vector<int64_t>& shape, const std::vector<std::string>& params = {}) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* s = tt->mutable_shape();
    for (size_t i = 0; i < shape.size(); i++) {
      auto* d = s->add_dim();
      if (i < params.size() && !params[i].empty())
        d->set_dim_param(params[i]);
      else
        d->set_dim_value(shape[i]);
    }
  }
  void input(const std::string& name, const std::vector<int64_t>& shape,
             const std::vector<std::string>& params = {}, int elem = ::onnx::TensorProto::FLOAT) {
    io(g->add_input(), name, elem, shape, params);
  }
  void output(const std::string& name, const std::vector<int64_t>& shape = {},
              int elem = ::onnx::TensorProto::FLOAT) {
    auto* v = g->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    (void)shape;
  }
  ::onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& in,
                          const std::vector<std::string>& out, const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(g->node_size()) : name);
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return n;
  }
  ::onnx::TensorProto* init(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<float>& values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return t;
  }
  void init_i64(const std::string& name, const std::vector<int64_t>& values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  std::string bytes() const {
    std::string s;
    m.SerializeToString(&s);
    return s;
  }
  void save(const fs::path& p) const {
    std::ofstream out(p, std::ios::binary);
    out << bytes();
  }
};

void set_int_attr(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_ints_attr(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// y = relu(x @ W + b) with W [4, 3]: a model that must keep working after every error.
Builder small_mlp() {
  Builder b;
  b.input("x", {2, 4});
  b.init("W", {4, 3}, {1, 0, -1, 0.5f, 0.5f, 0, -1, 2, 1, 0, 0, 1});
  b.init("b", {3}, {0.1f, -0.2f, 0.3f});
  b.node("MatMul", {"x", "W"}, {"xw"});
  b.node("Add", {"xw", "b"}, {"pre"});
  b.node("Relu", {"pre"}, {"y"});
  b.output("y");
  return b;
}

void check_small_mlp(const std::string& path, const std::string& dev) {
  onnx::Model m = onnx::load(path, dev);
  const std::vector<double> x = {1, 2, 3, 4, -1, 0, 1, 2};
  auto out = m.run({{"x", make_tensor(x, {2, 4}, dtypes::float32, dev)}});
  const double W[4][3] = {{1, 0, -1}, {0.5, 0.5, 0}, {-1, 2, 1}, {0, 0, 1}};
  const double bias[3] = {0.1, -0.2, 0.3};
  std::vector<double> want;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) {
      double s = static_cast<float>(bias[j]);
      for (int k = 0; k < 4; k++) s += x[static_cast<size_t>(i * 4 + k)] * W[k][j];
      want.push_back(std::max(0.0, s));
    }
  testing::expect_values(out.at("y"), {2, 3}, dtypes::float32, want, 1e-6, 1e-6);
}

// ---- the shared models ----------------------------------------------------------------------

TEST_P(OnnxTest, SharedLightModelsMatchTheirExpectedOutputs) {
  if (!fs::exists(models_dir() / "resnet50" / "model.onnx"))
    GTEST_SKIP() << "ONNX's light models are not at " << models_dir()
                 << " (set VKGRAD_ONNX_MODELS to their folder)";
  for (const char* name : {"squeezenet", "shufflenet", "resnet50"}) {
    SCOPED_TRACE(name);
    const fs::path dir = models_dir() / name;
    ASSERT_TRUE(fs::exists(dir / "model.onnx")) << dir;
    const auto t0 = std::chrono::steady_clock::now();
    onnx::Model m = onnx::load((dir / "model.onnx").string(), dev());
    const double load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(m.inputs().size(), 1u);
    ASSERT_EQ(m.outputs().size(), 1u);
    const Tensor x = onnx::load_tensor((dir / "test_data_set_0" / "input_0.pb").string(), dev());
    const Tensor want =
        onnx::load_tensor((dir / "test_data_set_0" / "output_0.pb").string(), "CPU");
    const auto t1 = std::chrono::steady_clock::now();
    auto out = m.run({{m.inputs()[0].name, x}});
    const double run_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    std::printf("  %s on %s: load %.1f ms, first run %.1f ms\n", name, dev().c_str(), load_ms,
                run_ms);
    const Tensor got = out.at(m.outputs()[0].name);
    ASSERT_EQ(got.shape(), want.shape());
    testing::expect_near(values_of(got), values_of(want), 1e-3, 1e-7, name);
  }
}

// ---- errors ---------------------------------------------------------------------------------

TEST_P(OnnxTest, TruncatedFilesAreFormatErrors) {
  const fs::path good = tmp("mlp.onnx");
  small_mlp().save(good);
  const std::string bytes = small_mlp().bytes();
  for (size_t cut :
       {size_t{0}, size_t{1}, size_t{7}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE(cut);
    const fs::path p = tmp("cut.onnx");
    {
      std::ofstream out(p, std::ios::binary);
      out.write(bytes.data(), static_cast<std::streamsize>(cut));
    }
    expect_error<FormatError>([&] { (void)onnx::load(p.string(), dev()); }, {"ONNX", "cut.onnx"});
  }
  expect_error<FormatError>([&] { (void)onnx::load(tmp("absent.onnx").string(), dev()); },
                            {"cannot open", "absent.onnx"});
  // Garbage that is not a protobuf at all.
  {
    std::ofstream out(tmp("junk.onnx"), std::ios::binary);
    out << std::string(64, '\xff');
  }
  expect_error<FormatError>([&] { (void)onnx::load(tmp("junk.onnx").string(), dev()); },
                            {"junk.onnx"});
  // A truncated tensor file.
  {
    ::onnx::TensorProto t;
    t.set_data_type(::onnx::TensorProto::FLOAT);
    t.add_dims(4);
    t.set_raw_data(std::string(16, '\0'));
    std::string s;
    t.SerializeToString(&s);
    std::ofstream out(tmp("t.pb"), std::ios::binary);
    out.write(s.data(), static_cast<std::streamsize>(s.size() - 3));
  }
  expect_error<FormatError>([&] { (void)onnx::load_tensor(tmp("t.pb").string(), dev()); },
                            {"t.pb"});
  check_small_mlp(good.string(), dev());
}

TEST_P(OnnxTest, UnsupportedOpsNameTheNodeAndOpset) {
  Builder b = small_mlp();
  b.node("FancyOp", {"y"}, {"z"}, "my_fancy_node");
  b.output("z");
  b.save(tmp("fancy.onnx"));
  expect_error<Error>([&] { (void)onnx::load(tmp("fancy.onnx").string(), dev()); },
                      {"FancyOp", "my_fancy_node", "opset 17"});
  Builder d = small_mlp();
  auto* n = d.node("Relu", {"y"}, {"z"}, "custom_relu");
  n->set_domain("com.example");
  d.output("z");
  d.save(tmp("domain.onnx"));
  expect_error<Error>([&] { (void)onnx::load(tmp("domain.onnx").string(), dev()); },
                      {"custom_relu", "com.example"});
  // A bad attribute value is an Error naming the node, at run time.
  Builder p;
  p.input("x", {1, 1, 4, 4});
  auto* pad = p.node("Pad", {"x", "pads"}, {"y"}, "bad_pad");
  auto* a = pad->add_attribute();
  a->set_name("mode");
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s("mirror");
  p.init_i64("pads", {0, 0, 1, 1, 0, 0, 1, 1});
  p.output("y");
  p.save(tmp("badpad.onnx"));
  onnx::Model m = onnx::load(tmp("badpad.onnx").string(), dev());
  expect_error<Error>(
      [&] {
        (void)m.run({{"x", Tensor::zeros({1, 1, 4, 4}, {}, dev())}});
      },
      {"Pad", "bad_pad", "mirror"});
  small_mlp().save(tmp("mlp.onnx"));
  check_small_mlp(tmp("mlp.onnx").string(), dev());
}

TEST_P(OnnxTest, BadInputsNameTheInput) {
  small_mlp().save(tmp("mlp.onnx"));
  onnx::Model m = onnx::load(tmp("mlp.onnx").string(), dev());
  ASSERT_EQ(m.inputs().size(), 1u);  // the initializers are not inputs
  EXPECT_EQ(m.inputs()[0].name, "x");
  EXPECT_EQ(m.inputs()[0].shape, (Shape{2, 4}));
  expect_error<ShapeError>(
      [&] {
        (void)m.run({{"x", Tensor::zeros({3, 4}, {}, dev())}});
      },
      {"'x'", "[2, 4]", "[3, 4]"});
  expect_error<DTypeError>(
      [&] {
        (void)m.run({{"x", Tensor::zeros({2, 4}, dtypes::int32, dev())}});
      },
      {"'x'", "float32", "int32"});
  expect_error<ShapeError>([&] { (void)m.run({}); }, {"'x'", "missing"});
  expect_error<ShapeError>(
      [&] {
        (void)m.run({{"x", Tensor::zeros({2, 4}, {}, dev())}, {"extra", Tensor(1.0)}});
      },
      {"'extra'"});
  check_small_mlp(tmp("mlp.onnx").string(), dev());
}

TEST_P(OnnxTest, ExternalDataIsReadAndAMissingFileIsAFormatError) {
  const std::vector<float> w = {1, 0, -1, 0.5f, 0.5f, 0, -1, 2, 1, 0, 0, 1};
  auto make = [&](const std::string& file) {
    Builder b = small_mlp();
    auto* t = b.g->mutable_initializer(0);  // W
    t->clear_float_data();
    t->set_data_location(::onnx::TensorProto::EXTERNAL);
    auto* loc = t->add_external_data();
    loc->set_key("location");
    loc->set_value(file);
    auto* off = t->add_external_data();
    off->set_key("offset");
    off->set_value("8");
    return b;
  };
  {
    std::ofstream out(tmp("weights.bin"), std::ios::binary);
    out.write("\0\0\0\0\0\0\0\0", 8);
    out.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size() * 4));
  }
  make("weights.bin").save(tmp("ext.onnx"));
  check_small_mlp(tmp("ext.onnx").string(), dev());
  make("gone.bin").save(tmp("ext_missing.onnx"));
  expect_error<FormatError>([&] { (void)onnx::load(tmp("ext_missing.onnx").string(), dev()); },
                            {"external data", "gone.bin", "'W'"});
  check_small_mlp(tmp("ext.onnx").string(), dev());
}

// ---- folding, replay and dynamic sizes ------------------------------------------------------

TEST_P(OnnxTest, ShapeArithmeticFoldsOnTheHost) {
  // y = relu(reshape(x, concat(shape(x)[0], [-1]))): only the relu is a kernel.
  Builder b;
  b.input("x", {2, 3, 4});
  b.node("Shape", {"x"}, {"s"});
  b.init_i64("zero", {0});
  b.init_i64("minus1", {-1});
  auto* g = b.node("Gather", {"s", "zero"}, {"n"});
  set_int_attr(g, "axis", 0);
  auto* c = b.node("Concat", {"n", "minus1"}, {"target"});
  set_int_attr(c, "axis", 0);
  b.node("Reshape", {"x", "target"}, {"flat"});
  b.node("Relu", {"flat"}, {"y"});
  b.output("y");
  b.save(tmp("fold.onnx"));
  onnx::Model m = onnx::load(tmp("fold.onnx").string(), dev());
  const std::vector<double> x = random_values(24, -1, 1, 5);
  const Tensor tx = make_tensor(x, {2, 3, 4}, dtypes::float32, dev());
  tx.realize();
  (void)m.run({{"x", tx}});
  reset_runtime_stats();
  auto out = m.run({{"x", tx}});
  // The relu and the copy that hands the output over; nothing for the shape arithmetic.
  EXPECT_LE(runtime_stats().kernels_run, 2);
  std::vector<double> want;
  for (double v : x) want.push_back(std::max(0.0, static_cast<double>(static_cast<float>(v))));
  testing::expect_values(out.at("y"), {2, 12}, dtypes::float32, want);
}

TEST_P(OnnxTest, RepeatedCallsReplayAndOutputsSurviveTheNextCall) {
  small_mlp().save(tmp("mlp.onnx"));
  onnx::Model m = onnx::load(tmp("mlp.onnx").string(), dev());
  std::vector<std::vector<double>> firsts;
  std::vector<Tensor> kept;
  for (int i = 0; i < 5; i++) {
    const Tensor x = make_tensor(random_values(8, -1, 1, 100 + i), {2, 4}, dtypes::float32, dev());
    kept.push_back(m.run({{"x", x}}).at("y"));
    firsts.push_back(values_of(kept.back()));
  }
  EXPECT_EQ(m.captures(), 1);
  EXPECT_GE(m.replays(), 2);
  for (size_t i = 0; i < kept.size(); i++) EXPECT_EQ(values_of(kept[i]), firsts[i]) << i;
}

TEST_P(OnnxTest, OneCaptureServesEveryBatchSize) {
  // conv 3->4 (3x3, pad 1) -> relu -> global average pool -> flatten -> gemm to 2, batch "N".
  Builder b;
  b.input("x", {-1, 3, 6, 6}, {"N"});
  std::vector<float> w(4 * 3 * 3 * 3), fc(2 * 4);
  for (size_t i = 0; i < w.size(); i++) w[i] = static_cast<float>(std::sin(static_cast<double>(i)));
  for (size_t i = 0; i < fc.size(); i++)
    fc[i] = static_cast<float>(std::cos(static_cast<double>(i)));
  b.init("w", {4, 3, 3, 3}, w);
  b.init("fc", {2, 4}, fc);
  auto* conv = b.node("Conv", {"x", "w"}, {"c"});
  set_ints_attr(conv, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"});
  b.node("GlobalAveragePool", {"r"}, {"p"});
  b.node("Flatten", {"p"}, {"f"});
  auto* gemm = b.node("Gemm", {"f", "fc"}, {"y"});
  set_int_attr(gemm, "transB", 1);
  b.output("y");
  b.save(tmp("dyn.onnx"));
  onnx::Model m = onnx::load(tmp("dyn.onnx").string(), dev());
  ASSERT_EQ(m.inputs()[0].shape, (Shape{-1, 3, 6, 6}));
  ASSERT_EQ(m.inputs()[0].dim_names[0], "N");
  // Per-sample references from batch-1 runs.
  const std::vector<double> all = random_values(8 * 3 * 36, -1, 1, 77);
  std::vector<std::vector<double>> per_sample;
  {
    onnx::Model single = onnx::load(tmp("dyn.onnx").string(), dev());
    for (int s = 0; s < 8; s++) {
      std::vector<double> xs(all.begin() + s * 108, all.begin() + (s + 1) * 108);
      per_sample.push_back(values_of(
          single.run({{"x", make_tensor(xs, {1, 3, 6, 6}, dtypes::float32, dev())}}).at("y")));
    }
  }
  for (int round = 0; round < 2; round++) {
    for (int64_t n : {1, 3, 8}) {
      SCOPED_TRACE(n);
      std::vector<double> xs(all.begin(), all.begin() + n * 108);
      auto out = m.run({{"x", make_tensor(xs, {n, 3, 6, 6}, dtypes::float32, dev())}});
      const Tensor y = out.at("y");
      ASSERT_EQ(y.shape(), (Shape{n, 2}));
      std::vector<double> want;
      for (int64_t s = 0; s < n; s++)
        want.insert(want.end(), per_sample[static_cast<size_t>(s)].begin(),
                    per_sample[static_cast<size_t>(s)].end());
      testing::expect_near(values_of(y), want, 1e-5, 1e-6, "batch " + std::to_string(n));
    }
  }
  EXPECT_EQ(m.captures(), 1) << "one capture should serve batches 1, 3 and 8";
  EXPECT_GE(m.replays(), 3);
  // A batch size used again and again gets its own capture with the size compiled in.
  for (int call = 0; call < 4; call++) {
    std::vector<double> xs(all.begin(), all.begin() + 3 * 108);
    const Tensor y = m.run({{"x", make_tensor(xs, {3, 3, 6, 6}, dtypes::float32, dev())}}).at("y");
    std::vector<double> want;
    for (int s = 0; s < 3; s++)
      want.insert(want.end(), per_sample[static_cast<size_t>(s)].begin(),
                  per_sample[static_cast<size_t>(s)].end());
    testing::expect_near(values_of(y), want, 1e-5, 1e-6, "hot batch 3");
  }
  EXPECT_EQ(m.captures(), 2);
}

VKGRAD_ALL_DEVICES(OnnxTest);

}  // namespace
}  // namespace vkgrad
