#include "harness/io/memory.hpp"

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc: test it after a libc header

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ampbench::io {

void keep_freed_memory() {
#if defined(__GLIBC__)
  // mallopt fixes both thresholds (glibc then stops adjusting them itself); its limit for
  // M_MMAP_THRESHOLD is HEAP_MAX_SIZE / 2, 32 MiB on 64-bit. -1 turns trimming off.
  (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
  (void)mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

}  // namespace ampbench::io
