// A file for a test in the shared temporary directory, named for this process so that concurrent
// runs of a test (two builds' ctest at once) do not write each other's files, and removed when the
// test program ends.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace ampbench::test {

inline std::filesystem::path temp_file(const std::string& name, const std::string& contents) {
  struct Written {
    std::vector<std::filesystem::path> paths;
    ~Written() {
      std::error_code ignored;
      for (const auto& p : paths) std::filesystem::remove(p, ignored);
    }
  };
  static Written written;
  const auto path =
      std::filesystem::path(testing::TempDir()) / fmt::format("ampbench-{}-{}", ::getpid(), name);
  std::ofstream(path, std::ios::binary) << contents;
  written.paths.push_back(path);
  return path;
}

}  // namespace ampbench::test
