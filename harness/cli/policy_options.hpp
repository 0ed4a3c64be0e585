// The options several commands read the same way: a list of policies (--policy), and the model
// of the training commands (--model). Each writes the message on `err` and returns nothing when
// the input is bad; the command then exits with kExitUsage before any work.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "harness/policy/policy.hpp"

namespace ampbench::cli {

// Built-in names or FILE.toml, as policy::policy_by_name_or_file reads them.
std::optional<std::vector<policy::Policy>> read_policies(std::string_view command,
                                                         const std::vector<std::string>& names,
                                                         std::ostream& err);

// The names of `names` that are policy files (not built-in names): the files they read.
std::vector<std::string> policy_files(const std::vector<std::string>& names);

// Whether `model` is one train::model_names() knows.
bool known_model(std::string_view command, const std::string& model, std::ostream& err);

}  // namespace ampbench::cli
