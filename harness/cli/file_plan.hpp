// The files of a command, declared before any work starts (docs/results.md, "Files"): every input
// it reads and every output it writes. An output that is an input or another output (the same
// file by inode, or by its resolved path when it does not exist yet; for a history database its
// -wal, -shm and -journal files too), that is a directory or a device, or whose directory is
// missing, is bad input (exit 2), named with the file it collides with. Outputs are then written
// through write_text_file: whole or not at all.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ampbench::cli {

class FilePlan {
 public:
  // `role` names the file in messages: an option ("--data"), or what the file is ("the suite",
  // "the result file").
  void input(std::string role, std::string path);
  void output(std::string role, std::string path);
  // An SQLite database: its journal files (PATH-wal, PATH-shm, PATH-journal) are written too.
  void database(std::string role, std::string path);

  // The first problem as "ROLE PATH: what is wrong", or nothing.
  std::optional<std::string> problem() const;

 private:
  struct File {
    std::string role;
    std::string path;
    bool database = false;
  };
  std::vector<File> inputs_;
  std::vector<File> outputs_;
};

// A distribution spec (--dist) checked, and its tensor file (file:PATH) planned as an input: the
// spec's problem ("--dist: unknown distribution ..."), or nothing.
std::optional<std::string> plan_distribution(FilePlan& files, const std::string& spec);

// io::write_file: `text` to `path` through a temporary and a rename; the problem, or nothing.
std::optional<std::string> write_text_file(const std::string& path, const std::string& text);
// The same for a JSON document, indented.
std::optional<std::string> write_json_file(const std::string& path, const nlohmann::json& document);

}  // namespace ampbench::cli
