#include "harness/cli/policy_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "harness/train/trainer.hpp"

namespace ampbench::cli {

std::optional<std::vector<policy::Policy>> read_policies(std::string_view command,
                                                         const std::vector<std::string>& names,
                                                         std::ostream& err) {
  std::vector<policy::Policy> policies;
  for (const auto& name : names) {
    try {
      policies.push_back(policy::policy_by_name_or_file(name));
    } catch (const policy::PolicyError& e) {
      err << fmt::format("{}: --policy: {}\n", command, e.what());
      return std::nullopt;
    }
  }
  return policies;
}

std::vector<std::string> policy_files(const std::vector<std::string>& names) {
  std::vector<std::string> files;
  for (const auto& name : names) {
    if (policy::find_builtin(name) == nullptr) files.push_back(name);
  }
  return files;
}

bool known_model(std::string_view command, const std::string& model, std::ostream& err) {
  const auto models = train::model_names();
  if (std::find(models.begin(), models.end(), model) != models.end()) return true;
  err << fmt::format("{}: --model: unknown model '{}' (available: {})\n", command, model,
                     fmt::join(models, ", "));
  return false;
}

}  // namespace ampbench::cli
