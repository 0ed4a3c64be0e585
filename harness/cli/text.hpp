// Small text helpers the line-oriented commands share.
#pragma once

#include <cerrno>
#include <cstring>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ampbench::cli {

// `s` without leading and trailing blanks (spaces, tabs, carriage returns).
inline std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// Right after a loop that read `in` line by line: why it stopped before the end (a read error, as
// a directory on standard input gives), or nothing.
inline std::optional<std::string> read_problem(const std::istream& in) {
  if (!in.bad()) return std::nullopt;
  return std::string("standard input: cannot read: ") +
         (errno != 0 ? std::strerror(errno) : "a read error");
}

// The items of a comma-separated list ("a,b" -> a, b; "" -> one empty item).
inline std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    items.push_back(list.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

}  // namespace ampbench::cli
