#include "harness/train/models.hpp"

#include <cmath>

#include "harness/numeric/rounding.hpp"

namespace ampbench::train {

std::size_t element_count(const ParameterSpec& p) {
  std::size_t n = 1;
  for (const auto s : p.shape) n *= s;
  return n;
}

std::vector<std::vector<double>> initial_parameters(std::span<const ParameterSpec> specs,
                                                    std::uint64_t seed) {
  std::vector<std::vector<double>> values;
  for (std::size_t t = 0; t < specs.size(); ++t) {
    const ParameterSpec& spec = specs[t];
    std::vector<double> v(element_count(spec));
    const double bound = 1.0 / std::sqrt(static_cast<double>(spec.fan_in));
    for (std::size_t i = 0; i < v.size(); ++i) {
      switch (spec.init) {
        case ParameterSpec::Init::zeros: v[i] = 0.0; break;
        case ParameterSpec::Init::ones: v[i] = 1.0; break;
        case ParameterSpec::Init::uniform_fan_in: {
          // 53 random bits: u uniform in [0, 1), on every platform; stream t of the seed.
          const std::uint64_t bits = numeric::splitmix64(numeric::splitmix64(seed, t), i) >> 11;
          const double u = std::ldexp(static_cast<double>(bits), -53);
          v[i] = numeric::round_to(numeric::formats::fp32, numeric::Rounding::nearest_even,
                                   (2 * u - 1) * bound)
                     .value;
          break;
        }
      }
    }
    values.push_back(std::move(v));
  }
  return values;
}

}  // namespace ampbench::train
