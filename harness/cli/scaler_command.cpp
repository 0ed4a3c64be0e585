#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <istream>
#include <limits>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/cli/text.hpp"
#include "harness/io/files.hpp"
#include "harness/train/scaler.hpp"

namespace ampbench::cli {
namespace {

// The gradient of one step: the loss 1 scaled by the current scale when the step is clean, as a
// backward pass would give it, or the inf or NaN an overflow would.
std::optional<float> step_gradient(std::string_view word, const train::LossScaler& scaler) {
  if (word == "ok") return scaler.scale_loss(1.0f);
  if (word == "inf") return std::numeric_limits<float>::infinity();
  if (word == "nan") return std::numeric_limits<float>::quiet_NaN();
  return std::nullopt;
}

// "growth_factor" -> "--growth-factor", "collapse.window" -> "--collapse-window".
std::string option_flag(std::string member) {
  std::replace(member.begin(), member.end(), '_', '-');
  std::replace(member.begin(), member.end(), '.', '-');
  return "--" + member;
}

void print_summary(const train::LossScaler& scaler, std::ostream& err) {
  constexpr std::size_t kListed = 20;
  const auto& skipped = scaler.skipped_steps();
  if (!skipped.empty()) {
    const std::size_t listed = std::min(skipped.size(), kListed);
    err << fmt::format("ampbench scaler: {} of {} steps skipped (steps {}{})\n", skipped.size(),
                       scaler.steps(), fmt::join(std::span(skipped).first(listed), ", "),
                       skipped.size() > listed ? ", ..." : "");
  }
  for (const auto& warning : scaler.collapse_warnings()) {
    err << "ampbench scaler: warning: " << train::describe(warning, *scaler.collapse_detection())
        << '\n';
  }
}

}  // namespace

int run_scaler(const ScalerArgs& args, std::istream& in, std::ostream& out, std::ostream& err) {
  const train::LossScalerOptions options{
      .init_scale = args.init_scale,
      .growth_factor = args.growth_factor,
      .backoff_factor = args.backoff_factor,
      .growth_interval = args.growth_interval,
      .min_scale = args.min_scale,
      .collapse = train::CollapseDetection{args.collapse_backoffs, args.collapse_window}};
  if (const auto error = train::validate(options)) {
    err << fmt::format("ampbench scaler: {}: {}\n", option_flag(error->option), error->message);
    return kExitUsage;
  }
  train::LossScaler scaler(options);
  const auto scale_text = [&](float scale) {
    return args.hex ? fmt::format("{:a}", scale) : fmt::format("{}", scale);
  };

  out << "# step\tfound_inf\tscale\tskipped\tscale_after\tgrowth_tracker\n";
  std::string line;
  std::uint64_t line_number = 0;
  errno = 0;
  // Until the input ends, or the output is gone (a reader that went away): a filter stops then.
  while (out && std::getline(in, line)) {
    ++line_number;
    const std::string_view text = trim(line);
    if (text.empty() || text.front() == '#') continue;
    const std::optional<float> gradient = step_gradient(text, scaler);
    if (!gradient) {
      out.flush();
      err << fmt::format("ampbench scaler: line {}: expected ok, inf or nan, got '{}'\n",
                         line_number, io::excerpt(text));
      return kExitUsage;
    }
    const std::int64_t step = scaler.steps();
    const float scale = scaler.scale();
    std::vector<float> values = {*gradient};
    const std::vector<std::span<float>> grads = {values};
    const bool taken = scaler.step(grads, [] {});
    const bool found_inf = scaler.found_inf();
    scaler.update();
    out << fmt::format("{}\t{:d}\t{}\t{:d}\t{}\t{}\n", step, found_inf, scale_text(scale), !taken,
                       scale_text(scaler.scale()), scaler.growth_tracker());
  }
  if (const auto problem = read_problem(in)) {
    out.flush();
    err << fmt::format("ampbench scaler: {}\n", *problem);
    return kExitUsage;
  }
  out.flush();
  print_summary(scaler, err);
  return kExitOk;
}

}  // namespace ampbench::cli
