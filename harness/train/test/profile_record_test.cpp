// The profile record's arithmetic on hand-made profiles: step-time statistics, the ratio to fp32,
// and the verdict (time, memory, the categories that explain it), each read off the numbers below.
#include "harness/train/profile_record.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace ampbench;

train::PolicyProfile profiled(std::string policy, std::vector<std::uint64_t> step_ms) {
  train::PolicyProfile p;
  p.policy = std::move(policy);
  for (const auto ms : step_ms) p.step_ns.push_back(ms * 1'000'000);
  return p;
}

void add_kernels(train::PolicyProfile& p, profile::KernelCategory c, std::uint64_t ms) {
  p.attribution.total.categories[c].time_ns = ms * 1'000'000;
}

TEST(ProfileRecord, StepTimesAreTheLowerMedianAndTheExtremes) {
  const train::StepTimes t = train::step_times({4'000'000, 1'000'000, 3'000'000, 2'000'000});
  EXPECT_DOUBLE_EQ(t.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(t.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(t.max_ms, 4.0);
}

TEST(ProfileRecord, AVerdictClaimsTimeOnlyWhereTheStepRangesDoNotOverlap) {
  train::ProfileResult r;
  r.policies = {profiled("fp32", {10, 11, 12}), profiled("amp-fp16", {7, 8, 9}),
                profiled("amp-bf16", {9, 10, 13}), profiled("fp16", {13, 14, 15})};
  EXPECT_FALSE(train::verdict(r, 0).has_value()) << "fp32 is not compared with itself";
  const auto faster = train::verdict(r, 1);
  ASSERT_TRUE(faster.has_value());
  EXPECT_EQ(faster->time, "saves time");
  EXPECT_DOUBLE_EQ(*faster->time_ratio, 8.0 / 11.0);
  EXPECT_EQ(train::verdict(r, 2)->time, "no clear difference");
  EXPECT_EQ(train::verdict(r, 3)->time, "costs time");
  EXPECT_FALSE(faster->memory_ratio.has_value()) << "no device memory on the CPU backend";
  EXPECT_TRUE(faster->category_change_ms.empty());
  EXPECT_EQ(faster->text, "amp-fp16 vs fp32: step saves time (0.73x the median)");
}

TEST(ProfileRecord, AVerdictNamesMemoryAndTheCategoriesThatChangedMost) {
  using profile::KernelCategory;
  train::ProfileResult r;
  r.policies = {profiled("fp32", {10, 10}), profiled("amp-fp16", {8, 8})};
  r.policies[0].peak_device_bytes = 1000;
  r.policies[1].peak_device_bytes = 640;
  // Over the two steps, fp32: 6 ms of CUDA-core GEMMs and 2 of elementwise kernels; amp-fp16: 2 ms
  // of Tensor Core GEMMs, 1 of casts, 2 of elementwise kernels and 1 of reductions.
  add_kernels(r.policies[0], KernelCategory::gemm_cuda_core, 6);
  add_kernels(r.policies[0], KernelCategory::elementwise, 2);
  add_kernels(r.policies[1], KernelCategory::gemm_tensor_core, 2);
  add_kernels(r.policies[1], KernelCategory::cast, 1);
  add_kernels(r.policies[1], KernelCategory::elementwise, 2);
  add_kernels(r.policies[1], KernelCategory::reduction, 1);
  const auto v = train::verdict(r, 1);
  ASSERT_TRUE(v.has_value());
  EXPECT_DOUBLE_EQ(*v->memory_ratio, 0.64);
  // Per step: gemm_cuda_core -3, gemm_tensor_core +1, cast +0.5, reduction +0.5, elementwise 0
  // (left out); the three largest by magnitude, ties in name order.
  ASSERT_EQ(v->category_change_ms.size(), 3u);
  EXPECT_EQ(v->category_change_ms[0].first, "gemm_cuda_core");
  EXPECT_DOUBLE_EQ(v->category_change_ms[0].second, -3.0);
  EXPECT_EQ(v->category_change_ms[1].first, "gemm_tensor_core");
  EXPECT_DOUBLE_EQ(v->category_change_ms[1].second, 1.0);
  EXPECT_EQ(v->category_change_ms[2].first, "cast");
  EXPECT_EQ(v->text,
            "amp-fp16 vs fp32: step saves time (0.80x the median), peak memory 0.64x (saves "
            "memory); device time per step: gemm_cuda_core -3.000 ms, gemm_tensor_core +1.000 ms, "
            "cast +0.500 ms");
  const nlohmann::json j = train::to_json(r, "cuda");
  EXPECT_EQ(j["runs"][0]["peak_device_bytes"], 1000);
  EXPECT_FALSE(j["runs"][0].contains("verdict"));
  EXPECT_EQ(j["runs"][1]["verdict"]["time"], "saves time");
  EXPECT_DOUBLE_EQ(j["runs"][1]["verdict"]["category_change_ms_per_step"]["cast"].get<double>(),
                   0.5);
}

}  // namespace
