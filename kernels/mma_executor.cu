#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <mma.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "harness/numeric/rounding.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/mma_executor.hpp"
#include "kernels/mma_probe.hpp"

namespace ampbench::kernels {
namespace {

namespace wmma = nvcuda::wmma;
using numeric::Format;
using numeric::MmaAccumulator;

using detail::ProbeArrays;
using detail::WgmmaKind;

// --- WMMA: fp16, bf16 (16x16x16), tf32 (16x16x8) -------------------------------------------------

// fp16 or bf16 operands of WMMA 16x16x16, from their 16-bit patterns.
template <typename T>
struct Bits16In {
  using Element = T;
  using Fragment = T;
  static constexpr int k = 16;
  __device__ static Element from_bits(std::uint32_t u) {
    const auto bits = static_cast<unsigned short>(u);
    if constexpr (std::is_same_v<T, __half>) {
      return __ushort_as_half(bits);
    } else {
      return __ushort_as_bfloat16(bits);
    }
  }
};
using Fp16In = Bits16In<__half>;
using Bf16In = Bits16In<__nv_bfloat16>;
struct Tf32In {
  using Element = float;
  using Fragment = wmma::precision::tf32;
  static constexpr int k = 8;
  // The fp32 bits as they are: the Tensor Core reads the tf32 part (MMA-Sim: truncation).
  __device__ static Element from_bits(std::uint32_t u) { return __uint_as_float(u); }
};
struct Fp32Acc {
  using Element = float;
  __device__ static Element from_bits(std::uint32_t u) { return __uint_as_float(u); }
  __device__ static std::uint32_t to_bits(Element x) { return __float_as_uint(x); }
};
struct Fp16Acc {
  using Element = __half;
  __device__ static Element from_bits(std::uint32_t u) {
    return __ushort_as_half(static_cast<unsigned short>(u));
  }
  __device__ static std::uint32_t to_bits(Element x) { return __half_as_ushort(x); }
};

constexpr int kM = 16;
constexpr int kN = 16;

// One warp per probe: A (16 x k, row-major) has the probe's chunk of a in every row, B (k x 16,
// column-major) its chunk of b in every column, C the probe's c everywhere; the chunks are chained
// through the accumulator fragment.
template <typename In, typename Acc>
__global__ void wmma_probe_kernel(ProbeArrays p) {
  constexpr int kK = In::k;
  // load_matrix_sync and store_matrix_sync need 256-bit aligned tiles.
  __shared__ __align__(32) typename In::Element a[kM * kK];
  __shared__ __align__(32) typename In::Element b[kK * kN];
  __shared__ __align__(32) typename Acc::Element cd[kM * kN];
  const std::size_t probe = blockIdx.x;
  const unsigned lane = threadIdx.x;
  const typename Acc::Element c = Acc::from_bits(p.c[probe]);
  for (unsigned i = lane; i < kM * kN; i += 32) cd[i] = c;
  __syncwarp();
  wmma::fragment<wmma::accumulator, kM, kN, kK, typename Acc::Element> acc;
  wmma::load_matrix_sync(acc, cd, kN, wmma::mem_row_major);
  for (int chunk = 0; chunk < p.chunks; ++chunk) {
    const std::size_t first = (probe * static_cast<std::size_t>(p.chunks) + chunk) * kK;
    for (unsigned i = lane; i < kM * kK; i += 32) {
      a[i] = In::from_bits(p.a[first + i % kK]);  // row i / kK, column i % kK
      b[i] = In::from_bits(p.b[first + i % kK]);  // column i / kK, row i % kK
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, kM, kN, kK, typename In::Fragment, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, kM, kN, kK, typename In::Fragment, wmma::col_major> fb;
    wmma::load_matrix_sync(fa, a, kK);
    wmma::load_matrix_sync(fb, b, kK);
    wmma::mma_sync(acc, fa, fb, acc);
    __syncwarp();  // the next chunk overwrites a and b
  }
  wmma::store_matrix_sync(cd, acc, kN, wmma::mem_row_major);
  __syncwarp();
  if (lane == 0) {
    const std::uint32_t d = Acc::to_bits(cd[0]);
    bool uniform = true;
    for (int i = 1; i < kM * kN; ++i) uniform = uniform && Acc::to_bits(cd[i]) == d;
    p.d[probe] = d;
    p.uniform[probe] = uniform ? 1u : 0u;
  }
}

// --- mma.sync.m16n8k32 with e4m3 / e5m2 and an fp32 accumulator (sm_89+) -------------------------

// Register i of a lane's A (4 x 4 bytes) and B (2 x 4 bytes) fragments holds the element of k
// index (lane % 4) * 4 + (i % 4), plus 16 for the second half (PTX ISA, "Matrix Fragments for
// mma.m16n8k32"); rows and columns do not matter since every row of A and every column of B is the
// probe's.
__device__ std::uint32_t fp8_register(const std::uint32_t* chunk, unsigned lane, int second_half) {
  std::uint32_t r = 0;
  for (int byte = 0; byte < 4; ++byte) {
    const unsigned k = (lane % 4) * 4 + static_cast<unsigned>(byte) + 16 * second_half;
    r |= (chunk[k] & 0xFFu) << (8 * byte);
  }
  return r;
}

template <bool E5m2>
__global__ void fp8_probe_kernel(ProbeArrays p) {
  constexpr int kK = 32;
  const std::size_t probe = blockIdx.x;
  const unsigned lane = threadIdx.x;
  const float c = __uint_as_float(p.c[probe]);
  float d[4] = {c, c, c, c};
  for (int chunk = 0; chunk < p.chunks; ++chunk) {
    const std::size_t first = (probe * static_cast<std::size_t>(p.chunks) + chunk) * kK;
    const std::uint32_t* a = p.a + first;
    const std::uint32_t* b = p.b + first;
    // A: registers 0, 1 are the first half of k (rows g and g + 8), 2, 3 the second; B: 0, 1.
    const std::uint32_t a0 = fp8_register(a, lane, 0), a2 = fp8_register(a, lane, 1);
    const std::uint32_t b0 = fp8_register(b, lane, 0), b1 = fp8_register(b, lane, 1);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if constexpr (E5m2) {
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
          : "r"(a0), "r"(a0), "r"(a2), "r"(a2), "r"(b0), "r"(b1));
    } else {
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
          : "r"(a0), "r"(a0), "r"(a2), "r"(a2), "r"(b0), "r"(b1));
    }
#else
    // No FP8 MMA below sm_89: the host refuses to launch this (see Fp8Executor).
    (void)a0, (void)a2, (void)b0, (void)b1;
    __trap();
#endif
  }
  const std::uint32_t d0 = __shfl_sync(0xFFFFFFFFu, __float_as_uint(d[0]), 0);
  const bool mine = __float_as_uint(d[0]) == d0 && __float_as_uint(d[1]) == d0 &&
                    __float_as_uint(d[2]) == d0 && __float_as_uint(d[3]) == d0;
  const bool uniform = __all_sync(0xFFFFFFFFu, mine);
  if (lane == 0) {
    p.d[probe] = d0;
    p.uniform[probe] = uniform ? 1u : 0u;
  }
}

// --- The executor (messages without fmt: its compile-time checks fail under nvcc) ----------------

// The bit pattern of x in f (tf32 as fp32), which must hold it exactly: the probes are built from
// values of the formats, so anything else is a bug in them.
std::uint32_t bits_of(const Format& f, double x) {
  const bool nan = x != x;
  if (numeric::round_to(f, numeric::Rounding::nearest_even, x).value != x && !nan) {
    throw std::invalid_argument("probe value " + std::to_string(x) + " is not a " + f.name +
                                " value");
  }
  // tf32 goes to the device in fp32 bits, its 13 low fraction bits zero.
  const Format& encoding = same_values(f, numeric::formats::tf32) ? numeric::formats::fp32 : f;
  return static_cast<std::uint32_t>(
      numeric::round_to(encoding, numeric::Rounding::nearest_even, x).bits);
}

using Launch = detail::ProbeLaunch;

template <typename In, typename Acc>
void launch_wmma(ProbeArrays p, unsigned blocks) {
  wmma_probe_kernel<In, Acc><<<blocks, 32>>>(p);
}
template <bool E5m2>
void launch_fp8(ProbeArrays p, unsigned blocks) {
  fp8_probe_kernel<E5m2><<<blocks, 32>>>(p);
}

class MmaExecutor final : public fingerprint::Executor {
 public:
  MmaExecutor(const Format& input, MmaAccumulator accumulator, int k, Launch launch,
              std::string description)
      : input_(input),
        accumulator_(accumulator),
        k_(k),
        launch_(launch),
        description_(std::move(description)) {}

  std::string description() const override { return description_; }
  Format input() const override { return input_; }
  MmaAccumulator accumulator() const override { return accumulator_; }
  int instruction_k() const override { return k_; }

  std::vector<double> run(std::span<const fingerprint::Probe> probes) override {
    if (probes.empty()) return {};
    std::size_t longest = 1;
    for (const auto& pr : probes) {
      if (pr.a.size() != pr.b.size()) throw std::invalid_argument("probe: a and b differ");
      longest = std::max(longest, pr.a.size());
    }
    const auto k = static_cast<std::size_t>(k_);
    const std::size_t chunks = (longest + k - 1) / k;
    const std::size_t width = chunks * k;
    const Format acc =
        accumulator_ == MmaAccumulator::fp16 ? numeric::formats::fp16 : numeric::formats::fp32;
    std::vector<std::uint32_t> a(probes.size() * width, 0), b(a.size(), 0), c(probes.size());
    for (std::size_t i = 0; i < probes.size(); ++i) {
      for (std::size_t j = 0; j < probes[i].a.size(); ++j) {
        a[i * width + j] = bits_of(input_, probes[i].a[j]);
        b[i * width + j] = bits_of(input_, probes[i].b[j]);
      }
      c[i] = bits_of(acc, probes[i].c);
    }
    DeviceBuffer<std::uint32_t> d_a(a.size()), d_b(b.size()), d_c(c.size()), d_d(c.size()),
        d_uniform(c.size());
    // nvcc's front end does not take std::span's range constructor from a vector.
    d_a.copy_from(std::span<const std::uint32_t>(a.data(), a.size()), nullptr);
    d_b.copy_from(std::span<const std::uint32_t>(b.data(), b.size()), nullptr);
    d_c.copy_from(std::span<const std::uint32_t>(c.data(), c.size()), nullptr);
    launch_(ProbeArrays{static_cast<int>(chunks), d_a.data(), d_b.data(), d_c.data(), d_d.data(),
                        d_uniform.data()},
            static_cast<unsigned>(probes.size()));
    AMPBENCH_CUDA_CHECK(cudaGetLastError());
    std::vector<std::uint32_t> d(c.size()), uniform(c.size());
    // On the kernel's (default) stream: waits for it and reports a fault in it.
    d_d.copy_to(std::span<std::uint32_t>(d.data(), d.size()), nullptr);
    d_uniform.copy_to(std::span<std::uint32_t>(uniform.data(), uniform.size()), nullptr);
    std::vector<double> out(c.size());
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (uniform[i] == 0) {
        throw std::runtime_error(description_ + ": probe " + std::to_string(i) +
                                 " gave different results in different elements of the tile");
      }
      out[i] = numeric::decode(acc, d[i]);
    }
    return out;
  }

 private:
  Format input_;
  MmaAccumulator accumulator_;
  int k_;
  Launch launch_;
  std::string description_;
};

// Throws, naming the first slot whose one-hot probe does not give 2, when the kernel's operand
// layout is wrong.
void check_operands_meet(fingerprint::Executor& executor) {
  const std::vector<fingerprint::Probe> probes = one_hot_probes(executor.instruction_k());
  const std::size_t k = probes.size();
  std::vector<double> d;
  try {
    d = executor.run(probes);
  } catch (const CudaError&) {
    throw;
  } catch (const std::runtime_error& e) {  // the tile's elements disagree
    throw std::runtime_error(std::string("the operand layout check failed: ") + e.what() +
                             " (--instruction mma avoids it)");
  }
  for (std::size_t j = 0; j < k; ++j) {
    if (d[j] != 2.0) {
      throw std::runtime_error(executor.description() + ": the operand layout check failed: " +
                               "a and b in k slot " + std::to_string(j) + " gave " +
                               std::to_string(d[j]) + ", not 2 (--instruction mma avoids it)");
    }
  }
}

// The wgmma executor for the combination, or nothing where wgmma has no such instruction.
std::unique_ptr<fingerprint::Executor> make_wgmma_executor(const Format& input,
                                                           MmaAccumulator accumulator,
                                                           const DeviceStatus& device,
                                                           const std::string& where) {
  using numeric::formats::bf16;
  using numeric::formats::e4m3;
  using numeric::formats::e5m2;
  using numeric::formats::fp16;
  using numeric::formats::tf32;
  const bool fp32 = accumulator == MmaAccumulator::fp32;
  struct Choice {
    WgmmaKind kind;
    int k;
    const char* name;
  };
  std::optional<Choice> choice;
  if (same_values(input, fp16)) {
    choice = fp32 ? Choice{WgmmaKind::f16_f32, 16, "wgmma.m64n8k16 f16 -> f32"}
                  : Choice{WgmmaKind::f16_f16, 16, "wgmma.m64n8k16 f16 -> f16"};
  } else if (!fp32) {
    return nullptr;
  } else if (same_values(input, bf16)) {
    choice = Choice{WgmmaKind::bf16_f32, 16, "wgmma.m64n8k16 bf16 -> f32"};
  } else if (same_values(input, tf32)) {
    choice = Choice{WgmmaKind::tf32_f32, 8, "wgmma.m64n8k8 tf32 -> f32"};
  } else if (same_values(input, e4m3)) {
    choice = Choice{WgmmaKind::e4m3_f32, 32, "wgmma.m64n8k32 e4m3 -> f32"};
  } else if (same_values(input, e5m2)) {
    choice = Choice{WgmmaKind::e5m2_f32, 32, "wgmma.m64n8k32 e5m2 -> f32"};
  } else {
    return nullptr;
  }
  if (device.compute_major != 9 || device.compute_minor != 0) {
    throw std::runtime_error(where + " has no wgmma (compute capability 9.0 only)");
  }
  // The kernels' only image is sm_90a: any image the device can load is it.
  if (detail::wgmma_binary_version(choice->kind) == 0) {
    throw std::runtime_error("this build has no sm_90a code for wgmma on " + where);
  }
  auto executor = std::make_unique<MmaExecutor>(input, accumulator, choice->k,
                                                detail::wgmma_launcher(choice->kind),
                                                where + ", " + choice->name);
  check_operands_meet(*executor);
  return executor;
}

}  // namespace

std::vector<fingerprint::Probe> one_hot_probes(int instruction_k) {
  const auto k = 2 * static_cast<std::size_t>(instruction_k);
  std::vector<fingerprint::Probe> probes;
  for (std::size_t j = 0; j < k; ++j) {
    fingerprint::Probe p{0.0, std::vector<double>(k, 0.0), std::vector<double>(k, 0.0)};
    p.a[j] = 1.0;
    p.b[j] = 2.0;
    probes.push_back(std::move(p));
  }
  return probes;
}

std::unique_ptr<fingerprint::Executor> make_mma_executor(const Format& input,
                                                         MmaAccumulator accumulator,
                                                         MmaInstruction instruction) {
  const DeviceStatus device = probe_device();
  if (!device.available) throw std::runtime_error("no usable GPU: " + device.error);
  const std::string where = device.name + " (sm_" + std::to_string(device.compute_major) +
                            std::to_string(device.compute_minor) + ")";
  // automatic: wgmma on compute capability 9.0 when the build holds its sm_90a code.
  const bool wgmma_here = device.compute_major == 9 && device.compute_minor == 0 &&
                          detail::wgmma_binary_version(WgmmaKind::f16_f32) != 0;
  if (instruction == MmaInstruction::wgmma ||
      (instruction == MmaInstruction::automatic && wgmma_here)) {
    if (auto executor = make_wgmma_executor(input, accumulator, device, where)) return executor;
    if (instruction == MmaInstruction::wgmma) {
      throw std::invalid_argument(
          std::string("no wgmma kernel for ") + input.name + " inputs with an " +
          (accumulator == MmaAccumulator::fp16 ? "fp16" : "fp32") + " accumulator");
    }
  }
  const bool fp32 = accumulator == MmaAccumulator::fp32;
  const auto make = [&](int k, Launch launch, const char* name) {
    return std::make_unique<MmaExecutor>(input, accumulator, k, launch, where + ", " + name);
  };
  using numeric::formats::bf16;
  using numeric::formats::e4m3;
  using numeric::formats::e5m2;
  using numeric::formats::fp16;
  using numeric::formats::tf32;
  if (same_values(input, fp16)) {
    return fp32 ? make(16, launch_wmma<Fp16In, Fp32Acc>, "wmma 16x16x16 f16 -> f32")
                : make(16, launch_wmma<Fp16In, Fp16Acc>, "wmma 16x16x16 f16 -> f16");
  }
  if (!fp32) {
    throw std::invalid_argument(std::string("no kernel for ") + input.name +
                                " inputs with an fp16 accumulator");
  }
  if (same_values(input, bf16)) {
    return make(16, launch_wmma<Bf16In, Fp32Acc>, "wmma 16x16x16 bf16 -> f32");
  }
  if (same_values(input, tf32)) {
    return make(8, launch_wmma<Tf32In, Fp32Acc>, "wmma 16x16x8 tf32 -> f32");
  }
  const bool is_e5m2 = same_values(input, e5m2);
  if (!is_e5m2 && !same_values(input, e4m3)) {
    throw std::invalid_argument(std::string(input.name) + " is not an MMA input format");
  }
  if (device.compute_major * 10 + device.compute_minor < 89) {
    throw std::runtime_error(where + " has no FP8 MMA (compute capability 8.9 or later)");
  }
  // The device runs the build's best code for it: sm_80 code on an sm_89 device has no FP8 MMA.
  cudaFuncAttributes attributes{};
  AMPBENCH_CUDA_CHECK(cudaFuncGetAttributes(
      &attributes, is_e5m2 ? fp8_probe_kernel<true> : fp8_probe_kernel<false>));
  if (attributes.binaryVersion < 89 && attributes.ptxVersion < 89) {
    throw std::runtime_error("this build has no sm_89+ code for " + where +
                             " (CMAKE_CUDA_ARCHITECTURES: add 89)");
  }
  return is_e5m2 ? make(32, launch_fp8<true>, "mma.sync.m16n8k32 e5m2 -> f32")
                 : make(32, launch_fp8<false>, "mma.sync.m16n8k32 e4m3 -> f32");
}

}  // namespace ampbench::kernels
