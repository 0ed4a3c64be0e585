// A row-major matrix transposed: the GEMMs' operands are given with K along the row, and the
// trainer's and the audit's tensors are not always held that way.
#pragma once

#include <cstddef>
#include <vector>

namespace ampbench::numeric {

// x, rows x cols row-major, as cols x rows row-major.
template <class T>
std::vector<T> transposed(const std::vector<T>& x, std::size_t rows, std::size_t cols) {
  std::vector<T> t(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  }
  return t;
}

}  // namespace ampbench::numeric
