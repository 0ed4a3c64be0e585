#include "kernels/cupti_records.hpp"

#include <cupti_callbacks.h>
#include <cupti_version.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace ampbench::kernels {
namespace {

using profile::ApiKind;
using profile::MemcpyKind;
using profile::SynchronizationKind;

std::string or_empty(const char* s) {
  return s != nullptr ? std::string(s) : std::string();
}

// The copy's direction; CUDA arrays count as device memory.
MemcpyKind memcpy_kind(std::uint8_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return MemcpyKind::host_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return MemcpyKind::device_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return MemcpyKind::device_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return MemcpyKind::host_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return MemcpyKind::peer_to_peer;
    default: return MemcpyKind::unknown;
  }
}

SynchronizationKind synchronization_kind(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return SynchronizationKind::event;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return SynchronizationKind::stream_wait_event;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return SynchronizationKind::stream;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return SynchronizationKind::context;
    default: return SynchronizationKind::unknown;
  }
}

std::string overhead_kind(CUpti_ActivityOverheadKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "driver compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI buffer flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
      return "runtime triggered module loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "lazy function loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "command buffer full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "activity buffer request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "UVM activity init";
    default: return "unknown (" + std::to_string(static_cast<std::uint32_t>(kind)) + ")";
  }
}

// The host thread of a marker or overhead record; 0 when the record names no thread.
std::uint32_t thread_of(CUpti_ActivityObjectKind kind, const CUpti_ActivityObjectKindId& id) {
  return kind == CUPTI_ACTIVITY_OBJECT_THREAD ? id.pt.threadId : 0u;
}

profile::Dim3 dim3_of(std::int32_t x, std::int32_t y, std::int32_t z) {
  return {.x = static_cast<std::uint32_t>(x),
          .y = static_cast<std::uint32_t>(y),
          .z = static_cast<std::uint32_t>(z)};
}

// CUPTI's records carry the record kind as their first member; every conversion reads the record
// as the struct its kind names, as CUPTI's own samples do.
template <typename Record>
const Record& as(const CUpti_Activity& record) {
  return reinterpret_cast<const Record&>(record);
}

}  // namespace

std::vector<std::string> conversion_warnings(const ConversionCounts& counts) {
  std::vector<std::string> warnings;
  const auto add = [&](std::uint64_t n, const std::string& what) {
    if (n != 0) warnings.push_back(std::to_string(n) + " " + what);
  };
  for (const auto& [kind, n] : counts.unknown_kinds) {
    add(n, "CUPTI records of activity kind " + std::to_string(kind) + " were not converted");
  }
  add(counts.without_timestamps, "CUPTI records without timestamps were left out");
  add(counts.end_before_start, "CUPTI records that end before they start were left out");
  add(counts.unnamed_kernels, "kernels had no name in their CUPTI record");
  add(counts.unmatched_marker_ends,
      "NVTX range ends had no start (the range began before collection): the ranges are missing");
  add(counts.unclosed_markers, "NVTX ranges were still open at the end: the ranges are missing");
  return warnings;
}

std::uint32_t compiled_cupti_version() {
  return CUPTI_API_VERSION;
}

std::string describe_cupti_version(std::uint32_t version) {
  if (version < 10000) return "API version " + std::to_string(version);
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

std::optional<std::string> cupti_version_problem(std::uint32_t loaded, std::uint32_t compiled) {
  if (loaded == compiled) return std::nullopt;
  const std::string versions = "the loaded libcupti is " + describe_cupti_version(loaded) +
                               ", this build's CUPTI headers " + describe_cupti_version(compiled);
  if (loaded < compiled) {
    return versions +
           ": its activity records may lack fields this build reads; install the CUPTI of the "
           "CUDA toolkit ampbench was built with (or rebuild against the one installed)";
  }
  return versions + ": its records are read by the older layout, which newer versions keep";
}

std::string demangle_kernel_name(const char* name) {
  if (name == nullptr) return {};
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && demangled != nullptr ? std::string(demangled.get()) : std::string(name);
}

std::string api_call_name(ApiKind kind, std::uint32_t cbid) {
  const char* name = nullptr;
  const CUpti_CallbackDomain domain =
      kind == ApiKind::runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) return {};
  std::string_view result(name);
  // CUPTI names runtime calls with the version they appeared in: "cudaLaunchKernel_v7000".
  const std::size_t suffix = result.rfind("_v");
  if (suffix != std::string_view::npos && suffix + 2 < result.size() &&
      std::all_of(result.begin() + static_cast<std::ptrdiff_t>(suffix + 2), result.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    result = result.substr(0, suffix);
  }
  return std::string(result);
}

std::uint64_t RecordConverter::to_host_ns(std::uint64_t cupti_ns) const {
  return cupti_ns + static_cast<std::uint64_t>(offset_ns_);
}

const std::string& RecordConverter::kernel_name(const char* mangled) {
  auto [it, inserted] = kernel_names_.try_emplace(mangled);
  if (inserted || it->second.first != mangled) {
    it->second = {std::string(mangled), demangle_kernel_name(mangled)};
  }
  return it->second.second;
}

bool RecordConverter::timed(std::uint64_t start, std::uint64_t end) {
  if (start == CUPTI_TIMESTAMP_UNKNOWN || end == CUPTI_TIMESTAMP_UNKNOWN) {
    ++counts_.without_timestamps;
    return false;
  }
  if (end < start) {
    ++counts_.end_before_start;
    return false;
  }
  return true;
}

void RecordConverter::add(const CUpti_Activity& record, profile::Trace& trace) {
  ++counts_.records;
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      add_kernel(as<CUpti_ActivityKernel10>(record), trace);
      return;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      add_api(as<CUpti_ActivityAPI>(record), ApiKind::runtime, trace);
      return;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      add_api(as<CUpti_ActivityAPI>(record), ApiKind::driver, trace);
      return;
    case CUPTI_ACTIVITY_KIND_MEMCPY: add_memcpy(as<CUpti_ActivityMemcpy6>(record), trace); return;
    case CUPTI_ACTIVITY_KIND_MEMSET: add_memset(as<CUpti_ActivityMemset4>(record), trace); return;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      add_synchronization(as<CUpti_ActivitySynchronization2>(record), trace);
      return;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      add_overhead(as<CUpti_ActivityOverhead3>(record), trace);
      return;
    case CUPTI_ACTIVITY_KIND_MARKER: add_marker(as<CUpti_ActivityMarker2>(record), trace); return;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& r = as<CUpti_ActivityExternalCorrelation>(record);
      trace.external_correlations.push_back({.kind = static_cast<std::uint32_t>(r.externalKind),
                                             .external_id = r.externalId,
                                             .correlation_id = r.correlationId});
      return;
    }
    default: ++counts_.unknown_kinds[static_cast<std::uint32_t>(record.kind)]; return;
  }
}

CUptiResult RecordConverter::add_buffer(std::uint8_t* buffer, std::size_t valid_bytes,
                                        profile::Trace& trace) {
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult status = cuptiActivityGetNextRecord(buffer, valid_bytes, &record);
    if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) return CUPTI_SUCCESS;  // past the last record
    if (status != CUPTI_SUCCESS) return status;
    add(*record, trace);
  }
}

void RecordConverter::add_kernel(const CUpti_ActivityKernel10& r, profile::Trace& trace) {
  if (!timed(r.start, r.end)) return;
  std::string name = r.name != nullptr ? kernel_name(r.name) : std::string();
  if (name.empty()) {
    ++counts_.unnamed_kernels;
    name = "(unnamed)";
  }
  trace.kernels.push_back(
      {.name = std::move(name),
       .device = r.deviceId,
       .context = r.contextId,
       .stream = r.streamId,
       .correlation_id = r.correlationId,
       .start_ns = to_host_ns(r.start),
       .end_ns = to_host_ns(r.end),
       .grid = dim3_of(r.gridX, r.gridY, r.gridZ),
       .block = dim3_of(r.blockX, r.blockY, r.blockZ),
       .registers_per_thread = r.registersPerThread,
       .static_shared_memory_bytes = static_cast<std::uint32_t>(r.staticSharedMemory),
       .dynamic_shared_memory_bytes = static_cast<std::uint32_t>(r.dynamicSharedMemory)});
}

void RecordConverter::add_api(const CUpti_ActivityAPI& r, ApiKind kind, profile::Trace& trace) {
  if (!timed(r.start, r.end)) return;
  trace.api_calls.push_back({.kind = kind,
                             .name = api_call_name(kind, r.cbid),
                             .cbid = r.cbid,
                             .thread_id = r.threadId,
                             .correlation_id = r.correlationId,
                             .start_ns = to_host_ns(r.start),
                             .end_ns = to_host_ns(r.end)});
}

// A copy record carries two ids: the driver call's (correlationId) and the runtime call's
// (runtimeCorrelationId, 0 for a copy made through the driver API). The collector records the
// runtime calls but of the driver only the launches, so the runtime id is the one that finds the
// copy's API record; where CUPTI gives both calls one id, the two agree.
void RecordConverter::add_memcpy(const CUpti_ActivityMemcpy6& r, profile::Trace& trace) {
  if (!timed(r.start, r.end)) return;
  trace.memcpys.push_back(
      {.kind = memcpy_kind(r.copyKind),
       .bytes = r.bytes,
       .device = r.deviceId,
       .context = r.contextId,
       .stream = r.streamId,
       .correlation_id = r.runtimeCorrelationId != 0 ? r.runtimeCorrelationId : r.correlationId,
       .start_ns = to_host_ns(r.start),
       .end_ns = to_host_ns(r.end)});
}

void RecordConverter::add_memset(const CUpti_ActivityMemset4& r, profile::Trace& trace) {
  if (!timed(r.start, r.end)) return;
  trace.memsets.push_back({.bytes = r.bytes,
                           .value = r.value,
                           .device = r.deviceId,
                           .context = r.contextId,
                           .stream = r.streamId,
                           .correlation_id = r.correlationId,
                           .start_ns = to_host_ns(r.start),
                           .end_ns = to_host_ns(r.end)});
}

void RecordConverter::add_synchronization(const CUpti_ActivitySynchronization2& r,
                                          profile::Trace& trace) {
  if (!timed(r.start, r.end)) return;
  trace.synchronizations.push_back({.kind = synchronization_kind(r.type),
                                    .context = r.contextId,
                                    .stream = r.streamId,
                                    .correlation_id = r.correlationId,
                                    .start_ns = to_host_ns(r.start),
                                    .end_ns = to_host_ns(r.end)});
}

void RecordConverter::add_overhead(const CUpti_ActivityOverhead3& r, profile::Trace& trace) {
  if (!timed(r.start, r.end)) return;
  trace.overheads.push_back({.kind = overhead_kind(r.overheadKind),
                             .thread_id = thread_of(r.objectKind, r.objectId),
                             .start_ns = to_host_ns(r.start),
                             .end_ns = to_host_ns(r.end)});
}

// NVTX ranges arrive as two records sharing the marker id: a start (with the name and domain) and
// an end (name null). CUPTI does not say whether a pair came from push/pop or from start/end: a
// range is called push/pop when it ends on its own thread as that thread's innermost open range,
// start/end otherwise. Attribution nests ranges by their times, so the kind is informational.
void RecordConverter::add_marker(const CUpti_ActivityMarker2& r, profile::Trace& trace) {
  const std::uint32_t thread = thread_of(r.objectKind, r.objectId);
  const bool start = (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0;
  const bool end = (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) != 0;
  if (!start && !end) {  // nvtxMark, or an NVTX synchronisation marker: a point in time
    ++counts_.instant_markers;
    return;
  }
  if (start) {
    if (r.timestamp == CUPTI_TIMESTAMP_UNKNOWN) {
      ++counts_.without_timestamps;
      return;
    }
    std::vector<std::uint32_t>& open = open_by_thread_[thread];
    open_markers_[r.id] = {.name = or_empty(r.name),
                           .domain = or_empty(r.domain),
                           .thread_id = thread,
                           .start_ns = to_host_ns(r.timestamp),
                           .depth = static_cast<std::uint32_t>(open.size())};
    open.push_back(r.id);
    return;
  }
  const auto it = open_markers_.find(r.id);
  if (it == open_markers_.end()) {
    ++counts_.unmatched_marker_ends;
    return;
  }
  OpenMarker marker = std::move(it->second);
  open_markers_.erase(it);
  std::vector<std::uint32_t>& open = open_by_thread_[marker.thread_id];
  const bool innermost_on_its_thread = thread == marker.thread_id && open.back() == r.id;
  open.erase(std::find(open.begin(), open.end(), r.id));
  if (r.timestamp == CUPTI_TIMESTAMP_UNKNOWN) {
    ++counts_.without_timestamps;
    return;
  }
  const std::uint64_t end_ns = to_host_ns(r.timestamp);
  if (end_ns < marker.start_ns) {
    ++counts_.end_before_start;
    return;
  }
  trace.ranges.push_back({.name = std::move(marker.name),
                          .domain = std::move(marker.domain),
                          .kind = innermost_on_its_thread ? profile::RangeKind::push_pop
                                                          : profile::RangeKind::start_end,
                          .thread_id = marker.thread_id,
                          .start_ns = marker.start_ns,
                          .end_ns = end_ns,
                          .depth = innermost_on_its_thread ? marker.depth : 0u});
}

void RecordConverter::finish() {
  counts_.unclosed_markers += open_markers_.size();
  open_markers_.clear();
  open_by_thread_.clear();
}

}  // namespace ampbench::kernels
