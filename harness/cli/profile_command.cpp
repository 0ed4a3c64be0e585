#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "harness/cli/backend_options.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/file_plan.hpp"
#include "harness/cli/policy_options.hpp"
#include "harness/cli/text.hpp"
#include "harness/profile/chrome_trace.hpp"
#include "harness/profile/hardware_metrics.hpp"
#include "harness/runtime/cuda.hpp"
#include "harness/train/limits.hpp"
#include "harness/train/profile_record.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench profile";

// Appends a policy's trace to `combined` under a range "policy NAME" that spans it. On the CPU
// backend each policy's phases go on a host thread of their own (`thread`), side by side; a GPU
// trace keeps its threads, which its API calls and kernels are linked to.
void append_policy_trace(profile::Trace& combined, const train::PolicyProfile& p,
                         std::optional<std::uint32_t> thread) {
  const profile::Trace& t = p.trace;
  if (!t.ranges.empty()) {
    profile::RangeEvent whole = t.ranges.front();
    whole.name = "policy " + p.policy;
    whole.depth = 0;
    for (const auto& range : t.ranges) {
      whole.start_ns = std::min(whole.start_ns, range.start_ns);
      whole.end_ns = std::max(whole.end_ns, range.end_ns);
    }
    if (thread) whole.thread_id = *thread;
    combined.ranges.push_back(std::move(whole));
  }
  for (auto range : t.ranges) {
    if (thread) range.thread_id = *thread;
    ++range.depth;
    combined.ranges.push_back(std::move(range));
  }
  const auto append = [](auto& to, const auto& from) {
    to.insert(to.end(), from.begin(), from.end());
  };
  append(combined.kernels, t.kernels);
  append(combined.api_calls, t.api_calls);
  append(combined.memcpys, t.memcpys);
  append(combined.memsets, t.memsets);
  append(combined.synchronizations, t.synchronizations);
  append(combined.overheads, t.overheads);
  append(combined.external_correlations, t.external_correlations);
  append(combined.dropped_records, t.dropped_records);
  for (const auto& [device, name] : t.metadata.device_names) {
    combined.metadata.device_names[device] = name;
  }
  if (combined.metadata.process_id == 0) combined.metadata.process_id = t.metadata.process_id;
  if (combined.metadata.host_name.empty()) combined.metadata.host_name = t.metadata.host_name;
}

std::string percent(const std::optional<double>& share) {
  return share ? fmt::format("{:.1f}%", 100 * *share) : std::string("-");
}

// The collector's own cost, from the record of kernels::measure_profiler_overhead.
void write_profiler_overhead(std::ostream& out, const nlohmann::json& overhead) {
  if (overhead.is_null()) return;
  out << fmt::format("\nprofiler overhead: an empty kernel launch takes {:.2f} us untraced",
                     overhead["untraced"]["ns_per_launch"].get<double>() * 1e-3);
  for (const auto& [key, what] : {std::pair{"kernels_traced", "with kernels traced"},
                                  std::pair{"all_traced", "with every kind traced"}}) {
    const nlohmann::json& traced = overhead[key];
    if (traced.is_null()) continue;
    out << fmt::format(", {:.2f} us {} ({:.2f}x)", traced["ns_per_launch"].get<double>() * 1e-3,
                       what, traced["overhead_ratio"].get<double>());
  }
  if (overhead.contains("why_not_traced")) {
    out << " (" << overhead["why_not_traced"].get<std::string>() << ")";
  }
  out << "\n";
}

// The device's side of each policy's steps.
void write_device_table(std::ostream& out, const train::ProfileResult& result) {
  out << fmt::format("\n{:<12}{:>10}{:>10}{:>9}{:>9}{:>13}{:>9}\n", "policy", "peak_MiB", "kernels",
                     "launch", "cast", "tensor_core", "idle");
  for (const auto& p : result.policies) {
    const profile::Attribution& a = p.attribution;
    const double steps = static_cast<double>(std::max<std::size_t>(1, p.step_ns.size()));
    out << fmt::format(
        "{:<12}{:>10}{:>10.1f}{:>9}{:>9}{:>13}{:>9}\n", p.policy,
        p.peak_device_bytes
            ? fmt::format("{:.1f}", static_cast<double>(*p.peak_device_bytes) / 1048576)
            : std::string("-"),
        static_cast<double>(a.total.kernel_count) / steps, percent(a.launch_overhead_share),
        percent(a.cast_share), percent(a.tensor_core_share), percent(a.idle_share));
    for (const auto& w : a.warnings) out << "  warning: " << w << "\n";
  }
}

// The counters of the step and its phases (depth 1 and 2) per policy, or why there are none.
void write_hardware_metrics(std::ostream& out, const train::ProfileResult& result) {
  const nlohmann::json& record = result.hardware_metrics;
  if (record.is_null()) return;
  if (!record.value("requested", false)) {
    out << "hardware metrics: not collected: " << record["why"].get<std::string>() << "\n";
    return;
  }
  const auto share = [](const std::optional<double>& v) {
    return v ? profile::share_percent(*v) : std::string("-");
  };
  bool header = false;
  for (const train::PolicyProfile& p : result.policies) {
    if (!p.hardware_metrics) continue;
    if (!header) {
      out << "\nhardware counters (CUPTI range profiler; each pass one more step, untimed):\n";
      out << fmt::format("{:<12}{:<22}{:>14}{:>12}{:>14}{:>12}{:>11}\n", "policy", "range",
                         "tensor_inst", "wgmma_inst", "tensor_active", "dram_GB/s", "dram_peak");
      header = true;
    }
    for (const profile::RangeMetrics& r : p.hardware_metrics->ranges) {
      if (r.depth() > 2) continue;
      const std::optional<double> bandwidth = r.dram_bytes_per_second();
      const std::optional<double> wgmma = r.warpgroup_mma_instructions;
      out << fmt::format("{:<12}{:<22}{:>14.0f}{:>12}{:>14}{:>12}{:>11}\n", p.policy, r.path,
                         r.tensor_instructions,
                         wgmma ? fmt::format("{:.0f}", *wgmma) : std::string("-"),
                         share(r.tensor_active_share()),
                         bandwidth ? fmt::format("{:.1f}", *bandwidth * 1e-9) : std::string("-"),
                         share(r.dram_peak_share()));
    }
    out << fmt::format("{:<12}(chip {}, {} passes, {} dropped ranges; per op in the record)\n", "",
                       p.hardware_metrics->chip, p.hardware_metrics->passes,
                       p.hardware_metrics->dropped_ranges);
  }
  for (const train::PolicyProfile& p : result.policies) {
    if (!p.hardware_metrics) {
      out << "hardware metrics of " << p.policy << ": not collected: " << p.hardware_metrics_why
          << "\n";
    }
  }
}

}  // namespace

int run_profile(const ProfileArgs& args, std::ostream& out, std::ostream& err) {
  // ---- everything is checked before any work starts -----------------------------------------
  const std::optional<runtime::Request> request =
      read_backend(kCommand, args.backend, err, runtime::kOneBackend);
  if (!request) return kExitUsage;
  const bool on_cuda = runtime::selection_of(*request).cuda;
  if (args.hardware_metrics && !on_cuda) {
    err << fmt::format(
        "{}: --hardware-metrics: needs --backend cuda (the CPU backend has no hardware "
        "counters)\n",
        kCommand);
    return kExitUsage;
  }
  train::TrainConfig config;
  if (!known_model(kCommand, args.model, err)) return kExitUsage;
  config.model = args.model;
  auto policies = read_policies(kCommand, split_list(args.policies), err);
  if (!policies) return kExitUsage;
  config.policies = std::move(*policies);
  if (on_cuda) {
    for (const auto& p : config.policies) {
      if (auto why = runtime::why_not_trainable(p, config.model)) {
        err << fmt::format("{}: --backend cuda: {}\n", kCommand, *why);
        return kExitUsage;
      }
    }
  }
  config.steps = args.steps;
  config.batch = args.batch;
  config.seed = args.seed;
  // The numbers' own ranges were checked when the command line was read (options.hpp); the batch
  // is drawn from the whole data set, unsplit.
  const train::Dataset data = train::default_dataset(config.model, config.seed);
  if (const auto problem = train::size_problem(
          config, {data.samples(), data.sample_size(), data.targets_per_sample, "the data set"},
          args.warmup)) {
    err << fmt::format("{}: --{}: {}\n", kCommand, problem->option, problem->message);
    return kExitUsage;
  }
  FilePlan files;
  for (const auto& file : policy_files(split_list(args.policies))) files.input("--policy", file);
  if (!args.trace.empty()) files.output("--trace", args.trace);
  if (!args.json.empty()) files.output("--json", args.json);
  if (const auto problem = files.problem()) {
    err << fmt::format("{}: {}\n", kCommand, *problem);
    return kExitUsage;
  }

  // Last of the checks, as it makes the device's context.
  const runtime::Opening opened = runtime::open_backends(*request);
  if (refused(kCommand, opened, err)) return kExitNoDevice;
  const runtime::CudaStatus& cuda = opened.cuda;

  // ---- the run ----------------------------------------------------------------------------------
  if (on_cuda) {
    out << fmt::format(
        "profile {} on {}: {} warm-up and {} timed steps of {} samples per policy\n"
        "(host timers and NVTX ranges around each phase, CUPTI activity records of the device; "
        "master weights,\ngradients and optimizer on the device; the scaler's step reads "
        "found_inf back)\n\n",
        config.model, cuda.gpu, args.warmup, config.steps, config.batch);
  } else {
    out << fmt::format(
        "profile {} on the CPU backend: {} warm-up and {} timed steps of {} samples per policy\n"
        "(host timers around each phase; the times are the CPU emulator's, not a GPU's)\n\n",
        config.model, args.warmup, config.steps, config.batch);
  }
  out.flush();
  train::ProfileResult result;
  try {
    result = on_cuda ? runtime::cuda_profile(config, data, args.warmup, args.hardware_metrics)
                     : train::profile_steps(config, data, args.warmup);
  } catch (const std::runtime_error& e) {  // a failed CUDA, cuBLAS or CUPTI call
    err << fmt::format("{}: --backend {}: {}\n", kCommand, args.backend, e.what());
    return kExitFail;
  }

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
    append_policy_trace(
        combined, p,
        on_cuda ? std::nullopt : std::optional<std::uint32_t>(static_cast<std::uint32_t>(i + 1)));
  }
  if (on_cuda) {
    write_device_table(out, result);
    write_profiler_overhead(out, result.profiler_overhead);
    write_hardware_metrics(out, result);
  }
  bool verdicts = false;
  for (std::size_t i = 0; i < result.policies.size(); ++i) {
    if (const auto v = train::verdict(result, i)) {
      out << (verdicts ? "" : "\n") << v->text << "\n";
      verdicts = true;
    }
  }
  out << "\nstep_ms: median wall time of a step (min and max beside it); vs_fp32: median step "
         "time over fp32's; phases:\nshare of the step time.";
  if (on_cuda) {
    out << " On the device a phase's share is its range's host time: kernels run\nasynchronously, "
           "so a phase that waits for them (the loss reads its value back) carries\ntheir time."
           " peak_MiB: peak device memory of the timed steps; kernels: per step;\nlaunch: launch "
           "API time / wall time; cast, tensor_core: share of kernel time; idle: device\nidle time "
           "/ wall time (docs/profiling.md).";
  } else {
    out << " Peak device memory, kernel counts, launch overhead, cast and Tensor Core\nshares "
           "need the GPU: --backend cuda.";
  }
  out << "\n";
  if (!args.trace.empty()) {
    try {
      profile::write_chrome_trace(combined, args.trace);
    } catch (const std::exception& e) {
      err << fmt::format("{}: --trace {}: {}\n", kCommand, args.trace, e.what());
      return kExitUsage;
    }
  }
  if (!args.json.empty()) {
    if (auto problem = write_json_file(args.json, train::to_json(result, args.backend))) {
      err << fmt::format("{}: --json {}: {}\n", kCommand, args.json, *problem);
      return kExitUsage;
    }
  }
  return kExitOk;
}

}  // namespace ampbench::cli
