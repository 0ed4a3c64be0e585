// The fingerprint's executor on the GPU's matrix units (harness/fingerprint/fingerprint.hpp):
// each probe d = c + sum a_i b_i runs on one warp as a chain of matrix instructions along k, like
// a GEMM's k-loop. Plain C++: callable without CUDA headers.
//
// Instructions: WMMA 16x16x16 for fp16 (fp32 or fp16 accumulator) and bf16, WMMA 16x16x8 for tf32
// (on sm_80 and sm_90 these are mma.sync m16n8k16 and m16n8k8, each output element from one
// instruction of the same k), and mma.sync.m16n8k32 with e4m3 or e5m2 inputs and an fp32
// accumulator (sm_89 and later; the build must hold sm_89+ code). Every row of A holds the probe's
// a and every column of B its b, so every element of D is the probe's d whatever the fragment
// layout; the kernel reports whether they all agree, and a disagreement is an error.
#pragma once

#include <memory>

#include "harness/fingerprint/fingerprint.hpp"

namespace ampbench::kernels {

// The executor for this input format and accumulator on the current device. Throws
// std::invalid_argument where no kernel exists for the combination (fp8 with an fp16 accumulator,
// a format that is no MMA input), std::runtime_error where the device or the build cannot run it
// (fp8 below compute capability 8.9, or without sm_89+ code), CudaError when a CUDA call fails.
std::unique_ptr<fingerprint::Executor> make_mma_executor(const numeric::Format& input,
                                                         numeric::MmaAccumulator accumulator);

}  // namespace ampbench::kernels
