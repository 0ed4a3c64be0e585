#include "harness/profile/events.hpp"

namespace ampbench::profile {

std::uint64_t total_dropped_records(const Trace& trace) {
  std::uint64_t total = 0;
  for (const DroppedRecords& d : trace.dropped_records) total += d.count;
  return total;
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
