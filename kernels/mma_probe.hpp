// The fingerprint's probes in device form, shared by the WMMA and mma.sync kernels
// (mma_executor.cu) and the wgmma kernels (wgmma_probe.cu, built for sm_90a alone). Included by
// .cu files only.
#pragma once

#include <cstdint>

namespace ampbench::kernels::detail {

// Per probe: k_total operand bit patterns (zero-padded to whole instructions; tf32 as fp32 bits),
// c's bit pattern, and d's bit pattern and whether every element of the D tile agreed.
struct ProbeArrays {
  int chunks;  // instructions per probe
  const std::uint32_t* a;
  const std::uint32_t* b;
  const std::uint32_t* c;
  std::uint32_t* d;
  std::uint32_t* uniform;
};

// Launches one probe per block, asynchronously.
using ProbeLaunch = void (*)(ProbeArrays, unsigned blocks);

// The wgmma instructions of the fingerprint: input types and accumulator.
enum class WgmmaKind { f16_f32, f16_f16, bf16_f32, tf32_f32, e4m3_f32, e5m2_f32 };

// The launcher of the kind's kernel (one warpgroup per probe, wgmma.m64n8k*).
ProbeLaunch wgmma_launcher(WgmmaKind kind);

// The SASS version of the kind's kernel for the current device (sm_90a code, the only image it
// has), or 0 when the device can run none.
int wgmma_binary_version(WgmmaKind kind);

}  // namespace ampbench::kernels::detail
