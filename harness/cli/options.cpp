#include "harness/cli/options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <sstream>
#include <system_error>

namespace ampbench::cli::options {
namespace {

// The value as the message shows it: long texts cut, so that a pasted megabyte stays one line.
std::string shown(std::string_view text) {
  constexpr std::size_t kShown = 60;
  if (text.size() <= kShown) return std::string(text);
  return fmt::format("{}... ({} characters)", text.substr(0, kShown), text.size());
}

bool all_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

[[noreturn]] void out_of_range(std::string_view text, const std::string& range) {
  throw std::invalid_argument(fmt::format("{} is not in {}", shown(text), range));
}

std::string describe(const Finite& range) {
  constexpr double kLargest = std::numeric_limits<double>::max();
  if (range.most == kLargest && !range.most_open) {
    return fmt::format("a finite number {} {}", range.least_open ? ">" : ">=", range.least);
  }
  return fmt::format("in {}{}, {}{}", range.least_open ? "(" : "[", range.least, range.most,
                     range.most_open ? ")" : "]");
}

// The default --help shows, written as CLI11 writes a bound variable's.
template <class T>
std::string default_text(const T& value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// `parse` applied to the option's text; its complaint becomes the whole message.
template <class T, class Parse>
CLI::Option* add_parsed(CLI::App& command, const std::string& name, T& target,
                        const std::string& type, const std::string& description, Parse parse) {
  const std::string prefix = fmt::format("ampbench {}: {}: ", command.get_name(), name);
  CLI::Option* option = command.add_option_function<std::string>(
      name,
      [&target, prefix, parse](const std::string& text) {
        try {
          target = parse(text);
        } catch (const std::invalid_argument& e) {
          throw OptionError(prefix + e.what());
        }
      },
      description);
  option->type_name(type);
  option->default_function([&target] { return default_text(target); });
  return option;
}

}  // namespace

std::uint64_t parse_unsigned(std::string_view text, const Unsigned& range) {
  const std::string range_text = fmt::format("[{}, {}]", range.least, range.most);
  // A negative count is out of range rather than malformed: say which range.
  if (text.size() > 1 && text[0] == '-' && all_digits(text.substr(1)) &&
      text.find_first_not_of("-0") != std::string_view::npos) {
    out_of_range(text, range_text);
  }
  if (!all_digits(text)) {
    throw std::invalid_argument(
        fmt::format("'{}' is not a base-10 integer (digits only)", shown(text)));
  }
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (error == std::errc::result_out_of_range || value < range.least || value > range.most) {
    out_of_range(text, range_text);
  }
  return value;
}

std::int64_t parse_integer(std::string_view text, const Integer& range) {
  const std::string_view digits = text.starts_with('-') ? text.substr(1) : text;
  if (!all_digits(digits)) {
    throw std::invalid_argument(
        fmt::format("'{}' is not a base-10 integer (digits, a leading - at most)", shown(text)));
  }
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (error == std::errc::result_out_of_range || value < range.least || value > range.most) {
    out_of_range(text, fmt::format("[{}, {}]", range.least, range.most));
  }
  return value;
}

double parse_finite(std::string_view text, const Finite& range) {
  double value = 0;
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::general);
  if (end != text.data() + text.size() ||
      (error != std::errc() && error != std::errc::result_out_of_range)) {
    throw std::invalid_argument(fmt::format("'{}' is not a decimal number", shown(text)));
  }
  if (error == std::errc::result_out_of_range) {
    throw std::invalid_argument(
        fmt::format("{} is beyond the range of a binary64 number", shown(text)));
  }
  if (!std::isfinite(value)) {
    throw std::invalid_argument(fmt::format("{} is not a finite number", shown(text)));
  }
  const bool above = range.least_open ? value > range.least : value >= range.least;
  const bool below = range.most_open ? value < range.most : value <= range.most;
  if (!above || !below) {
    throw std::invalid_argument(fmt::format("{} is not {}", shown(text), describe(range)));
  }
  return value;
}

CLI::Option* add_unsigned(CLI::App& command, const std::string& name, std::uint64_t& target,
                          const Unsigned& range, const std::string& description) {
  return add_parsed(command, name, target, "UINT", description,
                    [range](const std::string& text) { return parse_unsigned(text, range); });
}

CLI::Option* add_integer(CLI::App& command, const std::string& name, int& target,
                         const Integer& range, const std::string& description) {
  const Integer within{std::max<std::int64_t>(range.least, std::numeric_limits<int>::min()),
                       std::min<std::int64_t>(range.most, std::numeric_limits<int>::max())};
  return add_parsed(command, name, target, "INT", description, [within](const std::string& text) {
    return static_cast<int>(parse_integer(text, within));
  });
}

CLI::Option* add_finite(CLI::App& command, const std::string& name, double& target,
                        const Finite& range, const std::string& description) {
  return add_parsed(command, name, target, "FLOAT", description,
                    [range](const std::string& text) { return parse_finite(text, range); });
}

void refuse_empty_values(CLI::App& app) {
  for (CLI::App* command : app.get_subcommands({})) {
    for (CLI::Option* option : command->get_options()) {
      if (option->get_type_size() == 0) continue;  // a flag
      const std::string message =
          fmt::format("ampbench {}: {}: the value is empty (leave the option out for its default)",
                      command->get_name(), option->get_name());
      option->check(CLI::Validator(
          [message](std::string& text) -> std::string {
            if (text.empty()) throw OptionError(message);
            return {};
          },
          ""));
    }
  }
}

}  // namespace ampbench::cli::options
