// Attribution on hand-made event streams whose numbers are worked out from the pictures in the
// comments, and on the recorded MLP training step in data/mlp_amp_step.json.
#include "harness/profile/attribution.hpp"

#include <gtest/gtest.h>

#include <string>

#include "harness/profile/trace_json.hpp"

namespace ampbench::profile {
namespace {

constexpr std::uint32_t kThread = 1;

KernelEvent kernel(std::string name, std::uint32_t correlation, std::uint64_t start,
                   std::uint64_t end, std::uint32_t stream = 7, std::uint32_t device = 0) {
  KernelEvent k;
  k.name = std::move(name);
  k.device = device;
  k.stream = stream;
  k.correlation_id = correlation;
  k.start_ns = start;
  k.end_ns = end;
  return k;
}

ApiCallEvent launch(std::uint32_t correlation, std::uint64_t start, std::uint64_t end,
                    std::uint32_t thread = kThread) {
  ApiCallEvent a;
  a.name = "cudaLaunchKernel";
  a.cbid = 211;
  a.thread_id = thread;
  a.correlation_id = correlation;
  a.start_ns = start;
  a.end_ns = end;
  return a;
}

RangeEvent range(std::string name, std::uint64_t start, std::uint64_t end,
                 RangeKind kind = RangeKind::push_pop, std::uint32_t thread = kThread) {
  RangeEvent r;
  r.name = std::move(name);
  r.kind = kind;
  r.thread_id = thread;
  r.start_ns = start;
  r.end_ns = end;
  return r;
}

const RangeStats& find_range(const Attribution& a, std::string_view name) {
  for (const RangeStats& r : a.ranges) {
    if (r.name == name) return r;
  }
  ADD_FAILURE() << "no range " << name;
  return a.outside_any_range;
}

CategoryStats category(const BucketStats& b, KernelCategory c) {
  const auto it = b.categories.find(c);
  return it == b.categories.end() ? CategoryStats{} : it->second;
}

constexpr const char* kTensorCoreGemm = "ampere_fp16_s16816gemm_fp16_64x64_ldg8_f2f_stages_64x5_tn";
constexpr const char* kCudaCoreGemm = "volta_sgemm_128x64_nn";

// Time in ns, one device, streams 7 and 8, host thread 1:
//
//   ranges   step     [0 ............................................ 1000)
//            forward       [100 ......... 500)
//            backward                        [500 ........ 900)
//   API      a1 [120,140) a2 [200,220)     a3 [520,540)      a4 [950,960)        a5 [1100,1110)
//   stream 7      k1 [150 .. 300)                k3 [600,700)    k4 [955,980) k5 [1000,1050)
//                                                                              k6 [1120,1200)
//   stream 8           k2 [250 .... 400)
//
//   k1 TC GEMM (a1), k2 cast (a2), k3 CUDA-core GEMM (a3), k4 unknown name (a4),
//   k5 reduction with no API record, k6 elementwise launched outside any range (a5).
Trace hand_made_trace() {
  Trace t;
  t.ranges = {range("step", 0, 1000), range("forward", 100, 500), range("backward", 500, 900)};
  t.api_calls = {launch(1, 120, 140), launch(2, 200, 220), launch(3, 520, 540), launch(4, 950, 960),
                 launch(5, 1100, 1110)};
  t.kernels = {kernel(kTensorCoreGemm, 1, 150, 300),
               kernel("cast_fp32_to_fp16_kernel", 2, 250, 400, 8),
               kernel(kCudaCoreGemm, 3, 600, 700),
               kernel("my_mystery_kernel", 4, 955, 980),
               kernel("void at::native::reduce_kernel<512, 1>", 99, 1000, 1050),
               kernel("void at::native::vectorized_elementwise_kernel<4>", 5, 1120, 1200)};
  return t;
}

TEST(Attribution, HandMadeTraceTotals) {
  const Attribution a = attribute(hand_made_trace());
  // The window runs from the step's start (0) to k6's end (1200).
  EXPECT_EQ(a.window_start_ns, 0u);
  EXPECT_EQ(a.window_end_ns, 1200u);
  EXPECT_EQ(a.wall_ns, 1200u);
  EXPECT_EQ(a.devices, 1u);
  EXPECT_EQ(a.total.kernel_count, 6u);
  // Durations 150 + 150 + 100 + 25 + 50 + 80; busy: [150,400) + [600,700) + [955,980) +
  // [1000,1050) + [1120,1200) = 250 + 100 + 25 + 50 + 80, k1 and k2 overlapping once.
  EXPECT_EQ(a.total.kernel_time_ns, 555u);
  EXPECT_EQ(a.total.busy_ns, 505u);
  // Gaps [0,150) [400,600) [700,955) [980,1000) [1050,1120): 150 + 200 + 255 + 20 + 70.
  EXPECT_EQ(a.idle.count, 5u);
  EXPECT_EQ(a.idle.total_ns, 695u);
  EXPECT_EQ(a.idle.largest_ns, 255u);
  // Delays k1 150-140, k2 250-220, k3 600-540, k4 955-960, k6 1120-1110: sorted -5 10 10 30 60.
  EXPECT_EQ(a.total.launch_delay.count, 5u);
  EXPECT_EQ(a.total.launch_delay.median_ns, 10);
  EXPECT_EQ(a.total.launch_delay.max_ns, 60);
  EXPECT_EQ(a.total.api_count, 5u);
  EXPECT_EQ(a.total.api_time_ns, 80u);
  EXPECT_EQ(a.total.launch_api_time_ns, 80u);
  EXPECT_EQ(a.kernels_without_api_record, 1u);
  EXPECT_EQ(a.other_kernel_names.at("my_mystery_kernel"), 1u);
  EXPECT_EQ(a.other_kernel_names.size(), 1u);

  ASSERT_TRUE(a.cast_share && a.tensor_core_share && a.idle_share && a.launch_overhead_share);
  EXPECT_DOUBLE_EQ(*a.cast_share, 150.0 / 555.0);
  EXPECT_DOUBLE_EQ(*a.tensor_core_share, 150.0 / 555.0);
  EXPECT_DOUBLE_EQ(*a.idle_share, 695.0 / 1200.0);
  EXPECT_DOUBLE_EQ(*a.launch_overhead_share, 80.0 / 1200.0);
  EXPECT_EQ(category(a.total, KernelCategory::gemm_cuda_core).time_ns, 100u);
  EXPECT_EQ(category(a.total, KernelCategory::other).count, 1u);
  EXPECT_EQ(a.warnings.size(), 1u);  // the kernel without a launch record
}

TEST(Attribution, HandMadeTraceRanges) {
  const Attribution a = attribute(hand_made_trace());
  ASSERT_EQ(a.ranges.size(), 3u);
  EXPECT_EQ(a.ranges[0].name, "backward");  // sorted by name
  EXPECT_EQ(a.ranges[2].name, "step");

  const RangeStats& forward = find_range(a, "forward");
  EXPECT_EQ(forward.instances, 1u);
  EXPECT_EQ(forward.wall_ns, 400u);
  EXPECT_EQ(forward.self.kernel_count, 2u);  // k1, k2
  EXPECT_EQ(forward.self.kernel_time_ns, 300u);
  EXPECT_EQ(forward.self.busy_ns, 250u);  // [150, 400)
  EXPECT_EQ(forward.self.api_count, 2u);
  EXPECT_EQ(forward.self.api_time_ns, 40u);
  EXPECT_EQ(forward.self.launch_delay.median_ns, 10);  // lower median of 10, 30
  EXPECT_EQ(forward.self.launch_delay.max_ns, 30);
  EXPECT_EQ(category(forward.self, KernelCategory::gemm_tensor_core).busy_ns, 150u);
  EXPECT_EQ(category(forward.self, KernelCategory::cast).time_ns, 150u);

  const RangeStats& backward = find_range(a, "backward");
  EXPECT_EQ(backward.self.kernel_count, 1u);  // k3
  EXPECT_EQ(backward.self.kernel_time_ns, 100u);

  // k4 is the only kernel launched in step outside both children; inclusively step has k1-k4.
  const RangeStats& step = find_range(a, "step");
  EXPECT_EQ(step.self.kernel_count, 1u);
  EXPECT_EQ(step.self.kernel_time_ns, 25u);
  EXPECT_EQ(step.inclusive.kernel_count, 4u);
  EXPECT_EQ(step.inclusive.kernel_time_ns, 425u);
  EXPECT_EQ(step.inclusive.busy_ns, 375u);  // 250 + 100 + 25
  EXPECT_EQ(step.inclusive.api_time_ns, 70u);

  // k5 (no API record) and k6 (launched after the step ended).
  EXPECT_EQ(a.outside_any_range.name, kOutsideAnyRange);
  EXPECT_EQ(a.outside_any_range.self.kernel_count, 2u);
  EXPECT_EQ(a.outside_any_range.self.kernel_time_ns, 130u);
  EXPECT_EQ(a.outside_any_range.self.api_count, 1u);
}

// Device 0: stream 1 [0,100), stream 2 [50,150), stream 3 [60,80) -> union [0,150), 150 ns.
// Device 1: [0,10) -> 10 ns, then idle [10,150).
TEST(Attribution, OverlappingStreamsCountOnceAndDevicesApart) {
  Trace t;
  t.kernels = {kernel("a_gemm", 1, 0, 100, 1), kernel("a_gemm", 2, 50, 150, 2),
               kernel("a_gemm", 3, 60, 80, 3), kernel("a_gemm", 4, 0, 10, 1, 1)};
  const Attribution a = attribute(t);
  EXPECT_EQ(a.devices, 2u);
  EXPECT_EQ(a.total.kernel_time_ns, 230u);
  EXPECT_EQ(a.total.busy_ns, 160u);
  EXPECT_EQ(category(a.total, KernelCategory::gemm_cuda_core).busy_ns, 160u);
  EXPECT_EQ(a.idle.count, 1u);
  EXPECT_EQ(a.idle.total_ns, 140u);
  ASSERT_TRUE(a.idle_share.has_value());
  EXPECT_DOUBLE_EQ(*a.idle_share, 140.0 / 300.0);
  EXPECT_EQ(a.kernels_without_api_record, 4u);
  EXPECT_EQ(a.outside_any_range.self.kernel_count, 4u);
}

// Thread 1: "layer" [0,100) holding "layer" [10,50) (a recursive name); a start/end range
// "epoch" [5,200) overlapping both without nesting; thread 2: "other thread" [0,1000).
// Launch at 20: inside layer, epoch, layer -> the innermost is the latest start, layer [10,50).
// Launch at 150: inside epoch only.
TEST(Attribution, NestedAndOverlappingRanges) {
  Trace t;
  t.ranges = {range("layer", 0, 100), range("epoch", 5, 200, RangeKind::start_end),
              range("layer", 10, 50), range("other thread", 0, 1000, RangeKind::push_pop, 2)};
  t.api_calls = {launch(1, 20, 25), launch(2, 150, 155)};
  t.kernels = {kernel("k_relu", 1, 30, 40), kernel("k_relu", 2, 160, 170)};
  const Attribution a = attribute(t);
  const RangeStats& layer = find_range(a, "layer");
  EXPECT_EQ(layer.instances, 2u);
  EXPECT_EQ(layer.wall_ns, 140u);
  EXPECT_EQ(layer.self.kernel_count, 1u);
  EXPECT_EQ(layer.inclusive.kernel_count, 1u);  // counted once though two "layer" enclose it
  const RangeStats& epoch = find_range(a, "epoch");
  EXPECT_EQ(epoch.self.kernel_count, 1u);
  EXPECT_EQ(epoch.inclusive.kernel_count, 2u);
  EXPECT_EQ(find_range(a, "other thread").inclusive.kernel_count, 0u);
  EXPECT_EQ(a.outside_any_range.self.kernel_count, 0u);
}

TEST(Attribution, DroppedRecordsAreCarriedWithAWarning) {
  Trace t = hand_made_trace();
  t.dropped_records = {{.context = 1, .stream = 7, .count = 12},
                       {.context = 1, .stream = 8, .count = 3}};
  const Attribution a = attribute(t);
  EXPECT_EQ(a.dropped_records, 15u);
  ASSERT_EQ(a.warnings.size(), 2u);
  EXPECT_NE(a.warnings[0].find("CUPTI dropped 15 activity records"), std::string::npos)
      << a.warnings[0];
  EXPECT_NE(a.warnings[0].find("context 1 stream 8: 3"), std::string::npos) << a.warnings[0];
  const nlohmann::json j = to_json(a);
  EXPECT_EQ(j.at("dropped_records"), 15);
  EXPECT_EQ(j.at("warnings").size(), 2u);
}

// A driver call inside the runtime call that made it, with the same correlation id: the API
// time is the union (100, not 180) and the kernel's launch is the runtime call (delay 120-100).
TEST(Attribution, NestedDriverCallCountsOnce) {
  Trace t;
  ApiCallEvent driver = launch(1, 10, 90);
  driver.kind = ApiKind::driver;
  driver.name = "cuLaunchKernel";
  t.api_calls = {driver, launch(1, 0, 100)};
  t.kernels = {kernel("k", 1, 120, 130)};
  const Attribution a = attribute(t);
  EXPECT_EQ(a.total.api_count, 2u);
  EXPECT_EQ(a.total.api_time_ns, 100u);
  EXPECT_EQ(a.total.launch_api_time_ns, 100u);
  EXPECT_EQ(a.total.launch_delay.max_ns, 20);
}

TEST(Attribution, GemmRangesAndTensorCoreEligibility) {
  Trace t;
  t.ranges = {range("gemm m=64 n=256 k=784 dtype=fp16", 0, 100),    // eligible, TC kernel
              range("gemm m=64 n=256 k=784 dtype=fp16", 100, 200),  // the same, again
              range("gemm m=256 n=784 k=64 dtype=fp16", 200, 300),  // eligible, CUDA cores
              range("gemm m=64 n=10 k=256 dtype=fp16", 300, 400),   // misaligned
              range("gemm m=64 n=64 k=64 dtype=fp32", 400, 500),    // fp32
              range("gemm m=8 n=8 k=8 dtype=bf16", 500, 600)};      // no kernel: not counted
  t.api_calls = {launch(1, 10, 20), launch(2, 110, 120), launch(3, 210, 220), launch(4, 310, 320),
                 launch(5, 410, 420)};
  t.kernels = {kernel(kTensorCoreGemm, 1, 30, 50), kernel(kTensorCoreGemm, 2, 130, 150),
               kernel("gemmSN_NN_kernel", 3, 230, 290), kernel(kTensorCoreGemm, 4, 330, 350),
               kernel(kCudaCoreGemm, 5, 430, 440)};
  const Attribution a = attribute(t);
  EXPECT_EQ(a.gemm.gemm_ranges, 5u);
  EXPECT_EQ(a.gemm.eligible, 3u);
  EXPECT_EQ(a.gemm.misaligned, 1u);
  EXPECT_EQ(a.gemm.unsupported_dtype, 1u);
  EXPECT_EQ(a.gemm.eligible_but_not_tensor_core, 1u);
  EXPECT_EQ(a.gemm.eligible_but_not_tensor_core_time_ns, 60u);
  ASSERT_EQ(a.gemm.by_name.size(), 4u);
  EXPECT_EQ(a.gemm.by_name[0].name, "gemm m=256 n=784 k=64 dtype=fp16");  // sorted by name
  const GemmRangeStats& fc1 = a.gemm.by_name[2];
  EXPECT_EQ(fc1.name, "gemm m=64 n=256 k=784 dtype=fp16");
  EXPECT_EQ(fc1.instances, 2u);
  EXPECT_EQ(fc1.kernel_count, 2u);
  EXPECT_EQ(fc1.tensor_core_kernel_count, 2u);
  EXPECT_EQ(fc1.eligibility, TensorCoreEligibility::eligible);
}

TEST(Attribution, HostPhasesOnlyHaveNoDeviceShares) {
  Trace t;
  t.ranges = {range("step", 0, 1000, RangeKind::host_phase),
              range("forward", 0, 400, RangeKind::host_phase),
              range("backward", 400, 900, RangeKind::host_phase)};
  const Attribution a = attribute(t);
  EXPECT_EQ(a.devices, 0u);
  EXPECT_EQ(a.wall_ns, 1000u);
  EXPECT_FALSE(a.tensor_core_share.has_value());
  EXPECT_FALSE(a.cast_share.has_value());
  EXPECT_FALSE(a.idle_share.has_value());
  EXPECT_FALSE(a.launch_overhead_share.has_value());  // nothing launched: not 0
  EXPECT_EQ(find_range(a, "backward").wall_ns, 500u);
  const nlohmann::json j = to_json(a);
  EXPECT_TRUE(j.at("shares").at("tensor_core").is_null());
  EXPECT_TRUE(j.at("shares").at("launch_overhead").is_null());
  EXPECT_TRUE(a.warnings.empty());
}

TEST(Attribution, EmptyTrace) {
  const Attribution a = attribute(Trace{});
  EXPECT_EQ(a.wall_ns, 0u);
  EXPECT_EQ(a.total.kernel_count, 0u);
  EXPECT_FALSE(a.launch_overhead_share.has_value());
  EXPECT_EQ(to_json(a).at("schema"), "ampbench.profile/1");
}

TEST(Attribution, JsonCarriesTheNumbers) {
  const nlohmann::json j = to_json(attribute(hand_made_trace()));
  EXPECT_EQ(j.at("total").at("busy_ns"), 505);
  EXPECT_EQ(j.at("total").at("categories").at("cast").at("time_ns"), 150);
  EXPECT_EQ(j.at("idle").at("largest_ns"), 255);
  EXPECT_EQ(j.at("ranges").size(), 3u);
  EXPECT_EQ(j.at("ranges")[1].at("name"), "forward");
  EXPECT_EQ(j.at("ranges")[1].at("self").at("kernel_count"), 2);
  EXPECT_EQ(j.at("outside_any_range").at("name"), "(outside any range)");
  EXPECT_EQ(j.at("other_kernel_names").at("my_mystery_kernel"), 1);
  EXPECT_DOUBLE_EQ(j.at("shares").at("cast").get<double>(), 150.0 / 555.0);
}

// ---- the recorded training step -------------------------------------------------------------

// data/mlp_amp_step.json, one AMP fp16 step of a 784-256-10 MLP on batch 64 (times in ns):
//   step [1000,20000) > forward [1100,8000) > gemm fc1 [1500,2200), gemm fc2 [3000,3600)
//                     > backward [8000,15000) > gemm dW1 [9000,9600)
//                     > scaler [15000,17000), optimizer [17000,19500)
//   memcpy HtoD 300 ns; kernels: 3 casts (100, 60, 60), 2 Tensor Core GEMMs (400, 200),
//   gemmSN (500), 2 elementwise (50, 50), softmax (70), unscale (100), update scale (10),
//   fused Adam (300); all on one stream, none overlapping.
TEST(Attribution, RecordedMlpStep) {
  const Trace trace = read_trace_file(AMPBENCH_PROFILE_TEST_DATA "/mlp_amp_step.json");
  const Attribution a = attribute(trace);
  EXPECT_EQ(a.wall_ns, 19000u);
  EXPECT_EQ(a.total.kernel_count, 12u);
  EXPECT_EQ(a.total.kernel_time_ns, 1900u);
  EXPECT_EQ(a.total.memcpy_count, 1u);
  EXPECT_EQ(a.total.memcpy_bytes, 200704u);
  EXPECT_EQ(a.total.busy_ns, 2200u);  // kernels and the copy
  EXPECT_EQ(a.idle.total_ns, 16800u);
  EXPECT_EQ(category(a.total, KernelCategory::cast).time_ns, 220u);
  EXPECT_EQ(category(a.total, KernelCategory::gemm_tensor_core).time_ns, 600u);
  EXPECT_EQ(category(a.total, KernelCategory::gemm_cuda_core).time_ns, 500u);
  EXPECT_EQ(category(a.total, KernelCategory::elementwise).count, 2u);
  EXPECT_EQ(category(a.total, KernelCategory::reduction).time_ns, 70u);
  EXPECT_EQ(category(a.total, KernelCategory::loss_scaler).time_ns, 110u);
  EXPECT_EQ(category(a.total, KernelCategory::optimizer).time_ns, 300u);
  EXPECT_EQ(category(a.total, KernelCategory::memcpy).time_ns, 300u);
  EXPECT_TRUE(a.other_kernel_names.empty());
  EXPECT_DOUBLE_EQ(*a.cast_share, 220.0 / 1900.0);
  EXPECT_DOUBLE_EQ(*a.tensor_core_share, 600.0 / 1900.0);
  // Twelve kernel launches of 20, 30 or 40 ns: 320 ns; the copy and the synchronize are not
  // launches (960 ns of API time in all).
  EXPECT_EQ(a.total.api_time_ns, 960u);
  EXPECT_EQ(a.total.launch_api_time_ns, 320u);
  EXPECT_DOUBLE_EQ(*a.launch_overhead_share, 320.0 / 19000.0);
  // Delays: the two casts wait for the copy (230, 280); the rest start 10 or 20 ns after.
  EXPECT_EQ(a.total.launch_delay.median_ns, 10);
  EXPECT_EQ(a.total.launch_delay.max_ns, 280);
  EXPECT_EQ(a.synchronization_time_ns, 580u);
  EXPECT_EQ(a.cupti_overhead_ns, 50u);

  const RangeStats& forward = find_range(a, "forward");
  EXPECT_EQ(forward.self.kernel_count, 4u);  // casts, relu, softmax; the GEMMs are in their ranges
  EXPECT_EQ(forward.self.kernel_time_ns, 280u);
  EXPECT_EQ(forward.inclusive.kernel_count, 6u);
  EXPECT_EQ(forward.inclusive.kernel_time_ns, 880u);
  const RangeStats& step = find_range(a, "step");
  EXPECT_EQ(step.self.kernel_count, 0u);
  EXPECT_EQ(step.self.memcpy_count, 1u);
  EXPECT_EQ(step.inclusive.kernel_count, 12u);
  EXPECT_EQ(category(find_range(a, "scaler").self, KernelCategory::loss_scaler).count, 2u);

  EXPECT_EQ(a.gemm.gemm_ranges, 3u);
  EXPECT_EQ(a.gemm.eligible, 2u);
  EXPECT_EQ(a.gemm.misaligned, 1u);                    // fc2, n = 10
  EXPECT_EQ(a.gemm.eligible_but_not_tensor_core, 1u);  // dW1 ran gemmSN on CUDA cores
  EXPECT_EQ(a.gemm.eligible_but_not_tensor_core_time_ns, 500u);
  EXPECT_TRUE(a.warnings.empty());
}

}  // namespace
}  // namespace ampbench::profile
