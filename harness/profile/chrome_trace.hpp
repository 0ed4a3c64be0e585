// A Trace as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
// Layout (as PyTorch's Kineto writes GPU traces):
// - {"traceEvents": [...], "displayTimeUnit": "ns", "baseTimeNanoseconds": B, "otherData": {...}}
// - ts and dur in microseconds with three decimals (ns resolution), ts relative to B, the earliest
//   timestamp of the trace.
// - Device d is process (pid) d, one thread (tid) per stream; the host is pid host_pid(trace),
//   one tid per host thread id. "ph":"M" events name them: process_name "GPU d: <device name>"
//   and "host", thread_name "stream s" and "thread t".
// - Kernels, copies and memsets are complete events ("ph":"X") on their device and stream, cat
//   "kernel", "gpu_memcpy", "gpu_memset"; kernels carry args correlation, grid, block, registers
//   per thread, shared memory and category. API calls are X events on the host (cat
//   "cuda_runtime" or "cuda_driver"), ranges X events on their host thread (cat "user_annotation"
//   or "host_phase"), CUPTI overhead cat "overhead", synchronizations cat "cuda_sync" on the host.
// - Each launch is linked to its kernel by a flow: "ph":"s" at the API call's start and "ph":"f"
//   with "bp":"e" at the kernel's start, both cat "ac2g" with "id" the correlation id.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "harness/profile/events.hpp"

namespace ampbench::profile {

class ExportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The host's pid in the trace: metadata.process_id when known, else 1000000, a number no device
// index reaches.
std::int64_t host_pid(const Trace& trace);

std::string chrome_trace_json(const Trace& trace);

// Writes chrome_trace_json(trace) to `path` with io::write_file (a temporary, flushed and renamed),
// so `path` is either the old file or the complete new one. Throws ExportError naming the file and
// the reason.
void write_chrome_trace(const Trace& trace, const std::filesystem::path& path);

}  // namespace ampbench::profile
