// NVTX ranges, shown by Nsight Systems and recorded by the CUPTI collector as MARKER records
// (kernels/cupti_collector.hpp). A program that links the collector has CUPTI as its NVTX tool
// from the first NVTX call on (the collector's static injection; NVTX_INJECTION64_PATH, as Nsight
// sets it, takes precedence), traced or not: each push and pop is a call into CUPTI, which records
// nothing while no collector runs. The GPU benchmark bench_launch_overhead measures that cost
// (BM_launch_untraced_in_nvtx_ranges against BM_launch_untraced; docs/profiling.md).
#pragma once

#include <nvtx3/nvToolsExt.h>

#include "harness/profile/host_timer.hpp"

namespace ampbench::kernels {

// An NVTX push/pop range for the lifetime of a scope.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) noexcept { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// Hooks that make every phase of a profile::PhaseRecorder an NVTX push/pop range too, so that the
// harness's phases appear in Nsight and, through CUPTI, in the collected trace:
//   profile::PhaseRecorder recorder(nvtx_range_hooks());
inline void nvtx_push(const char* name) {
  nvtxRangePushA(name);
}
inline void nvtx_pop() {
  nvtxRangePop();
}
inline profile::RangeHooks nvtx_range_hooks() {
  profile::RangeHooks hooks;
  hooks.push = &nvtx_push;
  hooks.pop = &nvtx_pop;
  return hooks;
}

}  // namespace ampbench::kernels
