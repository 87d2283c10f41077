// tools/cli: what the commands share — the usage text, the bench and tune options and their
// parser (options.cpp).
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/suite.hpp"

namespace vkgrad {

// The usage text (main.cpp).
void print_usage(std::FILE* to);
// The message and the usage on stderr; returns the exit status 2.
int usage_error(const std::string& message);
std::string upper(std::string s);

struct CliOptions {
  bench::Options bench;
  std::string json_path;
  int beam = -1;                         // --beam N; -1: not given
  double seconds = 0;                    // tune --seconds S; 0: not given
  std::string export_path, import_path;  // tune --export F, --import F
};

// `cmd`'s options (--device, --only, --beam, --json for bench, --seconds, --export and --import
// for tune); returns an exit status when they are wrong or help was asked for.
std::optional<int> parse_options(std::string_view cmd, const std::vector<std::string_view>& args,
                                 CliOptions& out);

}  // namespace vkgrad
