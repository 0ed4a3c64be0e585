// Two small named kernels for the collector's GPU tests: their names, streams and counts are known,
// so a trace of them can be checked record by record.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ampbench::kernels::test {

// data[i] = value for i < n.
void launch_probe_fill(float* data, std::size_t n, float value, cudaStream_t stream);
// data[i] *= factor for i < n.
void launch_probe_scale(float* data, std::size_t n, float factor, cudaStream_t stream);

}  // namespace ampbench::kernels::test
