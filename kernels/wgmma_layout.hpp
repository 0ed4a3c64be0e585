// Where wgmma reads its shared-memory operands (PTX ISA, "Asynchronous Warpgroup Level Matrix
// Shared Memory Layout" and "Matrix Descriptor Format"): the canonical K-major layout without
// swizzling, which every input type accepts (tf32 and fp8 accept no other). Plain arithmetic,
// tested on the host (kernels/test/wgmma_layout_test.cpp).
//
// An operand of R rows (M = 64 for A, N for B) and one instruction's k is R x 32 bytes: k16 of
// fp16 or bf16, k8 of tf32, k32 of e4m3 or e5m2. It is tiled into core matrices of 8 rows of 16
// contiguous bytes (128 bytes each). The descriptor gives the distance between core matrices that
// are neighbours along k (the leading dimension byte offset, LBO) and along the rows (the stride
// dimension byte offset, SBO).
#pragma once

#include <cstdint>

#include "harness/numeric/host_device.hpp"

namespace ampbench::kernels::wgmma {

inline constexpr std::uint32_t kCoreRows = 8;
inline constexpr std::uint32_t kCoreRowBytes = 16;
inline constexpr std::uint32_t kCoreBytes = kCoreRows * kCoreRowBytes;
// Bytes of k per instruction, whatever the input type.
inline constexpr std::uint32_t kInstructionKBytes = 32;
// The two core matrices of a row group sit next to each other; the row groups follow.
inline constexpr std::uint32_t kLeadingByteOffset = kCoreBytes;
inline constexpr std::uint32_t kStrideByteOffset = 2 * kCoreBytes;

// Bytes of an operand of `rows` rows (a multiple of 8) and one instruction's k.
AMPBENCH_HD constexpr std::uint32_t operand_bytes(std::uint32_t rows) {
  return rows / kCoreRows * kStrideByteOffset;
}

// The byte offset of element (row, k) of an operand whose elements are `element_bytes` wide
// (1, 2 or 4), k < kInstructionKBytes / element_bytes.
AMPBENCH_HD constexpr std::uint32_t operand_offset(std::uint32_t row, std::uint32_t k,
                                                   std::uint32_t element_bytes) {
  const std::uint32_t byte = k * element_bytes;
  return row / kCoreRows * kStrideByteOffset + byte / kCoreRowBytes * kLeadingByteOffset +
         row % kCoreRows * kCoreRowBytes + byte % kCoreRowBytes;
}

// The 64-bit matrix descriptor of an operand at shared-memory address `address` (16-byte
// aligned): bits 0-13 the address, 16-29 LBO, 32-45 SBO, each in units of 16 bytes (of an 18-bit
// byte value); bits 49-51 the base offset and 62-63 the swizzle mode, both 0 (no swizzle).
AMPBENCH_HD constexpr std::uint64_t descriptor_field(std::uint32_t bytes) {
  return (bytes & 0x3FFFFu) >> 4;
}
AMPBENCH_HD constexpr std::uint64_t matrix_descriptor(std::uint32_t address,
                                                      std::uint32_t leading_byte_offset,
                                                      std::uint32_t stride_byte_offset) {
  return descriptor_field(address) | descriptor_field(leading_byte_offset) << 16 |
         descriptor_field(stride_byte_offset) << 32;
}

}  // namespace ampbench::kernels::wgmma
