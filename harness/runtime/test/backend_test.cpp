// The registry's names, how a --backend value is read against a command's accepted requests, the
// selection of each request, and the rule for a request the device cannot serve.
#include "harness/runtime/backend.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ampbench::runtime {
namespace {

CudaStatus usable() {
  CudaStatus status;
  status.available = true;
  status.gpu = "NVIDIA H200";
  status.device = {{"name", "NVIDIA H200"}};
  return status;
}

CudaStatus missing() {
  CudaStatus status;
  status.unavailable = "no usable CUDA device: no CUDA-capable device is detected";
  return status;
}

TEST(BackendNames, EveryRequestReadsBackFromItsName) {
  for (const Request r : kEveryRequest) {
    const ParsedRequest parsed = parse_request(name_of(r));
    ASSERT_TRUE(parsed.request.has_value()) << name_of(r);
    EXPECT_EQ(*parsed.request, r);
    EXPECT_EQ(parsed.error, "");
  }
  EXPECT_EQ(name_of(Request::cpu), "cpu");
  EXPECT_EQ(name_of(Request::cuda), "cuda");
  EXPECT_EQ(name_of(Request::all), "all");
}

TEST(BackendNames, OneBackendCommandsTakeCpuAndCuda) {
  EXPECT_EQ(parse_request("cpu", kOneBackend).request, Request::cpu);
  EXPECT_EQ(parse_request("cuda", kOneBackend).request, Request::cuda);
}

TEST(BackendNames, AnUnknownNameIsRefusedNamingTheOptionTheValueAndTheAcceptedNames) {
  const ParsedRequest tpu = parse_request("tpu");
  EXPECT_FALSE(tpu.request.has_value());
  EXPECT_EQ(tpu.error, "--backend: unknown backend 'tpu' (available: cpu, cuda, all)");
  // The names are exact: no case folding, no blanks, no prefixes.
  for (const char* name : {"", "CPU", "Cuda", " cpu", "cpu ", "cu", "gpu", "cpu,cuda"}) {
    EXPECT_FALSE(parse_request(name).request.has_value()) << "'" << name << "'";
  }
}

TEST(BackendNames, AllIsRefusedWhereACommandRunsOneBackend) {
  const ParsedRequest all = parse_request("all", kOneBackend);
  EXPECT_FALSE(all.request.has_value());
  EXPECT_EQ(all.error, "--backend: unknown backend 'all' (available: cpu, cuda)");
  EXPECT_EQ(parse_request("tpu", kOneBackend).error,
            "--backend: unknown backend 'tpu' (available: cpu, cuda)");
}

TEST(BackendNames, TheMessageNamesTheOptionItWasGiven) {
  EXPECT_EQ(parse_request("x", kEveryRequest, "backend").error,
            "backend: unknown backend 'x' (available: cpu, cuda, all)");
}

TEST(BackendSelection, EachRequestSelectsItsBackends) {
  EXPECT_EQ(selection_of(Request::cpu), (Selection{true, false}));
  EXPECT_EQ(selection_of(Request::cuda), (Selection{false, true}));
  EXPECT_EQ(selection_of(Request::all), (Selection{true, true}));
  EXPECT_EQ(names_of(selection_of(Request::cpu)), (std::vector<std::string>{"cpu"}));
  EXPECT_EQ(names_of(selection_of(Request::cuda)), (std::vector<std::string>{"cuda"}));
  EXPECT_EQ(names_of(selection_of(Request::all)), (std::vector<std::string>{"cpu", "cuda"}));
  EXPECT_TRUE(names_of(Selection{}).empty());
}

TEST(BackendOpening, WithADeviceEveryRequestRunsWhatItAsks) {
  for (const Request r : kEveryRequest) {
    const Opening opening = opening_for(r, usable());
    EXPECT_EQ(opening.runs, selection_of(r)) << name_of(r);
    EXPECT_FALSE(opening.refused());
    EXPECT_EQ(opening.cpu_alone, "");
    EXPECT_EQ(opening.cuda.gpu, "NVIDIA H200");
  }
}

TEST(BackendOpening, WithoutADeviceCudaIsRefusedWithTheReason) {
  const Opening opening = opening_for(Request::cuda, missing());
  EXPECT_TRUE(opening.refused());
  EXPECT_EQ(opening.refusal,
            "--backend cuda: no usable CUDA device: no CUDA-capable device is detected");
  EXPECT_EQ(opening.runs, Selection{});
  EXPECT_EQ(opening.cpu_alone, "");
}

TEST(BackendOpening, WithoutADeviceAllRunsTheCpuAloneAndSaysWhy) {
  const Opening opening = opening_for(Request::all, missing());
  EXPECT_FALSE(opening.refused());
  EXPECT_EQ(opening.runs, (Selection{true, false}));
  EXPECT_EQ(opening.cpu_alone, "no usable CUDA device: no CUDA-capable device is detected");
}

TEST(BackendOpening, TheCpuNeedsNoDeviceAndSaysNothingOfIt) {
  for (const CudaStatus& status : {CudaStatus{}, missing(), cuda_not_built()}) {
    const Opening opening = opening_for(Request::cpu, status);
    EXPECT_EQ(opening.runs, (Selection{true, false}));
    EXPECT_FALSE(opening.refused());
    EXPECT_EQ(opening.cpu_alone, "");
  }
}

TEST(BackendOpening, ABuildWithoutCudaSaysSo) {
  const CudaStatus status = cuda_not_built();
  EXPECT_FALSE(status.available);
  EXPECT_EQ(status.unavailable, "this build has no CUDA backend (configure with the CUDA toolkit)");
  EXPECT_EQ(opening_for(Request::cuda, status).refusal,
            "--backend cuda: this build has no CUDA backend (configure with the CUDA toolkit)");
  // A status that is unavailable without a reason still gives one.
  EXPECT_EQ(opening_for(Request::all, CudaStatus{}).cpu_alone, "no usable CUDA device");
}

}  // namespace
}  // namespace ampbench::runtime
