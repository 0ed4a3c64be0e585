// The one place that reads the command line's values: every numeric option of every command is
// added through add_unsigned, add_integer or add_finite, which read its text strictly (base-10
// digits; a finite binary64; no sign on an unsigned count, no octal or hex, no trailing text,
// nothing that overflows) and check its range; refuse_empty_values then refuses an empty value
// for every option of every command (an empty --out would silently mean the default). A bad value
// stops the parse with an OptionError, "ampbench train: --batch: -1 is not in [1, 65536]", which
// main prints before exiting with kExitUsage: before any work starts.
//
// The limits that depend on the data (a batch no larger than the training split) are checked by
// the commands once the data is known (train::size_problem).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ampbench::cli::options {

// A bad value of an option; what() is the whole message, naming the command and the option.
class OptionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// [least, most].
struct Unsigned {
  std::uint64_t least = 0;
  std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
};
struct Integer {
  std::int64_t least = std::numeric_limits<std::int64_t>::min();
  std::int64_t most = std::numeric_limits<std::int64_t>::max();
};
// A finite binary64 above `least` (or equal to it unless least_open) and below `most` (or equal
// unless most_open); `most` at the largest finite value means no upper limit.
struct Finite {
  double least = -std::numeric_limits<double>::max();
  double most = std::numeric_limits<double>::max();
  bool least_open = false;
  bool most_open = false;
};

// The value of `text`, or std::invalid_argument with what is wrong ("-1 is not in [1, 65536]",
// "'0x40' is not a base-10 integer"). Exposed for the tests.
std::uint64_t parse_unsigned(std::string_view text, const Unsigned& range);
std::int64_t parse_integer(std::string_view text, const Integer& range);
double parse_finite(std::string_view text, const Finite& range);

// Options of `command` that read a value into `target` (shown as UINT, INT or FLOAT in --help, with
// the target's value as the default where the caller asks capture_default_str()).
CLI::Option* add_unsigned(CLI::App& command, const std::string& name, std::uint64_t& target,
                          const Unsigned& range, const std::string& description);
CLI::Option* add_integer(CLI::App& command, const std::string& name, int& target,
                         const Integer& range, const std::string& description);
CLI::Option* add_finite(CLI::App& command, const std::string& name, double& target,
                        const Finite& range, const std::string& description);

// Makes an empty value an error for every option of every subcommand of `app` that takes one.
void refuse_empty_values(CLI::App& app);

}  // namespace ampbench::cli::options
