// AMPBENCH_HD marks functions that CUDA kernels call as well as host code: the per-element math
// is written once and tested on the host. Without nvcc the macro is empty.
#pragma once

#if defined(__CUDACC__)
#define AMPBENCH_HD __host__ __device__
#else
#define AMPBENCH_HD
#endif
