// ampbench dot: the exact dot product of two vectors, its correct rounding, and the naive
// sequential result it is compared with. Everything is read and checked before anything is
// printed, so bad input leaves no partial output.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "harness/cli/commands.hpp"
#include "harness/io/files.hpp"
#include "harness/io/json_arrays.hpp"
#include "harness/io/number_text.hpp"
#include "harness/numeric/options.hpp"
#include "reference/exact/dot.hpp"

namespace ampbench::cli {
namespace {

constexpr std::string_view kCommand = "ampbench dot";

struct Vectors {
  std::vector<double> a;
  std::vector<double> b;
  std::uint64_t rounded = 0;  // inputs that were not values of the format
  std::string first_rounded;  // e.g. "a[0] = 0.1 became 0x1.998p-4"
};

// The texts converted to values of f, each rounded to nearest from its exact value.
Vectors to_values(const std::map<std::string, std::vector<std::string>>& texts,
                  const numeric::Format& f) {
  Vectors v;
  for (const auto& [name, out] : {std::pair{"a", &v.a}, std::pair{"b", &v.b}}) {
    const auto& list = texts.at(name);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto parsed = io::parse_number(list[i], f);
      if (!parsed) {
        throw io::InputError(fmt::format(
            "{}[{}]: '{}' is not a number (expected a decimal, a hex float such as 0x1.8p-3, inf, "
            "-inf or nan)",
            name, i, io::excerpt(list[i])));
      }
      out->push_back(parsed->rounded.value);
      if (!parsed->exact && v.rounded++ == 0) {
        v.first_rounded = fmt::format("{}[{}] = {} became {:a}", name, i, io::excerpt(list[i]),
                                      parsed->rounded.value);
      }
    }
  }
  if (v.a.size() != v.b.size()) {
    throw io::InputError(fmt::format(
        "a has {} elements and b has {}: they must have the same length", v.a.size(), v.b.size()));
  }
  return v;
}

std::optional<std::string> read_all(const std::string& path, std::istream& in, std::string& text) {
  try {
    text = path.empty() ? io::read_stream(in, "standard input") : io::read_file(path);
  } catch (const io::FileError& e) {
    return path.empty() ? std::string(e.what()) : fmt::format("--inputs {}", e.what());
  }
  return std::nullopt;
}

std::optional<numeric::Format> format_option(const char* option, const std::string& value,
                                             std::ostream& err) {
  const numeric::FormatSpec spec = numeric::parse_format(value);
  if (!spec.format) err << fmt::format("{}: {}: {}\n", kCommand, option, spec.error);
  return spec.format;
}

std::string hex(double x) {
  return fmt::format("{:a}", x);
}

}  // namespace

int run_dot(const DotArgs& args, std::istream& in, std::ostream& out, std::ostream& err) {
  if (args.format.empty()) {
    err << kCommand << ": --format FORMAT is required\n";
    return kExitUsage;
  }
  const auto format = format_option("--format", args.format, err);
  if (!format) return kExitUsage;
  const auto accumulate =
      format_option("--accumulate", args.accumulate.empty() ? args.format : args.accumulate, err);
  if (!accumulate) return kExitUsage;
  const numeric::RoundingSpec mode_spec = numeric::parse_rounding(args.mode);
  if (!mode_spec.mode) {
    err << kCommand << ": --mode: " << mode_spec.error << '\n';
    return kExitUsage;
  }
  const numeric::Rounding mode = *mode_spec.mode;

  std::string text;
  if (const auto problem = read_all(args.inputs, in, text)) {
    err << kCommand << ": " << *problem << '\n';
    return kExitUsage;
  }
  const std::string source = args.inputs.empty() ? "<stdin>" : args.inputs;
  Vectors v;
  try {
    constexpr std::string_view kNames[] = {"a", "b"};
    v = to_values(io::read_number_arrays(text, kNames), *format);
  } catch (const io::InputError& e) {
    err << fmt::format("{}: {}: {}\n", kCommand, source, e.what());
    return kExitUsage;
  }
  if (v.rounded > 0) {
    err << fmt::format(
        "{}: {}: {} input(s) are not values of {} and were rounded to nearest (first: {})\n",
        kCommand, source, v.rounded, format->name, v.first_rounded);
  }

  numeric::RoundingOptions accumulation;
  accumulation.format = *accumulate;
  accumulation.mode = mode;
  accumulation.seed = args.seed;
  const reference::DotComparison dot = reference::compare_dot(*format, accumulation, v.a, v.b);
  const reference::ExactValue& exact = dot.exact;
  const numeric::Rounded& rounded = dot.rounded;
  const reference::NaiveDot& naive = dot.naive;
  const double naive_reference = dot.naive_reference;
  const auto& ulp_error = dot.naive_ulp_error;

  if (args.json) {
    nlohmann::json events;
    for (int e = 0; e < numeric::kRoundingEventCount; ++e) {
      const auto event = static_cast<numeric::RoundingEvent>(e);
      events[std::string(numeric::event_name(event))] = naive.step_events[event];
    }
    const nlohmann::json result = {
        {"format", format->name},
        {"accumulate", accumulate->name},
        {"mode", numeric::rounding_name(mode)},
        {"length", v.a.size()},
        {"inputs_rounded", v.rounded},
        {"exact", exact.to_decimal()},
        {"exact_hex", exact.to_hex()},
        {"rounded", hex(rounded.value)},
        {"rounded_event", numeric::event_name(rounded.event)},
        {"naive", hex(naive.value)},
        {"naive_reference", hex(naive_reference)},
        {"naive_ulp_error", ulp_error ? nlohmann::json(*ulp_error) : nlohmann::json(nullptr)},
        {"naive_step_events", events}};
    out << result.dump(2) << '\n';
    return kExitOk;
  }
  out << fmt::format("exact            {}\n", exact.to_decimal());
  out << fmt::format("exact (hex)      {}\n", exact.to_hex());
  out << fmt::format("rounded          {}  = {}  ({}, {}, {})\n", hex(rounded.value), rounded.value,
                     format->name, numeric::rounding_name(mode),
                     numeric::event_name(rounded.event));
  out << fmt::format("naive            {}  = {}  (sequential, one rounding per step in {})\n",
                     hex(naive.value), naive.value, accumulate->name);
  out << fmt::format("naive ulp error  {}  (ulps of {} from the exact value rounded to it, {})\n",
                     ulp_error ? fmt::format("{}", *ulp_error) : std::string("n/a (NaN)"),
                     accumulate->name, hex(naive_reference));
  return kExitOk;
}

}  // namespace ampbench::cli
