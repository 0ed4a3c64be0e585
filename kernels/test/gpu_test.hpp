// The fixture of tests that need a CUDA device: each skips, with the reason, where there is none,
// so that CTest reports it as skipped rather than passed. With AMPBENCH_REQUIRE_GPU=1 in the
// environment (scripts/gpu-check sets it) a missing device is a failure instead: on the GPU
// machine, skipping would hide that nothing was tested.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

#include "kernels/device.hpp"

namespace ampbench::kernels::test {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device().available) return;
    if (gpu_required()) FAIL() << "no CUDA device: " << device().error << " (AMPBENCH_REQUIRE_GPU)";
    GTEST_SKIP() << "no CUDA device: " << device().error;
  }

  // Probed once per process: the first probe makes the CUDA context.
  static const DeviceStatus& device() {
    static const DeviceStatus status = probe_device();
    return status;
  }

  static bool gpu_required() {
    const char* v = std::getenv("AMPBENCH_REQUIRE_GPU");
    return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
  }
};

}  // namespace ampbench::kernels::test
