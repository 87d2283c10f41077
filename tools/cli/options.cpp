// tools/cli: the bench and tune options (see options.hpp).
#include "cli/options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace vkgrad {

int usage_error(const std::string& message) {
  fmt::print(stderr, "vkgrad: {}\n\n", message);
  print_usage(stderr);
  return 2;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::optional<int> parse_options(std::string_view cmd, const std::vector<std::string_view>& args,
                                 CliOptions& out) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") {
      print_usage(stdout);
      return 0;
    }
    // --name VALUE or --name=VALUE
    std::string_view name = arg.substr(0, arg.find('='));
    std::optional<std::string> value;
    if (name != "--device" && name != "--only" && name != "--beam" &&
        !(name == "--json" && cmd == "bench") &&
        !((name == "--seconds" || name == "--export" || name == "--import") && cmd == "tune"))
      return usage_error(fmt::format("{}: unknown option '{}'", cmd, arg));
    if (name.size() < arg.size())
      value = std::string(arg.substr(name.size() + 1));
    else if (i + 1 < args.size())
      value = std::string(args[++i]);
    if (!value || value->empty())
      return usage_error(fmt::format("{}: {} needs a value", cmd, name));
    if (name == "--device") {
      out.bench.device = upper(*value);
    } else if (name == "--json") {
      out.json_path = *value;
    } else if (name == "--export") {
      out.export_path = *value;
    } else if (name == "--import") {
      out.import_path = *value;
    } else if (name == "--beam") {
      char* end = nullptr;
      const long n = std::strtol(value->c_str(), &end, 10);
      if (*end != '\0' || n < 1 || n > 64)
        return usage_error(
            fmt::format("{}: --beam takes a width from 1 to 64, not '{}'", cmd, *value));
      out.beam = static_cast<int>(n);
    } else if (name == "--seconds") {
      char* end = nullptr;
      const double s = std::strtod(value->c_str(), &end);
      if (*end != '\0' || !(s > 0) || s > 1e7)
        return usage_error(
            fmt::format("{}: --seconds takes a positive number of seconds, not '{}'", cmd, *value));
      out.seconds = s;
    } else {
      const std::vector<std::string>& known = bench::case_names();
      size_t start = 0;
      while (start <= value->size()) {
        size_t comma = std::min(value->find(',', start), value->size());
        std::string c = value->substr(start, comma - start);
        start = comma + 1;
        if (c.empty()) continue;
        if (std::find(known.begin(), known.end(), c) == known.end())
          return usage_error(fmt::format("{}: unknown case '{}'", cmd, c));
        out.bench.only.push_back(c);
      }
      if (out.bench.only.empty())
        return usage_error(fmt::format("{}: --only needs at least one case", cmd));
    }
  }
  return std::nullopt;
}

}  // namespace vkgrad
