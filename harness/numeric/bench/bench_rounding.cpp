// Throughput of the array rounding paths (rounding_array.hpp) over 1M-element binary32 arrays, each
// next to its physical peer: a raw F16C loop converting the same input to fp16 bit patterns.
//
// Every benchmark reports elements/s (items_per_second) and, as its label, the path it took
// (rounding_path). After the run the program prints each benchmark's throughput as a ratio to the
// peer on the same input (the faster of BM_F16C_peer_zmm and BM_F16C_peer_ymm), with the target
// where it has one:
//   fp16 RNE encode >= 0.9x (it uses F16C itself where the CPU has it), bf16 RNE encode >= 0.8x,
//   fp16 stochastic encode >= 0.25x; e4m3 and e5m2 encodes (nearest and stochastic) >= 0.6x and
//   MX/NVFP4 quantization >= 0.25x (issue 19), both for the reference quantizers
//   (quant/scaling.hpp, the whole quantized tensor with events, 1M values) and for the fast path
//   (quantize_mx_fast, quantize_nvfp4_fast: codes and scales only, 16M values, ratios to the peer
//   on the same 16M values, the inputs named normal_16M and wide_16M); the others are reported
//   without a target.
// The ratios use the median of the repetitions where there are several. On a shared machine run
//   ampbench_bench_rounding --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true
// so that every benchmark sees the same mix of neighbours. With --benchmark_format=json the JSON
// goes to stdout and the ratios to stderr.
//
// At 1M elements (4 MiB in, 1-4 MiB out) every benchmark streams from L3 or memory, so the peer
// measures the memory system as much as the instruction.
//
// Inputs, seeded: `normal` is N(0,1) (typical activations and weights); `wide` has log-uniform
// magnitudes from 2^-27 to 2^17.5 with random signs, spanning fp16's subnormals, underflow to zero
// and overflow, with one element in 1024 an infinity or NaN.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/bench/ratios.hpp"
#include "harness/numeric/rounding_array.hpp"
#include "harness/quant/scaling.hpp"

namespace {

using namespace ampbench::numeric;
namespace bench = ampbench::bench;

constexpr std::size_t kElements = std::size_t{1} << 20;
constexpr std::size_t kLargeElements = std::size_t{1} << 24;  // issue 19's 16M values

// The two inputs, at 1M elements and (the _16M ones, for the MX/NVFP4 fast path) at 16M; the 16M
// ones begin with the 1M ones (the same seeds).
enum class Input { normal, wide, normal_16M, wide_16M };

bool is_normal(Input kind) {
  return kind == Input::normal || kind == Input::normal_16M;
}

std::size_t size_of(Input kind) {
  return kind == Input::normal || kind == Input::wide ? kElements : kLargeElements;
}

std::vector<float> make_input(Input kind) {
  std::vector<float> v(size_of(kind));
  std::mt19937_64 rng(is_normal(kind) ? 20240601 : 20240602);
  if (is_normal(kind)) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (float& x : v) x = dist(rng);
    return v;
  }
  std::uniform_real_distribution<double> exponent(-27.0, 17.5);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (std::size_t i = 0; i < v.size(); ++i) {
    float x = static_cast<float>(std::exp2(exponent(rng)));
    if ((bits(rng) & 1023u) == 0) {  // a special: +-inf or a NaN with a random payload
      const std::uint32_t r = bits(rng);
      const std::uint32_t u = (r & 1u) ? 0x7F800000u : 0x7F800000u | (r >> 9) | 1u;
      std::memcpy(&x, &u, sizeof x);
    }
    v[i] = (bits(rng) & 1u) ? -x : x;
  }
  return v;
}

const std::vector<float>& input(Input kind) {
  static const std::vector<float> normal = make_input(Input::normal);
  static const std::vector<float> wide = make_input(Input::wide);
  switch (kind) {
    case Input::normal: return normal;
    case Input::wide: return wide;
    case Input::normal_16M: {
      static const std::vector<float> large = make_input(Input::normal_16M);
      return large;
    }
    case Input::wide_16M: break;
  }
  static const std::vector<float> large = make_input(Input::wide_16M);
  return large;
}

void finish(benchmark::State& state, std::size_t elements = kElements) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(elements));
}

// ---- the physical peer: raw F16C, no dispatch, no checks --------------------------------------

__attribute__((target("avx2,f16c"))) void f16c_ymm(const float* in, std::uint16_t* out,
                                                   std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) {
    out[i] = static_cast<std::uint16_t>(
        _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(in[i]), _MM_FROUND_TO_NEAREST_INT), 0));
  }
}

__attribute__((target("avx512f,avx2,f16c"))) void f16c_zmm(const float* in, std::uint16_t* out,
                                                           std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    // The zero-masking form with every lane on is plain vcvtps2ph; _mm512_cvtps_ph itself trips
    // GCC 12's -Wmaybe-uninitialized on its undefined pass-through operand.
    const __m256i h =
        _mm512_maskz_cvtps_ph(0xFFFF, _mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
  }
  for (; i < n; ++i) {
    out[i] = static_cast<std::uint16_t>(
        _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(in[i]), _MM_FROUND_TO_NEAREST_INT), 0));
  }
}

bool cpu_has_avx512f() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

// The peers: vcvtps2ph on 512-bit vectors (where the CPU has AVX-512) and on 256-bit ones. Which is
// faster varies by CPU and load (here they are within a few percent, both limited by memory):
// ratios are taken to the faster of the two on each input.
void BM_F16C_peer_zmm(benchmark::State& state, Input kind) {
  if (!cpu_has_f16c() || !cpu_has_avx512f()) return state.SkipWithError("no AVX-512 F16C");
  const std::vector<float>& in = input(kind);
  std::vector<std::uint16_t> out(in.size());
  for (auto _ : state) {
    f16c_zmm(in.data(), out.data(), in.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  finish(state, in.size());
}

void BM_F16C_peer_ymm(benchmark::State& state, Input kind) {
  if (!cpu_has_f16c()) return state.SkipWithError("this CPU has no F16C");
  const std::vector<float>& in = input(kind);
  std::vector<std::uint16_t> out(in.size());
  for (auto _ : state) {
    f16c_ymm(in.data(), out.data(), in.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  finish(state, in.size());
}

// ---- the library paths -------------------------------------------------------------------------

RoundingOptions options(const Format& format, Rounding mode) {
  RoundingOptions o;
  o.format = format;
  o.mode = mode;
  o.seed = 0x5EEDu;
  o.container = Container::binary32;
  return o;
}

template <typename Bits>
void encode(benchmark::State& state, const Format& format, Rounding mode, Input kind) {
  const RoundingOptions o = options(format, mode);
  const std::vector<float>& in = input(kind);
  std::vector<Bits> out(kElements);
  for (auto _ : state) {
    encode_array(o, in, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(rounding_path(o));
  finish(state);
}

void round(benchmark::State& state, const Format& format, Rounding mode, Input kind) {
  const RoundingOptions o = options(format, mode);
  const std::vector<float>& in = input(kind);
  std::vector<float> out(kElements);
  for (auto _ : state) {
    round_array(o, in, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(rounding_path(o));
  finish(state);
}

void BM_fp16_rne_encode(benchmark::State& state, Input kind) {
  encode<std::uint16_t>(state, formats::fp16, Rounding::nearest_even, kind);
}
void BM_bf16_rne_encode(benchmark::State& state, Input kind) {
  encode<std::uint16_t>(state, formats::bf16, Rounding::nearest_even, kind);
}
void BM_e4m3_rne_encode(benchmark::State& state, Input kind) {
  encode<std::uint8_t>(state, formats::e4m3, Rounding::nearest_even, kind);
}
void BM_fp16_sr_encode(benchmark::State& state, Input kind) {
  encode<std::uint16_t>(state, formats::fp16, Rounding::stochastic_proportional, kind);
}
void BM_e5m2_rne_encode(benchmark::State& state, Input kind) {
  encode<std::uint8_t>(state, formats::e5m2, Rounding::nearest_even, kind);
}
void BM_e4m3_sr_encode(benchmark::State& state, Input kind) {
  encode<std::uint8_t>(state, formats::e4m3, Rounding::stochastic_proportional, kind);
}
void BM_e5m2_sr_encode(benchmark::State& state, Input kind) {
  encode<std::uint8_t>(state, formats::e5m2, Rounding::stochastic_proportional, kind);
}

// The stochastic draws alone, a ceiling for the stochastic encodes: draw i of a stream for each
// of the 1M elements (rounding.hpp's stochastic_draw, the top half of splitmix64, from its state
// advanced by one addition per element as rounding_array.cpp does: two 64-bit multiplications per
// draw), stored one byte per element as the fp8 encodes store theirs. No rounding: what a
// stochastic encode costs beyond this is its rounding.
// GCC 12 before 12.3 warns about the undefined pass-through operand inside many AVX-512
// intrinsics (GCC bug 105593), as in rounding_array.cpp.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define AMPBENCH_BENCH_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))

[[gnu::always_inline]] AMPBENCH_BENCH_AVX512 inline __m512i splitmix_mixed(__m512i z) {
  z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 30));
  z = _mm512_mullo_epi64(z, _mm512_set1_epi64(static_cast<long long>(0xBF58476D1CE4E5B9ull)));
  z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 27));
  return _mm512_mullo_epi64(z, _mm512_set1_epi64(static_cast<long long>(0x94D049BB133111EBull)));
}

AMPBENCH_BENCH_AVX512 void draws_zmm(std::uint64_t seed, std::uint8_t* out, std::size_t n) {
  const auto step = [](std::uint64_t k) { return static_cast<long long>(k * kSplitmixGamma); };
  __m512i low = _mm512_add_epi64(
      _mm512_set1_epi64(static_cast<long long>(seed + kSplitmixGamma)),
      _mm512_setr_epi64(step(0), step(1), step(2), step(3), step(4), step(5), step(6), step(7)));
  __m512i high = _mm512_add_epi64(low, _mm512_set1_epi64(step(8)));
  const __m512i advance = _mm512_set1_epi64(step(16));
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i h = _mm512_permutex2var_epi32(splitmix_mixed(low), odd, splitmix_mixed(high));
    const __m512i draws = _mm512_xor_si512(h, _mm512_srli_epi32(h, 31));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtepi32_epi8(draws));
    low = _mm512_add_epi64(low, advance);
    high = _mm512_add_epi64(high, advance);
  }
  for (; i < n; ++i) out[i] = static_cast<std::uint8_t>(stochastic_draw(seed, i));
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

void BM_stochastic_draws_only(benchmark::State& state, Input kind) {
  if (!cpu_has_avx512f()) return state.SkipWithError("no AVX-512");
  std::vector<std::uint8_t> out(input(kind).size());
  draws_zmm(7, out.data(), out.size());
  // The draws are stochastic_draw's (their low byte here).
  for (const std::size_t i : {std::size_t{0}, std::size_t{17}, out.size() - 1}) {
    if (out[i] != static_cast<std::uint8_t>(stochastic_draw(7, i))) {
      return state.SkipWithError("the draws differ from stochastic_draw");
    }
  }
  for (auto _ : state) {
    draws_zmm(7, out.data(), out.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel("avx512");
  finish(state);
}

// A whole quantized tensor (scales, bits, values, dequantized values, events) of the input as
// 1024 x 1024, as `ampbench quantize` computes it: the scalar reference path, one value at a time.
template <typename Quantize>
void quantize(benchmark::State& state, Input kind, Quantize&& q) {
  const std::vector<float>& in = input(kind);
  for (auto _ : state) {
    auto result = q(in);
    benchmark::DoNotOptimize(result.bits.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel("scalar");
  finish(state);
}

ampbench::quant::Layout rows_of(std::size_t block_rows, std::size_t block_cols) {
  ampbench::quant::Layout l;
  l.rows = 1024;
  l.cols = kElements / 1024;
  l.block_rows = block_rows;
  l.block_cols = block_cols;
  return l;
}

void BM_mxfp8_quantize(benchmark::State& state, Input kind) {
  quantize(state, kind, [](const std::vector<float>& x) {
    return ampbench::quant::quantize_mx(x, rows_of(1, 32), formats::e4m3);
  });
}
void BM_mxfp4_quantize(benchmark::State& state, Input kind) {
  quantize(state, kind, [](const std::vector<float>& x) {
    return ampbench::quant::quantize_mx(x, rows_of(1, 32), formats::e2m1);
  });
}
void BM_nvfp4_quantize(benchmark::State& state, Input kind) {
  quantize(state, kind, [](const std::vector<float>& x) {
    return ampbench::quant::quantize_nvfp4(x, rows_of(1, 16));
  });
}

// The fast path (quantize_mx_fast, quantize_nvfp4_fast): element codes and block scales only, what
// a block-scaled GEMM reads, into storage reused across iterations, as the peer's is. The input as
// rows of 1024 (1024 x 1024 or 16384 x 1024), blocks 1 x 32 (MX) and 1 x 16 (NVFP4) along them.
template <typename Quantize>
void quantize_fast(benchmark::State& state, Input kind, Quantize&& q) {
  const std::vector<float>& in = input(kind);
  ampbench::quant::BlockScaled out;
  for (auto _ : state) {
    q(in, out);
    benchmark::DoNotOptimize(out.bits.data());
    benchmark::DoNotOptimize(out.scale_bits.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel("fast");
  finish(state, in.size());
}

ampbench::quant::Layout rows_of_1024(std::size_t elements, std::size_t block_cols,
                                     Rounding mode = Rounding::nearest_even) {
  ampbench::quant::Layout l;
  l.rows = elements / 1024;
  l.cols = 1024;
  l.block_rows = 1;
  l.block_cols = block_cols;
  l.mode = mode;
  l.seed = 0x5EEDu;
  return l;
}

void mx_fast(benchmark::State& state, Input kind, const Format& element) {
  quantize_fast(state, kind, [&](const std::vector<float>& x, ampbench::quant::BlockScaled& out) {
    ampbench::quant::quantize_mx_fast(x, rows_of_1024(x.size(), 32), element, out);
  });
}

void BM_mxfp8_quantize_fast(benchmark::State& state, Input kind) {
  mx_fast(state, kind, formats::e4m3);
}
void BM_mxfp6_quantize_fast(benchmark::State& state, Input kind) {
  mx_fast(state, kind, formats::e3m2);
}
void BM_mxfp4_quantize_fast(benchmark::State& state, Input kind) {
  mx_fast(state, kind, formats::e2m1);
}
void BM_nvfp4_quantize_fast(benchmark::State& state, Input kind) {
  quantize_fast(state, kind, [](const std::vector<float>& x, ampbench::quant::BlockScaled& out) {
    ampbench::quant::quantize_nvfp4_fast(x, rows_of_1024(x.size(), 16), out);
  });
}
// NVFP4 as the recipe quantizes gradients: stochastic rounding.
void BM_nvfp4_sr_quantize_fast(benchmark::State& state, Input kind) {
  quantize_fast(state, kind, [](const std::vector<float>& x, ampbench::quant::BlockScaled& out) {
    ampbench::quant::quantize_nvfp4_fast(
        x, rows_of_1024(x.size(), 16, Rounding::stochastic_proportional), out);
  });
}

void BM_fp16_rne_round_array(benchmark::State& state, Input kind) {
  round(state, formats::fp16, Rounding::nearest_even, kind);
}
void BM_bf16_rne_round_array(benchmark::State& state, Input kind) {
  round(state, formats::bf16, Rounding::nearest_even, kind);
}

#define AMPBENCH_BOTH_INPUTS(fn)                \
  BENCHMARK_CAPTURE(fn, normal, Input::normal); \
  BENCHMARK_CAPTURE(fn, wide, Input::wide)

#define AMPBENCH_16M_INPUTS(fn)                         \
  BENCHMARK_CAPTURE(fn, normal_16M, Input::normal_16M); \
  BENCHMARK_CAPTURE(fn, wide_16M, Input::wide_16M)

AMPBENCH_BOTH_INPUTS(BM_F16C_peer_zmm);
AMPBENCH_BOTH_INPUTS(BM_F16C_peer_ymm);
AMPBENCH_16M_INPUTS(BM_F16C_peer_zmm);
AMPBENCH_16M_INPUTS(BM_F16C_peer_ymm);
AMPBENCH_BOTH_INPUTS(BM_fp16_rne_encode);
AMPBENCH_BOTH_INPUTS(BM_bf16_rne_encode);
AMPBENCH_BOTH_INPUTS(BM_e4m3_rne_encode);
AMPBENCH_BOTH_INPUTS(BM_fp16_sr_encode);
AMPBENCH_BOTH_INPUTS(BM_e5m2_rne_encode);
AMPBENCH_BOTH_INPUTS(BM_e4m3_sr_encode);
AMPBENCH_BOTH_INPUTS(BM_e5m2_sr_encode);
AMPBENCH_BOTH_INPUTS(BM_stochastic_draws_only);
AMPBENCH_BOTH_INPUTS(BM_mxfp8_quantize);
AMPBENCH_BOTH_INPUTS(BM_mxfp4_quantize);
AMPBENCH_BOTH_INPUTS(BM_nvfp4_quantize);
AMPBENCH_16M_INPUTS(BM_mxfp8_quantize_fast);
AMPBENCH_16M_INPUTS(BM_mxfp6_quantize_fast);
AMPBENCH_16M_INPUTS(BM_mxfp4_quantize_fast);
AMPBENCH_16M_INPUTS(BM_nvfp4_quantize_fast);
AMPBENCH_16M_INPUTS(BM_nvfp4_sr_quantize_fast);
AMPBENCH_BOTH_INPUTS(BM_fp16_rne_round_array);
AMPBENCH_BOTH_INPUTS(BM_bf16_rne_round_array);

// ---- ratios to the peer -------------------------------------------------------------------------

double target_for(std::string_view family) {
  if (family == "BM_fp16_rne_encode") return 0.9;
  if (family == "BM_bf16_rne_encode") return 0.8;
  if (family == "BM_fp16_sr_encode") return 0.25;
  // Issue 19: the fp8 conversions at 0.6x, MX and NVFP4 quantization at 0.25x.
  if (family == "BM_e4m3_rne_encode" || family == "BM_e5m2_rne_encode" ||
      family == "BM_e4m3_sr_encode" || family == "BM_e5m2_sr_encode") {
    return 0.6;
  }
  if (family == "BM_mxfp8_quantize" || family == "BM_mxfp4_quantize" ||
      family == "BM_nvfp4_quantize" || family == "BM_mxfp8_quantize_fast" ||
      family == "BM_mxfp6_quantize_fast" || family == "BM_mxfp4_quantize_fast" ||
      family == "BM_nvfp4_quantize_fast" || family == "BM_nvfp4_sr_quantize_fast") {
    return 0.25;
  }
  return 0;
}

// The faster F16C peer's elements/s on the benchmark's input (e.g. "/normal"), or -1.
double peer_for(const bench::Results& results, const bench::Throughput& t) {
  double best = -1;
  for (const char* peer : {"BM_F16C_peer_zmm", "BM_F16C_peer_ymm"}) {
    const auto it = results.find(peer + t.input);
    if (it != results.end()) best = std::max(best, bench::median_of(it->second));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::RatioTable table{
      "the peer, the faster of BM_F16C_peer_zmm and BM_F16C_peer_ymm on the same input", peer_for,
      target_for};
  return bench::run_with_ratios(argc, argv, {table});
}
