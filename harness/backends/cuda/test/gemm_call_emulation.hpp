// cuBLASLt's definition of a GemmCall (plan.hpp) on the host, for the CPU tests of the calls the
// backend builds: plan_test.cpp (the catalog's GEMMs) and training_plan_test.cpp (attention's).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "harness/backends/cuda/plan.hpp"
#include "harness/ops/catalog.hpp"

namespace ampbench::backends::cuda::test {

// cuBLASLt's definition of one call, on the host: D[i + j m] = sum_l op(A)(i, l) op(B)(l, j) for
// each batch, column-major, with the stored shapes checked against m, n, k.
inline std::vector<double> emulate(const GemmCall& c, const ops::Inputs& in) {
  const std::vector<double>& a = in.values.at(c.a.operand);
  const std::vector<double>& b = in.values.at(c.b.operand);
  EXPECT_EQ(c.a.transposed ? c.a.cols : c.a.rows, c.m);
  EXPECT_EQ(c.a.transposed ? c.a.rows : c.a.cols, c.k);
  EXPECT_EQ(c.b.transposed ? c.b.cols : c.b.rows, c.k);
  EXPECT_EQ(c.b.transposed ? c.b.rows : c.b.cols, c.n);
  EXPECT_GE(c.a.ld, static_cast<std::int64_t>(c.a.rows));
  EXPECT_GE(c.b.ld, static_cast<std::int64_t>(c.b.rows));
  EXPECT_EQ(a.size(), c.a.rows * c.a.cols * static_cast<std::uint64_t>(c.batch));
  EXPECT_EQ(b.size(), c.b.rows * c.b.cols * static_cast<std::uint64_t>(c.batch));
  std::vector<double> d(c.m * c.n * static_cast<std::uint64_t>(c.batch));
  for (std::int32_t batch = 0; batch < c.batch; ++batch) {
    const std::size_t sa = static_cast<std::size_t>(batch * c.stride_a);
    const std::size_t sb = static_cast<std::size_t>(batch * c.stride_b);
    const std::size_t sd = static_cast<std::size_t>(batch * c.stride_d);
    const auto lda = static_cast<std::size_t>(c.a.ld), ldb = static_cast<std::size_t>(c.b.ld);
    for (std::size_t j = 0; j < c.n; ++j) {
      for (std::size_t i = 0; i < c.m; ++i) {
        double sum = 0;
        for (std::size_t l = 0; l < c.k; ++l) {
          const double x = c.a.transposed ? a[sa + l + i * lda] : a[sa + i + l * lda];
          const double y = c.b.transposed ? b[sb + j + l * ldb] : b[sb + l + j * ldb];
          sum += x * y;
        }
        d[sd + i + j * c.m] = sum;
      }
    }
  }
  return d;
}

}  // namespace ampbench::backends::cuda::test
