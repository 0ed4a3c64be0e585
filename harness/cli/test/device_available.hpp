// Whether the CLI tests' process sees a usable CUDA device (probed once): the tests of --backend
// cuda check the branch this machine takes. Always false in a build without CUDA.
#pragma once

#if AMPBENCH_HAVE_CUDA
#include "kernels/device.hpp"
#endif

namespace ampbench::cli::test {

inline bool device_available() {
#if AMPBENCH_HAVE_CUDA
  static const bool available = kernels::probe_device().available;
  return available;
#else
  return false;
#endif
}

}  // namespace ampbench::cli::test
