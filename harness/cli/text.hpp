// Small text helpers the line-oriented commands share.
#pragma once

#include <string_view>

namespace ampbench::cli {

// `s` without leading and trailing blanks (spaces, tabs, carriage returns).
inline std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

}  // namespace ampbench::cli
