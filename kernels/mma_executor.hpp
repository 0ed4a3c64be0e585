// The fingerprint's executor on the GPU's matrix units (harness/fingerprint/fingerprint.hpp):
// each probe d = c + sum a_i b_i runs on one warp (one warpgroup for wgmma) as a chain of matrix
// instructions along k, like a GEMM's k-loop. Plain C++: callable without CUDA headers.
//
// Instructions (--instruction):
// * mma: WMMA 16x16x16 for fp16 (fp32 or fp16 accumulator) and bf16, WMMA 16x16x8 for tf32 (on
//   sm_80 and sm_90 these are mma.sync m16n8k16 and m16n8k8, each output element from one
//   instruction of the same k), and mma.sync.m16n8k32 with e4m3 or e5m2 inputs and an fp32
//   accumulator (sm_89 and later; the build must hold sm_89+ code).
// * wgmma: wgmma.mma_async m64n8k16 (fp16 with either accumulator, bf16), m64n8k8 (tf32) and
//   m64n8k32 (e4m3, e5m2), one warpgroup per probe, operands in shared memory
//   (kernels/wgmma_layout.hpp). Hopper (compute capability 9.0) only, and the instruction cuBLAS
//   runs there; the build holds sm_90a code for it.
// * automatic: wgmma where it exists, mma elsewhere.
// Every row of A holds the probe's a and every column of B its b, so every element of D is the
// probe's d whatever the fragment layout; the kernel reports whether they all agree, and a
// disagreement is an error. The wgmma executor also checks, before it is returned, that a's and
// b's k slots meet in their products (its shared-memory layout is ours, not the compiler's).
#pragma once

#include <memory>
#include <vector>

#include "harness/fingerprint/fingerprint.hpp"

namespace ampbench::kernels {

// Two instructions' worth of one-hot probes, a_j = 1 and b_j = 2 in slot j and zero elsewhere:
// each gives 2 only when a kernel puts a's and b's slot j at the same k of the same product.
std::vector<fingerprint::Probe> one_hot_probes(int instruction_k);

enum class MmaInstruction { automatic, mma, wgmma };

// The executor for this input format, accumulator and instruction on the current device. Throws
// std::invalid_argument where no kernel exists for the combination (fp8 with an fp16 accumulator,
// a format that is no MMA input), std::runtime_error where the device or the build cannot run it
// (fp8 below compute capability 8.9, or without sm_89+ code; wgmma off compute capability 9.0, or
// without sm_90a code; a wgmma layout check that fails), CudaError when a CUDA call fails.
std::unique_ptr<fingerprint::Executor> make_mma_executor(
    const numeric::Format& input, numeric::MmaAccumulator accumulator,
    MmaInstruction instruction = MmaInstruction::automatic);

}  // namespace ampbench::kernels
