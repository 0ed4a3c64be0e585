// The CUPTI activity collector: records what the GPU and the CUDA API did between start() and
// stop() and converts it into a profile::Trace (harness/profile/events.hpp) for attribution and the
// Chrome trace exporter.
//
//   std::string why_not;
//   std::optional<CuptiCollector> collector = CuptiCollector::start({}, &why_not);
//   if (!collector) report(why_not);              // "CUPTI unavailable: ..."; run untraced
//   ... launches, inside NVTX ranges (PhaseRecorder(nvtx_range_hooks())) ...
//   CollectedTrace collected = collector->stop();
//
// Every timestamp is on the host timers' clock (profile::steady_clock_ns): CUPTI is given that
// clock through its timestamp callback, and the GPU timestamps are converted by CUPTI into it.
// Thread ids are the kernel's thread ids (gettid), as profile::current_thread_id gives them.
//
// CUPTI's activity API is process-wide, so one collector at most runs at a time: start() refuses a
// second one. Every CUPTI failure is logged and degrades the profile; none aborts the program.
//
// NVTX: a program that links this collector makes CUPTI its NVTX tool (the NVTX loader's static
// injection hook), so that NVTX ranges become CUPTI MARKER records whenever a collector runs,
// whatever the order of the first NVTX call and start(). A tool named by NVTX_INJECTION64_PATH
// (Nsight Systems sets it) takes precedence; the collector then sees no ranges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/profile/events.hpp"
#include "kernels/cupti_records.hpp"

namespace ampbench::kernels {

struct CollectorOptions {
  // Record kernels only (CONCURRENT_KERNEL), for measuring what tracing kernels costs; otherwise
  // also memcpy, memset, runtime API, driver launch calls, synchronisation, CUPTI overhead, NVTX
  // markers and external correlation.
  bool kernels_only = false;
  // Size of each activity buffer handed to CUPTI; at least 64 KiB (start() throws
  // std::invalid_argument otherwise).
  std::size_t buffer_bytes = std::size_t{4} << 20;
};

struct CollectedTrace {
  profile::Trace trace;
  ConversionCounts counts;  // records CUPTI delivered that are not events of the trace
  // What the trace lacks and why, one sentence each (a kind CUPTI could not enable, a fallback
  // clock, a failed flush); empty when everything asked for was collected.
  std::vector<std::string> problems;
  // Host clock minus CUPTI's clock, added to every timestamp: 0 when CUPTI took the host clock
  // through the timestamp callback, else measured at start().
  std::int64_t clock_offset_ns = 0;
};

class CuptiCollector {
 public:
  // Enables the activity kinds and returns the running collector; nullopt when CUPTI cannot trace
  // (no device, CUPTI refused, another collector runs), with the reason in *why_not
  // ("CUPTI unavailable: ...") when why_not is not null.
  static std::optional<CuptiCollector> start(const CollectorOptions& options, std::string* why_not);

  // Turns off the records of host calls, synchronises the current device (so that its work is
  // complete; other devices are not synchronised), turns off the rest, flushes CUPTI's buffers
  // (forced) and returns what was recorded, with CUPTI's count of dropped records.
  CollectedTrace stop();

  // A collector destroyed while running stops and discards its trace.
  ~CuptiCollector();
  CuptiCollector(CuptiCollector&& other) noexcept;
  CuptiCollector& operator=(CuptiCollector&&) = delete;
  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

  bool running() const { return running_; }

 private:
  CuptiCollector() : running_(true) {}

  bool running_ = false;
};

}  // namespace ampbench::kernels
