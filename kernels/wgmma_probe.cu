// The fingerprint's probes through wgmma.mma_async (Hopper's warpgroup MMA, the instruction cuBLAS
// runs there), one warpgroup of 128 threads per probe. Built for sm_90a alone: wgmma exists
// nowhere else. Each instruction is m64n8k with k = 32 bytes of operand (k16 for fp16 and bf16,
// k8 for tf32, k32 for e4m3 and e5m2); A (64 x k) and B (8 x k, K-major as wgmma needs for tf32
// and fp8) come from shared memory in the canonical layout of kernels/wgmma_layout.hpp. Every row
// of A holds the probe's a and every row of B its b, so every element of D is the probe's d; the
// kernel reports whether all 512 agree.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/mma_probe.hpp"
#include "kernels/wgmma_layout.hpp"

namespace ampbench::kernels::detail {
namespace {

constexpr std::uint32_t kRowsA = 64;
constexpr std::uint32_t kRowsB = 8;
constexpr unsigned kThreads = 128;

__host__ __device__ constexpr std::uint32_t element_bytes(WgmmaKind kind) {
  switch (kind) {
    case WgmmaKind::tf32_f32: return 4;
    case WgmmaKind::e4m3_f32:
    case WgmmaKind::e5m2_f32: return 1;
    default: return 2;
  }
}

// One operand element, as its bit pattern, at its place in the shared-memory tile.
template <std::uint32_t Bytes>
__device__ void store_element(unsigned char* tile, std::uint32_t offset, std::uint32_t bits) {
  if constexpr (Bytes == 1) {
    tile[offset] = static_cast<unsigned char>(bits);
  } else if constexpr (Bytes == 2) {
    *reinterpret_cast<unsigned short*>(tile + offset) = static_cast<unsigned short>(bits);
  } else {
    *reinterpret_cast<std::uint32_t*>(tile + offset) = bits;
  }
}

// A thread's accumulator registers (m64n8: 512 values over 128 threads): four fp32 values, or
// four fp16 values in two registers.
template <WgmmaKind Kind>
struct Accumulator {
  static constexpr bool kFp16 = Kind == WgmmaKind::f16_f16;
  static constexpr int kRegisters = kFp16 ? 2 : 4;
  using Register = std::conditional_t<kFp16, std::uint32_t, float>;
  Register r[kRegisters];

  __device__ static Register from_bits(std::uint32_t c) {
    if constexpr (kFp16) {
      return (c & 0xFFFFu) * 0x10001u;
    } else {
      return __uint_as_float(c);
    }
  }
  __device__ static std::uint32_t bits(Register x) {
    if constexpr (kFp16) {
      return x;
    } else {
      return __float_as_uint(x);
    }
  }
  __device__ explicit Accumulator(std::uint32_t c) {
    for (auto& x : r) x = from_bits(c);
  }
  // Keeps the compiler from moving accesses to the registers across the asynchronous MMA.
  __device__ void fence() {
    for (auto& x : r) {
      if constexpr (kFp16) {
        asm volatile("" : "+r"(x)::"memory");
      } else {
        asm volatile("" : "+f"(x)::"memory");
      }
    }
  }
  // The first value's bit pattern, and whether every value has the bit pattern d.
  __device__ std::uint32_t first() const { return kFp16 ? bits(r[0]) & 0xFFFFu : bits(r[0]); }
  __device__ bool all(std::uint32_t d) const {
    bool same = true;
    for (const auto x : r) same = same && bits(x) == bits(from_bits(d));
    return same;
  }
};

// D += A B through one wgmma of the kind (scale-d = 1, no negation, no transposition).
template <WgmmaKind Kind>
__device__ void wgmma(Accumulator<Kind>& d, std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define AMPBENCH_WGMMA_F32(shape_types, trailing)                                               \
  asm volatile(                                                                                 \
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                \
      "wgmma.mma_async.sync.aligned." shape_types " {%0, %1, %2, %3}, %4, %5, p, 1, 1" trailing \
      ";\n}\n"                                                                                  \
      : "+f"(d.r[0]), "+f"(d.r[1]), "+f"(d.r[2]), "+f"(d.r[3])                                  \
      : "l"(a), "l"(b))
  if constexpr (Kind == WgmmaKind::f16_f32) {
    AMPBENCH_WGMMA_F32("m64n8k16.f32.f16.f16", ", 0, 0");
  } else if constexpr (Kind == WgmmaKind::bf16_f32) {
    AMPBENCH_WGMMA_F32("m64n8k16.f32.bf16.bf16", ", 0, 0");
  } else if constexpr (Kind == WgmmaKind::tf32_f32) {
    AMPBENCH_WGMMA_F32("m64n8k8.f32.tf32.tf32", "");
  } else if constexpr (Kind == WgmmaKind::e4m3_f32) {
    AMPBENCH_WGMMA_F32("m64n8k32.f32.e4m3.e4m3", "");
  } else if constexpr (Kind == WgmmaKind::e5m2_f32) {
    AMPBENCH_WGMMA_F32("m64n8k32.f32.e5m2.e5m2", "");
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%0, %1}, %2, %3, p, 1, 1, 0, 0;\n}\n"
        : "+r"(d.r[0]), "+r"(d.r[1])
        : "l"(a), "l"(b));
  }
#undef AMPBENCH_WGMMA_F32
#else
  // No wgmma outside sm_90a; the host never launches this there (wgmma_binary_version).
  (void)d, (void)a, (void)b;
  __trap();
#endif
}

__device__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

template <WgmmaKind Kind>
__global__ void __launch_bounds__(kThreads) wgmma_probe_kernel(ProbeArrays p) {
  constexpr std::uint32_t kBytes = element_bytes(Kind);
  constexpr std::uint32_t kK = wgmma::kInstructionKBytes / kBytes;
  __shared__ __align__(128) unsigned char a[wgmma::operand_bytes(kRowsA)];
  // B takes 8 rows; 16 rows' room keeps a misread SBO inside the block's shared memory, where the
  // executor's layout check sees it, instead of faulting.
  __shared__ __align__(128) unsigned char b[wgmma::operand_bytes(2 * kRowsB)];
  __shared__ std::uint32_t d0;
  const std::size_t probe = blockIdx.x;
  const unsigned t = threadIdx.x;
  const std::uint64_t desc_a = wgmma::matrix_descriptor(
      shared_address(a), wgmma::kLeadingByteOffset, wgmma::kStrideByteOffset);
  const std::uint64_t desc_b = wgmma::matrix_descriptor(
      shared_address(b), wgmma::kLeadingByteOffset, wgmma::kStrideByteOffset);
  Accumulator<Kind> d(p.c[probe]);
  for (int chunk = 0; chunk < p.chunks; ++chunk) {
    const std::size_t first = (probe * static_cast<std::size_t>(p.chunks) + chunk) * kK;
    for (std::uint32_t i = t; i < kRowsA * kK; i += kThreads) {
      store_element<kBytes>(a, wgmma::operand_offset(i / kK, i % kK, kBytes), p.a[first + i % kK]);
    }
    for (std::uint32_t i = t; i < kRowsB * kK; i += kThreads) {
      store_element<kBytes>(b, wgmma::operand_offset(i / kK, i % kK, kBytes), p.b[first + i % kK]);
    }
    // The stores above are generic-proxy writes; wgmma reads through the async proxy.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    d.fence();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    wgmma<Kind>(d, desc_a, desc_b);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    d.fence();
    __syncthreads();  // every warp's instruction has read A and B before the next chunk's stores
  }
  if (t == 0) d0 = d.first();
  __syncthreads();
  const int uniform = __syncthreads_and(d.all(d0) ? 1 : 0);
  if (t == 0) {
    p.d[probe] = d0;
    p.uniform[probe] = uniform != 0 ? 1u : 0u;
  }
}

template <WgmmaKind Kind>
void launch(ProbeArrays p, unsigned blocks) {
  wgmma_probe_kernel<Kind><<<blocks, kThreads>>>(p);
}

// f(std::integral_constant<WgmmaKind, kind>{}): the kind as a template argument.
template <class F>
auto with_kind(WgmmaKind kind, F f) {
  using K = WgmmaKind;
  switch (kind) {
    case K::f16_f16: return f(std::integral_constant<K, K::f16_f16>{});
    case K::bf16_f32: return f(std::integral_constant<K, K::bf16_f32>{});
    case K::tf32_f32: return f(std::integral_constant<K, K::tf32_f32>{});
    case K::e4m3_f32: return f(std::integral_constant<K, K::e4m3_f32>{});
    case K::e5m2_f32: return f(std::integral_constant<K, K::e5m2_f32>{});
    default: return f(std::integral_constant<K, K::f16_f32>{});
  }
}

}  // namespace

ProbeLaunch wgmma_launcher(WgmmaKind kind) {
  return with_kind(kind, [](auto k) -> ProbeLaunch { return launch<decltype(k)::value>; });
}

int wgmma_binary_version(WgmmaKind kind) {
  const void* kernel = with_kind(kind, [](auto k) {
    return reinterpret_cast<const void*>(wgmma_probe_kernel<decltype(k)::value>);
  });
  cudaFuncAttributes attributes{};
  if (cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess) {
    (void)cudaGetLastError();  // the error this call set (no image for the device): not sticky
    return 0;
  }
  return attributes.binaryVersion;
}

}  // namespace ampbench::kernels::detail
