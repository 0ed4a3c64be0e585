// The Tensor Core MMA presets and their lookup (the arithmetic is inline in mma.hpp).
//
// Sources of the parameters (docs/mma-models.md has the full table and discussion):
//   [MMA-Sim]  microsoft/MMA-Sim commit c785138 (arXiv 2511.10909): mmasim/simulator/nv_ptx.py
//              `arch_accum_fractional_bits` (F per architecture: Volta 23, Turing 24, Ampere 24,
//              Ada Lovelace 24, Hopper 25, Blackwell 25; FP8 on Ada 13 with "f32_e8m13" output;
//              wgmma FP8 13 with "f32_e8m13"), the split-k rule (`is_split_k`: Ampere and Ada,
//              m16n8k16 f16/bf16, m16n8k8 tf32, m16n8k32 fp8 are two fused steps of k/2), wgmma and
//              tcgen05.mma as one fused step over the instruction's k; mmasim/isa/nv_ptx/*.py for
//              the instruction shapes per architecture; arithmetic.py for the term definition,
//              alignment, truncation, output rounding and NaN canonicalisation.
//   [Fasi21]   Fasi, Higham, Mikaitis, Pranesh, PeerJ CS 7:e330 (2021), and their test code
//              (north-numerical-computing/tensor-cores-numerical-behavior commit 9dae3fc): V100 no
//              extra alignment bit, T4/A100 one; subnormal inputs and outputs supported; fp32
//              result truncated, fp16 output rounded to nearest; 4 products per fused step on V100.
//   [KM25]     Khattak & Mikaitis, arXiv 2512.07004 (2025): products per fused step 4 (V100), 8
//              (A100/Ada fp16, bf16), 4 (tf32), 16 (H100/B200 fp16, bf16); F 23/24/25 = 0/1/2 extra
//              bits; Hopper/Ada FP8 13 bits, e8m13 output.
#include "harness/numeric/mma.hpp"

#include <array>
#include <optional>
#include <span>
#include <string_view>

namespace ampbench::numeric {
namespace {

constexpr MmaModel preset(const char* name, const char* arch, const char* instruction,
                          const Format& input, int instruction_k, int fused_k, int f,
                          MmaOutput output, const char* source) {
  return MmaModel{name, arch,   instruction, input, instruction_k, fused_k,
                  f,    output, true,        true,  true,          source};
}

constexpr auto T = MmaOutput::fp32_truncate;
constexpr auto E = MmaOutput::e8m13_truncate;
constexpr auto H = MmaOutput::fp16_nearest_even;

constexpr const char* kVolta =
    "MMA-Sim nv_ptx.py (F=23, m8n8k4 whole); Fasi21 (V100: 0 extra bits)";
constexpr const char* kTuring = "MMA-Sim nv_ptx.py (F=24, m16n8k8 whole); Fasi21 (T4: 1 extra bit)";
constexpr const char* kAmpere =
    "MMA-Sim nv_ptx.py (F=24, split-k k/2); Fasi21 (A100: 1 extra bit); KM25 (8 / tf32 4)";
constexpr const char* kAda = "MMA-Sim nv_ptx.py (Ada: as Ampere; split-k k/2)";
constexpr const char* kAdaFp8 = "MMA-Sim nv_ptx.py (Ada FP8: F=13, f32_e8m13, k32 split 16+16)";
constexpr const char* kHopper = "MMA-Sim nv_ptx.py wgmma (F=25, whole k); KM25 (H100: 16)";
constexpr const char* kHopperFp8 = "MMA-Sim nv_ptx.py wgmma (FP8: F=13, f32_e8m13, whole k=32)";
constexpr const char* kBlackwell = "MMA-Sim nv_ptx.py tcgen05mma (F=25, whole k); KM25 (B200)";

constexpr std::array kPresets = {
    // Volta sm_70: mma.m8n8k4 (the wmma 16x16x16 is built from it); fp16 inputs only.
    preset("volta-fp16", "volta", "mma.sync.m8n8k4.f32.f16.f16.f32", formats::fp16, 4, 4, 23, T,
           kVolta),
    preset("volta-fp16-acc16", "volta", "mma.sync.m8n8k4.f16.f16.f16.f16", formats::fp16, 4, 4, 23,
           H, kVolta),
    // Turing sm_75: mma.m16n8k8, one fused step; fp16 inputs only.
    preset("turing-fp16", "turing", "mma.sync.m16n8k8.f32.f16.f16.f32", formats::fp16, 8, 8, 24, T,
           kTuring),
    preset("turing-fp16-acc16", "turing", "mma.sync.m16n8k8.f16.f16.f16.f16", formats::fp16, 8, 8,
           24, H, kTuring),
    // Ampere sm_80: m16n8k16 (fp16, bf16) and m16n8k8 (tf32) are two fused steps of k/2.
    preset("ampere-fp16", "ampere", "mma.sync.m16n8k16.f32.f16.f16.f32", formats::fp16, 16, 8, 24,
           T, kAmpere),
    preset("ampere-fp16-acc16", "ampere", "mma.sync.m16n8k16.f16.f16.f16.f16", formats::fp16, 16, 8,
           24, H, kAmpere),
    preset("ampere-bf16", "ampere", "mma.sync.m16n8k16.f32.bf16.bf16.f32", formats::bf16, 16, 8, 24,
           T, kAmpere),
    preset("ampere-tf32", "ampere", "mma.sync.m16n8k8.f32.tf32.tf32.f32", formats::tf32, 8, 4, 24,
           T, kAmpere),
    // Ada sm_89: Ampere's MMAs, plus FP8 m16n8k32 (two fused steps of 16) with F = 13.
    preset("ada-fp16", "ada", "mma.sync.m16n8k16.f32.f16.f16.f32", formats::fp16, 16, 8, 24, T,
           kAda),
    preset("ada-fp16-acc16", "ada", "mma.sync.m16n8k16.f16.f16.f16.f16", formats::fp16, 16, 8, 24,
           H, kAda),
    preset("ada-bf16", "ada", "mma.sync.m16n8k16.f32.bf16.bf16.f32", formats::bf16, 16, 8, 24, T,
           kAda),
    preset("ada-tf32", "ada", "mma.sync.m16n8k8.f32.tf32.tf32.f32", formats::tf32, 8, 4, 24, T,
           kAda),
    preset("ada-e4m3", "ada", "mma.sync.m16n8k32.f32.e4m3.e4m3.f32", formats::e4m3, 32, 16, 13, E,
           kAdaFp8),
    preset("ada-e4m3-acc16", "ada", "mma.sync.m16n8k32.f16.e4m3.e4m3.f16", formats::e4m3, 32, 16,
           13, H, kAdaFp8),
    preset("ada-e5m2", "ada", "mma.sync.m16n8k32.f32.e5m2.e5m2.f32", formats::e5m2, 32, 16, 13, E,
           kAdaFp8),
    preset("ada-e5m2-acc16", "ada", "mma.sync.m16n8k32.f16.e5m2.e5m2.f16", formats::e5m2, 32, 16,
           13, H, kAdaFp8),
    // Hopper sm_90a: wgmma.m64nNk16 (fp16, bf16), k8 (tf32), k32 (fp8), each one fused step.
    preset("hopper-fp16", "hopper", "wgmma.mma_async.m64nNk16.f32.f16.f16", formats::fp16, 16, 16,
           25, T, kHopper),
    preset("hopper-fp16-acc16", "hopper", "wgmma.mma_async.m64nNk16.f16.f16.f16", formats::fp16, 16,
           16, 25, H, kHopper),
    preset("hopper-bf16", "hopper", "wgmma.mma_async.m64nNk16.f32.bf16.bf16", formats::bf16, 16, 16,
           25, T, kHopper),
    preset("hopper-tf32", "hopper", "wgmma.mma_async.m64nNk8.f32.tf32.tf32", formats::tf32, 8, 8,
           25, T, kHopper),
    preset("hopper-e4m3", "hopper", "wgmma.mma_async.m64nNk32.f32.e4m3.e4m3", formats::e4m3, 32, 32,
           13, E, kHopperFp8),
    preset("hopper-e4m3-acc16", "hopper", "wgmma.mma_async.m64nNk32.f16.e4m3.e4m3", formats::e4m3,
           32, 32, 13, H, kHopperFp8),
    preset("hopper-e5m2", "hopper", "wgmma.mma_async.m64nNk32.f32.e5m2.e5m2", formats::e5m2, 32, 32,
           13, E, kHopperFp8),
    preset("hopper-e5m2-acc16", "hopper", "wgmma.mma_async.m64nNk32.f16.e5m2.e5m2", formats::e5m2,
           32, 32, 13, H, kHopperFp8),
    // Blackwell sm_100a: tcgen05.mma kind::f16 (k16), kind::tf32 (k8), kind::f8f6f4 (k32), each one
    // fused step with F = 25 (FP8 included: no e8m13 output).
    preset("blackwell-fp16", "blackwell", "tcgen05.mma.kind::f16 k16 f32", formats::fp16, 16, 16,
           25, T, kBlackwell),
    preset("blackwell-fp16-acc16", "blackwell", "tcgen05.mma.kind::f16 k16 f16", formats::fp16, 16,
           16, 25, H, kBlackwell),
    preset("blackwell-bf16", "blackwell", "tcgen05.mma.kind::f16 k16 f32 (bf16)", formats::bf16, 16,
           16, 25, T, kBlackwell),
    preset("blackwell-tf32", "blackwell", "tcgen05.mma.kind::tf32 k8 f32", formats::tf32, 8, 8, 25,
           T, kBlackwell),
    preset("blackwell-e4m3", "blackwell", "tcgen05.mma.kind::f8f6f4 k32 f32 (e4m3)", formats::e4m3,
           32, 32, 25, T, kBlackwell),
    preset("blackwell-e4m3-acc16", "blackwell", "tcgen05.mma.kind::f8f6f4 k32 f16 (e4m3)",
           formats::e4m3, 32, 32, 25, H, kBlackwell),
    preset("blackwell-e5m2", "blackwell", "tcgen05.mma.kind::f8f6f4 k32 f32 (e5m2)", formats::e5m2,
           32, 32, 25, T, kBlackwell),
    preset("blackwell-e5m2-acc16", "blackwell", "tcgen05.mma.kind::f8f6f4 k32 f16 (e5m2)",
           formats::e5m2, 32, 32, 25, H, kBlackwell),
};

}  // namespace

std::span<const MmaModel> mma_presets() {
  return kPresets;
}

std::optional<MmaModel> mma_model(std::string_view arch, const Format& input,
                                  MmaAccumulator accumulator) {
  for (const MmaModel& m : kPresets) {
    if (arch == m.arch && same_values(input, m.input) && m.accumulator() == accumulator) return m;
  }
  return std::nullopt;
}

std::optional<MmaModel> mma_model_named(std::string_view name) {
  for (const MmaModel& m : kPresets) {
    if (name == m.name) return m;
  }
  return std::nullopt;
}

const char* mma_model_error(const MmaModel& m) {
  if (m.fraction_bits < 0 || m.fraction_bits > kMaxFractionBits) {
    return "fraction_bits must lie in [0, 40]";
  }
  if (m.fused_k < 0 || m.fused_k > kMaxFusedProducts) {
    return "fused_k must lie in [0, 2^20] (0: the whole k in one fused step)";
  }
  if (m.instruction_k < 1) return "instruction_k must be at least 1";
  // Products of two significands must fit in 64 bits, and every value must be a normal binary64
  // (mma_split reads the binary64 fields).
  if (m.input.precision < 2 || m.input.precision > 24) return "input precision must lie in [2, 24]";
  if (m.input.emin - m.input.fraction_bits() < -1022 || m.input.emax > 1023) {
    return "input format's values must be normal binary64 numbers";
  }
  return nullptr;
}

const char* to_string(MmaOutput output) {
  switch (output) {
    case MmaOutput::fp32_truncate: return "fp32, truncated to 23 fraction bits";
    case MmaOutput::e8m13_truncate: return "fp32, truncated to 13 fraction bits (e8m13)";
    case MmaOutput::fp16_nearest_even: return "fp16, round to nearest even";
  }
  return "?";
}

}  // namespace ampbench::numeric
