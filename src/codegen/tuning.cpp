// codegen: choosing a tuning profile from a backend's table (tuning.hpp).
#include "codegen/tuning.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <vkgrad/error.hpp>

#include "codegen/target.hpp"

namespace vkgrad {
namespace {

// The backends' name prefixes: VKGRAD_TUNING names a row of the backend whose prefix it has.
constexpr const char* kPrefixes[] = {"cpu-", "vulkan-"};

const std::string& forced_name() {
  static const std::string name = [] {
    const char* v = std::getenv("VKGRAD_TUNING");
    return std::string(v ? v : "");
  }();
  return name;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

TuningProfile named(const TuningRow& row) {
  TuningProfile p = row.profile();
  p.name = row.name;
  return p;
}

}  // namespace

TuningProfile choose_tuning(std::span<const TuningRow> table, const Target& target,
                            const std::string& prefix) {
  if (const std::string& forced = forced_name(); !forced.empty()) {
    for (const TuningRow& row : table)
      if (forced == row.name) return named(row);
    bool other_backend = false;
    for (const char* p : kPrefixes) other_backend |= p != prefix && starts_with(forced, p);
    if (!other_backend) {
      std::string names;
      for (const TuningRow& row : table) names += std::string(names.empty() ? "" : ", ") + row.name;
      throw DeviceError(fmt::format("VKGRAD_TUNING={} names no tuning profile; the {}* ones are {}",
                                    forced, prefix, names));
    }
  }
  for (const TuningRow& row : table)
    if (row.matches(target)) return named(row);
  throw InternalError("tuning: no row of the " + prefix + "* table matches the device");
}

std::string describe_tuning(std::span<const TuningRow> table, const TuningProfile& chosen) {
  for (const TuningRow& row : table)
    if (chosen.name == row.name)
      return fmt::format("{} ({}){}", row.name, row.family,
                         forced_name() == row.name ? ", forced by VKGRAD_TUNING" : "");
  return chosen.name;
}

std::string tuning_key(const TuningProfile& t) {
  return fmt::format(
      "{} rows {} panel {} winograd {} {} loop {} fill {} group {} {} stage {} texel {}{} share {}",
      t.name, t.gemm_rows, t.panel_bytes, t.winograd_min_tiles, t.winograd_min_image_tiles,
      t.workgroup_as_loop, t.min_invocations, t.group_reused_below, t.group_below, t.stage_tiles,
      t.texel_loads, t.texel_scalar_loads, t.share_uniform_loads);
}

}  // namespace vkgrad
