#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/cli/json_file.hpp"
#include "harness/cli/policy_options.hpp"
#include "harness/cli/text.hpp"
#include "harness/profile/chrome_trace.hpp"
#include "harness/train/profile_record.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench profile";

}  // namespace

int run_profile(const ProfileArgs& args, std::ostream& out, std::ostream& err) {
  // ---- everything is checked before any work starts -----------------------------------------
  if (args.backend == "cuda") {
    err << fmt::format(
        "{}: --backend cuda: profiling on the GPU (CUPTI and NVTX) is not implemented yet; "
        "--backend cpu times the CPU emulator phase by phase\n",
        kCommand);
    return kExitUsage;
  }
  if (args.backend != "cpu") {
    err << fmt::format("{}: --backend: unknown backend '{}' (available: cpu)\n", kCommand,
                       args.backend);
    return kExitUsage;
  }
  train::TrainConfig config;
  if (!known_model(kCommand, args.model, err)) return kExitUsage;
  config.model = args.model;
  auto policies = read_policies(kCommand, split_list(args.policies), err);
  if (!policies) return kExitUsage;
  config.policies = std::move(*policies);
  if (args.steps == 0 || args.batch == 0) {
    err << fmt::format("{}: --steps and --batch must be positive\n", kCommand);
    return kExitUsage;
  }
  config.steps = args.steps;
  config.batch = args.batch;
  config.seed = args.seed;
  for (const auto* path : {&args.trace, &args.json}) {
    if (path->empty()) continue;
    if (auto problem = json_path_problem(*path)) {
      err << fmt::format("{}: --{} {}: {}\n", kCommand, path == &args.trace ? "trace" : "json",
                         *path, *problem);
      return kExitUsage;
    }
  }

  // ---- the run ----------------------------------------------------------------------------------
  const train::Dataset data = train::default_dataset(config.model, config.seed);
  out << fmt::format(
      "profile {} on the CPU backend: {} warm-up and {} timed steps of {} samples per policy\n"
      "(host timers around each phase; the times are the CPU emulator's, not a GPU's)\n\n",
      config.model, args.warmup, config.steps, config.batch);
  out.flush();
  const train::ProfileResult result = train::profile_steps(config, data, args.warmup);

  out << fmt::format("{:<12}{:>10}{:>10}{:>10}{:>9}", "policy", "step_ms", "min_ms", "max_ms",
                     "vs_fp32");
  for (const char* phase : train::kProfilePhases) out << fmt::format("{:>10}", phase);
  out << "\n";
  const std::vector<double> ratios = train::vs_fp32(result);
  profile::Trace combined;
  for (std::size_t i = 0; i < result.policies.size(); ++i) {
    const train::PolicyProfile& p = result.policies[i];
    const train::StepTimes t = train::step_times(p.step_ns);
    out << fmt::format("{:<12}{:>10.3f}{:>10.3f}{:>10.3f}{:>9}", p.policy, t.median_ms, t.min_ms,
                       t.max_ms, ratios[i] > 0 ? fmt::format("{:.2f}x", ratios[i]) : "-");
    for (const char* phase : train::kProfilePhases) {
      out << fmt::format("{:>9.1f}%", 100 * train::phase_share(p, phase));
    }
    out << "\n";
    // One trace for all policies: each policy's phases on a host thread of its own, under a range
    // that names the policy.
    const auto thread = static_cast<std::uint32_t>(i + 1);
    if (!p.trace.ranges.empty()) {
      profile::RangeEvent whole = p.trace.ranges.front();
      whole.name = "policy " + p.policy;
      whole.depth = 0;
      for (const auto& range : p.trace.ranges) {
        whole.start_ns = std::min(whole.start_ns, range.start_ns);
        whole.end_ns = std::max(whole.end_ns, range.end_ns);
      }
      whole.thread_id = thread;
      combined.ranges.push_back(std::move(whole));
    }
    for (auto range : p.trace.ranges) {
      range.thread_id = thread;
      ++range.depth;
      combined.ranges.push_back(std::move(range));
    }
  }
  bool verdicts = false;
  for (std::size_t i = 0; i < result.policies.size(); ++i) {
    if (const auto v = train::verdict(result, i)) {
      out << (verdicts ? "" : "\n") << v->text << "\n";
      verdicts = true;
    }
  }
  out << "\nstep_ms: median wall time of a step (min and max beside it); vs_fp32: median step "
         "time over fp32's; phases:\nshare of the step time. Peak device memory, kernel counts, "
         "launch overhead, cast and Tensor Core\nshares need the GPU (--backend cuda, to come).\n";
  if (!args.trace.empty()) {
    try {
      profile::write_chrome_trace(combined, args.trace);
    } catch (const std::exception& e) {
      err << fmt::format("{}: --trace {}: {}\n", kCommand, args.trace, e.what());
      return kExitUsage;
    }
  }
  if (!args.json.empty()) {
    if (auto problem = write_json_file(args.json, train::to_json(result))) {
      err << fmt::format("{}: --json {}: {}\n", kCommand, args.json, *problem);
      return kExitUsage;
    }
  }
  return kExitOk;
}

}  // namespace ampbench::cli
