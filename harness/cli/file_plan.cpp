#include "harness/cli/file_plan.hpp"

#include <fmt/format.h>

#include <utility>

#include "harness/inputs/distributions.hpp"
#include "harness/inputs/tensor_file.hpp"
#include "harness/io/files.hpp"

namespace ampbench::cli {
namespace {

// The files an output writes: itself, and for a database its journals.
std::vector<std::string> written(const std::string& path, bool database) {
  if (!database) return {path};
  return {path, path + "-wal", path + "-shm", path + "-journal"};
}

}  // namespace

void FilePlan::input(std::string role, std::string path) {
  inputs_.push_back({std::move(role), std::move(path)});
}

void FilePlan::output(std::string role, std::string path) {
  outputs_.push_back({std::move(role), std::move(path)});
}

void FilePlan::database(std::string role, std::string path) {
  outputs_.push_back({std::move(role), std::move(path), true});
}

std::optional<std::string> FilePlan::problem() const {
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    const File& out = outputs_[i];
    if (const auto problem = io::output_path_problem(out.path)) {
      return fmt::format("{} {}: {}", out.role, out.path, *problem);
    }
    for (const std::string& file : written(out.path, out.database)) {
      // Which file of the output collides, when it is a journal rather than the file named.
      const std::string which = file == out.path ? "" : fmt::format(" (its journal {})", file);
      for (const File& in : inputs_) {
        if (io::same_file(file, in.path)) {
          return fmt::format("{} {}{}: the same file as {} {}; an output never replaces an input",
                             out.role, out.path, which, in.role, in.path);
        }
      }
      for (std::size_t j = 0; j < i; ++j) {
        for (const std::string& other : written(outputs_[j].path, outputs_[j].database)) {
          if (io::same_file(file, other)) {
            return fmt::format("{} {} and {} {}: the same file; give each output its own",
                               outputs_[j].role, outputs_[j].path, out.role, out.path);
          }
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> write_text_file(const std::string& path, const std::string& text) {
  return io::write_file(path, text);
}

std::optional<std::string> write_json_file(const std::string& path,
                                           const nlohmann::json& document) {
  return io::write_file(path, document.dump(2) + "\n");
}

std::optional<std::string> plan_distribution(FilePlan& files, const std::string& spec) {
  try {
    const inputs::Spec parsed = inputs::parse_spec(spec);
    if (parsed.kind == inputs::Kind::file) {
      files.input("--dist", inputs::tensor_file_path(parsed.path));
    }
  } catch (const inputs::SpecError& e) {
    return fmt::format("--dist: {}", e.what());
  }
  return std::nullopt;
}

}  // namespace ampbench::cli
