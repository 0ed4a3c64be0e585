#include "harness/cli/backend_options.hpp"

#include <fmt/format.h>

#include <ostream>

namespace ampbench::cli {

std::optional<runtime::Request> read_backend(std::string_view command, std::string_view value,
                                             std::ostream& err,
                                             std::span<const runtime::Request> allowed) {
  const runtime::ParsedRequest parsed = runtime::parse_request(value, allowed);
  if (!parsed.request) err << fmt::format("{}: {}\n", command, parsed.error);
  return parsed.request;
}

bool refused(std::string_view command, const runtime::Opening& opening, std::ostream& err) {
  if (!opening.refused()) return false;
  err << fmt::format("{}: {}\n", command, opening.refusal);
  return true;
}

}  // namespace ampbench::cli
