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
#include "harness/train/trainer.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench profile";
const char* const kPhases[] = {"forward", "backward", "unscale", "clip", "optimizer", "update"};

struct StepTimes {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
};

StepTimes step_times(std::vector<std::uint64_t> ns) {
  std::sort(ns.begin(), ns.end());
  if (ns.empty()) return {};
  return {static_cast<double>(ns[(ns.size() - 1) / 2]) * 1e-6,
          static_cast<double>(ns.front()) * 1e-6, static_cast<double>(ns.back()) * 1e-6};
}

// The phase's share of the policy's step time (all instances over all steps); 0 when absent.
double share(const train::PolicyProfile& p, const std::string& phase) {
  std::uint64_t phase_ns = 0, step_ns = 0;
  for (const auto& r : p.attribution.ranges) {
    if (r.name == phase) phase_ns = r.wall_ns;
    if (r.name == "step") step_ns = r.wall_ns;
  }
  return step_ns == 0 ? 0.0 : static_cast<double>(phase_ns) / static_cast<double>(step_ns);
}

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
  for (const char* phase : kPhases) out << fmt::format("{:>10}", phase);
  out << "\n";
  double baseline = 0;  // fp32's median step; 0 when fp32 was not profiled
  for (const auto& p : result.policies) {
    if (p.policy == "fp32") baseline = step_times(p.step_ns).median_ms;
  }
  nlohmann::json runs = nlohmann::json::array();
  profile::Trace combined;
  for (const auto& p : result.policies) {
    const StepTimes t = step_times(p.step_ns);
    const double ratio = baseline > 0 ? t.median_ms / baseline : 0.0;
    out << fmt::format("{:<12}{:>10.3f}{:>10.3f}{:>10.3f}{:>9}", p.policy, t.median_ms, t.min_ms,
                       t.max_ms, ratio > 0 ? fmt::format("{:.2f}x", ratio) : "-");
    nlohmann::json phases = nlohmann::json::object();
    for (const char* phase : kPhases) {
      out << fmt::format("{:>9.1f}%", 100 * share(p, phase));
      phases[phase] = share(p, phase);
    }
    out << "\n";
    runs.push_back({{"policy", p.policy},
                    {"step_ms", {{"median", t.median_ms}, {"min", t.min_ms}, {"max", t.max_ms}}},
                    {"vs_fp32", ratio > 0 ? nlohmann::json(ratio) : nlohmann::json(nullptr)},
                    {"phase_share", phases},
                    {"attribution", profile::to_json(p.attribution)}});
    // One trace for all policies: each policy's phases on a host thread of its own, under a range
    // that names the policy.
    const auto thread = static_cast<std::uint32_t>(runs.size());
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
    const nlohmann::json record{{"schema", "ampbench.profile-run/1"},
                                {"backend", "cpu"},
                                {"model", config.model},
                                {"steps", config.steps},
                                {"warmup", args.warmup},
                                {"batch", config.batch},
                                {"seed", config.seed},
                                {"runs", runs}};
    if (auto problem = write_json_file(args.json, record)) {
      err << fmt::format("{}: --json {}: {}\n", kCommand, args.json, *problem);
      return kExitUsage;
    }
  }
  return kExitOk;
}

}  // namespace ampbench::cli
