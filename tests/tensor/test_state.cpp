// tests/tensor: .safetensors files (nn/state.cpp): a round trip of every dtype (size 0 and 0-d
// included) from every device, files written by hand byte for byte, and every kind of malformed
// file, each of which must be a FormatError.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "harness.hpp"

namespace vkgrad::testing {
namespace {

// The files this process's tests wrote.
std::vector<std::string>& written() {
  static std::vector<std::string> paths;
  return paths;
}

std::string temp_path(const std::string& name) {
  std::string path = ::testing::TempDir() + "vkgrad_state_" + name + ".safetensors";
  written().push_back(path);
  return path;
}

// Removes them when the test program ends.
class RemoveWritten : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const std::string& p : written()) std::remove(p.c_str());
    written().clear();
  }
};
const auto* const kRemoveWritten = ::testing::AddGlobalTestEnvironment(new RemoveWritten);

class StateTest : public DeviceTest {};

// A file of: the 8-byte little-endian `header_len` (the header's size unless given), the
// header text, then `data`.
std::string write_file(const std::string& name, const std::string& header,
                       const std::vector<uint8_t>& data = {},
                       std::optional<uint64_t> header_len = {}) {
  const std::string path = temp_path(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const uint64_t n = header_len.value_or(header.size());
  for (int b = 0; b < 8; ++b) out.put(static_cast<char>((n >> (8 * b)) & 0xff));
  out << header;
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  return path;
}

std::string write_raw(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = temp_path(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::vector<uint8_t> read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::vector<DType> kAllDTypes = {
    dtypes::float64, dtypes::float32, dtypes::float16, dtypes::bfloat16, dtypes::int64,
    dtypes::int32,   dtypes::int16,   dtypes::int8,    dtypes::uint64,   dtypes::uint32,
    dtypes::uint16,  dtypes::uint8,   dtypes::bool_};

std::vector<double> values_for(DType dt, int64_t n, uint64_t seed) {
  if (dt == dtypes::bool_) return random_ints(n, 0, 1, seed);
  if (dt.is_float()) {
    std::vector<double> v = random_values(n, -100, 100, seed);
    for (double& x : v) x = round_to(x, dt);
    return v;
  }
  if (dt.is_unsigned()) return random_ints(n, 0, 250, seed);
  return random_ints(n, -120, 120, seed);
}

// ---- round trips --------------------------------------------------------------------------------

TEST_P(StateTest, RoundTripEveryDType) {
  nn::StateDict saved;
  uint64_t seed = 40;
  for (DType dt : kAllDTypes) {
    saved.emplace("t_" + dt.name(), make_tensor(values_for(dt, 12, seed++), {3, 4}, dt, dev()));
    saved.emplace("e_" + dt.name(), Tensor::zeros({2, 0, 3}, dt, dev()));
    saved.emplace("s_" + dt.name(), make_tensor(values_for(dt, 1, seed++), {}, dt, dev()));
  }
  const std::string path = temp_path("all_" + GetParam());
  nn::state::safe_save(saved, path, {{"format", "pt"}, {"note", "vkgrad"}});
  const nn::StateDict loaded = nn::state::safe_load(path);
  ASSERT_EQ(loaded.size(), saved.size());
  for (const auto& [name, t] : saved) {
    SCOPED_TRACE(name);
    auto it = loaded.find(name);
    ASSERT_NE(it, loaded.end());
    EXPECT_EQ(it->second.device(), default_device());
    EXPECT_EQ(it->second.dtype(), t.dtype());
    EXPECT_EQ(it->second.shape(), t.shape());
    EXPECT_EQ(it->second.to_bytes(), t.to_bytes());
  }
  const auto meta = nn::state::safe_load_metadata(path);
  EXPECT_EQ(meta.at("format"), "pt");
  EXPECT_EQ(meta.at("note"), "vkgrad");
  std::remove(path.c_str());
}

TEST_P(StateTest, SavesViewsAndLazyTensors) {
  const Tensor base = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3}, dtypes::float32, dev());
  const std::string path = temp_path("views_" + GetParam());
  nn::state::safe_save({{"t", base.T()}, {"sum", base.add(1.0)}, {"slice", base.slice(1, 1, 3)}},
                       path);
  const nn::StateDict loaded = nn::state::safe_load(path);
  expect_values(loaded.at("t"), {3, 2}, dtypes::float32, {1, 4, 2, 5, 3, 6});
  expect_values(loaded.at("sum"), {2, 3}, dtypes::float32, {2, 3, 4, 5, 6, 7});
  expect_values(loaded.at("slice"), {2, 2}, dtypes::float32, {2, 3, 5, 6});
  std::remove(path.c_str());
}

TEST_P(StateTest, ModuleThroughAFile) {
  const std::string before = default_device();
  set_default_device(dev());
  nn::Linear a(3, 2), b(3, 2);
  const std::string path = temp_path("linear_" + GetParam());
  nn::state::safe_save(a.state_dict(), path);
  b.load_state_dict(nn::state::safe_load(path));
  set_default_device(before);
  EXPECT_EQ(values_of(b.weight), values_of(a.weight));
  EXPECT_EQ(values_of(*b.bias), values_of(*a.bias));
  std::remove(path.c_str());
}

VKGRAD_ALL_DEVICES(StateTest);

// ---- the exact bytes --------------------------------------------------------------------------

TEST(Safetensors, WritesTheReferenceLayout) {
  const std::string path = temp_path("layout");
  nn::state::safe_save({{"b", Tensor::from_vector<int16_t>({1, -2}, {2}, {}, "CPU")},
                        {"a", Tensor::from_vector<uint8_t>({7}, {1, 1}, {}, "CPU")}},
                       path);
  const std::vector<uint8_t> bytes = read_raw(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int b = 7; b >= 0; --b) n = (n << 8) | bytes[b];
  EXPECT_EQ(n % 8, 0u);  // padded so the data is aligned
  ASSERT_EQ(bytes.size(), 8 + n + 5);
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(n));
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            R"({"a":{"data_offsets":[0,1],"dtype":"U8","shape":[1,1]},)"
            R"("b":{"data_offsets":[1,5],"dtype":"I16","shape":[2]}})");
  EXPECT_EQ(std::vector<uint8_t>(bytes.end() - 5, bytes.end()),
            (std::vector<uint8_t>{7, 1, 0, 0xfe, 0xff}));
  std::remove(path.c_str());
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  // Tensors listed out of data order, padding spaces after the JSON, metadata.
  const std::vector<uint8_t> data = {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 1, 0, 1};
  const std::string path = write_file(
      "hand",
      R"({"flags": {"dtype": "BOOL", "shape": [3], "data_offsets": [8, 11]},)"
      R"( "x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
      R"( "__metadata__": {"k": "v"}, "empty": {"dtype": "I64", "shape": [0, 4], "data_offsets": [11, 11]}}   )",
      data);
  const nn::StateDict t = nn::state::safe_load(path);
  ASSERT_EQ(t.size(), 3u);
  expect_values(t.at("x"), {2}, dtypes::float32, {1, 2});
  expect_values(t.at("flags"), {3}, dtypes::bool_, {1, 0, 1});
  EXPECT_EQ(t.at("empty").shape(), (Shape{0, 4}));
  EXPECT_EQ(t.at("empty").dtype(), dtypes::int64);
  EXPECT_EQ(nn::state::safe_load_metadata(path).at("k"), "v");
  // A file with nothing in it but an empty header is fine too.
  EXPECT_TRUE(nn::state::safe_load(write_file("empty_header", "{}")).empty());
}

// ---- malformed files ----------------------------------------------------------------------------

void expect_format_error(const std::string& path, const std::string& needle) {
  try {
    nn::state::safe_load(path);
    ADD_FAILURE() << "no FormatError for " << path << " (expected one mentioning " << needle << ")";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type for " << path << ": " << e.what();
  }
}

std::string one(const std::string& entry) { return R"({"x": )" + entry + "}"; }

TEST(Safetensors, TruncatedFiles) {
  expect_format_error(write_raw("zero_bytes", {}), "8-byte");
  expect_format_error(write_raw("five_bytes", {1, 0, 0, 0, 0}), "8-byte");
  expect_format_error(write_file("short_header", "{}", {}, 100), "past the end");
  expect_format_error(write_file("absurd_header", "{}", {}, UINT64_MAX), "absurd");
  expect_format_error(write_file("huge_header", "{}", {}, 200'000'000), "absurd");
  // The data is shorter than the header says.
  expect_format_error(
      write_file("short_data", one(R"({"dtype": "F32", "shape": [4], "data_offsets": [0, 16]})"),
                 std::vector<uint8_t>(12)),
      "past the data");
}

TEST(Safetensors, HeaderNotAJsonObject) {
  expect_format_error(write_file("not_json", "{\"x\": "), "not JSON");
  expect_format_error(write_file("zero_len", ""), "not JSON");
  expect_format_error(write_file("binary", std::string("\xff\xfe\x00\x01", 4)), "not JSON");
  expect_format_error(write_file("array", "[1, 2]"), "not a JSON object");
  expect_format_error(write_file("number", "42"), "not a JSON object");
}

TEST(Safetensors, BadEntries) {
  expect_format_error(write_file("entry_number", one("3")), "not a JSON object");
  expect_format_error(write_file("no_dtype", one(R"({"shape": [], "data_offsets": [0, 4]})"),
                                 std::vector<uint8_t>(4)),
                      "dtype");
  expect_format_error(write_file("no_shape", one(R"({"dtype": "F32", "data_offsets": [0, 4]})"),
                                 std::vector<uint8_t>(4)),
                      "shape");
  expect_format_error(write_file("no_offsets", one(R"({"dtype": "F32", "shape": []})")),
                      "data_offsets");
  expect_format_error(
      write_file("dtype_number", one(R"({"dtype": 1, "shape": [], "data_offsets": [0, 4]})"),
                 std::vector<uint8_t>(4)),
      "dtype");
  expect_format_error(
      write_file("dtype_unknown",
                 one(R"({"dtype": "F8_E4M3", "shape": [], "data_offsets": [0, 1]})"),
                 std::vector<uint8_t>(1)),
      "F8_E4M3");
  expect_format_error(
      write_file("dtype_lower", one(R"({"dtype": "f32", "shape": [], "data_offsets": [0, 4]})"),
                 std::vector<uint8_t>(4)),
      "f32");
  for (const char* shape : {R"("4")", "[-1]", "[1.5]", R"(["2"])", "[[2]]", "{}"})
    expect_format_error(write_file("bad_shape",
                                   one(std::string(R"({"dtype": "U8", "shape": )") + shape +
                                       R"(, "data_offsets": [0, 2]})"),
                                   std::vector<uint8_t>(2)),
                        "shape");
  for (const char* offsets : {"[0]", "[0, 4, 8]", "[-4, 0]", "[0.0, 4.0]", R"(["0", "4"])", "4"})
    expect_format_error(
        write_file(
            "bad_offsets",
            one(std::string(R"({"dtype": "F32", "shape": [1], "data_offsets": )") + offsets + "}"),
            std::vector<uint8_t>(8)),
        "data_offsets");
  expect_format_error(write_file("bad_metadata", R"({"__metadata__": [1]})"), "__metadata__");
  expect_format_error(write_file("bad_metadata_value", R"({"__metadata__": {"k": 1}})"),
                      "metadata");
}

TEST(Safetensors, BadOffsets) {
  const std::vector<uint8_t> data(16);
  expect_format_error(
      write_file("backwards", one(R"({"dtype": "F32", "shape": [0], "data_offsets": [8, 4]})"),
                 data),
      "backwards");
  expect_format_error(
      write_file("past_end", one(R"({"dtype": "F32", "shape": [2], "data_offsets": [12, 20]})"),
                 data),
      "past the data");
  expect_format_error(
      write_file(
          "far_past_end",
          one(R"({"dtype": "U8", "shape": [1], "data_offsets": [18446744073709551614, 18446744073709551615]})"),
          data),
      "past the data");
  expect_format_error(
      write_file("wrong_size", one(R"({"dtype": "F32", "shape": [3], "data_offsets": [0, 8]})"),
                 data),
      "needs 12");
  expect_format_error(
      write_file("wrong_size_f16",
                 one(R"({"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 4]})"), data),
      "needs 8");
  expect_format_error(
      write_file(
          "huge_shape",
          one(R"({"dtype": "F64", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]})"),
          data),
      "too large");
  expect_format_error(
      write_file("overlap",
                 R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                 R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                 data),
      "overlap");
  expect_format_error(
      write_file("bool_byte", one(R"({"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]})"),
                 std::vector<uint8_t>{1, 2}),
      "BOOL");
}

TEST(Safetensors, MissingFileAndUnwritablePath) {
  try {
    nn::state::safe_load(temp_path("does_not_exist_at_all"));
    ADD_FAILURE() << "no error";
  } catch (const FormatError&) {
    ADD_FAILURE() << "a missing file is not a malformed one";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does_not_exist_at_all"), std::string::npos);
  }
  EXPECT_THROW(nn::state::safe_save({{"x", Tensor::zeros({1}, {}, "CPU")}},
                                    "/nonexistent_dir/x.safetensors"),
               Error);
  EXPECT_THROW(nn::state::safe_save({{"__metadata__", Tensor::zeros({1}, {}, "CPU")}},
                                    temp_path("reserved")),
               Error);
}

}  // namespace
}  // namespace vkgrad::testing
