#include "kernels/range_profiler.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include <array>
#include <mutex>
#include <optional>

#include "kernels/cuda_check.hpp"

namespace ampbench::kernels {
namespace {

// A CUPTI parameter struct zeroed, with its size set to CUPTI's TYPE_STRUCT_SIZE (the size up to
// its last field, which CUPTI checks to tell the struct's version).
template <class Params>
Params cupti_params(std::size_t struct_size) {
  Params p{};
  p.structSize = struct_size;
  return p;
}
#define AMPBENCH_CUPTI_PARAMS(type) cupti_params<type>(type##_STRUCT_SIZE)

// cupti_status_text, with the remedy where there is one.
std::string cupti_message(CUptiResult result) {
  std::string message = cupti_status_text(result);
  if (result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
    message +=
        " (hardware counters are restricted to administrators: run as root, or load the driver "
        "with NVreg_RestrictProfilingToAdminUsers=0)";
  }
  return message;
}

void check(CUptiResult result, const char* call) {
  if (result != CUPTI_SUCCESS) {
    throw RangeProfilerError(std::string(call) + ": " + cupti_message(result));
  }
}

#define AMPBENCH_CUPTI_PROFILER_CHECK(call) check((call), #call)

// The host object of the profiler host API, deinitialised on every path.
class HostObject {
 public:
  HostObject(const std::string& chip, std::span<const std::uint8_t> availability) {
    auto p = AMPBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip.c_str();
    p.pCounterAvailabilityImage = availability.empty() ? nullptr : availability.data();
    const CUptiResult r = cuptiProfilerHostInitialize(&p);
    if (r != CUPTI_SUCCESS) {
      throw RangeProfilerError("cuptiProfilerHostInitialize(chip " + chip +
                               "): " + cupti_message(r));
    }
    object_ = p.pHostObject;
  }
  ~HostObject() {
    auto p = AMPBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
    p.pHostObject = object_;
    cuptiProfilerHostDeinitialize(&p);  // nothing to do about a failure here
  }
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;

  CUpti_Profiler_Host_Object* get() const { return object_; }

 private:
  CUpti_Profiler_Host_Object* object_ = nullptr;
};

std::vector<const char*> c_names(const std::vector<std::string>& names) {
  std::vector<const char*> c;
  for (const std::string& n : names) c.push_back(n.c_str());
  return c;
}

ConfigImage config_image(const HostObject& host, const std::vector<std::string>& metrics) {
  std::vector<const char*> names = c_names(metrics);
  auto add = AMPBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
  add.pHostObject = host.get();
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  const CUptiResult r = cuptiProfilerHostConfigAddMetrics(&add);
  if (r != CUPTI_SUCCESS) {
    std::string list;
    for (const std::string& m : metrics) list += (list.empty() ? "" : ", ") + m;
    throw RangeProfilerError("cuptiProfilerHostConfigAddMetrics(" + list +
                             "): " + cupti_message(r));
  }
  auto size = AMPBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  size.pHostObject = host.get();
  AMPBENCH_CUPTI_PROFILER_CHECK(cuptiProfilerHostGetConfigImageSize(&size));
  ConfigImage config;
  config.image.resize(size.configImageSize);
  auto image = AMPBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  image.pHostObject = host.get();
  image.configImageSize = config.image.size();
  image.pConfigImage = config.image.data();
  AMPBENCH_CUPTI_PROFILER_CHECK(cuptiProfilerHostGetConfigImage(&image));
  auto passes = AMPBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
  passes.configImageSize = config.image.size();
  passes.pConfigImage = config.image.data();
  AMPBENCH_CUPTI_PROFILER_CHECK(cuptiProfilerHostGetNumOfPasses(&passes));
  config.passes = passes.numOfPasses;
  return config;
}

std::vector<std::string> to_strings(std::span<const std::string_view> names) {
  return {names.begin(), names.end()};
}

std::vector<std::string> base_metrics(const HostObject& host) {
  std::vector<std::string> names;
  for (const CUpti_MetricType type :
       {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
    auto p = AMPBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_GetBaseMetrics_Params);
    p.pHostObject = host.get();
    p.metricType = type;
    AMPBENCH_CUPTI_PROFILER_CHECK(cuptiProfilerHostGetBaseMetrics(&p));
    for (std::size_t i = 0; i < p.numMetrics; ++i) names.emplace_back(p.ppMetricNames[i]);
  }
  return names;
}

// The session the hooks push to: one at a time per process, as the hooks are plain functions.
// The hooks never throw (they run in destructors): the first problem of a pass is kept in `error`
// and reported after it.
struct ActiveSession {
  CUpti_RangeProfiler_Object* object = nullptr;
  std::uint16_t max_depth = 0;
  std::vector<std::string> open;     // the paths of the ranges open in the workload
  std::vector<std::string> pushed;   // the paths pushed to CUPTI in this pass, in order
  std::optional<std::string> error;  // the first failed push, pop or wait of this pass
};
std::mutex g_session_mutex;  // held for a whole collection
ActiveSession* g_session = nullptr;

void record_error(const std::string& problem) {
  if (!g_session->error) g_session->error = problem;
}

void record_error(CUptiResult result, const char* call) {
  if (result != CUPTI_SUCCESS) record_error(std::string(call) + ": " + cupti_message(result));
}

// Push and pop take no stream: they mark the context's work at the time they are called. The
// workload's kernels run asynchronously on streams of their own, so a range boundary first waits
// for all of them, and each range holds exactly the work launched inside it. (The counted steps
// are untimed.)
void wait_for_device() {
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess)
    record_error(std::string("cudaDeviceSynchronize: ") + cudaGetErrorString(e));
}

void push_range(const char* name) {
  if (g_session == nullptr) return;
  ActiveSession& s = *g_session;
  s.open.push_back(s.open.empty() ? std::string(name) : s.open.back() + "/" + name);
  if (s.open.size() > s.max_depth) return;
  wait_for_device();
  auto p = AMPBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_PushRange_Params);
  p.pRangeProfilerObject = s.object;
  p.pRangeName = name;
  record_error(cuptiRangeProfilerPushRange(&p), "cuptiRangeProfilerPushRange");
  s.pushed.push_back(s.open.back());
}

void pop_range() {
  if (g_session == nullptr) return;
  ActiveSession& s = *g_session;
  if (s.open.empty()) return;  // unbalanced: the recorder pops only what it pushed
  const bool pushed = s.open.size() <= s.max_depth;
  s.open.pop_back();
  if (!pushed) return;
  wait_for_device();
  auto p = AMPBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_PopRange_Params);
  p.pRangeProfilerObject = s.object;
  record_error(cuptiRangeProfilerPopRange(&p), "cuptiRangeProfilerPopRange");
}

// Why the range profiler cannot run on the current device, if it cannot (the flags of
// cuptiProfilerDeviceSupported that are not SUPPORTED).
std::optional<std::string> unsupported_device() {
  auto p = AMPBENCH_CUPTI_PARAMS(CUpti_Profiler_DeviceSupported_Params);
  int device = 0;
  AMPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  p.cuDevice = device;
  p.api = CUPTI_PROFILER_RANGE_PROFILING;
  AMPBENCH_CUPTI_PROFILER_CHECK(cuptiProfilerDeviceSupported(&p));
  if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return std::nullopt;
  std::string why;
  const auto note = [&](CUpti_Profiler_Support_Level level, const char* what) {
    if (level == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return;
    why += (why.empty() ? "" : ", ") + std::string(what) +
           (level == CUPTI_PROFILER_CONFIGURATION_DISABLED ? " (disabled)" : "");
  };
  note(p.architecture, "architecture (compute capability 7.0 or later needed)");
  note(p.sli, "SLI");
  note(p.vGpu, "vGPU");
  note(p.confidentialCompute, "confidential computing");
  note(p.cmp, "a crypto mining processor");
  note(p.wsl, "WSL");
  return "the device does not support range profiling: " + (why.empty() ? "unknown" : why);
}

// The current context through the runtime's driver entry points: the library links the runtime,
// not libcuda.
CUcontext current_context() {
  AMPBENCH_CUDA_CHECK(cudaFree(nullptr));  // makes the primary context current
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult status{};
  AMPBENCH_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &entry, 12000,
                                                       cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || entry == nullptr) {
    throw RangeProfilerError("cuCtxGetCurrent: not found among the driver's entry points");
  }
  CUcontext context = nullptr;
  const auto get_current = reinterpret_cast<CUresult (*)(CUcontext*)>(entry);
  if (get_current(&context) != CUDA_SUCCESS || context == nullptr) {
    throw RangeProfilerError("cuCtxGetCurrent: no current CUDA context");
  }
  return context;
}

std::string chip_name() {
  int device = 0;
  AMPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  auto p = AMPBENCH_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  p.deviceIndex = static_cast<std::size_t>(device);
  AMPBENCH_CUPTI_PROFILER_CHECK(cuptiDeviceGetChipName(&p));
  return p.pChipName;
}

std::vector<std::uint8_t> counter_availability(CUcontext context) {
  auto p = AMPBENCH_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
  p.ctx = context;
  AMPBENCH_CUPTI_PROFILER_CHECK(cuptiProfilerGetCounterAvailability(&p));
  std::vector<std::uint8_t> image(p.counterAvailabilityImageSize);
  p.pCounterAvailabilityImage = image.data();
  AMPBENCH_CUPTI_PROFILER_CHECK(cuptiProfilerGetCounterAvailability(&p));
  return image;
}

// cuptiProfilerInitialize, undone on every path: first of the target calls.
class InitializedProfiler {
 public:
  InitializedProfiler() {
    auto init = AMPBENCH_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
    AMPBENCH_CUPTI_PROFILER_CHECK(cuptiProfilerInitialize(&init));
  }
  ~InitializedProfiler() {
    auto p = AMPBENCH_CUPTI_PARAMS(CUpti_Profiler_DeInitialize_Params);
    cuptiProfilerDeInitialize(&p);  // nothing to do about a failure here
  }
  InitializedProfiler(const InitializedProfiler&) = delete;
  InitializedProfiler& operator=(const InitializedProfiler&) = delete;
};

// The range profiler enabled on a context, disabled on every path.
class EnabledRangeProfiler {
 public:
  explicit EnabledRangeProfiler(CUcontext context) {
    auto enable = AMPBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params);
    enable.ctx = context;
    AMPBENCH_CUPTI_PROFILER_CHECK(cuptiRangeProfilerEnable(&enable));
    object_ = enable.pRangeProfilerObject;
  }
  ~EnabledRangeProfiler() {
    auto disable = AMPBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params);
    disable.pRangeProfilerObject = object_;
    cuptiRangeProfilerDisable(&disable);  // nothing to do about a failure here
  }
  EnabledRangeProfiler(const EnabledRangeProfiler&) = delete;
  EnabledRangeProfiler& operator=(const EnabledRangeProfiler&) = delete;

  CUpti_RangeProfiler_Object* get() const { return object_; }

 private:
  CUpti_RangeProfiler_Object* object_ = nullptr;
};

std::vector<std::uint8_t> counter_data_image(CUpti_RangeProfiler_Object* profiler,
                                             std::vector<const char*>& metrics,
                                             std::size_t max_ranges) {
  auto size = AMPBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
  size.pRangeProfilerObject = profiler;
  size.pMetricNames = metrics.data();
  size.numMetrics = metrics.size();
  size.maxNumOfRanges = max_ranges;
  size.maxNumRangeTreeNodes = static_cast<std::uint32_t>(max_ranges);
  AMPBENCH_CUPTI_PROFILER_CHECK(cuptiRangeProfilerGetCounterDataSize(&size));
  std::vector<std::uint8_t> image(size.counterDataSize);
  auto init = AMPBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  init.pRangeProfilerObject = profiler;
  init.counterDataSize = image.size();
  init.pCounterData = image.data();
  AMPBENCH_CUPTI_PROFILER_CHECK(cuptiRangeProfilerCounterDataImageInitialize(&init));
  return image;
}

// Every decoded range: its path and the metrics' values, each at its quantity's place (`slots`:
// the place of each of `metrics`).
std::vector<profile::RangeCounters> decode(const HostObject& host,
                                           const std::vector<std::uint8_t>& counter_data,
                                           std::vector<const char*>& metrics,
                                           const std::vector<std::size_t>& slots) {
  auto info = AMPBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
  info.pCounterDataImage = counter_data.data();
  info.counterDataImageSize = counter_data.size();
  AMPBENCH_CUPTI_PROFILER_CHECK(cuptiRangeProfilerGetCounterDataInfo(&info));
  std::vector<profile::RangeCounters> ranges;
  for (std::size_t i = 0; i < info.numTotalRanges; ++i) {
    auto range = AMPBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params);
    range.pCounterDataImage = counter_data.data();
    range.counterDataImageSize = counter_data.size();
    range.rangeIndex = i;
    range.rangeDelimiter = "/";
    AMPBENCH_CUPTI_PROFILER_CHECK(cuptiRangeProfilerCounterDataGetRangeInfo(&range));
    profile::RangeCounters r;
    r.path = range.rangeName != nullptr ? range.rangeName : "";
    auto evaluate = AMPBENCH_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
    evaluate.pHostObject = host.get();
    evaluate.pCounterDataImage = counter_data.data();
    evaluate.counterDataImageSize = counter_data.size();
    evaluate.rangeIndex = i;
    std::vector<double> values(metrics.size());
    evaluate.ppMetricNames = metrics.data();
    evaluate.numMetrics = metrics.size();
    evaluate.pMetricValues = values.data();
    AMPBENCH_CUPTI_PROFILER_CHECK(cuptiProfilerHostEvaluateToGpuValues(&evaluate));
    for (std::size_t m = 0; m < values.size(); ++m) r.values[slots[m]] = values[m];
    ranges.push_back(std::move(r));
  }
  return ranges;
}

}  // namespace

std::vector<std::string> chip_base_metrics(const std::string& chip) {
  const HostObject host(chip, {});
  return base_metrics(host);
}

profile::HardwareMetricSet hardware_metric_set(const std::string& chip) {
  return profile::choose_hardware_metrics(chip_base_metrics(chip));
}

ConfigImage range_profiler_config(const std::string& chip,
                                  std::span<const std::string_view> metrics,
                                  std::span<const std::uint8_t> availability) {
  const HostObject host(chip, availability);
  return config_image(host, to_strings(metrics));
}

profile::HardwareMetrics collect_range_metrics(
    const std::function<void(const profile::RangeHooks&)>& workload,
    const RangeProfilerOptions& options) {
  const std::lock_guard<std::mutex> one_at_a_time(g_session_mutex);

  // In the order of CUPTI's range profiling sample: initialise, the chip and its counters, the
  // configuration image, then enable on the context, the counter data image and the config.
  const CUcontext context = current_context();
  const InitializedProfiler initialized;
  if (const auto why = unsupported_device()) throw RangeProfilerError(*why);
  profile::HardwareMetrics result;
  result.chip = chip_name();
  const std::vector<std::uint8_t> availability = counter_availability(context);
  const HostObject host(result.chip, availability);
  try {
    result.metrics = profile::choose_hardware_metrics(base_metrics(host));
  } catch (const std::invalid_argument& e) {
    throw RangeProfilerError("chip " + result.chip + ": " + e.what());
  }
  const std::vector<std::string> metric_strings = result.metrics.requested();
  std::vector<const char*> metrics = c_names(metric_strings);
  std::vector<std::size_t> slots;
  for (std::size_t q = 0; q < profile::kHardwareMetricCount; ++q) {
    if (!result.metrics.names[q].empty()) slots.push_back(q);
  }
  const ConfigImage config = config_image(host, metric_strings);
  const EnabledRangeProfiler profiler(context);
  std::vector<std::uint8_t> counter_data =
      counter_data_image(profiler.get(), metrics, options.max_ranges);

  auto set = AMPBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
  set.pRangeProfilerObject = profiler.get();
  set.configSize = config.image.size();
  set.pConfig = config.image.data();
  set.counterDataImageSize = counter_data.size();
  set.pCounterDataImage = counter_data.data();
  set.range = CUPTI_UserRange;
  set.replayMode = CUPTI_UserReplay;
  set.maxRangesPerPass = options.max_ranges;
  set.numNestingLevels = options.nesting_levels;
  set.minNestingLevel = 1;
  set.passIndex = 0;
  set.targetNestingLevel = 1;
  AMPBENCH_CUPTI_PROFILER_CHECK(cuptiRangeProfilerSetConfig(&set));

  ActiveSession session;
  session.object = profiler.get();
  session.max_depth = options.nesting_levels;
  g_session = &session;
  struct Clear {
    ~Clear() { g_session = nullptr; }
  } clear;
  profile::RangeHooks hooks;
  hooks.push = &push_range;
  hooks.pop = &pop_range;

  // Every pass must push the ranges of the first, in order: CUPTI adds up the passes' counters
  // per range (a step the loss scaler skipped has no optimizer phase).
  std::vector<std::string> first_pass;
  bool all_passes = false;
  while (!all_passes) {
    if (result.passes == options.max_passes) {
      throw RangeProfilerError("the range profiler wants more than " +
                               std::to_string(options.max_passes) + " passes of the workload");
    }
    session.open.clear();
    session.pushed.clear();
    auto start = AMPBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params);
    start.pRangeProfilerObject = profiler.get();
    AMPBENCH_CUPTI_PROFILER_CHECK(cuptiRangeProfilerStart(&start));
    // Stopped on every path: a workload that throws leaves no pass open.
    auto stop = AMPBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
    stop.pRangeProfilerObject = profiler.get();
    struct StopOnUnwind {
      CUpti_RangeProfiler_Stop_Params* stop;
      bool stopped = false;
      ~StopOnUnwind() {
        if (!stopped) cuptiRangeProfilerStop(stop);  // nothing to do about a failure here
      }
    } guard{&stop};
    workload(hooks);
    wait_for_device();
    guard.stopped = true;
    AMPBENCH_CUPTI_PROFILER_CHECK(cuptiRangeProfilerStop(&stop));
    ++result.passes;
    if (session.error) throw RangeProfilerError(*session.error);
    if (session.pushed.empty()) throw RangeProfilerError("the workload pushed no range");
    if (result.passes == 1) {
      first_pass = session.pushed;
    } else if (session.pushed != first_pass) {
      std::size_t i = 0;
      while (i < first_pass.size() && i < session.pushed.size() &&
             first_pass[i] == session.pushed[i]) {
        ++i;
      }
      const auto at = [&](const std::vector<std::string>& v) {
        return i < v.size() ? v[i] : std::string("(none)");
      };
      throw RangeProfilerError("pass " + std::to_string(result.passes) +
                               " pushed other ranges than pass 1 (range " + std::to_string(i + 1) +
                               ": " + at(session.pushed) + " instead of " + at(first_pass) +
                               "): the workload must repeat itself");
    }
    all_passes = stop.isAllPassSubmitted != 0;
  }
  auto decode_params = AMPBENCH_CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
  decode_params.pRangeProfilerObject = profiler.get();
  AMPBENCH_CUPTI_PROFILER_CHECK(cuptiRangeProfilerDecodeData(&decode_params));
  result.dropped_ranges = decode_params.numOfRangeDropped;
  try {
    result.ranges =
        profile::sum_by_path(decode(host, counter_data, metrics, slots), result.metrics);
  } catch (const std::invalid_argument& e) {  // values that are no counts
    throw RangeProfilerError(std::string("decoding the counters: ") + e.what());
  }
  return result;
}

}  // namespace ampbench::kernels
