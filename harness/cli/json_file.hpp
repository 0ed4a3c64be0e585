// Result files of the commands: JSON documents and reports that are always complete on disk.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ampbench::cli {

// Why `path` cannot take a result file (its directory does not exist), or nothing: what commands
// check before any work starts.
std::optional<std::string> json_path_problem(const std::string& path);

// Writes `text` to `path` through a temporary file and a rename, so that the file is always
// complete (the previous one, or the new one); the error message, or nothing.
std::optional<std::string> write_text_file(const std::string& path, const std::string& text);
// The same for a JSON document, indented.
std::optional<std::string> write_json_file(const std::string& path, const nlohmann::json& document);

}  // namespace ampbench::cli
