// Throughput of the emulated GEMM, 512x512x512, against OpenBLAS sgemm (the CPU's practical peak,
// all cores) in the same run, in flop/s (2 M N K per product):
//   - fp32 policy, sequential summation: target >= 0.25x sgemm;
//   - amp-fp16 (fp16 inputs and output, fp32 accumulation) on the Hopper Tensor Core model:
//     target >= 0.05x sgemm;
//   - amp-fp16 with sequential fp32 accumulation, reported without a target;
//   - a recipe's GEMM (issue 19: target >= 0.05x sgemm) from binary32 operands to the binary32
//     result: both operands quantized by the recipe's reference quantizer, then multiplied on the
//     Hopper FP8 model chunk by chunk (quant::recipe_product): fp8-block's fprop (1x128 x, 128x128
//     w, promotion every 128), fp8-current's dgrad (e5m2 dy x e4m3 w^T, the mixed model, one
//     chunk), mxfp8's fprop (a chunk per 32-block).
// Run with repetitions on a shared machine:
//   ampbench_bench_gemm --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdint>
#include <vector>

#include "harness/backends/cpu/emulate.hpp"
#include "harness/bench/ratios.hpp"
#include "harness/numeric/mma.hpp"
#include "harness/quant/recipe_gemm.hpp"

namespace {

namespace bench = ampbench::bench;
namespace cpu = ampbench::backends::cpu;
namespace numeric = ampbench::numeric;

constexpr std::size_t kN = 512;

// Values in [-1, 1) with 11 significant bits (fp16 values, so every policy takes them unchanged),
// from splitmix64.
std::vector<double> operand(std::uint64_t seed) {
  std::vector<double> v(kN * kN);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto bits = numeric::splitmix64(seed, i) >> 53;  // 11 bits
    v[i] = (static_cast<double>(bits) - 1024.0) / 1024.0;
  }
  return v;
}

void set_flops(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 2 * kN * kN * kN);
}

void BM_sgemm_openblas(benchmark::State& state) {
  const auto a64 = operand(1), b64 = operand(2);
  const std::vector<float> a(a64.begin(), a64.end()), b(b64.begin(), b64.end());
  std::vector<float> c(kN * kN);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.0f, a.data(), kN, b.data(),
                kN, 0.0f, c.data(), kN);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state);
}

void BM_emulated_fp32(benchmark::State& state) {
  const auto a = operand(1), b = operand(2);
  const cpu::Arithmetic fp32{numeric::formats::fp32, numeric::formats::fp32,
                             numeric::formats::fp32};
  for (auto _ : state) {
    cpu::Events events;
    const auto c = cpu::gemm(fp32, cpu::Summation::sequential, kN, kN, kN, a, b, {}, {}, events);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state);
}

void BM_emulated_amp_fp16(benchmark::State& state) {
  const auto a = operand(1), b = operand(2);
  const cpu::Arithmetic amp{numeric::formats::fp32, numeric::formats::fp32, numeric::formats::fp16};
  for (auto _ : state) {
    cpu::Events events;
    const auto c = cpu::gemm(amp, cpu::Summation::sequential, kN, kN, kN, a, b, {}, {}, events);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state);
}

void BM_emulated_amp_fp16_hopper(benchmark::State& state) {
  const auto a = operand(1), b = operand(2);
  const numeric::MmaModel model = *numeric::mma_model("hopper", numeric::formats::fp16);
  for (auto _ : state) {
    cpu::Events events;
    const auto c = cpu::gemm_mma(model, numeric::formats::fp16, numeric::Rounding::nearest_even, kN,
                                 kN, kN, a, b, {}, events);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state);
}

// The recipe's GEMM `gemm` on the architecture's model from the binary32 operands (operand()
// values, as floats).
void recipe_gemm(benchmark::State& state, const char* recipe_name, ampbench::quant::Gemm gemm,
                 const char* arch) {
  namespace quant = ampbench::quant;
  const auto a64 = operand(1), b64 = operand(2);
  const std::vector<float> a(a64.begin(), a64.end()), b(b64.begin(), b64.end());
  const quant::Recipe& recipe = *quant::find_recipe(recipe_name);
  const auto [ra, rb] = quant::gemm_roles(gemm);
  const quant::MmaChoice choice = quant::recipe_mma(arch, recipe, gemm);
  if (!choice.mma) return state.SkipWithError(choice.reason.c_str());
  const quant::RecipeMma& mma = *choice.mma;
  for (auto _ : state) {
    const auto qa = quant::quantize_operand(recipe, ra, gemm, a, kN, kN, 1);
    const auto qb = quant::quantize_operand(recipe, rb, gemm, b, kN, kN, 2);
    const auto c = quant::recipe_product(qa.q, qb.q, mma, recipe.promote_interval);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state);
}
BENCHMARK(BM_sgemm_openblas)->Name("BM_sgemm_openblas/512")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_emulated_fp32)->Name("BM_emulated_fp32/512")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_emulated_amp_fp16)->Name("BM_emulated_amp_fp16/512")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_emulated_amp_fp16_hopper)
    ->Name("BM_emulated_amp_fp16_hopper/512")
    ->Unit(benchmark::kMillisecond);
// The recipe GEMMs, registered after the benchmarks above (static initialisation in file order).
const bool kRecipeBenchmarks = [] {
  using ampbench::quant::Gemm;
  const struct {
    const char* name;
    const char* recipe;
    Gemm gemm;
    const char* arch;
  } recipes[] = {
      {"BM_recipe_fp8_block_hopper/512", "fp8-block", Gemm::fprop, "hopper"},
      {"BM_recipe_fp8_current_dgrad_hopper/512", "fp8-current", Gemm::dgrad, "hopper"},
      {"BM_recipe_mxfp8_hopper/512", "mxfp8", Gemm::fprop, "hopper"},
      // The FP4 recipes on the architecture whose MMAs scale blocks (mxfp6 has no model: exact).
      {"BM_recipe_mxfp4_blackwell/512", "mxfp4", Gemm::fprop, "blackwell"},
      {"BM_recipe_nvfp4_blackwell/512", "nvfp4", Gemm::fprop, "blackwell"},
      {"BM_recipe_nvfp4_wgrad_blackwell/512", "nvfp4", Gemm::wgrad, "blackwell"}};
  for (const auto& r : recipes) {
    benchmark::RegisterBenchmark(r.name, recipe_gemm, r.recipe, r.gemm, r.arch)
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  const bench::RatioTable table{"OpenBLAS sgemm on the same shape (flop/s)",
                                [](const bench::Results& results, const bench::Throughput& t) {
                                  if (t.family == "BM_sgemm_openblas") return -1.0;
                                  const auto it = results.find("BM_sgemm_openblas" + t.input);
                                  return it == results.end() ? -1.0 : bench::median_of(it->second);
                                },
                                [](std::string_view family) {
                                  if (family == "BM_emulated_fp32") return 0.25;
                                  if (family == "BM_emulated_amp_fp16_hopper") return 0.05;
                                  if (family.starts_with("BM_recipe_")) return 0.05;
                                  return 0.0;
                                }};
  return bench::run_with_ratios(argc, argv, {table});
}
