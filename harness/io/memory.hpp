// How the process's allocator treats freed memory (docs/benchmarks.md "The allocator").
#pragma once

namespace ampbench::io {

// ampbench allocates and frees tensors of megabytes over and over: each quantized operand, each
// product, each step's activations. glibc's malloc returns such blocks to the system (mmap above
// its threshold, the heap trimmed once its free top passes 128 KiB), so each new tensor
// page-faults its pages in again and the kernel zeroes them: on a 2-core VM that was 40% of a
// recipe GEMM's time. This keeps freed memory in the process for reuse: blocks up to 32 MiB
// (glibc's own cap on the threshold it adjusts) come from the heap, larger ones from mmap as
// before, and the heap is never trimmed, so the process keeps its peak heap until it exits. The
// CLI calls it first, and the benchmark programs before they run their benchmarks; the arithmetic
// is unchanged. Returns whether the C library took both settings: false where it is not glibc, or
// where an allocator in front of it (a sanitizer's) ignores them.
bool keep_freed_memory();

}  // namespace ampbench::io
