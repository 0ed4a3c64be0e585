// GPU throughput of our kernels and of the GEMM path, each against a ceiling measured in the same
// run on the same device, timed with CUDA events (manual time). docs/benchmarks.md describes them.
//   - memory-bound kernels, in bytes/s (read + written), against cudaMemcpyAsync device to device
//     of 1 GiB: round_kernel (fp32 -> fp16/bf16 values in binary32 containers, nearest and
//     stochastic) and the fused unscale-and-check over 100 tensors of 256 MiB in all (fp16, bf16,
//     fp32); target >= 0.8x the copy;
//   - the bf16 GEMM (bf16 A, B and D, fp32 compute) through cuBLASLt with the backend's settings
//     (heuristic's first choice, 32 MiB workspace) at 4096^3 and 8192^3, in flop/s, against the
//     best of the heuristic's first 16 algorithms at 8192^3; target >= 0.7x that peak.
// Without a device it prints why and exits 77, which CTest reports as skipped (1 under
// AMPBENCH_REQUIRE_GPU=1). A benchmark that fails makes the exit status 1.
#include <benchmark/benchmark.h>
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "harness/bench/ratios.hpp"
#include "harness/numeric/rounding.hpp"
#include "kernels/bench/bench_device.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/train_kernels.hpp"

namespace {

namespace bench = ampbench::bench;
namespace kernels = ampbench::kernels;
namespace numeric = ampbench::numeric;

constexpr int kSkippedExitCode = 77;  // CTest's SKIP_RETURN_CODE for this program
constexpr std::size_t kGiB = std::size_t{1} << 30;
constexpr std::size_t kMiB = std::size_t{1} << 20;

bool g_failed = false;  // a benchmark stopped on an error: the run fails

// Runs a benchmark's body, turning an exception into a reported error (Google Benchmark does not
// catch them).
template <typename Body>
void guarded(benchmark::State& state, Body body) {
  try {
    body();
  } catch (const std::exception& e) {
    g_failed = true;
    state.SkipWithError(e.what());
  }
}

// Times stream work between two events; destroyed without throwing.
class EventTimer {
 public:
  EventTimer() {
    AMPBENCH_CUDA_CHECK(cudaEventCreate(&start_));
    AMPBENCH_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    AMPBENCH_CUDA_CHECK_NOTHROW(cudaEventDestroy(start_));
    AMPBENCH_CUDA_CHECK_NOTHROW(cudaEventDestroy(stop_));
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  // Seconds taken by `work` on the default stream, waited for.
  template <typename Work>
  double seconds(Work work) {
    AMPBENCH_CUDA_CHECK(cudaEventRecord(start_, nullptr));
    work();
    AMPBENCH_CUDA_CHECK(cudaEventRecord(stop_, nullptr));
    AMPBENCH_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    AMPBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms) * 1e-3;
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

// The timed loop: each iteration's event time is the benchmark's time; `units` (bytes or flops)
// per iteration become items/s, what the ratio tables divide.
template <typename Work>
void time_iterations(benchmark::State& state, double units_per_iteration, Work work) {
  EventTimer timer;
  work();  // warm-up: first-launch costs stay out of the figures
  AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  for (auto _ : state) state.SetIterationTime(timer.seconds(work));
  state.counters["items_per_second"] = benchmark::Counter(
      units_per_iteration * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// ---- memory-bound kernels ---------------------------------------------------------------------

void BM_copy_d2d(benchmark::State& state) {
  guarded(state, [&] {
    constexpr std::size_t kBytes = kGiB;
    const kernels::DeviceBuffer<std::byte> src(kBytes), dst(kBytes);
    AMPBENCH_CUDA_CHECK(cudaMemset(src.data(), 0x3C, kBytes));
    time_iterations(state, 2.0 * kBytes, [&] {
      AMPBENCH_CUDA_CHECK(
          cudaMemcpyAsync(dst.data(), src.data(), kBytes, cudaMemcpyDeviceToDevice, nullptr));
    });
  });
}

void BM_round(benchmark::State& state, const numeric::Format& format, numeric::Rounding mode) {
  guarded(state, [&] {
    constexpr std::size_t kElements = kGiB / sizeof(float);
    const kernels::DeviceBuffer<float> in(kElements), out(kElements);
    kernels::bench::fill_uniform(kernels::DType::f32, in.data(), kElements, 1);
    state.SetLabel(std::string(format.name) + (numeric::is_stochastic(mode) ? " sr" : " rne"));
    // Read one binary32, write one binary32 value per element (no bit patterns).
    time_iterations(state, 2.0 * kElements * sizeof(float), [&] {
      kernels::bench::launch_round(format, mode, in.data(), out.data(), kElements);
    });
  });
}

// A model's gradients: 25 weight matrices holding nearly all of 256 MiB and 75 vectors (biases,
// norms) of 4096 elements, each starting on a 256-byte boundary as a caching allocator places
// them.
void BM_unscale_check(benchmark::State& state, kernels::DType type, const char* label) {
  guarded(state, [&] {
    constexpr std::size_t kTotalBytes = 256 * kMiB;
    constexpr std::size_t kVectors = 75, kMatrices = 25, kVectorElements = 4096;
    const std::size_t element_bytes = type == kernels::DType::f32 ? 4 : 2;
    const std::size_t align_elements = 256 / element_bytes;
    const std::size_t matrix_elements =
        (kTotalBytes / element_bytes - kVectors * kVectorElements) / kMatrices;
    std::vector<std::size_t> sizes(kMatrices, matrix_elements);
    sizes.insert(sizes.end(), kVectors, kVectorElements);
    std::size_t capacity = 0, elements = 0;
    for (const std::size_t n : sizes) {
      capacity += (n + align_elements - 1) / align_elements * align_elements;
      elements += n;
    }
    const kernels::DeviceBuffer<std::byte> storage(capacity * element_bytes);
    kernels::bench::fill_uniform(type, storage.data(), capacity, 2);
    std::vector<kernels::GradientTensor> tensors;
    std::size_t offset = 0;
    for (const std::size_t n : sizes) {
      tensors.push_back({storage.data() + offset * element_bytes, n, type});
      offset += (n + align_elements - 1) / align_elements * align_elements;
    }
    const kernels::GradientUnscaler unscaler(tensors);
    const float inv_scale = 0x1p-16F;
    kernels::DeviceBuffer<float> d_inv_scale(1);
    const kernels::DeviceBuffer<float> d_found_inf(1);
    d_inv_scale.copy_from(std::span<const float>(&inv_scale, 1), nullptr);
    AMPBENCH_CUDA_CHECK(cudaMemset(d_found_inf.data(), 0, sizeof(float)));
    state.SetLabel(label);
    // In place: each element read and written once.
    time_iterations(state, 2.0 * static_cast<double>(elements * element_bytes), [&] {
      unscaler.unscale_and_check(d_inv_scale.data(), d_found_inf.data(), nullptr);
    });
  });
}

// ---- the bf16 GEMM ----------------------------------------------------------------------------

// The scratch memory the backend gives cuBLASLt (harness/backends/cuda/kernel.cpp).
constexpr std::uint64_t kWorkspaceBytes = std::uint64_t{32} << 20;

template <typename Handle, cublasStatus_t (*Destroy)(Handle)>
struct LtDeleter {
  void operator()(Handle h) const { AMPBENCH_CUBLAS_CHECK_NOTHROW(Destroy(h)); }
};
template <typename Handle, cublasStatus_t (*Destroy)(Handle)>
using LtPtr = std::unique_ptr<std::remove_pointer_t<Handle>, LtDeleter<Handle, Destroy>>;

// D = A B for n x n bf16 matrices, fp32 compute and scale, column-major, no transposes: the
// settings of the CUDA backend's cuBLASLt call (harness/backends/cuda/kernel.cpp) for bf16
// operands and output with CUBLAS_COMPUTE_32F. That call copies its operands from the host and
// makes its handle each time, so it is reproduced here rather than timed.
class Bf16Gemm {
 public:
  explicit Bf16Gemm(std::uint64_t n)
      : n_(n), a_(n * n), b_(n * n), d_(n * n), workspace_(kWorkspaceBytes) {
    kernels::bench::fill_uniform(kernels::DType::bf16, a_.data(), n * n, 3);
    kernels::bench::fill_uniform(kernels::DType::bf16, b_.data(), n * n, 4);
    cublasLtHandle_t handle = nullptr;
    AMPBENCH_CUBLAS_CHECK(cublasLtCreate(&handle));
    handle_.reset(handle);
    cublasLtMatmulDesc_t desc = nullptr;
    AMPBENCH_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    desc_.reset(desc);
    cublasLtMatrixLayout_t layout = nullptr;
    const auto ld = static_cast<std::int64_t>(n);
    AMPBENCH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16BF, n, n, ld));
    layout_.reset(layout);
    cublasLtMatmulPreference_t preference = nullptr;
    AMPBENCH_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    preference_.reset(preference);
    AMPBENCH_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &kWorkspaceBytes, sizeof kWorkspaceBytes));
  }

  double flops() const { return 2.0 * static_cast<double>(n_ * n_ * n_); }

  // The heuristic's first `count` algorithms, best guess first. Throws when it has none.
  std::vector<cublasLtMatmulHeuristicResult_t> algorithms(int count) const {
    std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(count));
    int found = 0;
    AMPBENCH_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(
        handle_.get(), desc_.get(), layout_.get(), layout_.get(), layout_.get(), layout_.get(),
        preference_.get(), count, results.data(), &found));
    if (found == 0) throw std::runtime_error("cuBLASLt has no algorithm for the bf16 GEMM");
    results.resize(static_cast<std::size_t>(found));
    return results;
  }

  void run(const cublasLtMatmulHeuristicResult_t& algorithm) const {
    const float one = 1.0F, zero = 0.0F;
    AMPBENCH_CUBLAS_CHECK(cublasLtMatmul(handle_.get(), desc_.get(), &one, a_.data(), layout_.get(),
                                         b_.data(), layout_.get(), &zero, d_.data(), layout_.get(),
                                         d_.data(), layout_.get(), &algorithm.algo,
                                         workspace_.data(), algorithm.workspaceSize, nullptr));
  }

 private:
  std::uint64_t n_;
  kernels::DeviceBuffer<std::uint16_t> a_, b_, d_;  // bf16 patterns
  kernels::DeviceBuffer<std::byte> workspace_;
  LtPtr<cublasLtHandle_t, cublasLtDestroy> handle_;
  LtPtr<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> desc_;
  LtPtr<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> layout_;
  LtPtr<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> preference_;
};

// The backend's choice: the heuristic's first algorithm.
void BM_gemm_bf16_default(benchmark::State& state) {
  guarded(state, [&] {
    const Bf16Gemm gemm(static_cast<std::uint64_t>(state.range(0)));
    const cublasLtMatmulHeuristicResult_t first = gemm.algorithms(1).front();
    time_iterations(state, gemm.flops(), [&] { gemm.run(first); });
  });
}

// The device's practical peak: each of the heuristic's first 16 algorithms timed (best of 3 runs
// after a warm-up), the fastest then measured as the benchmark.
void BM_gemm_bf16_peak(benchmark::State& state) {
  guarded(state, [&] {
    const Bf16Gemm gemm(static_cast<std::uint64_t>(state.range(0)));
    const std::vector<cublasLtMatmulHeuristicResult_t> candidates = gemm.algorithms(16);
    EventTimer timer;
    std::size_t best = 0;
    double best_seconds = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      gemm.run(candidates[i]);
      double seconds = timer.seconds([&] { gemm.run(candidates[i]); });
      for (int repeat = 0; repeat < 2; ++repeat) {
        seconds = std::min(seconds, timer.seconds([&] { gemm.run(candidates[i]); }));
      }
      if (i == 0 || seconds < best_seconds) {
        best = i;
        best_seconds = seconds;
      }
    }
    state.SetLabel("algo " + std::to_string(best + 1) + "/" + std::to_string(candidates.size()));
    time_iterations(state, gemm.flops(), [&] { gemm.run(candidates[best]); });
  });
}

void register_benchmarks() {
  const auto manual = [](benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  };
  manual(benchmark::RegisterBenchmark("BM_copy_d2d/1GiB", BM_copy_d2d));
  struct RoundBenchmark {
    const char* name;
    numeric::Format format;
    numeric::Rounding mode;
  };
  const RoundBenchmark rounds[] = {
      {"BM_round_fp16_nearest/1GiB", numeric::formats::fp16, numeric::Rounding::nearest_even},
      {"BM_round_fp16_stochastic/1GiB", numeric::formats::fp16,
       numeric::Rounding::stochastic_proportional},
      {"BM_round_bf16_nearest/1GiB", numeric::formats::bf16, numeric::Rounding::nearest_even},
      {"BM_round_bf16_stochastic/1GiB", numeric::formats::bf16,
       numeric::Rounding::stochastic_proportional},
  };
  for (const auto& r : rounds) {
    manual(benchmark::RegisterBenchmark(r.name, BM_round, r.format, r.mode));
  }
  manual(benchmark::RegisterBenchmark("BM_unscale_check_fp16/100x256MiB", BM_unscale_check,
                                      kernels::DType::f16, "fp16"));
  manual(benchmark::RegisterBenchmark("BM_unscale_check_bf16/100x256MiB", BM_unscale_check,
                                      kernels::DType::bf16, "bf16"));
  manual(benchmark::RegisterBenchmark("BM_unscale_check_fp32/100x256MiB", BM_unscale_check,
                                      kernels::DType::f32, "fp32"));
  manual(benchmark::RegisterBenchmark("BM_gemm_bf16_peak", BM_gemm_bf16_peak)->Arg(8192));
  manual(benchmark::RegisterBenchmark("BM_gemm_bf16_default", BM_gemm_bf16_default)
             ->Arg(4096)
             ->Arg(8192));
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The peer's items/s, found by family: run names carry suffixes such as /manual_time.
double family_rate(const bench::Results& results, std::string_view family) {
  for (const auto& [name, t] : results) {
    if (t.family == family) return bench::median_of(t);
  }
  return -1.0;
}

bool gpu_required() {
  const char* v = std::getenv("AMPBENCH_REQUIRE_GPU");
  return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
}

}  // namespace

int main(int argc, char** argv) {
  const kernels::DeviceStatus device = kernels::probe_device();
  if (!device.available) {
    std::fprintf(stderr, "%s: the GPU benchmarks did not run\n", describe(device).c_str());
    return gpu_required() ? 1 : kSkippedExitCode;
  }
  std::fprintf(stderr, "%s\n%s\n", describe(device).c_str(),
               describe(kernels::library_versions()).c_str());
  register_benchmarks();

  const bench::RatioTable bandwidth{
      "the device-to-device copy of 1 GiB (bytes/s read + written)",
      [](const bench::Results& results, const bench::Throughput& t) {
        const bool memory_bound =
            starts_with(t.family, "BM_round_") || starts_with(t.family, "BM_unscale_check_");
        return memory_bound ? family_rate(results, "BM_copy_d2d") : -1.0;
      },
      [](std::string_view family) {
        const bool memory_bound =
            starts_with(family, "BM_round_") || starts_with(family, "BM_unscale_check_");
        return memory_bound ? 0.8 : 0.0;
      }};
  const bench::RatioTable gemm{
      "the best cuBLASLt bf16 GEMM algorithm at 8192^3 (flop/s)",
      [](const bench::Results& results, const bench::Throughput& t) {
        return t.family == "BM_gemm_bf16_default" ? family_rate(results, "BM_gemm_bf16_peak")
                                                  : -1.0;
      },
      [](std::string_view family) { return family == "BM_gemm_bf16_default" ? 0.7 : 0.0; }};
  const int status = bench::run_with_ratios(argc, argv, {bandwidth, gemm});
  if (g_failed) {
    std::fprintf(stderr, "a GPU benchmark failed (its error is in the output above)\n");
    return 1;
  }
  return status;
}
