#include "kernels/device.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "kernels/test/gpu_test.hpp"

namespace ampbench::kernels {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The libraries report their versions without a device or a driver.
TEST(LibraryVersions, AreReportedWithoutADevice) {
  const LibraryVersions v = library_versions();
  EXPECT_GE(v.cuda_runtime.major, 12);
  EXPECT_GT(v.cublas.major, 0);
  EXPECT_GE(v.cudnn.major, 9);
  EXPECT_GT(v.cupti_api, 0u);
  const std::string line = describe(v);
  EXPECT_THAT(line, StartsWith("CUDA runtime " + to_string(v.cuda_runtime)));
  EXPECT_THAT(line, HasSubstr("cuDNN " + to_string(v.cudnn)));
  std::cout << line << '\n';
}

TEST(ProbeDevice, ExplainsWhyNoneIsUsable) {
  const DeviceStatus s = probe_device();
  std::cout << describe(s) << '\n';
  if (s.available) {
    EXPECT_TRUE(s.error.empty());
  } else {
    EXPECT_FALSE(s.error.empty());
    EXPECT_THAT(describe(s), StartsWith("no CUDA device: "));
  }
}

using DeviceTest = test::GpuTest;

TEST_F(DeviceTest, DescribesTheDevice) {
  const DeviceStatus& s = device();
  EXPECT_GT(s.device_count, 0);
  EXPECT_FALSE(s.name.empty());
  EXPECT_GE(s.compute_major, 8);  // the kernels are built for sm_80 and sm_90
  EXPECT_GT(s.multiprocessors, 0);
  EXPECT_GT(s.memory_bytes, 0u);
  EXPECT_GT(s.driver_version, 0);
  EXPECT_GT(s.runtime_version, 0);
  EXPECT_THAT(describe(s), StartsWith(s.name));
}

}  // namespace
}  // namespace ampbench::kernels
