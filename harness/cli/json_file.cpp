#include "harness/cli/json_file.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <system_error>

namespace ampbench::cli {

std::optional<std::string> json_path_problem(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent)) {
    return fmt::format("directory {} does not exist", parent.string());
  }
  return std::nullopt;
}

std::optional<std::string> write_text_file(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << text;
    if (!file) return fmt::format("cannot write {}", temporary);
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::error_code ignored;  // the rename's error is the one to report
    std::filesystem::remove(temporary, ignored);
    return fmt::format("cannot rename {} to it ({})", temporary, ec.message());
  }
  return std::nullopt;
}

std::optional<std::string> write_json_file(const std::string& path,
                                           const nlohmann::json& document) {
  return write_text_file(path, document.dump(2) + "\n");
}

}  // namespace ampbench::cli
