// The first difference between a quantizer's codes and scales and the reference quantizer's
// (harness/quant/scaling.hpp), for the tests of every other quantizer: the fast path, the GPU
// kernels' math on the host, the GPU kernels themselves.
#pragma once

#include <string>

#include "harness/quant/scaling.hpp"

namespace ampbench::quant::test {

// `r` has per element `bits`, per tile `scale_bits`, and `global_scale` and `global_decode`
// (NVFP4's S_enc and S_dec, 1 otherwise). "" when everything agrees.
template <class Result>
std::string reference_difference(const Result& r, const Quantized& ref) {
  if (r.bits.size() != ref.bits.size()) return "element counts differ";
  if (r.scale_bits.size() != ref.tiles.size()) return "tile counts differ";
  for (std::size_t t = 0; t < ref.tiles.size(); ++t) {
    if (r.scale_bits[t] != ref.tiles[t].scale_bits) {
      return "tile " + std::to_string(t) + ": scale " + std::to_string(r.scale_bits[t]) +
             ", reference " + std::to_string(ref.tiles[t].scale_bits) + " (amax " +
             std::to_string(ref.tiles[t].amax) + ")";
    }
  }
  for (std::size_t k = 0; k < ref.bits.size(); ++k) {
    if (r.bits[k] != ref.bits[k]) {
      return "element " + std::to_string(k) + ": code " + std::to_string(r.bits[k]) +
             ", reference " + std::to_string(ref.bits[k]);
    }
  }
  if (static_cast<double>(r.global_scale) != ref.global_scale ||
      static_cast<double>(r.global_decode) != ref.global_decode) {
    return "global scales differ";
  }
  return "";
}

}  // namespace ampbench::quant::test
