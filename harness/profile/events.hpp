// The profile event model: plain structs that every profiler front end (the CUPTI collector, the
// host timers of the CPU backend, a recorded trace file) converts its records into, and that
// attribution, Tensor Core classification and the exporters consume. Nothing here depends on CUDA,
// so all of it is tested on synthetic and recorded event streams without a GPU.
//
// One clock: every timestamp is in nanoseconds (std::uint64_t) on the same clock, whatever clock
// that is (the CUPTI collector registers a timestamp callback that returns the host timers' clock).
// Intervals are half-open, [start_ns, end_ns).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ampbench::profile {

struct Dim3 {
  std::uint32_t x = 1;
  std::uint32_t y = 1;
  std::uint32_t z = 1;
};

// A kernel execution on a device (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).
struct KernelEvent {
  std::string name;  // demangled when the producer could demangle it
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation_id = 0;  // links the kernel to the API call that launched it
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  Dim3 grid;
  Dim3 block;
  std::uint32_t registers_per_thread = 0;
  std::uint32_t static_shared_memory_bytes = 0;
  std::uint32_t dynamic_shared_memory_bytes = 0;
};

enum class ApiKind { runtime, driver };

// A CUDA runtime or driver API call on a host thread (CUPTI_ACTIVITY_KIND_RUNTIME / DRIVER).
struct ApiCallEvent {
  ApiKind kind = ApiKind::runtime;
  std::string name;        // e.g. "cudaLaunchKernel"; empty when only the callback id is known
  std::uint32_t cbid = 0;  // CUPTI callback id
  std::uint32_t thread_id = 0;
  std::uint32_t correlation_id = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

enum class MemcpyKind {
  unknown,
  host_to_device,
  device_to_host,
  device_to_device,
  host_to_host,
  peer_to_peer
};

struct MemcpyEvent {
  MemcpyKind kind = MemcpyKind::unknown;
  std::uint64_t bytes = 0;
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation_id = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

struct MemsetEvent {
  std::uint64_t bytes = 0;
  std::uint32_t value = 0;
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation_id = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

enum class SynchronizationKind { unknown, event, stream_wait_event, stream, context };

// A host thread waiting for the device (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION); not device work, so
// it never counts as busy time.
struct SynchronizationEvent {
  SynchronizationKind kind = SynchronizationKind::unknown;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation_id = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

// Time CUPTI itself spent (CUPTI_ACTIVITY_KIND_OVERHEAD): buffer flushes, instrumentation.
struct OverheadEvent {
  std::string kind;  // e.g. "CUPTI buffer flush"
  std::uint32_t thread_id = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

enum class RangeKind {
  push_pop,   // NVTX push/pop: nested on its thread
  start_end,  // NVTX start/end: may overlap other ranges without nesting
  host_phase  // a host timer phase (host_timer.hpp): nested on its thread, no device activity
};

// A named host range: NVTX or a host timer phase. Attribution nests ranges by time on their thread
// (a range contains another when it starts no later and ends no earlier).
struct RangeEvent {
  std::string name;
  std::string domain;  // NVTX domain; empty for the default domain and host phases
  RangeKind kind = RangeKind::push_pop;
  std::uint32_t thread_id = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  // Enclosing ranges open on the thread when this one began, as the producer saw them (0 for
  // outermost and for start/end ranges). Informational: attribution derives nesting from times.
  std::uint32_t depth = 0;
};

// CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: an id of the framework (an op, an annotation) pushed
// around API calls, linked to their correlation id.
struct ExternalCorrelation {
  std::uint32_t kind = 0;  // CUpti_ExternalCorrelationKind (3 = CUSTOM0, 4 = CUSTOM1, ...)
  std::uint64_t external_id = 0;
  std::uint32_t correlation_id = 0;
};

// Records CUPTI reported it dropped (cuptiActivityGetNumDroppedRecords), per context and stream:
// kernels and copies missing from the trace, so every count and time is a lower bound.
struct DroppedRecords {
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint64_t count = 0;
};

struct TraceMetadata {
  std::map<std::uint32_t, std::string> device_names;  // device id -> "NVIDIA H100 80GB HBM3"
  std::string host_name;
  std::uint32_t process_id = 0;  // 0 when unknown (synthetic traces)
};

struct Trace {
  TraceMetadata metadata;
  std::vector<KernelEvent> kernels;
  std::vector<ApiCallEvent> api_calls;
  std::vector<MemcpyEvent> memcpys;
  std::vector<MemsetEvent> memsets;
  std::vector<SynchronizationEvent> synchronizations;
  std::vector<OverheadEvent> overheads;
  std::vector<RangeEvent> ranges;
  std::vector<ExternalCorrelation> external_correlations;
  std::vector<DroppedRecords> dropped_records;
};

std::uint64_t total_dropped_records(const Trace& trace);

// The part of a trace that began at or after cutoff_ns: API calls, ranges, synchronizations and
// overheads that started then or later; kernels, copies and memsets launched by a kept API call (a
// kernel launched before the cutoff but run after it belongs to the earlier work), or, without an
// API record, started at or after the cutoff; external correlations of kept API calls. The dropped
// records (CUPTI counts them for the whole collection) and the metadata are kept as they are. For a
// trace collected from before the work it should describe: the warm step that absorbs CUPTI's
// first-launch instrumentation.
Trace records_from(const Trace& trace, std::uint64_t cutoff_ns);

// end - start, or 0 for an event whose end is not after its start.
inline std::uint64_t duration_ns(std::uint64_t start, std::uint64_t end) {
  return end > start ? end - start : 0;
}

std::string_view to_string(ApiKind kind);
std::string_view to_string(MemcpyKind kind);
std::string_view to_string(SynchronizationKind kind);
std::string_view to_string(RangeKind kind);

}  // namespace ampbench::profile
