#include "harness/io/memory.hpp"

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc: test it after a libc header

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ampbench::io {

bool keep_freed_memory() {
#if defined(__GLIBC__)
  // mallopt fixes both thresholds (glibc then stops adjusting them itself), each returning 1 when
  // taken. The trim threshold is set only after the mmap threshold was: alone, it would leave
  // glibc's 128 KiB threshold fixed, below what glibc's own adjustment reaches. -1 turns trimming
  // off.
  return mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, -1) == 1;
#else
  return false;
#endif
}

}  // namespace ampbench::io
