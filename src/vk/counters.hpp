// vk: the process-wide event counts behind vk::counters() (vk.hpp). Internal.
#pragma once

#include <atomic>
#include <cstdint>

namespace vkgrad::vk {

struct AtomicCounters {
  std::atomic<int64_t> spirv_compiled{0}, spirv_cache_hits{0};
  std::atomic<int64_t> pipelines_created{0}, pipeline_cache_hits{0};
  std::atomic<int64_t> dispatches{0}, barriers{0}, submits{0};
  std::atomic<int64_t> graph_records{0}, graph_rerecords{0}, descriptor_writes{0};
};
extern AtomicCounters g_counters;

}  // namespace vkgrad::vk
