#include <fmt/format.h>

#include <cerrno>
#include <istream>
#include <ostream>
#include <string>
#include <string_view>

#include "harness/cli/commands.hpp"
#include "harness/cli/text.hpp"
#include "harness/io/files.hpp"
#include "harness/io/number_text.hpp"
#include "harness/numeric/options.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::cli {

int run_round(const RoundArgs& args, std::istream& in, std::ostream& out, std::ostream& err) {
  if (args.to.empty()) {
    err << "ampbench round: --to FORMAT is required\n";
    return kExitUsage;
  }
  numeric::FormatSpec spec = numeric::parse_format(args.to);
  if (!spec.format && numeric::scale_format_from_name(args.to)) {
    err << fmt::format(
        "ampbench round: --to: {} is a scale format (unsigned, no sign bit); round takes element "
        "formats ({}); 'ampbench formats' lists the scale formats' values\n",
        args.to, numeric::format_names());
    return kExitUsage;
  }
  if (!spec.format) {
    err << "ampbench round: --to: " << spec.error << '\n';
    return kExitUsage;
  }
  numeric::RoundingOptions options;
  options.format = *spec.format;
  options.seed = args.seed;
  const numeric::RoundingSpec mode = numeric::parse_rounding(args.mode);
  if (!mode.mode) {
    err << "ampbench round: --mode: " << mode.error << '\n';
    return kExitUsage;
  }
  options.mode = *mode.mode;
  if (!args.subnormals.empty()) options.format.subnormals = args.subnormals == "on";
  if (!args.overflow.empty()) {
    options.format.overflow =
        args.overflow == "saturate" ? numeric::Overflow::saturate : numeric::Overflow::infinity;
  }
  const numeric::Validation validation = numeric::validate(options);
  for (const auto& message : validation.errors) {
    err << "ampbench round: --to " << args.to << ": " << message << '\n';
  }
  if (!validation.ok()) return kExitUsage;
  for (const auto& message : validation.warnings) {
    err << "ampbench round: warning: " << message << '\n';
  }

  const numeric::Format& f = options.format;
  const int hex_digits = (f.total_bits() + 3) / 4;
  std::string line;
  std::uint64_t line_number = 0;
  std::uint64_t value_index = 0;  // stochastic draw index: the n-th value read
  errno = 0;
  // Until the input ends, or the output is gone (a reader that went away): a filter stops then.
  while (out && std::getline(in, line)) {
    ++line_number;
    const std::string_view text = trim(line);
    if (text.empty() || text.front() == '#') continue;
    const std::uint32_t random = numeric::is_stochastic(options.mode)
                                     ? numeric::stochastic_draw(options.seed, value_index)
                                     : 0u;
    // Rounded from the text's exact value, never from the binary64 nearest to it: 1e400 is
    // beyond every format but not infinite, 0x1p-1080 is tiny but not zero.
    const std::optional<io::ParsedNumber> x = io::parse_number(text, f, options.mode, random);
    if (!x) {
      out.flush();
      err << fmt::format(
          "ampbench round: line {}: '{}' is not a number (expected decimal, hex "
          "float such as 0x1.8p-24, inf, -inf or nan)\n",
          line_number, io::excerpt(text));
      return kExitUsage;
    }
    ++value_index;
    const numeric::Rounded& r = x->rounded;
    out << fmt::format("{}\t{:a}\t0x{:0{}x}\t{}\n", text, r.value, r.bits, hex_digits,
                       numeric::event_name(r.event));
  }
  if (const auto problem = read_problem(in)) {
    out.flush();
    err << fmt::format("ampbench round: {}\n", *problem);
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace ampbench::cli
