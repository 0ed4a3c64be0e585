// Host phases for the CPU backend: named, nested scopes timed with std::chrono::steady_clock and
// recorded as RangeEvents (kind host_phase) of a Trace, so the CPU backend gets the same report as
// the GPU (wall time per phase, nesting) without the device fields.
//
// The same scope can also push an NVTX range, so that a GPU run shows the phases in Nsight and
// CUPTI: the CUDA side fills RangeHooks with functions that call nvtxRangePushA/nvtxRangePop
// (kernels/nvtx.hpp). This library never includes NVTX and builds without CUDA.
//
//   PhaseRecorder recorder;                       // or PhaseRecorder(cuda_nvtx_hooks())
//   { ScopedPhase step(recorder, "step");
//     { ScopedPhase forward(recorder, "forward"); ... } }
//   Trace trace = recorder.trace();
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "harness/profile/events.hpp"

namespace ampbench::profile {

// Called at the start and end of every phase when set; either may be null.
struct RangeHooks {
  void (*push)(const char* name) = nullptr;
  void (*pop)() = nullptr;
};

// Nanoseconds on the clock every event of a trace shares.
using Clock = std::uint64_t (*)();
std::uint64_t steady_clock_ns();

// The id the CUPTI records give a host thread (the kernel's thread id on Linux), so that phases and
// API calls of the same thread meet in attribution.
std::uint32_t current_thread_id();

// Collects the phases of any number of threads; safe to use from several threads at once.
class PhaseRecorder {
 public:
  explicit PhaseRecorder(RangeHooks hooks = {}, Clock clock = &steady_clock_ns);
  PhaseRecorder(const PhaseRecorder&) = delete;
  PhaseRecorder& operator=(const PhaseRecorder&) = delete;

  // The phases finished so far, in the order they finished, in a Trace of their own.
  Trace trace() const;
  std::vector<RangeEvent> phases() const;

 private:
  friend class ScopedPhase;
  struct Open {
    std::uint64_t start_ns;
    std::uint32_t depth;
  };
  Open begin(const std::string& name);
  void end(std::string name, const Open& open);

  RangeHooks hooks_;
  Clock clock_;
  mutable std::mutex mutex_;
  std::map<std::uint32_t, std::uint32_t> open_by_thread_;
  std::vector<RangeEvent> phases_;
};

// One phase: from construction to destruction on the constructing thread. Phases of one thread
// must nest (destroy in reverse order of construction), as NVTX push/pop ranges must.
class ScopedPhase {
 public:
  ScopedPhase(PhaseRecorder& recorder, std::string name);
  ~ScopedPhase();
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  PhaseRecorder& recorder_;
  std::string name_;
  PhaseRecorder::Open open_;
};

}  // namespace ampbench::profile
