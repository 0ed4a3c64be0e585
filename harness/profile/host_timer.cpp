#include "harness/profile/host_timer.hpp"

#include <chrono>
#include <functional>
#include <thread>
#include <utility>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ampbench::profile {

std::uint64_t steady_clock_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

std::uint32_t current_thread_id() {
#if defined(__linux__)
  return static_cast<std::uint32_t>(::syscall(SYS_gettid));
#else
  return static_cast<std::uint32_t>(std::hash<std::thread::id>{}(std::this_thread::get_id()));
#endif
}

PhaseRecorder::PhaseRecorder(RangeHooks hooks, Clock clock) : hooks_(hooks), clock_(clock) {}

Trace PhaseRecorder::trace() const {
  Trace trace;
  trace.ranges = phases();
  return trace;
}

std::vector<RangeEvent> PhaseRecorder::phases() const {
  const std::lock_guard lock(mutex_);
  return phases_;
}

PhaseRecorder::Open PhaseRecorder::begin(const std::string& name) {
  if (hooks_.push != nullptr) hooks_.push(name.c_str());
  const std::uint32_t thread = current_thread_id();
  std::uint32_t depth = 0;
  {
    const std::lock_guard lock(mutex_);
    depth = open_by_thread_[thread]++;
  }
  return {.start_ns = clock_(), .depth = depth};
}

void PhaseRecorder::end(std::string name, const Open& open) {
  const std::uint64_t end_ns = clock_();
  if (hooks_.pop != nullptr) hooks_.pop();
  const std::uint32_t thread = current_thread_id();
  const std::lock_guard lock(mutex_);
  --open_by_thread_[thread];
  phases_.push_back({.name = std::move(name),
                     .domain = {},
                     .kind = RangeKind::host_phase,
                     .thread_id = thread,
                     .start_ns = open.start_ns,
                     .end_ns = end_ns,
                     .depth = open.depth});
}

ScopedPhase::ScopedPhase(PhaseRecorder& recorder, std::string name)
    : recorder_(recorder), name_(std::move(name)), open_(recorder_.begin(name_)) {}

ScopedPhase::~ScopedPhase() {
  recorder_.end(std::move(name_), open_);
}

}  // namespace ampbench::profile
