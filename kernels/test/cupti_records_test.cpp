// The conversion of CUPTI activity records, on records filled by hand as CUPTI fills them: every
// field of every kind, NVTX marker pairing, unknown kinds and untimed records. No device needed.
#include "kernels/cupti_records.hpp"

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cupti_version.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "harness/profile/attribution.hpp"

namespace ampbench::kernels {
namespace {

using profile::ApiKind;
using profile::MemcpyKind;
using profile::RangeKind;
using profile::SynchronizationKind;
using profile::Trace;

template <typename Record>
const CUpti_Activity& activity(const Record& r) {
  return reinterpret_cast<const CUpti_Activity&>(r);
}

CUpti_ActivityKernel10 kernel_record(const char* name, std::uint64_t start, std::uint64_t end) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = name;
  k.start = start;
  k.end = end;
  return k;
}

CUpti_ActivityMarker2 marker(CUpti_ActivityFlag flags, std::uint32_t id, std::uint64_t timestamp,
                             std::uint32_t thread, const char* name = nullptr,
                             const char* domain = nullptr) {
  CUpti_ActivityMarker2 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flags;
  m.id = id;
  m.timestamp = timestamp;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 4242;
  m.objectId.pt.threadId = thread;
  m.name = name;
  m.domain = domain;
  return m;
}

CUpti_ActivityMarker2 push(std::uint32_t id, std::uint64_t t, std::uint32_t thread,
                           const char* name) {
  return marker(CUPTI_ACTIVITY_FLAG_MARKER_START, id, t, thread, name);
}
CUpti_ActivityMarker2 pop(std::uint32_t id, std::uint64_t t, std::uint32_t thread) {
  return marker(CUPTI_ACTIVITY_FLAG_MARKER_END, id, t, thread);
}

// A libcupti of another version than the headers: older refuses (its records may lack fields read
// here), newer is a problem line; versions read as CUPTI writes them.
TEST(CuptiRecords, VersionMismatchesAreNamed) {
  EXPECT_EQ(compiled_cupti_version(), static_cast<std::uint32_t>(CUPTI_API_VERSION));
  EXPECT_EQ(cupti_version_problem(130001, 130001), std::nullopt);
  EXPECT_EQ(describe_cupti_version(130001), "13.0.1");
  EXPECT_EQ(describe_cupti_version(28), "API version 28");
  const std::optional<std::string> older = cupti_version_problem(28, 130001);
  ASSERT_TRUE(older);
  EXPECT_NE(older->find("the loaded libcupti is API version 28, this build's CUPTI headers 13.0.1"),
            std::string::npos)
      << *older;
  EXPECT_NE(older->find("may lack fields"), std::string::npos) << *older;
  const std::optional<std::string> newer = cupti_version_problem(130200, 130001);
  ASSERT_TRUE(newer);
  EXPECT_NE(newer->find("13.2.0"), std::string::npos) << *newer;
  EXPECT_NE(newer->find("read by the older layout"), std::string::npos) << *newer;
  // The library here is the one the build used: no mismatch.
  std::uint32_t loaded = 0;
  ASSERT_EQ(cuptiGetVersion(&loaded), CUPTI_SUCCESS);
  EXPECT_EQ(cupti_version_problem(loaded, compiled_cupti_version()), std::nullopt);
}

TEST(CuptiRecords, KernelFieldByField) {
  CUpti_ActivityKernel10 k = kernel_record("_Z12probe_kernelPfm", 1000, 3500);
  k.deviceId = 1;
  k.contextId = 2;
  k.streamId = 13;
  k.correlationId = 77;
  k.gridX = 120;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 49152;
  k.completed = 3600;  // not part of the event: the kernel's interval is [start, end)
  RecordConverter converter;
  Trace trace;
  converter.add(activity(k), trace);
  ASSERT_EQ(trace.kernels.size(), 1u);
  const profile::KernelEvent& e = trace.kernels[0];
  EXPECT_EQ(e.name, "probe_kernel(float*, unsigned long)");
  EXPECT_EQ(e.device, 1u);
  EXPECT_EQ(e.context, 2u);
  EXPECT_EQ(e.stream, 13u);
  EXPECT_EQ(e.correlation_id, 77u);
  EXPECT_EQ(e.start_ns, 1000u);
  EXPECT_EQ(e.end_ns, 3500u);
  EXPECT_EQ(e.grid.x, 120u);
  EXPECT_EQ(e.grid.y, 2u);
  EXPECT_EQ(e.grid.z, 1u);
  EXPECT_EQ(e.block.x, 256u);
  EXPECT_EQ(e.block.y, 1u);
  EXPECT_EQ(e.block.z, 1u);
  EXPECT_EQ(e.registers_per_thread, 40u);
  EXPECT_EQ(e.static_shared_memory_bytes, 1024u);
  EXPECT_EQ(e.dynamic_shared_memory_bytes, 49152u);
  EXPECT_EQ(converter.counts().records, 1u);
  EXPECT_TRUE(converter.counts().unknown_kinds.empty());
}

TEST(CuptiRecords, SerialKernelRecordsConvertToo) {
  CUpti_ActivityKernel10 k = kernel_record("_Z1fv", 10, 20);
  k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
  RecordConverter converter;
  Trace trace;
  converter.add(activity(k), trace);
  ASSERT_EQ(trace.kernels.size(), 1u);
  EXPECT_EQ(trace.kernels[0].name, "f()");
}

TEST(CuptiRecords, KernelNames) {
  EXPECT_EQ(demangle_kernel_name("_ZN8ampbench7kernels12round_kernelEPKfPf"),
            "ampbench::kernels::round_kernel(float const*, float*)");
  // Templates, as cuBLAS and CUTLASS name their kernels.
  EXPECT_EQ(demangle_kernel_name("_Z16gemmSN_NN_kernelIfLi128ELi2EEvv"),
            "void gemmSN_NN_kernel<float, 128, 2>()");
  // extern "C" kernels and cuBLAS's plain names are not mangled: unchanged.
  EXPECT_EQ(demangle_kernel_name("nvjet_hsh_192x192_64x3_2x1_v_bz_coopB_NTN"),
            "nvjet_hsh_192x192_64x3_2x1_v_bz_coopB_NTN");
  EXPECT_EQ(demangle_kernel_name("_Z_not_valid"), "_Z_not_valid");
  EXPECT_EQ(demangle_kernel_name(nullptr), "");

  RecordConverter converter;
  Trace trace;
  converter.add(activity(kernel_record(nullptr, 10, 20)), trace);
  ASSERT_EQ(trace.kernels.size(), 1u);
  EXPECT_EQ(trace.kernels[0].name, "(unnamed)");
  EXPECT_EQ(converter.counts().unnamed_kernels, 1u);
}

// CUPTI shares one name string among a kernel's records; a name reused at the same address for
// another kernel (a module unloaded, another loaded) must not keep the first kernel's name.
TEST(CuptiRecords, SharedNameStringsAreDemangledOnceButRechecked) {
  char name[] = "_Z5firstv";
  RecordConverter converter;
  Trace trace;
  converter.add(activity(kernel_record(name, 10, 20)), trace);
  converter.add(activity(kernel_record(name, 30, 40)), trace);
  name[4] = 'a';  // "_Z5farstv": another kernel's name at the same address
  converter.add(activity(kernel_record(name, 50, 60)), trace);
  ASSERT_EQ(trace.kernels.size(), 3u);
  EXPECT_EQ(trace.kernels[0].name, "first()");
  EXPECT_EQ(trace.kernels[1].name, "first()");
  EXPECT_EQ(trace.kernels[2].name, "farst()");
}

TEST(CuptiRecords, ApiCallNamesWithoutVersionSuffix) {
  EXPECT_EQ(api_call_name(ApiKind::runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
            "cudaLaunchKernel");
  EXPECT_EQ(api_call_name(ApiKind::runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020),
            "cudaMemcpyAsync");
  EXPECT_EQ(api_call_name(ApiKind::driver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel),
            "cuLaunchKernel");
  EXPECT_EQ(api_call_name(ApiKind::driver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz),
            "cuLaunchKernel_ptsz");
  EXPECT_EQ(api_call_name(ApiKind::runtime, 999999u), "");
}

TEST(CuptiRecords, RuntimeAndDriverCalls) {
  CUpti_ActivityAPI runtime{};
  runtime.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  runtime.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  runtime.start = 500;
  runtime.end = 540;
  runtime.processId = 4242;
  runtime.threadId = 4243;
  runtime.correlationId = 77;
  CUpti_ActivityAPI driver = runtime;
  driver.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  driver.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  driver.start = 510;
  driver.end = 530;
  RecordConverter converter;
  Trace trace;
  converter.add(activity(runtime), trace);
  converter.add(activity(driver), trace);
  ASSERT_EQ(trace.api_calls.size(), 2u);
  const profile::ApiCallEvent& r = trace.api_calls[0];
  EXPECT_EQ(r.kind, ApiKind::runtime);
  EXPECT_EQ(r.name, "cudaLaunchKernel");
  EXPECT_EQ(r.cbid, static_cast<std::uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_EQ(r.thread_id, 4243u);
  EXPECT_EQ(r.correlation_id, 77u);
  EXPECT_EQ(r.start_ns, 500u);
  EXPECT_EQ(r.end_ns, 540u);
  const profile::ApiCallEvent& d = trace.api_calls[1];
  EXPECT_EQ(d.kind, ApiKind::driver);
  EXPECT_EQ(d.name, "cuLaunchKernel");
  EXPECT_EQ(d.correlation_id, 77u);
  EXPECT_EQ(d.start_ns, 510u);
  EXPECT_EQ(d.end_ns, 530u);
}

TEST(CuptiRecords, MemcpyFieldsAndDirections) {
  struct Case {
    CUpti_ActivityMemcpyKind cupti;
    MemcpyKind expected;
  };
  const Case cases[] = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, MemcpyKind::host_to_device},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, MemcpyKind::host_to_device},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, MemcpyKind::device_to_host},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, MemcpyKind::device_to_host},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, MemcpyKind::device_to_device},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, MemcpyKind::device_to_device},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, MemcpyKind::device_to_device},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, MemcpyKind::device_to_device},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, MemcpyKind::host_to_host},
      {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, MemcpyKind::peer_to_peer},
      {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, MemcpyKind::unknown},
  };
  for (const Case& c : cases) {
    CUpti_ActivityMemcpy6 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = static_cast<std::uint8_t>(c.cupti);
    m.bytes = 1ull << 33;  // above 32 bits
    m.start = 100;
    m.end = 900;
    m.deviceId = 3;
    m.contextId = 4;
    m.streamId = 5;
    m.correlationId = 6;
    m.runtimeCorrelationId = 7;
    RecordConverter converter;
    Trace trace;
    converter.add(activity(m), trace);
    ASSERT_EQ(trace.memcpys.size(), 1u);
    const profile::MemcpyEvent& e = trace.memcpys[0];
    EXPECT_EQ(e.kind, c.expected) << "CUPTI copy kind " << static_cast<int>(c.cupti);
    EXPECT_EQ(e.bytes, 1ull << 33);
    EXPECT_EQ(e.device, 3u);
    EXPECT_EQ(e.context, 4u);
    EXPECT_EQ(e.stream, 5u);
    EXPECT_EQ(e.correlation_id, 7u);  // the runtime call's id: the API record the trace holds
    EXPECT_EQ(e.start_ns, 100u);
    EXPECT_EQ(e.end_ns, 900u);
  }
}

TEST(CuptiRecords, CopiesMadeThroughTheDriverKeepTheDriverCallsId) {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.start = 1;
  m.end = 2;
  m.correlationId = 41;
  m.runtimeCorrelationId = 0;  // cuMemcpyHtoD: no runtime call
  RecordConverter converter;
  Trace trace;
  converter.add(activity(m), trace);
  ASSERT_EQ(trace.memcpys.size(), 1u);
  EXPECT_EQ(trace.memcpys[0].correlation_id, 41u);
}

TEST(CuptiRecords, Memset) {
  CUpti_ActivityMemset4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.value = 0xAB;
  m.bytes = 4096;
  m.start = 10;
  m.end = 20;
  m.deviceId = 1;
  m.contextId = 2;
  m.streamId = 3;
  m.correlationId = 4;
  RecordConverter converter;
  Trace trace;
  converter.add(activity(m), trace);
  ASSERT_EQ(trace.memsets.size(), 1u);
  const profile::MemsetEvent& e = trace.memsets[0];
  EXPECT_EQ(e.bytes, 4096u);
  EXPECT_EQ(e.value, 0xABu);
  EXPECT_EQ(e.device, 1u);
  EXPECT_EQ(e.context, 2u);
  EXPECT_EQ(e.stream, 3u);
  EXPECT_EQ(e.correlation_id, 4u);
  EXPECT_EQ(e.start_ns, 10u);
  EXPECT_EQ(e.end_ns, 20u);
}

TEST(CuptiRecords, Synchronization) {
  struct Case {
    CUpti_ActivitySynchronizationType cupti;
    SynchronizationKind expected;
  };
  const Case cases[] = {
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, SynchronizationKind::event},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT,
       SynchronizationKind::stream_wait_event},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, SynchronizationKind::stream},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, SynchronizationKind::context},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN, SynchronizationKind::unknown},
  };
  for (const Case& c : cases) {
    CUpti_ActivitySynchronization2 s{};
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = c.cupti;
    s.start = 1000;
    s.end = 5000;
    s.correlationId = 9;
    s.contextId = 1;
    s.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;  // not applicable, e.g. context sync
    RecordConverter converter;
    Trace trace;
    converter.add(activity(s), trace);
    ASSERT_EQ(trace.synchronizations.size(), 1u);
    const profile::SynchronizationEvent& e = trace.synchronizations[0];
    EXPECT_EQ(e.kind, c.expected);
    EXPECT_EQ(e.context, 1u);
    EXPECT_EQ(e.stream, CUPTI_SYNCHRONIZATION_INVALID_VALUE);
    EXPECT_EQ(e.correlation_id, 9u);
    EXPECT_EQ(e.start_ns, 1000u);
    EXPECT_EQ(e.end_ns, 5000u);
  }
}

TEST(CuptiRecords, OverheadAndExternalCorrelation) {
  CUpti_ActivityOverhead3 o{};
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  o.objectId.pt.processId = 4242;
  o.objectId.pt.threadId = 4250;
  o.start = 7000;
  o.end = 7400;
  CUpti_ActivityOverhead3 on_device = o;
  on_device.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION;
  on_device.objectKind = CUPTI_ACTIVITY_OBJECT_DEVICE;
  on_device.objectId.dcs.deviceId = 0;
  CUpti_ActivityExternalCorrelation x{};
  x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  x.externalId = 1ull << 40;
  x.correlationId = 77;
  RecordConverter converter;
  Trace trace;
  converter.add(activity(o), trace);
  converter.add(activity(on_device), trace);
  converter.add(activity(x), trace);
  ASSERT_EQ(trace.overheads.size(), 2u);
  EXPECT_EQ(trace.overheads[0].kind, "CUPTI buffer flush");
  EXPECT_EQ(trace.overheads[0].thread_id, 4250u);
  EXPECT_EQ(trace.overheads[0].start_ns, 7000u);
  EXPECT_EQ(trace.overheads[0].end_ns, 7400u);
  EXPECT_EQ(trace.overheads[1].kind, "CUPTI instrumentation");
  EXPECT_EQ(trace.overheads[1].thread_id, 0u);  // a device, not a thread
  ASSERT_EQ(trace.external_correlations.size(), 1u);
  EXPECT_EQ(trace.external_correlations[0].kind,
            static_cast<std::uint32_t>(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0));
  EXPECT_EQ(trace.external_correlations[0].external_id, 1ull << 40);
  EXPECT_EQ(trace.external_correlations[0].correlation_id, 77u);
}

TEST(CuptiRecords, UnknownKindsAreCountedNotFatal) {
  CUpti_Activity device{};
  device.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  CUpti_Activity context{};
  context.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  RecordConverter converter;
  Trace trace;
  converter.add(device, trace);
  converter.add(device, trace);
  converter.add(context, trace);
  EXPECT_EQ(converter.counts().records, 3u);
  ASSERT_EQ(converter.counts().unknown_kinds.size(), 2u);
  EXPECT_EQ(converter.counts().unknown_kinds.at(CUPTI_ACTIVITY_KIND_DEVICE), 2u);
  EXPECT_EQ(converter.counts().unknown_kinds.at(CUPTI_ACTIVITY_KIND_CONTEXT), 1u);
  EXPECT_TRUE(trace.kernels.empty());
}

TEST(CuptiRecords, ClockOffsetAppliesToEveryTimestamp) {
  // CUPTI's own clock (CLOCK_REALTIME) is far ahead of steady_clock: the offset is negative.
  const std::int64_t offset = -1'700'000'000'000'000'000;
  const std::uint64_t base = 1'700'000'000'000'001'000;
  RecordConverter converter(offset);
  Trace trace;
  converter.add(activity(kernel_record("_Z1fv", base, base + 400)), trace);
  converter.add(activity(push(1, base + 10, 7, "step")), trace);
  converter.add(activity(pop(1, base + 900, 7)), trace);
  ASSERT_EQ(trace.kernels.size(), 1u);
  EXPECT_EQ(trace.kernels[0].start_ns, 1000u);
  EXPECT_EQ(trace.kernels[0].end_ns, 1400u);
  ASSERT_EQ(trace.ranges.size(), 1u);
  EXPECT_EQ(trace.ranges[0].start_ns, 1010u);
  EXPECT_EQ(trace.ranges[0].end_ns, 1900u);
}

TEST(CuptiRecords, UntimedAndInvertedRecordsAreCountedAndLeftOut) {
  RecordConverter converter;
  Trace trace;
  converter.add(activity(kernel_record("_Z1fv", 0, 0)), trace);  // CUPTI could not time it
  converter.add(activity(kernel_record("_Z1fv", 0, 50)), trace);
  converter.add(activity(kernel_record("_Z1fv", 90, 80)), trace);
  CUpti_ActivityMemset4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  converter.add(activity(m), trace);
  converter.add(activity(push(1, 0, 7, "untimed")), trace);
  converter.add(activity(kernel_record("_Z1fv", 100, 100)), trace);  // empty but valid
  EXPECT_EQ(converter.counts().without_timestamps, 4u);
  EXPECT_EQ(converter.counts().end_before_start, 1u);
  ASSERT_EQ(trace.kernels.size(), 1u);
  EXPECT_EQ(trace.kernels[0].start_ns, 100u);
  EXPECT_TRUE(trace.memsets.empty());
  // The untimed start never opened, so its end is unmatched.
  converter.add(activity(pop(1, 200, 7)), trace);
  EXPECT_EQ(converter.counts().unmatched_marker_ends, 1u);
  EXPECT_TRUE(trace.ranges.empty());
}

TEST(CuptiRecords, NestedPushPopMarkersPairByIdWithDepth) {
  RecordConverter converter;
  Trace trace;
  // step [100, 1000) holds forward [150, 400) which holds gemm [200, 300); backward [500, 900).
  converter.add(activity(push(1, 100, 7, "step")), trace);
  converter.add(activity(push(2, 150, 7, "forward")), trace);
  converter.add(activity(push(3, 200, 7, "gemm m=64 n=256 k=784 dtype=fp16")), trace);
  converter.add(activity(pop(3, 300, 7)), trace);
  converter.add(activity(pop(2, 400, 7)), trace);
  converter.add(activity(push(4, 500, 7, "backward")), trace);
  converter.add(activity(pop(4, 900, 7)), trace);
  converter.add(activity(pop(1, 1000, 7)), trace);
  converter.finish();
  ASSERT_EQ(trace.ranges.size(), 4u);  // in the order they ended
  const auto check = [&](std::size_t i, const std::string& name, std::uint64_t start,
                         std::uint64_t end, std::uint32_t depth) {
    SCOPED_TRACE(name);
    EXPECT_EQ(trace.ranges[i].name, name);
    EXPECT_EQ(trace.ranges[i].kind, RangeKind::push_pop);
    EXPECT_EQ(trace.ranges[i].thread_id, 7u);
    EXPECT_EQ(trace.ranges[i].domain, "");
    EXPECT_EQ(trace.ranges[i].start_ns, start);
    EXPECT_EQ(trace.ranges[i].end_ns, end);
    EXPECT_EQ(trace.ranges[i].depth, depth);
  };
  check(0, "gemm m=64 n=256 k=784 dtype=fp16", 200, 300, 2);
  check(1, "forward", 150, 400, 1);
  check(2, "backward", 500, 900, 1);
  check(3, "step", 100, 1000, 0);
  EXPECT_EQ(converter.counts().unclosed_markers, 0u);
  EXPECT_EQ(converter.counts().unmatched_marker_ends, 0u);
}

TEST(CuptiRecords, ThreadsKeepTheirOwnNesting) {
  RecordConverter converter;
  Trace trace;
  converter.add(activity(push(1, 100, 7, "a")), trace);
  converter.add(activity(push(2, 110, 8, "b")), trace);  // thread 8: depth 0 despite a on 7
  converter.add(activity(pop(1, 200, 7)), trace);        // 7's innermost even though 8's is newer
  converter.add(activity(pop(2, 210, 8)), trace);
  ASSERT_EQ(trace.ranges.size(), 2u);
  EXPECT_EQ(trace.ranges[0].name, "a");
  EXPECT_EQ(trace.ranges[0].kind, RangeKind::push_pop);
  EXPECT_EQ(trace.ranges[1].name, "b");
  EXPECT_EQ(trace.ranges[1].thread_id, 8u);
  EXPECT_EQ(trace.ranges[1].depth, 0u);
  EXPECT_EQ(trace.ranges[1].kind, RangeKind::push_pop);
}

TEST(CuptiRecords, OverlappingAndCrossThreadRangesAreStartEnd) {
  RecordConverter converter;
  Trace trace;
  // nvtxRangeStart/End: "load" [100, 300) and "compute" [200, 400) overlap without nesting.
  converter.add(activity(marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 10, 100, 7, "load", "io")),
                trace);
  converter.add(activity(push(11, 200, 7, "compute")), trace);
  converter.add(activity(pop(10, 300, 7)), trace);  // not the innermost: start/end
  converter.add(activity(pop(11, 400, 7)), trace);  // now the innermost
  // A range started on thread 7 and ended on thread 8.
  converter.add(activity(push(12, 500, 7, "handoff")), trace);
  converter.add(activity(pop(12, 600, 8)), trace);
  ASSERT_EQ(trace.ranges.size(), 3u);
  EXPECT_EQ(trace.ranges[0].name, "load");
  EXPECT_EQ(trace.ranges[0].domain, "io");
  EXPECT_EQ(trace.ranges[0].kind, RangeKind::start_end);
  EXPECT_EQ(trace.ranges[0].depth, 0u);
  EXPECT_EQ(trace.ranges[1].name, "compute");
  EXPECT_EQ(trace.ranges[1].kind, RangeKind::push_pop);
  EXPECT_EQ(trace.ranges[1].depth, 1u);  // load was open on its thread when it started
  EXPECT_EQ(trace.ranges[2].name, "handoff");
  EXPECT_EQ(trace.ranges[2].kind, RangeKind::start_end);
  EXPECT_EQ(trace.ranges[2].thread_id, 7u);  // the thread that started it
  EXPECT_EQ(trace.ranges[2].start_ns, 500u);
  EXPECT_EQ(trace.ranges[2].end_ns, 600u);
}

TEST(CuptiRecords, UnbalancedMarkersAreCounted) {
  RecordConverter converter;
  Trace trace;
  converter.add(activity(pop(99, 50, 7)), trace);  // its start came before the session
  converter.add(activity(push(1, 100, 7, "outer")), trace);
  converter.add(activity(push(2, 150, 7, "inner")), trace);
  converter.add(activity(pop(2, 200, 7)), trace);
  converter.add(activity(marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 3, 210, 7, "mark")),
                trace);
  converter.finish();  // outer never ended
  ASSERT_EQ(trace.ranges.size(), 1u);
  EXPECT_EQ(trace.ranges[0].name, "inner");
  EXPECT_EQ(trace.ranges[0].depth, 1u);
  EXPECT_EQ(converter.counts().unmatched_marker_ends, 1u);
  EXPECT_EQ(converter.counts().unclosed_markers, 1u);
  EXPECT_EQ(converter.counts().instant_markers, 1u);
  // After finish(), a stray end of the dropped range is unmatched, not paired.
  converter.add(activity(pop(1, 300, 7)), trace);
  EXPECT_EQ(converter.counts().unmatched_marker_ends, 2u);
  EXPECT_EQ(trace.ranges.size(), 1u);
}

TEST(CuptiRecords, WarningsNameEveryLoss) {
  EXPECT_TRUE(conversion_warnings(ConversionCounts{}).empty());
  ConversionCounts counts;
  counts.records = 100;
  counts.instant_markers = 4;  // not a loss
  counts.unknown_kinds[CUPTI_ACTIVITY_KIND_DEVICE] = 2;
  counts.without_timestamps = 3;
  counts.end_before_start = 1;
  counts.unnamed_kernels = 5;
  counts.unmatched_marker_ends = 6;
  counts.unclosed_markers = 7;
  const std::vector<std::string> warnings = conversion_warnings(counts);
  ASSERT_EQ(warnings.size(), 6u);
  EXPECT_EQ(warnings[0], "2 CUPTI records of activity kind 8 were not converted");
  EXPECT_EQ(warnings[1], "3 CUPTI records without timestamps were left out");
  EXPECT_EQ(warnings[2], "1 CUPTI records that end before they start were left out");
  EXPECT_EQ(warnings[3], "5 kernels had no name in their CUPTI record");
  EXPECT_EQ(warnings[4],
            "6 NVTX range ends had no start (the range began before collection): the ranges are "
            "missing");
  EXPECT_EQ(warnings[5], "7 NVTX ranges were still open at the end: the ranges are missing");
}

// The records walked by CUPTI's own cuptiActivityGetNextRecord, which knows each kind's record
// size: a struct of the wrong version would make it stop early or misread the next record.
TEST(CuptiRecords, BuffersAreWalkedWithCuptisRecordSizes) {
  std::vector<std::uint64_t> storage(4096);  // 8-byte aligned
  std::uint8_t* buffer = reinterpret_cast<std::uint8_t*>(storage.data());
  std::size_t used = 0;
  const auto put = [&](const auto& r) {
    std::memcpy(buffer + used, &r, sizeof r);
    used += sizeof r;
  };
  CUpti_ActivityAPI launch{};
  launch.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  launch.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  launch.start = 110;
  launch.end = 120;
  launch.correlationId = 5;
  CUpti_ActivityMemcpy6 copy{};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.bytes = 64;
  copy.start = 130;
  copy.end = 140;
  CUpti_ActivityMemset4 set{};
  set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  set.bytes = 32;
  set.start = 150;
  set.end = 160;
  CUpti_ActivitySynchronization2 sync{};
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sync.start = 300;
  sync.end = 310;
  CUpti_ActivityOverhead3 overhead{};
  overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  overhead.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  overhead.start = 320;
  overhead.end = 330;
  CUpti_ActivityExternalCorrelation external{};
  external.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  external.externalId = 9;
  external.correlationId = 5;
  CUpti_ActivityContext3 context{};  // a kind CUPTI knows and the converter does not
  context.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  CUpti_ActivityKernel10 kernel = kernel_record("_Z1fv", 200, 250);
  kernel.correlationId = 5;

  put(push(1, 100, 7, "step"));
  put(launch);
  put(copy);
  put(set);
  put(kernel);
  put(pop(1, 290, 7));
  put(sync);
  put(overhead);
  put(external);
  put(context);
  put(kernel_record("_Z1gv", 400, 450));
  RecordConverter converter;
  Trace trace;
  EXPECT_EQ(converter.add_buffer(buffer, used, trace), CUPTI_SUCCESS);
  EXPECT_EQ(converter.counts().records, 11u);
  ASSERT_EQ(trace.kernels.size(), 2u);
  EXPECT_EQ(trace.kernels[0].name, "f()");
  EXPECT_EQ(trace.kernels[0].correlation_id, 5u);
  EXPECT_EQ(trace.kernels[1].name, "g()");
  EXPECT_EQ(trace.kernels[1].start_ns, 400u);
  ASSERT_EQ(trace.api_calls.size(), 1u);
  EXPECT_EQ(trace.api_calls[0].name, "cudaLaunchKernel");
  ASSERT_EQ(trace.memcpys.size(), 1u);
  EXPECT_EQ(trace.memcpys[0].bytes, 64u);
  ASSERT_EQ(trace.memsets.size(), 1u);
  EXPECT_EQ(trace.memsets[0].bytes, 32u);
  ASSERT_EQ(trace.ranges.size(), 1u);
  EXPECT_EQ(trace.ranges[0].name, "step");
  EXPECT_EQ(trace.ranges[0].end_ns, 290u);
  ASSERT_EQ(trace.synchronizations.size(), 1u);
  EXPECT_EQ(trace.synchronizations[0].kind, SynchronizationKind::stream);
  ASSERT_EQ(trace.overheads.size(), 1u);
  ASSERT_EQ(trace.external_correlations.size(), 1u);
  EXPECT_EQ(trace.external_correlations[0].external_id, 9u);
  EXPECT_EQ(converter.counts().unknown_kinds.at(CUPTI_ACTIVITY_KIND_CONTEXT), 1u);

  // An empty buffer (a flush with nothing recorded) is read to its end at once.
  RecordConverter empty;
  EXPECT_EQ(empty.add_buffer(buffer, 0, trace), CUPTI_SUCCESS);
  EXPECT_EQ(empty.counts().records, 0u);
}

// Converted records feed attribution: the kernel launched inside the range belongs to it.
TEST(CuptiRecords, ConvertedTraceAttributesKernelsToTheirRange) {
  RecordConverter converter;
  Trace trace;
  CUpti_ActivityAPI launch{};
  launch.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  launch.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  launch.threadId = 7;
  launch.correlationId = 5;
  launch.start = 120;
  launch.end = 130;
  CUpti_ActivityKernel10 k = kernel_record("_Z1fv", 140, 240);
  k.correlationId = 5;
  converter.add(activity(push(1, 100, 7, "forward")), trace);
  converter.add(activity(launch), trace);
  converter.add(activity(pop(1, 200, 7)), trace);
  converter.add(activity(k), trace);
  const profile::Attribution a = profile::attribute(trace);
  EXPECT_EQ(a.kernels_without_api_record, 0u);
  bool found = false;
  for (const profile::RangeStats& r : a.ranges) {
    if (r.name != "forward") continue;
    found = true;
    EXPECT_EQ(r.self.kernel_count, 1u);
    EXPECT_EQ(r.self.kernel_time_ns, 100u);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace ampbench::kernels
