// The wgmma operand layout and matrix descriptor (kernels/wgmma_layout.hpp) against the PTX ISA's
// description: the canonical K-major layout without swizzling is 8 x 16-byte core matrices, each
// 128 contiguous bytes with its rows 16 bytes apart, placed LBO apart along k and SBO apart along
// the rows; the descriptor packs start address, LBO and SBO >> 4 into bits 0-13, 16-29 and 32-45.
#include "kernels/wgmma_layout.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace ampbench::kernels::wgmma {
namespace {

// Every element of an operand of 64 (A) or 8 (B) rows and one instruction's k has its own bytes,
// inside the operand, aligned to its size: the layout is a bijection onto the operand's bytes.
TEST(WgmmaLayout, EveryElementHasItsOwnAlignedBytes) {
  for (const std::uint32_t bytes : {1u, 2u, 4u}) {
    for (const std::uint32_t rows : {8u, 64u}) {
      SCOPED_TRACE(testing::Message() << bytes << "-byte elements, " << rows << " rows");
      const std::uint32_t k = kInstructionKBytes / bytes;
      std::vector<int> used(operand_bytes(rows), 0);
      for (std::uint32_t r = 0; r < rows; ++r) {
        for (std::uint32_t j = 0; j < k; ++j) {
          const std::uint32_t offset = operand_offset(r, j, bytes);
          ASSERT_EQ(offset % bytes, 0u) << "row " << r << " k " << j;
          ASSERT_LE(offset + bytes, used.size()) << "row " << r << " k " << j;
          for (std::uint32_t i = 0; i < bytes; ++i) ++used[offset + i];
        }
      }
      for (std::size_t i = 0; i < used.size(); ++i) EXPECT_EQ(used[i], 1) << "byte " << i;
    }
  }
}

// A core matrix is rows 8g..8g+7 and the 16 bytes of k that start at 16c: it fills the 128 bytes
// at g * SBO + c * LBO, row after row, each row's k in order.
TEST(WgmmaLayout, CoreMatricesAre128ContiguousBytesPlacedByLboAndSbo) {
  for (const std::uint32_t bytes : {1u, 2u, 4u}) {
    const std::uint32_t per_row = kCoreRowBytes / bytes;
    for (std::uint32_t g = 0; g < 8; ++g) {
      for (std::uint32_t c = 0; c < 2; ++c) {
        const std::uint32_t base = g * kStrideByteOffset + c * kLeadingByteOffset;
        for (std::uint32_t i = 0; i < kCoreRows; ++i) {
          for (std::uint32_t j = 0; j < per_row; ++j) {
            EXPECT_EQ(operand_offset(8 * g + i, c * per_row + j, bytes),
                      base + i * kCoreRowBytes + j * bytes)
                << bytes << "-byte elements, group " << g << " core " << c;
          }
        }
      }
    }
  }
  // Two core matrices of k side by side, and the next row group after them.
  EXPECT_EQ(kLeadingByteOffset, 128u);
  EXPECT_EQ(kStrideByteOffset, 256u);
  EXPECT_EQ(operand_bytes(64), 2048u);
  EXPECT_EQ(operand_bytes(8), 256u);
}

TEST(WgmmaDescriptor, PacksAddressLboAndSboInUnitsOf16Bytes) {
  EXPECT_EQ(matrix_descriptor(0, 0, 0), 0u);
  EXPECT_EQ(matrix_descriptor(0x400, 128, 256),
            std::uint64_t{0x40} | std::uint64_t{8} << 16 | std::uint64_t{16} << 32);
  // The largest 18-bit values fill their 14-bit fields exactly, and nothing else.
  EXPECT_EQ(matrix_descriptor(0x3FFF0, 0, 0), std::uint64_t{0x3FFF});
  EXPECT_EQ(matrix_descriptor(0, 0x3FFF0, 0), std::uint64_t{0x3FFF} << 16);
  EXPECT_EQ(matrix_descriptor(0, 0, 0x3FFF0), std::uint64_t{0x3FFF} << 32);
  // Base offset (bits 49-51) and swizzle mode (bits 62-63) stay 0: no swizzling.
  const std::uint64_t all = matrix_descriptor(0x3FFF0, 0x3FFF0, 0x3FFF0);
  EXPECT_EQ(all & (std::uint64_t{7} << 49), 0u);
  EXPECT_EQ(all >> 62, 0u);
  // The four low bits of each byte value are not encoded (16-byte alignment).
  EXPECT_EQ(matrix_descriptor(0x40F, 0x8F, 0x10F), matrix_descriptor(0x400, 0x80, 0x100));
}

}  // namespace
}  // namespace ampbench::kernels::wgmma
