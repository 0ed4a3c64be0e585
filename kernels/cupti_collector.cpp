#include "kernels/cupti_collector.hpp"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <limits>
#include <mutex>
#include <new>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "harness/profile/host_timer.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device.hpp"

// The NVTX loader's static injection (nvtx3/nvtxDetail/nvtxInit.h, load sequence version 2): every
// translation unit that calls NVTX carries a weak, null InitializeInjectionNvtx2_fnptr; this strong
// definition points it at CUPTI's NVTX entry point, so that NVTX calls reach CUPTI (and become
// MARKER records while MARKER is enabled) without NVTX_INJECTION64_PATH. The loader tries that
// variable first, so a tool named there (Nsight Systems) still wins.
extern "C" {
using AmpbenchNvtxExportTableGetter = const void* (*)(std::uint32_t export_table_id);
int InitializeInjectionNvtx2(AmpbenchNvtxExportTableGetter get_export_table);  // in libcupti
int (*InitializeInjectionNvtx2_fnptr)(AmpbenchNvtxExportTableGetter) = &InitializeInjectionNvtx2;
}

namespace ampbench::kernels {
namespace {

struct NamedKind {
  CUpti_ActivityKind kind;
  const char* name;
  bool host_calls;  // records of host calls: turned off before stop()'s own synchronize
};

// Kineto's set (libkineto CuptiActivityApi::enableCuptiActivities: MEMCPY, MEMSET,
// CONCURRENT_KERNEL, EXTERNAL_CORRELATION, SYNCHRONIZATION, RUNTIME, DRIVER, OVERHEAD) with DRIVER
// narrowed to the launch calls below, plus MARKER for the NVTX ranges. CONCURRENT_KERNEL comes
// first: without it there is no trace, and it alone is the kernels-only set.
constexpr std::array<NamedKind, 8> kAllKinds = {{
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", false},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", false},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", false},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", true},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", true},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", false},
    {CUPTI_ACTIVITY_KIND_MARKER, "MARKER", true},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION", true},
}};

// Of the driver API, only the launch calls: libraries (cuBLASLt, cuDNN) launch some kernels through
// the driver, and a kernel needs its launch record to be placed in a range. All driver calls would
// double the API records, since every runtime call makes driver calls.
constexpr std::array<CUpti_CallbackId, 6> kDriverLaunchCalls = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};

constexpr std::align_val_t kRecordAlignment{ACTIVITY_RECORD_ALIGNMENT};
constexpr std::size_t kMinimumBufferBytes = std::size_t{64} << 10;

// Like AMPBENCH_CUPTI_CHECK (logs and gives false), and also keeps the failure's description.
bool cupti_call(CUptiResult status, const char* call, const char* file, int line,
                std::string* failure) {
  if (detail::cupti_ok(status, call, file, line)) return true;
  *failure = std::string(call) + " failed: " + cupti_status_text(status);
  return false;
}
#define AMPBENCH_CUPTI_CALL(call, failure) cupti_call((call), #call, __FILE__, __LINE__, (failure))

// The state CUPTI's buffer callbacks reach: they are plain functions without a user pointer.
struct Session {
  std::mutex mutex;
  bool collecting = false;
  std::size_t buffer_bytes = CollectorOptions{}.buffer_bytes;
  RecordConverter converter;
  profile::Trace trace;
  std::int64_t clock_offset_ns = 0;
  std::uint64_t dropped_records = 0;
  std::vector<std::string> problems;
  // Touched only by start() and stop(), never by the callbacks: no lock needed.
  std::vector<NamedKind> enabled_kinds;
  bool driver_launch_calls_enabled = false;
  bool callbacks_registered = false;           // once per process
  bool timestamp_callback_registered = false;  // likewise
};

// Never destroyed: CUPTI may still deliver a buffer while the program's statics are destroyed.
Session& session() {
  static Session* const s = new Session;
  return *s;
}

// Set while a collector runs: start() refuses a second.
std::atomic<bool> collector_running{false};

// CUPTI's count of records it dropped since the last call; since CUDA 6 its buffers are global,
// so the global queue (null context, stream 0) holds the count.
std::uint64_t take_dropped_records() {
  std::size_t dropped = 0;
  if (!AMPBENCH_CUPTI_CHECK(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped))) return 0;
  return dropped;
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  std::size_t bytes = CollectorOptions{}.buffer_bytes;
  try {  // nothing may propagate into CUPTI
    const std::lock_guard lock(session().mutex);
    bytes = session().buffer_bytes;
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "ampbench: CUPTI buffer request: %s\n", e.what());
  }
  // No buffer (out of memory) makes CUPTI drop records, which the dropped count reports.
  *buffer = static_cast<std::uint8_t*>(::operator new(bytes, kRecordAlignment, std::nothrow));
  *size = *buffer != nullptr ? bytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext /*context: always null since CUDA 6*/,
                               std::uint32_t /*stream: likewise*/, std::uint8_t* buffer,
                               std::size_t /*size*/, std::size_t valid_size) {
  if (buffer == nullptr) return;
  // Nothing may propagate into CUPTI: a failure (out of memory while converting) loses the rest of
  // this buffer, and says so.
  try {
    Session& s = session();
    // Asked of CUPTI before our lock is taken: CUPTI may hold its own lock while it calls us, and
    // the two must not be taken in opposite orders on two threads.
    const std::uint64_t dropped = take_dropped_records();
    const std::lock_guard lock(s.mutex);
    if (s.collecting) {
      const CUptiResult status = s.converter.add_buffer(buffer, valid_size, s.trace);
      if (!detail::cupti_ok(status, "cuptiActivityGetNextRecord", __FILE__, __LINE__)) {
        s.problems.push_back("an activity buffer could not be read to its end (" +
                             cupti_status_text(status) + "): its remaining records are missing");
      }
    }
    s.dropped_records += dropped;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ampbench: converting a CUPTI activity buffer failed: %s\n", e.what());
    try {
      const std::lock_guard lock(session().mutex);
      session().problems.push_back(std::string("converting an activity buffer failed (") +
                                   e.what() + "): its remaining records are missing");
    } catch (const std::exception&) {  // logged above; nothing more can be kept
    }
  }
  ::operator delete(buffer, kRecordAlignment);
}

std::uint64_t CUPTIAPI host_clock_ns() {
  return profile::steady_clock_ns();
}

// Host clock minus CUPTI's clock, from the narrowest of a few host readings around a CUPTI one.
std::int64_t measure_clock_offset_ns() {
  std::uint64_t best_width = std::numeric_limits<std::uint64_t>::max();
  std::int64_t offset = 0;
  for (int i = 0; i < 8; ++i) {
    std::uint64_t cupti_ns = 0;
    const std::uint64_t before = profile::steady_clock_ns();
    if (!AMPBENCH_CUPTI_CHECK(cuptiGetTimestamp(&cupti_ns))) continue;
    const std::uint64_t after = profile::steady_clock_ns();
    if (after - before < best_width) {
      best_width = after - before;
      offset = static_cast<std::int64_t>(before + (after - before) / 2 - cupti_ns);
    }
  }
  return offset;
}

profile::TraceMetadata host_metadata(int device_count) {
  profile::TraceMetadata metadata;
  for (int d = 0; d < device_count; ++d) {
    cudaDeviceProp properties{};
    const cudaError_t status = cudaGetDeviceProperties(&properties, d);
    if (status == cudaSuccess) {
      metadata.device_names[static_cast<std::uint32_t>(d)] = properties.name;
    } else {
      detail::log_cuda_error(status, "cudaGetDeviceProperties(&properties, d)", __FILE__, __LINE__);
    }
  }
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) == 0) metadata.host_name = host.data();
  metadata.process_id = static_cast<std::uint32_t>(::getpid());
  return metadata;
}

// Disables what the session enabled, or only the records of host calls; failures are logged (a
// kind left on costs time, no more).
void disable_enabled(Session& s, bool host_calls_only) {
  std::vector<NamedKind> still_enabled;
  for (const NamedKind& k : s.enabled_kinds) {
    if (host_calls_only && !k.host_calls) {
      still_enabled.push_back(k);
    } else {
      (void)AMPBENCH_CUPTI_CHECK(cuptiActivityDisable(k.kind));
    }
  }
  s.enabled_kinds = std::move(still_enabled);
  if (s.driver_launch_calls_enabled) {
    for (const CUpti_CallbackId cbid : kDriverLaunchCalls) {
      (void)AMPBENCH_CUPTI_CHECK(cuptiActivityEnableDriverApi(cbid, 0));
    }
    s.driver_launch_calls_enabled = false;
  }
}

}  // namespace

std::optional<CuptiCollector> CuptiCollector::start(const CollectorOptions& options,
                                                    std::string* why_not) {
  if (options.buffer_bytes < kMinimumBufferBytes) {
    throw std::invalid_argument("CollectorOptions::buffer_bytes must be at least " +
                                std::to_string(kMinimumBufferBytes));
  }
  const auto refuse = [why_not](const std::string& reason) {
    if (why_not != nullptr) *why_not = "CUPTI unavailable: " + reason;
    return std::optional<CuptiCollector>();
  };
  bool expected = false;
  if (!collector_running.compare_exchange_strong(expected, true)) {
    return refuse("another CuptiCollector is running (CUPTI's activity API is process-wide)");
  }
  // Released on every way out of start() but success, exceptions included.
  struct Claim {
    bool kept = false;
    ~Claim() {
      if (!kept) collector_running = false;
    }
  } claim;
  const DeviceStatus device = probe_device();
  if (!device.available) return refuse("no CUDA device: " + device.error);

  Session& s = session();
  std::vector<std::string> problems;
  std::string failure;
  // The records are read by this build's headers' layout (cupti_records.hpp).
  std::uint32_t loaded_version = 0;
  if (!AMPBENCH_CUPTI_CALL(cuptiGetVersion(&loaded_version), &failure)) return refuse(failure);
  if (auto mismatch = cupti_version_problem(loaded_version, compiled_cupti_version())) {
    if (loaded_version < compiled_cupti_version()) return refuse(*mismatch);
    problems.push_back(std::move(*mismatch));
  }
  // CUPTI's default thread id is pthread_self(); the host phases use gettid.
  if (!AMPBENCH_CUPTI_CALL(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), &failure)) {
    problems.push_back(failure +
                       ": API calls and NVTX ranges carry pthread ids, which do not "
                       "match the host phases' thread ids");
  }
  // Before any kind is enabled, as CUPTI requires, so that every record uses the host clock.
  std::int64_t clock_offset_ns = 0;
  if (!s.timestamp_callback_registered &&
      AMPBENCH_CUPTI_CALL(cuptiActivityRegisterTimestampCallback(&host_clock_ns), &failure)) {
    s.timestamp_callback_registered = true;
  }
  if (!s.timestamp_callback_registered) {
    clock_offset_ns = measure_clock_offset_ns();
    problems.push_back(failure +
                       ": CUPTI timestamps are shifted to the host clock by an offset "
                       "measured at start (" +
                       std::to_string(clock_offset_ns) + " ns)");
  }
  profile::TraceMetadata metadata = host_metadata(device.device_count);
  {
    const std::lock_guard lock(s.mutex);
    s.collecting = true;
    s.buffer_bytes = options.buffer_bytes;
    s.converter = RecordConverter(clock_offset_ns);
    s.clock_offset_ns = clock_offset_ns;
    s.trace = profile::Trace{};
    s.trace.metadata = std::move(metadata);
    s.dropped_records = 0;
    s.problems = std::move(problems);
    s.enabled_kinds.clear();
    s.driver_launch_calls_enabled = false;
  }
  const auto fail = [&](const std::string& reason) {
    disable_enabled(s, false);
    {
      const std::lock_guard lock(s.mutex);
      s.collecting = false;
    }
    return refuse(reason);
  };
  if (!s.callbacks_registered) {
    if (!AMPBENCH_CUPTI_CALL(cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed),
                             &failure)) {
      return fail(failure);
    }
    s.callbacks_registered = true;
  }
  (void)take_dropped_records();  // what an earlier session left uncounted is not this one's
  const std::size_t kinds = options.kernels_only ? 1 : kAllKinds.size();
  for (std::size_t i = 0; i < kinds; ++i) {
    const NamedKind& k = kAllKinds[i];
    if (AMPBENCH_CUPTI_CALL(cuptiActivityEnable(k.kind), &failure)) {
      s.enabled_kinds.push_back(k);
    } else if (k.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      return fail(failure);
    } else {
      const std::lock_guard lock(s.mutex);
      s.problems.push_back(std::string(k.name) + " records are not collected: " + failure);
    }
  }
  if (!options.kernels_only) {
    s.driver_launch_calls_enabled = true;
    for (const CUpti_CallbackId cbid : kDriverLaunchCalls) {
      if (!AMPBENCH_CUPTI_CALL(cuptiActivityEnableDriverApi(cbid, 1), &failure)) {
        const std::lock_guard lock(s.mutex);
        s.problems.push_back("a driver launch call is not collected: " + failure);
      }
    }
  }
  claim.kept = true;
  return CuptiCollector();
}

CollectedTrace CuptiCollector::stop() {
  CollectedTrace result;
  if (!running_) {
    result.problems.push_back("stop() on a collector that is not running: nothing was collected");
    return result;
  }
  running_ = false;
  // Another collector may start once this one has stopped, however stop() ends.
  struct Release {
    ~Release() { collector_running = false; }
  } release;
  Session& s = session();
  std::vector<std::string> problems;
  // CUPTI delivers a record once it is complete, so the device must finish first; the records of
  // host calls go off before, so that this synchronize is not part of the trace.
  disable_enabled(s, true);
  if (const cudaError_t status = cudaDeviceSynchronize(); status != cudaSuccess) {
    detail::log_cuda_error(status, "cudaDeviceSynchronize()", __FILE__, __LINE__);
    problems.push_back(std::string("cudaDeviceSynchronize failed before the final flush (") +
                       cudaGetErrorName(status) + "): unfinished work may be missing");
  }
  disable_enabled(s, false);
  std::string failure;
  // Forced: also the buffers holding incomplete records. Runs buffer_completed on this thread,
  // hence without the session's lock held.
  if (!AMPBENCH_CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), &failure)) {
    problems.push_back(failure + ": records still in CUPTI's buffers are missing");
  }
  {
    const std::uint64_t dropped =
        take_dropped_records();  // before our lock, as in buffer_completed
    const std::lock_guard lock(s.mutex);
    s.collecting = false;
    s.converter.finish();
    s.dropped_records += dropped;
    result.trace = std::move(s.trace);
    s.trace = profile::Trace{};
    result.trace.dropped_records.push_back({.context = 0, .stream = 0, .count = s.dropped_records});
    result.counts = s.converter.counts();
    result.clock_offset_ns = s.clock_offset_ns;
    result.problems = std::move(s.problems);
    s.problems.clear();
  }
  result.problems.insert(result.problems.end(), problems.begin(), problems.end());
  return result;
}

CuptiCollector::~CuptiCollector() {
  if (!running_) return;
  try {
    (void)stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ampbench: stopping the CUPTI collector failed: %s\n", e.what());
  }
}

CuptiCollector::CuptiCollector(CuptiCollector&& other) noexcept
    : running_(std::exchange(other.running_, false)) {}

}  // namespace ampbench::kernels
