// CUPTI activity records -> the profile event structs (harness/profile/events.hpp). Plain C++ over
// the CUPTI headers: no CUDA runtime call, and only CUPTI functions that need no device (callback
// names, walking a buffer), so every conversion is tested on the host with records filled by hand
// as CUPTI fills them (kernels/test/cupti_records_test.cpp).
//
//   RecordConverter converter;                         // offset 0: CUPTI already uses our clock
//   converter.add_buffer(buffer, valid_bytes, trace);  // for each buffer CUPTI completes
//   converter.finish();                                // NVTX ranges never closed are counted
//
// The record structs are the ones this toolkit's CUPTI (CUPTI_API_VERSION 130001, CUDA 13)
// delivers: CUpti_ActivityKernel10, CUpti_ActivityAPI, CUpti_ActivityMemcpy6,
// CUpti_ActivityMemset4, CUpti_ActivitySynchronization2, CUpti_ActivityOverhead3,
// CUpti_ActivityMarker2 and CUpti_ActivityExternalCorrelation.
#pragma once

#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/profile/events.hpp"

namespace ampbench::kernels {

// What the converter did with records beyond appending events, so that nothing is lost silently.
struct ConversionCounts {
  std::uint64_t records = 0;  // every record passed to add()
  // Records of kinds this converter does not convert, by CUpti_ActivityKind value.
  std::map<std::uint32_t, std::uint64_t> unknown_kinds;
  // Records left out because CUPTI could not time them (start and end, or the marker's timestamp,
  // are 0, CUPTI_TIMESTAMP_UNKNOWN) or because they end before they start.
  std::uint64_t without_timestamps = 0;
  std::uint64_t end_before_start = 0;
  std::uint64_t unnamed_kernels = 0;        // kernel records without a name, kept as "(unnamed)"
  std::uint64_t instant_markers = 0;        // nvtxMark: a point in time, not a range
  std::uint64_t unmatched_marker_ends = 0;  // a range end whose start was never seen
  std::uint64_t unclosed_markers = 0;       // range starts with no end when finish() ran
};

// One sentence per count that means the trace lacks something (records of unknown kinds, untimed
// or inverted records, unnamed kernels, NVTX ranges without their start or end), for the report's
// warnings; empty when nothing was lost. Instantaneous markers are not a loss.
std::vector<std::string> conversion_warnings(const ConversionCounts& counts);

// The demangled name of a kernel (CUPTI reports mangled names, e.g. "_Z6kernelPf"); a name that is
// not a mangled C++ name (an extern "C" kernel, say) comes back unchanged.
std::string demangle_kernel_name(const char* name);

// The name of a runtime or driver API call from its CUPTI callback id, without CUPTI's version
// suffix ("cudaLaunchKernel_v7000" -> "cudaLaunchKernel"); empty when CUPTI does not know the id.
std::string api_call_name(profile::ApiKind kind, std::uint32_t cbid);

// The CUPTI API version this build's records are read by (CUPTI_API_VERSION of its headers), and
// why records from a libcupti that reports `loaded` (cuptiGetVersion) cannot be read by that
// layout: empty when the versions match. An older library may write record structures that lack
// fields read here (whose values would be garbage), so the collector does not start with one; a
// newer one keeps the fields of older record versions where they were, so its records are read,
// with this as a problem line of the trace. Versions print as CUPTI numbers them: 130001 is 13.0.1
// (CUDA 12 and earlier: small integers, "API version 28").
std::uint32_t compiled_cupti_version();
std::string describe_cupti_version(std::uint32_t version);
std::optional<std::string> cupti_version_problem(std::uint32_t loaded, std::uint32_t compiled);

// Turns CUPTI records into events appended to a Trace. Keeps the NVTX range starts it has seen, so
// one converter must see all records of a session, in the order CUPTI delivers them. Not
// thread-safe: the caller serialises add() and finish().
class RecordConverter {
 public:
  // `clock_offset_ns` is added to every CUPTI timestamp (modulo 2^64): 0 when CUPTI reports the
  // host timers' clock through the timestamp callback; otherwise host clock minus CUPTI clock.
  explicit RecordConverter(std::int64_t clock_offset_ns = 0) : offset_ns_(clock_offset_ns) {}

  // Appends the event of `record` (a start/end pair of NVTX markers makes one RangeEvent, appended
  // when the end arrives). Records of other kinds are counted in counts().unknown_kinds.
  void add(const CUpti_Activity& record, profile::Trace& trace);

  // Converts the records of a completed CUPTI activity buffer (its first `valid_bytes`), in
  // order, walking it with cuptiActivityGetNextRecord. CUPTI_SUCCESS when the buffer was read to
  // its end; otherwise CUPTI's status, and the records after the failure are lost.
  CUptiResult add_buffer(std::uint8_t* buffer, std::size_t valid_bytes, profile::Trace& trace);

  // Ends a session: range starts still open are dropped and counted as unclosed.
  void finish();

  const ConversionCounts& counts() const { return counts_; }

 private:
  struct OpenMarker {
    std::string name;
    std::string domain;
    std::uint32_t thread_id = 0;
    std::uint64_t start_ns = 0;
    std::uint32_t depth = 0;
  };

  std::uint64_t to_host_ns(std::uint64_t cupti_ns) const;
  const std::string& kernel_name(const char* mangled);
  // False (and counted) when the interval cannot be placed on the timeline.
  bool timed(std::uint64_t start, std::uint64_t end);
  void add_kernel(const CUpti_ActivityKernel10& r, profile::Trace& trace);
  void add_api(const CUpti_ActivityAPI& r, profile::ApiKind kind, profile::Trace& trace);
  void add_memcpy(const CUpti_ActivityMemcpy6& r, profile::Trace& trace);
  void add_memset(const CUpti_ActivityMemset4& r, profile::Trace& trace);
  void add_synchronization(const CUpti_ActivitySynchronization2& r, profile::Trace& trace);
  void add_overhead(const CUpti_ActivityOverhead3& r, profile::Trace& trace);
  void add_marker(const CUpti_ActivityMarker2& r, profile::Trace& trace);

  std::int64_t offset_ns_;
  ConversionCounts counts_;
  // Demangling costs microseconds and CUPTI shares one name string among all records of a kernel:
  // demangled names by that string's address, with the mangled text to check that the address
  // still holds it (a module unloaded and another loaded could reuse it).
  std::unordered_map<const char*, std::pair<std::string, std::string>> kernel_names_;
  std::map<std::uint32_t, OpenMarker> open_markers_;  // by marker id
  // Ids of the open markers of each thread, in the order they started.
  std::map<std::uint32_t, std::vector<std::uint32_t>> open_by_thread_;
};

}  // namespace ampbench::kernels
