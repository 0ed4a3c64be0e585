// Rounding of binary32 arrays to a format: vectorised fast paths for the common formats and modes,
// the F16C instruction for fp32 -> fp16 round-to-nearest-even where the CPU has it, and the scalar
// reference path (rounding.hpp) for everything else. Every path gives the same bits as round_to.
#pragma once

#include <cstdint>
#include <span>

#include "harness/numeric/options.hpp"

namespace ampbench::numeric {

// Rounds every element of `in` to options.format and stores the result's value (exact in binary32:
// the format must fit, see validate with Container::binary32). Element i uses the stochastic draw
// number first_index + i of options.seed. With `events`, adds each element's rounding event.
// Throws std::invalid_argument when the sizes differ or the format does not fit binary32.
void round_array(const RoundingOptions& options, std::span<const float> in, std::span<float> out,
                 std::uint64_t first_index = 0, EventCounts* events = nullptr);

// Rounds and stores the bit patterns; the format must have at most 16 (resp. 8) bits.
void encode_array(const RoundingOptions& options, std::span<const float> in,
                  std::span<std::uint16_t> out, std::uint64_t first_index = 0);
void encode_array(const RoundingOptions& options, std::span<const float> in,
                  std::span<std::uint8_t> out, std::uint64_t first_index = 0);

// The values of bit patterns (NaN patterns give quiet NaNs with their payload, as `decode`).
void decode_array(const Format& format, std::span<const std::uint16_t> in, std::span<float> out);
void decode_array(const Format& format, std::span<const std::uint8_t> in, std::span<float> out);

// Which implementation encode_array/round_array use for these options: "f16c", "avx512",
// "avx2", "generic" (vectorised by the compiler for the baseline ISA) or "scalar". The
// environment variable AMPBENCH_ISA=baseline|avx2|avx512 caps the instruction set (baseline
// also turns F16C off), so that every path can be tested on one machine.
const char* rounding_path(const RoundingOptions& options);

// Whether this CPU has the F16C conversion instructions (and AMPBENCH_ISA allows them).
bool cpu_has_f16c();
// Whether this CPU has AVX-512 F, BW, DQ and VL (and AMPBENCH_ISA allows them): the instruction
// set of the hand-written AVX-512 kernels here and in the recipe GEMM.
bool cpu_has_avx512();

}  // namespace ampbench::numeric
