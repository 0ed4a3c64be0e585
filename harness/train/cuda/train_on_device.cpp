#include "harness/train/cuda/train_on_device.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/backends/cuda/scaled_gemm_plan.hpp"
#include "harness/backends/cuda/training_ops.hpp"
#include "harness/backends/cuda/training_plan.hpp"
#include "harness/train/cuda/device_masters.hpp"
#include "harness/train/cuda/recipe_on_device.hpp"
#include "harness/train/model_ops.hpp"
#include "harness/train/trainer_steps.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/cupti_collector.hpp"
#include "kernels/device.hpp"
#include "kernels/nvtx.hpp"
#include "kernels/profiler_overhead.hpp"
#include "kernels/range_profiler.hpp"

namespace ampbench::train::cuda {
namespace {

using backends::cuda::CudaOps;
using backends::cuda::device_record;
using backends::cuda::peak_pool_bytes;
using backends::cuda::reset_peak_pool_bytes;
using backends::cuda::why_not_trainable;

// Throws what why_not_trainable says of the model's ops for the first policy that cannot train on
// the device (and model_ops's std::invalid_argument for a model there is not), and for recipes,
// what it says of amp-bf16 (the policy of their other ops) and why_no_recipe_training of each
// recipe on this device.
void require_trainable(const TrainConfig& config) {
  const std::vector<ops::ModelOp> model = model_ops(config.model);
  for (const auto& p : config.policies) {
    if (auto why = why_not_trainable(p, model)) throw std::invalid_argument(*why);
  }
  if (config.recipes.empty()) return;
  if (auto why = why_not_trainable(CudaRecipeOps::base_policy(), model)) {
    throw std::invalid_argument(*why);
  }
  const kernels::DeviceStatus status = kernels::probe_device();
  if (!status.available) throw std::invalid_argument("no usable CUDA device: " + status.error);
  for (const auto& r : config.recipes) {
    if (auto why = backends::cuda::why_no_recipe_training(
            r, status.compute_major * 10 + status.compute_minor)) {
      throw std::invalid_argument(*why);
    }
  }
}

nlohmann::json to_json(const kernels::LaunchRate& r) {
  return {{"ns_per_launch", r.ns_per_launch}, {"launches_per_second", r.launches_per_second}};
}

nlohmann::json to_json(const std::optional<kernels::TracedLaunchRate>& r) {
  if (!r) return nullptr;
  nlohmann::json j = to_json(r->rate);
  j["overhead_ratio"] = r->overhead_ratio;
  j["kernels_expected"] = r->kernels_expected;
  j["kernels_recorded"] = r->kernels_recorded;
  j["dropped_records"] = r->dropped_records;
  return j;
}

// The record of measure_profiler_overhead: the launch rate of empty kernels untraced and traced.
nlohmann::json to_json(const kernels::ProfilerOverhead& o) {
  nlohmann::json j = {{"launches", o.launches},
                      {"repetitions", o.repetitions},
                      {"untraced", to_json(o.untraced)},
                      {"kernels_traced", to_json(o.kernels_traced)},
                      {"all_traced", to_json(o.all_traced)}};
  if (!o.why_not_traced.empty()) j["why_not_traced"] = o.why_not_traced;
  return j;
}

// {"requested", "collected" (for at least one policy), "metrics" when requested, "why": not
// requested, or the first policy without counters and its reason}.
nlohmann::json hardware_metrics_record(const ProfileResult& result, bool requested) {
  if (!requested) {
    return {{"requested", false},
            {"collected", false},
            {"why",
             "not requested (--hardware-metrics runs the CUPTI range profiler after the timed "
             "steps); the Tensor Core share is inferred from kernel names"}};
  }
  nlohmann::json record = {{"requested", true}, {"collected", false}};
  for (const PolicyProfile& p : result.policies) {
    if (p.hardware_metrics) {
      record["collected"] = true;
      // The device's: every policy ran on it, with the same set.
      if (!record.contains("metrics")) record["metrics"] = p.hardware_metrics->metrics.requested();
    } else if (!record.contains("why")) {
      record["why"] = p.policy + ": " + p.hardware_metrics_why;
    }
  }
  return record;
}

}  // namespace

TrainResult train_on_device(const TrainConfig& config, const Dataset& train_set,
                            const Dataset& eval_set,
                            const std::function<void(std::size_t)>& progress) {
  require_trainable(config);
  TrainResult result = train_over_seeds(
      config, progress, [&](const TrainConfig& c, const std::function<void(std::size_t)>& tick) {
        return steps::with_model(c, train_set, [&](const auto& model) {
          return steps::run_training<CudaOps>(model, c, train_set, eval_set, tick);
        });
      });
  result.backend = "cuda";
  result.device = device_record(kernels::probe_device(), kernels::library_versions());
  return result;
}

TrainResult train_on_device_and_cpu(const TrainConfig& config, const Dataset& train_set,
                                    const Dataset& eval_set,
                                    const std::function<void(std::size_t)>& progress) {
  require_trainable(config);
  // With --sensitivity, each backend ranks the layers from its own runs (rank_sensitivity).
  TrainResult result = train_over_seeds(
      config, progress, [&](const TrainConfig& c, const std::function<void(std::size_t)>& tick) {
        return steps::with_model(c, train_set, [&](const auto& model) {
          return steps::run_training<EmulatedOps, CudaOps>(model, c, train_set, eval_set, tick);
        });
      });
  result.backend = "all";
  result.device = device_record(kernels::probe_device(), kernels::library_versions());
  return result;
}

ProfileResult profile_on_device(const TrainConfig& config, const Dataset& train_set,
                                std::size_t warmup, bool hardware_metrics) {
  require_trainable(config);
  // The phases are NVTX ranges, which CUPTI records as markers: the device's trace holds them, so
  // it replaces the host phases (added to it, every phase would count twice).
  steps::ProfileHooks hooks;
  hooks.ranges = kernels::nvtx_range_hooks();
  hooks.traced_warmup = 1;
  std::optional<kernels::CuptiCollector> collector;
  std::string why_not;
  // Where the timed steps begin on the host clock CUPTI's records share (cupti_collector.cpp's
  // timestamp callback): what the collector recorded before it belongs to the traced warm-up step.
  std::optional<std::uint64_t> first_timed_ns;
  hooks.begin_traced = [&] {
    first_timed_ns.reset();
    // (The collector moves but is not assignable: CUPTI's state is process-wide.)
    if (auto started = kernels::CuptiCollector::start({}, &why_not)) {
      collector.emplace(std::move(*started));
    }
    // NVTX initialises its tool (CUPTI, through the injection hook) at the first range: here, not
    // inside the first timed step.
    const profile::RangeHooks nvtx = kernels::nvtx_range_hooks();
    nvtx.push("ampbench: collector started");
    nvtx.pop();
  };
  hooks.begin_timed = [&] {
    // The warm-up steps' kernels finish before the timed steps begin, and the peak memory is of
    // the timed steps.
    AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());
    reset_peak_pool_bytes();
    first_timed_ns = profile::steady_clock_ns();
  };
  hooks.end_timed = [&](PolicyProfile& p) {
    AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());
    p.peak_device_bytes = peak_pool_bytes();
    if (!collector) {
      p.collection_warnings.push_back(why_not + "; the trace holds the host phases only");
      return;
    }
    kernels::CollectedTrace collected = collector->stop();
    collector.reset();
    // The collector started a step early (ProfileHooks::traced_warmup): that step's records, with
    // CUPTI's first-launch instrumentation in them, are not the timed steps'.
    if (first_timed_ns) collected.trace = profile::records_from(collected.trace, *first_timed_ns);
    p.collection_warnings = std::move(collected.problems);
    if (collected.trace.ranges.empty()) {
      // No NVTX markers reached CUPTI (another tool, such as Nsight Systems, took NVTX, or MARKER
      // could not be enabled): the host phases stand in for them.
      collected.trace.ranges = std::move(p.trace.ranges);
      p.collection_warnings.push_back(
          "CUPTI recorded no NVTX ranges (is another NVTX tool attached?): the phases are the host "
          "timers'");
    }
    p.trace = std::move(collected.trace);
    for (auto& w : kernels::conversion_warnings(collected.counts)) {
      p.collection_warnings.push_back(std::move(w));
    }
  };
  const kernels::RangeProfilerOptions counting;
  if (hardware_metrics) {
    hooks.counter_steps = counting.max_passes;
    hooks.counters = [&](PolicyProfile& p, const steps::ProfileHooks::CountedStep& step) {
      try {
        p.hardware_metrics = kernels::collect_range_metrics(step, counting);
      } catch (const std::runtime_error& e) {  // CUPTI's refusal, or a CUDA call that failed
        p.hardware_metrics_why = e.what();
      }
    };
  }
  // The collector's cost first, before any collector has enabled CUPTI's activity records in this
  // process. (CUPTI is already loaded as the process's NVTX tool: the static injection in
  // cupti_collector.cpp makes it so at the first NVTX call, probe_device's range. The untraced rate
  // is that of a process whose NVTX calls reach CUPTI, which records nothing while no collector
  // runs: bench_launch_overhead's BM_launch_untraced_in_nvtx_ranges measures what that costs.)
  const nlohmann::json overhead = to_json(kernels::measure_profiler_overhead());
  ProfileResult result = steps::with_model(config, train_set, [&](const auto& model) {
    return steps::run_profile<CudaOps>(model, config, train_set, warmup, hooks);
  });
  result.device = device_record(kernels::probe_device(), kernels::library_versions());
  result.profiler_overhead = overhead;
  result.hardware_metrics = hardware_metrics_record(result, hardware_metrics);
  return result;
}

}  // namespace ampbench::train::cuda
