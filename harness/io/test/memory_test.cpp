// keep_freed_memory (memory.hpp): a block of megabytes, freed, comes back without page faults. On
// glibc without it, the second block of the same size comes from new pages (mmap, or a heap grown
// after a trim), each faulted in: 2048 for 8 MiB.
#include "harness/io/memory.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstddef>
#include <cstdlib>

namespace ampbench::io {
namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Writes to every page of an n-byte block from malloc, then frees it.
void touch_and_free(std::size_t n) {
  auto* volatile block = static_cast<char*>(std::malloc(n));
  ASSERT_NE(block, nullptr);
  for (std::size_t i = 0; i < n; i += 4096) block[i] = 1;
  std::free(block);
}

TEST(KeepFreedMemory, AFreedBlockOfMegabytesComesBackWithoutPageFaults) {
  if (!keep_freed_memory()) {
    GTEST_SKIP() << "the allocator took no settings (not glibc, or a sanitizer's allocator in "
                    "front of it): keep_freed_memory does nothing here";
  }
  constexpr std::size_t kBytes = std::size_t{8} << 20;  // 2048 pages of 4 KiB
  touch_and_free(kBytes);
  const long before = minor_faults();
  touch_and_free(kBytes);
  EXPECT_LT(minor_faults() - before, 64) << "the block's pages were faulted in again";
}

}  // namespace
}  // namespace ampbench::io
