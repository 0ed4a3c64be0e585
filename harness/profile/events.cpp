#include "harness/profile/events.hpp"

#include <set>

namespace ampbench::profile {

std::uint64_t total_dropped_records(const Trace& trace) {
  std::uint64_t total = 0;
  for (const DroppedRecords& d : trace.dropped_records) total += d.count;
  return total;
}

Trace records_from(const Trace& trace, std::uint64_t cutoff_ns) {
  Trace kept;
  kept.metadata = trace.metadata;
  kept.dropped_records = trace.dropped_records;
  std::set<std::uint32_t> launched_before, launched_after;
  for (const ApiCallEvent& a : trace.api_calls) {
    if (a.start_ns >= cutoff_ns) {
      kept.api_calls.push_back(a);
      launched_after.insert(a.correlation_id);
    } else {
      launched_before.insert(a.correlation_id);
    }
  }
  // Device work belongs with its launch; without one, with its own start.
  const auto keep = [&](std::uint32_t correlation_id, std::uint64_t start_ns) {
    if (launched_after.count(correlation_id) != 0) return true;
    if (launched_before.count(correlation_id) != 0) return false;
    return start_ns >= cutoff_ns;
  };
  for (const KernelEvent& k : trace.kernels) {
    if (keep(k.correlation_id, k.start_ns)) kept.kernels.push_back(k);
  }
  for (const MemcpyEvent& m : trace.memcpys) {
    if (keep(m.correlation_id, m.start_ns)) kept.memcpys.push_back(m);
  }
  for (const MemsetEvent& m : trace.memsets) {
    if (keep(m.correlation_id, m.start_ns)) kept.memsets.push_back(m);
  }
  for (const SynchronizationEvent& e : trace.synchronizations) {
    if (e.start_ns >= cutoff_ns) kept.synchronizations.push_back(e);
  }
  for (const OverheadEvent& e : trace.overheads) {
    if (e.start_ns >= cutoff_ns) kept.overheads.push_back(e);
  }
  for (const RangeEvent& r : trace.ranges) {
    if (r.start_ns >= cutoff_ns) kept.ranges.push_back(r);
  }
  for (const ExternalCorrelation& e : trace.external_correlations) {
    if (launched_after.count(e.correlation_id) != 0) kept.external_correlations.push_back(e);
  }
  return kept;
}

std::string_view to_string(ApiKind kind) {
  switch (kind) {
    case ApiKind::runtime: return "runtime";
    case ApiKind::driver: return "driver";
  }
  return "runtime";
}

std::string_view to_string(MemcpyKind kind) {
  switch (kind) {
    case MemcpyKind::unknown: return "unknown";
    case MemcpyKind::host_to_device: return "HtoD";
    case MemcpyKind::device_to_host: return "DtoH";
    case MemcpyKind::device_to_device: return "DtoD";
    case MemcpyKind::host_to_host: return "HtoH";
    case MemcpyKind::peer_to_peer: return "PtoP";
  }
  return "unknown";
}

std::string_view to_string(SynchronizationKind kind) {
  switch (kind) {
    case SynchronizationKind::unknown: return "unknown";
    case SynchronizationKind::event: return "event";
    case SynchronizationKind::stream_wait_event: return "stream_wait_event";
    case SynchronizationKind::stream: return "stream";
    case SynchronizationKind::context: return "context";
  }
  return "unknown";
}

std::string_view to_string(RangeKind kind) {
  switch (kind) {
    case RangeKind::push_pop: return "push_pop";
    case RangeKind::start_end: return "start_end";
    case RangeKind::host_phase: return "host_phase";
  }
  return "push_pop";
}

}  // namespace ampbench::profile
