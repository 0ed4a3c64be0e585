// An NVTX range for the lifetime of a scope, shown by Nsight Systems and read by CUPTI's NVTX
// callbacks. Costs a function call when no tool is attached.
#pragma once

#include <nvtx3/nvToolsExt.h>

namespace ampbench::kernels {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) noexcept { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace ampbench::kernels
