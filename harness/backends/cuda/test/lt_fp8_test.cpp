// cuBLASLt's FP8 GEMM with per-tensor scales (LtMatmul::run_fp8) on the device: products of small
// integers, whose every partial sum is exact in any order and any accumulator, against the exact
// product bit for bit (e4m3 x e4m3 and e4m3 x e5m2, with and without fast accumulation, the
// scales applied); and Hopper's limited FP8 accumulation on a long K (ones, elements 256): with
// promotion the exact 32768, and without it what the device gives beside what the Hopper model
// predicts (16384, quant_recipe_gemm_test), printed as a finding about the model. Skipped without
// a device; on a device before sm_89 cuBLASLt has no FP8 algorithm, and the test says so.
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/backends/cuda/lt_matmul.hpp"
#include "harness/quant/scaling.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::backends::cuda {
namespace {

class LtFp8Test : public kernels::test::GpuTest {};

// The element codes of `values` (each exact in the format) as one-byte FP8 patterns.
std::vector<std::uint8_t> codes(const std::vector<float>& values, std::size_t rows,
                                std::size_t cols, const numeric::Format& format) {
  const quant::Layout whole{.rows = rows, .cols = cols, .block_rows = rows, .block_cols = cols};
  const quant::Quantized q = quant::quantize_with_scale(values, whole, format, 1.0f);
  std::vector<std::uint8_t> bytes;
  for (std::size_t i = 0; i < q.bits.size(); ++i) {
    EXPECT_EQ(q.values[i], static_cast<double>(values[i])) << "not exact: " << values[i];
    bytes.push_back(static_cast<std::uint8_t>(q.bits[i]));
  }
  return bytes;
}

// D = a_scale b_scale (A B^T) on the device, row-major m x n; nothing when cuBLASLt has no FP8
// algorithm on this device (the test then skips, saying so).
std::optional<std::vector<float>> fp8_gemm(Fp8Type at, Fp8Type bt, std::size_t m, std::size_t n,
                                           std::size_t k, const std::vector<std::uint8_t>& a,
                                           const std::vector<std::uint8_t>& b, float a_scale,
                                           float b_scale, bool fast_accum) {
  kernels::DeviceBuffer<std::uint8_t> da(a.size()), db(b.size());
  kernels::DeviceBuffer<float> scales(2), dd(m * n);
  da.copy_from(a, nullptr);
  db.copy_from(b, nullptr);
  const std::vector<float> s{a_scale, b_scale};
  scales.copy_from(s, nullptr);
  LtMatmul lt;
  try {
    const nlohmann::json ran = lt.run_fp8(at, bt, m, n, k, da.data(), db.data(), scales.data(),
                                          scales.data() + 1, dd.data(), fast_accum, nullptr);
    std::cout << ran.dump() << "\n";
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const kernels::CudaError*>(&e) != nullptr) throw;
    std::cout << "no FP8 GEMM here: " << e.what() << "\n";
    return std::nullopt;
  }
  std::vector<float> d(m * n);
  dd.copy_to(d, nullptr);
  return d;
}

TEST_F(LtFp8Test, SmallIntegerProductsAreExact) {
  constexpr std::size_t m = 32, n = 16, k = 64;
  std::vector<float> a(m * k), b(n * k);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7) % 9) - 4;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 5) % 7) - 3;
  for (const Fp8Type bt : {Fp8Type::e4m3, Fp8Type::e5m2}) {
    const auto a_codes = codes(a, m, k, numeric::formats::e4m3);
    const auto b_codes =
        codes(b, n, k, bt == Fp8Type::e4m3 ? numeric::formats::e4m3 : numeric::formats::e5m2);
    for (const bool fast : {false, true}) {
      SCOPED_TRACE(std::string(fp8_type_name(bt)) + (fast ? " fast accum" : ""));
      const auto d = fp8_gemm(Fp8Type::e4m3, bt, m, n, k, a_codes, b_codes, 0.25f, 0.5f, fast);
      if (!d) GTEST_SKIP() << "cuBLASLt has no FP8 GEMM on this device (sm_89 or later)";
      for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
          double exact = 0;
          for (std::size_t l = 0; l < k; ++l) exact += double(a[i * k + l]) * b[j * k + l];
          ASSERT_EQ((*d)[i * n + j], static_cast<float>(exact * 0.125)) << i << ", " << j;
        }
      }
    }
  }
}

TEST_F(LtFp8Test, PromotionKeepsALongKExact) {
  constexpr std::size_t m = 16, n = 16, k = 32768;
  const std::vector<float> ones(m * k, 256.0f);
  const auto c = codes(ones, m, k, numeric::formats::e4m3);
  const auto promoted =
      fp8_gemm(Fp8Type::e4m3, Fp8Type::e4m3, m, n, k, c, c, 1.0f / 256, 1.0f / 256, false);
  if (!promoted) GTEST_SKIP() << "cuBLASLt has no FP8 GEMM on this device (sm_89 or later)";
  for (const float v : *promoted) ASSERT_EQ(v, 32768.0f);
  const auto fast =
      fp8_gemm(Fp8Type::e4m3, Fp8Type::e4m3, m, n, k, c, c, 1.0f / 256, 1.0f / 256, true);
  ASSERT_TRUE(fast.has_value());
  std::cout << "finding: ones(16 x 32768) elements 256, fast accumulation: D = " << (*fast)[0]
            << " (the Hopper model: 16384; exact: 32768)\n";
}

}  // namespace
}  // namespace ampbench::backends::cuda
