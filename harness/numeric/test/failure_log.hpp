// Reports the first few failures of a loop over many cases, and their total count, so that a
// broken exhaustive test prints a handful of counterexamples rather than a million.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>

namespace ampbench::numeric::test {

class FailureLog {
 public:
  explicit FailureLog(std::string what, int shown = 10) : what_(std::move(what)), shown_(shown) {}
  FailureLog(const FailureLog&) = delete;
  FailureLog& operator=(const FailureLog&) = delete;
  ~FailureLog() { EXPECT_EQ(count_, 0u) << what_ << ": " << count_ << " failures in all"; }

  void add(const std::string& message) {
    if (++count_ <= static_cast<std::uint64_t>(shown_)) ADD_FAILURE() << message;
  }
  std::uint64_t count() const { return count_; }

 private:
  std::string what_;
  int shown_;
  std::uint64_t count_ = 0;
};

}  // namespace ampbench::numeric::test
