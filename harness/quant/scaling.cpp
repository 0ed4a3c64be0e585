#include "harness/quant/scaling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "harness/numeric/rounding_array.hpp"

namespace ampbench::quant {

namespace detail {

double round_to_binary32_by_round_to(double x) {
  return numeric::round_to(numeric::formats::fp32, Rounding::nearest_even, x).value;
}

}  // namespace detail

namespace {

namespace formats = numeric::formats;
using numeric::Overflow;
using numeric::Rounded;
using numeric::RoundingEvent;

constexpr double kFloatMax = std::numeric_limits<float>::max();

// x rounded to binary32 (nearest even), as a binary64: one fp32 operation's result when x is its
// exact value, or (for a quotient computed in binary64) its correct rounding, since 53 >= 2*24+2
// makes the double rounding innocuous (Figueroa 1995).
double f32(double x) {
  return numeric::round_to(formats::fp32, Rounding::nearest_even, x).value;
}

// fmaxf: the larger, NaN ignored unless both are NaN.
double fmax_ignoring_nan(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return std::max(a, b);
}

Format saturating(Format f) {
  f.overflow = Overflow::saturate;
  return f;
}

// The tiles of a layout, row-major, with their amax.
std::vector<Tile> tiles_of(std::span<const float> x, const Layout& l) {
  std::vector<Tile> tiles;
  for (std::size_t r = 0; r < l.rows; r += l.block_rows) {
    for (std::size_t c = 0; c < l.cols; c += l.block_cols) {
      Tile t;
      t.row = r;
      t.col = c;
      t.rows = l.block_rows;
      t.cols = l.block_cols;
      for (std::size_t i = r; i < r + l.block_rows; ++i) {
        t.amax = fmax_ignoring_nan(t.amax, amax(x.subspan(i * l.cols + c, l.block_cols)));
      }
      tiles.push_back(t);
    }
  }
  return tiles;
}

bool has_nan(std::span<const float> x, const Layout& l, const Tile& t) {
  for (std::size_t i = t.row; i < t.row + t.rows; ++i) {
    for (std::size_t j = t.col; j < t.col + t.cols; ++j) {
      if (std::isnan(x[i * l.cols + j])) return true;
    }
  }
  return false;
}

std::uint64_t f32_bits(double v) {
  return std::bit_cast<std::uint32_t>(static_cast<float>(v));
}

// The element rounding of a row of a tile through vectorised paths (encode_array's for e4m3 and
// e5m2, the fast quantizer's saturating encoding for e3m2, e2m3 and e2m1; nearest even and
// stochastic) for the scaled inputs where those give round_to's bits and the event follows from
// the input and the result alone: a binary32 value (encode_array's input) at
// most the format's largest finite value in magnitude (so no overflow branch, whose saturation
// event depends on the direction of rounding; NaNs and infinities excluded). Then the event is
// exact (the value unchanged: zeros included), flush_to_zero (a nonzero input to zero), underflow
// (inexact below 2^emin) or inexact, as round_to's. The other inputs go to round_to.
class FastRows {
 public:
  FastRows(const Format& element, const Layout& l) : element_(element) {
    fp8_ = numeric::same_values(element, formats::e4m3) ||
           numeric::same_values(element, formats::e5m2);
    applies_ = (fp8_ || numeric::same_values(element, formats::e3m2) ||
                numeric::same_values(element, formats::e2m3) ||
                numeric::same_values(element, formats::e2m1)) &&
               (l.mode == Rounding::nearest_even || l.mode == Rounding::stochastic_proportional);
    if (!applies_) return;
    options_ = numeric::RoundingOptions{element, l.mode, l.seed, numeric::Container::binary32};
    for (std::size_t b = 0; b < values_.size(); ++b) values_[b] = numeric::decode(element, b);
    max_finite_ = numeric::decode(element, numeric::detail::max_finite_bits(element));
    min_normal_ = std::ldexp(1.0, element.emin);
  }

  // Rounds scaled[0..n) (element first_index on of the stream) into bits/values/events, or
  // returns false where the path does not apply to the format or mode.
  bool round(std::span<const double> scaled, std::uint64_t first_index, std::uint64_t* bits,
             double* values, RoundingEvent* events) {
    if (!applies_) return false;
    in_.resize(scaled.size());
    out_.resize(scaled.size());
    others_.clear();
    for (std::size_t i = 0; i < scaled.size(); ++i) {
      const double v = scaled[i];
      // NaN fails the comparison; a value off binary32 fails the round trip.
      if (std::fabs(v) <= max_finite_ && static_cast<double>(static_cast<float>(v)) == v) {
        in_[i] = static_cast<float>(v);
      } else {
        in_[i] = 0;
        others_.push_back(i);
      }
    }
    if (fp8_) {
      numeric::encode_array(options_, in_, out_, first_index);
    } else {
      detail::encode_saturating(element_, options_.mode == Rounding::stochastic_proportional, in_,
                                out_.data(), options_.seed, first_index);
    }
    for (std::size_t i = 0; i < scaled.size(); ++i) {
      const double v = scaled[i], r = values_[out_[i]];
      bits[i] = out_[i];
      values[i] = r;
      events[i] = r == v                       ? RoundingEvent::exact
                  : r == 0                     ? RoundingEvent::flush_to_zero
                  : std::fabs(v) < min_normal_ ? RoundingEvent::underflow
                                               : RoundingEvent::inexact;
    }
    const bool stochastic = options_.mode == Rounding::stochastic_proportional;
    for (const std::size_t i : others_) {
      const std::uint32_t random =
          stochastic ? numeric::stochastic_draw(options_.seed, first_index + i) : 0u;
      const Rounded r = numeric::round_to(element_, options_.mode, scaled[i], random);
      bits[i] = r.bits;
      values[i] = r.value;
      events[i] = r.event;
    }
    return true;
  }

 private:
  Format element_;
  bool applies_ = false;
  bool fp8_ = false;  // e4m3 or e5m2: encode_array
  numeric::RoundingOptions options_;
  std::array<double, 256> values_{};
  double max_finite_ = 0, min_normal_ = 0;
  std::vector<float> in_;
  std::vector<std::uint8_t> out_;
  std::vector<std::size_t> others_;  // the row's inputs left to round_to
};

// Rounds every element of every tile: x * tile.scale (rounded to binary32 when product_in_f32, as
// TE's kernels multiply; exact otherwise), then to the element format (a row of a tile at a time
// through FastRows where it applies, else round_to); the events and the dequantized values. A
// tile whose decode scale is NaN makes its elements NaN.
Quantized finish(std::span<const float> x, const Layout& l, const Format& element,
                 std::vector<Tile> tiles, ScaleRule rule, bool product_in_f32) {
  Quantized q;
  q.element = saturating(element);
  q.mode = l.mode;
  q.rule = rule;
  q.rows = l.rows;
  q.cols = l.cols;
  q.block_rows = l.block_rows;
  q.block_cols = l.block_cols;
  const std::size_t n = x.size();
  q.bits.resize(n);
  q.values.resize(n);
  q.dequantized.resize(n);
  q.element_events.resize(n);
  q.events.elements = n;
  q.events.blocks = tiles.size();
  const double min_normal = std::ldexp(1.0, q.element.emin);
  const bool stochastic = numeric::is_stochastic(l.mode);
  // Each row of each tile (unit u: row u % block_rows of tile u / block_rows) notes whether it has
  // a nonzero finite input and whether it dequantizes to all zeros, from which a tile's `lost`
  // follows.
  const std::size_t units = tiles.size() * l.block_rows;
  std::vector<std::uint8_t> any_nonzero(units), all_zero(units);
  const std::size_t tiles_per_row = l.cols / l.block_cols;
  // The work comes in pieces: a row's tiles cut into `pieces_per_row` runs (one, the whole row,
  // unless the tensor has fewer rows than cores), piece p being run p % pieces_per_row of row
  // p / pieces_per_row, each run rounded at once.
  constexpr std::size_t kElementsPerCore = std::size_t{1} << 16;
  const std::size_t wanted = std::max<std::size_t>(
      1, std::min<std::size_t>(std::thread::hardware_concurrency(), n / kElementsPerCore));
  const std::size_t pieces_per_row =
      std::clamp<std::size_t>((wanted + l.rows - 1) / l.rows, 1, tiles_per_row);
  const std::size_t pieces = l.rows * pieces_per_row;
  // The pieces [first_piece, end_piece), their counts into `counts`.
  const auto run = [&](std::size_t first_piece, std::size_t end_piece, QuantEvents& counts) {
    FastRows fast(q.element, l);
    std::vector<double> scaled(l.cols);
    for (std::size_t piece = first_piece; piece < end_piece; ++piece) {
      const std::size_t i = piece / pieces_per_row, part = piece % pieces_per_row;
      const std::size_t c0 = part * tiles_per_row / pieces_per_row;
      const std::size_t c1 = (part + 1) * tiles_per_row / pieces_per_row;
      const std::size_t j0 = c0 * l.block_cols, j1 = c1 * l.block_cols;
      const std::size_t first = i * l.cols;
      const Tile* row_tiles = tiles.data() + (i / l.block_rows) * tiles_per_row;
      // A NaN scale (an MX block holding a NaN or an infinity) rounds as the scale itself, the
      // default quiet NaN, whatever the element: not left to which operand's NaN the product
      // carries, which IEEE 754 leaves open.
      for (std::size_t c = c0; c < c1; ++c) {
        const double scale = row_tiles[c].scale;
        for (std::size_t j = c * l.block_cols; j < (c + 1) * l.block_cols; ++j) {
          const double v = x[first + j];
          scaled[j] = std::isnan(scale) ? scale
                      : product_in_f32  ? detail::round_to_binary32(v * scale)
                                        : v * scale;
        }
      }
      const std::span<const double> run_scaled(scaled.data() + j0, j1 - j0);
      if (!fast.round(run_scaled, first + j0, q.bits.data() + first + j0,
                      q.values.data() + first + j0, q.element_events.data() + first + j0)) {
        for (std::size_t j = j0; j < j1; ++j) {
          const std::uint32_t random =
              stochastic ? numeric::stochastic_draw(l.seed, first + j) : 0u;
          const Rounded r = numeric::round_to(q.element, l.mode, scaled[j], random);
          q.bits[first + j] = r.bits;
          q.values[first + j] = r.value;
          q.element_events[first + j] = r.event;
        }
      }
      // Each tile's part of the row: its dequantized values and counts, without branches on the
      // elements.
      for (std::size_t c = c0; c < c1; ++c) {
        const Tile& t = row_tiles[c];
        const bool nan_scale = std::isnan(t.decode_scale);
        const double decode = nan_scale ? std::numeric_limits<double>::quiet_NaN() : t.decode_scale;
        std::uint64_t nan = 0, saturated = 0, flushed = 0, subnormal = 0, nonzero = 0, zero = 0;
        const std::size_t begin = first + c * l.block_cols, end = begin + l.block_cols;
        for (std::size_t k = begin; k < end; ++k) {
          const float v = x[k];
          const double value = q.values[k];
          const double dequantized = nan_scale ? decode : value * decode;
          q.dequantized[k] = dequantized;
          const bool is_nan = std::isnan(v) || nan_scale;
          nan += is_nan;
          saturated += !is_nan && q.element_events[k] == RoundingEvent::saturation;
          const bool input_nonzero = std::isfinite(v) && v != 0;
          nonzero += input_nonzero;
          flushed += input_nonzero && dequantized == 0;
          subnormal += value != 0 && std::fabs(value) < min_normal;
          zero += dequantized == 0;
        }
        counts.nan += nan;
        counts.saturated += saturated;
        counts.flushed += flushed;
        counts.subnormal += subnormal;
        const std::size_t unit =
            ((i / l.block_rows) * tiles_per_row + c) * l.block_rows + i % l.block_rows;
        any_nonzero[unit] = nonzero != 0;
        all_zero[unit] = zero == l.block_cols;
      }
    }
  };
  // Large tensors on all cores, in contiguous runs of pieces (every element's result and the
  // counts' sums are the same whichever core computes them).
  const std::size_t cores = std::min(wanted, pieces);
  std::vector<QuantEvents> counts(cores);
  {
    std::vector<std::jthread> pool;
    for (std::size_t c = 1; c < cores; ++c) {
      pool.emplace_back([&, c] { run(pieces * c / cores, pieces * (c + 1) / cores, counts[c]); });
    }
    run(0, pieces / cores, counts[0]);
  }
  for (std::size_t tile = 0; tile < tiles.size(); ++tile) {
    const auto rows = static_cast<std::ptrdiff_t>(l.block_rows);
    const auto begin = static_cast<std::ptrdiff_t>(tile) * rows;
    const bool nonzero = std::any_of(any_nonzero.begin() + begin,
                                     any_nonzero.begin() + begin + rows, [](auto b) { return b; });
    const bool zero = std::all_of(all_zero.begin() + begin, all_zero.begin() + begin + rows,
                                  [](auto b) { return b; });
    tiles[tile].lost = nonzero && zero;
    if (tiles[tile].lost) ++q.events.blocks_lost;
  }
  for (const QuantEvents& c : counts) {
    q.events.nan += c.nan;
    q.events.saturated += c.saturated;
    q.events.flushed += c.flushed;
    q.events.subnormal += c.subnormal;
  }
  q.tiles = std::move(tiles);
  return q;
}

}  // namespace

namespace detail {

void check_layout(std::span<const float> x, const Layout& l) {
  if (l.rows == 0 || l.cols == 0) throw std::invalid_argument("the tensor is empty");
  if (x.size() != l.rows * l.cols) {
    throw std::invalid_argument(fmt::format("the tensor has {} values, its shape {}x{} needs {}",
                                            x.size(), l.rows, l.cols, l.rows * l.cols));
  }
  if (l.block_rows == 0 || l.rows % l.block_rows != 0) {
    throw std::invalid_argument(fmt::format(
        "a block of {} rows does not divide the tensor's {} rows", l.block_rows, l.rows));
  }
  if (l.block_cols == 0 || l.cols % l.block_cols != 0) {
    throw std::invalid_argument(fmt::format(
        "a block of {} columns does not divide the tensor's {} columns", l.block_cols, l.cols));
  }
}

}  // namespace detail

double max_finite(const Format& f) {
  return numeric::decode(f, numeric::detail::max_finite_bits(f));
}

double amax(std::span<const float> values) {
  double m = 0;
  for (const float v : values) m = fmax_ignoring_nan(m, std::fabs(static_cast<double>(v)));
  return m;
}

float current_scale(double amax_value, double fmt_max, bool pow2) {
  if (!std::isfinite(amax_value) || amax_value == 0) return 1.0f;
  double scale = f32(fmt_max / amax_value);
  if (std::isinf(scale)) scale = kFloatMax;
  auto s = static_cast<float>(scale);
  if (pow2) s = std::bit_cast<float>(std::bit_cast<std::uint32_t>(s) & 0xFF800000u);
  return s;
}

// ---- DelayedScaling -----------------------------------------------------------------------------

DelayedScaling::DelayedScaling(const DelayedScalingConfig& config, float initial_scale)
    : config_(config), scale_(initial_scale) {
  if (config.amax_history_len == 0) {
    throw std::invalid_argument("amax_history_len must be at least 1");
  }
  if (config.margin < -126 || config.margin > 126) {
    throw std::invalid_argument(fmt::format(
        "margin {} is outside [-126, 126]: 2^-margin is no binary32 number", config.margin));
  }
  history_.assign(config.amax_history_len, 0.0f);
}

void DelayedScaling::record(float amax_value) {
  history_[0] = static_cast<float>(fmax_ignoring_nan(history_[0], amax_value));
}

void DelayedScaling::update() {
  // delayed_scaling.cu, amax_and_scale_update_impl::kernel: a = history[i + 1] (the last slot
  // takes slot 0's amax), amax = fmaxf over all of them, updated[i] = i > 0 ? a : 0.
  const std::size_t n = history_.size();
  const float last = history_[0];
  double window = 0;
  std::vector<float> rolled(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float a = i + 1 < n ? history_[i + 1] : last;
    window = fmax_ignoring_nan(window, a);
    rolled[i] = i > 0 ? a : 0.0f;
  }
  history_ = std::move(rolled);
  const double chosen = config_.amax_compute_algo == AmaxAlgo::max ? window : last;
  const double scaled_max = f32(config_.fmt_max * std::ldexp(1.0, -config_.margin));
  if (std::isfinite(chosen) && chosen > 0) {
    const double s = f32(scaled_max / chosen);
    scale_ = std::isinf(s) ? std::numeric_limits<float>::max() : static_cast<float>(s);
  }
}

// ---- quantizers ---------------------------------------------------------------------------------

Quantized quantize_with_scale(std::span<const float> x, const Layout& layout, const Format& element,
                              float scale) {
  detail::check_layout(x, layout);
  if (layout.block_rows != layout.rows || layout.block_cols != layout.cols) {
    throw std::invalid_argument("a given per-tensor scale needs one block: the whole tensor");
  }
  if (!(scale > 0) || !std::isfinite(scale)) {
    throw std::invalid_argument(
        fmt::format("the scale {} is not a positive finite binary32", scale));
  }
  std::vector<Tile> tiles = tiles_of(x, layout);
  for (Tile& t : tiles) {
    t.scale = scale;
    t.scale_bits = f32_bits(scale);
    t.decode_scale = f32(1.0 / scale);  // TE's scale_inv
  }
  Quantized q = finish(x, layout, element, std::move(tiles), ScaleRule::fp32_given, true);
  q.tensor_amax = amax(x);
  return q;
}

Quantized quantize_current(std::span<const float> x, const Layout& layout, const Format& element,
                           bool pow2) {
  detail::check_layout(x, layout);
  std::vector<Tile> tiles = tiles_of(x, layout);
  const double fmt_max = max_finite(saturating(element));
  for (Tile& t : tiles) {
    const float s = current_scale(t.amax, fmt_max, pow2);
    t.scale = s;
    t.scale_bits = f32_bits(s);
    t.decode_scale = f32(1.0 / s);
  }
  Quantized q = finish(x, layout, element, std::move(tiles), ScaleRule::fp32_amax, true);
  q.tensor_amax = amax(x);
  return q;
}

Quantized quantize_mx(std::span<const float> x, const Layout& layout, const Format& element,
                      MxScale rule) {
  detail::check_layout(x, layout);
  const Format elem = saturating(element);
  std::vector<Tile> tiles = tiles_of(x, layout);
  for (Tile& t : tiles) {
    if (has_nan(x, layout, t) || std::isinf(t.amax)) {
      t.scale = std::numeric_limits<double>::quiet_NaN();
      t.scale_bits = 0xFF;
      t.decode_scale = t.scale;
      continue;
    }
    int shared = -127;  // an all-zero block takes the smallest scale
    if (rule == MxScale::ocp && t.amax != 0) {
      // floor(log2(amax)): the binary exponent of the largest magnitude (binary32 subnormals
      // included, as a binary64 they are normal).
      shared = std::ilogb(t.amax) - elem.emax;
    } else if (rule == MxScale::round_up) {
      // TE: v = fl32(amax * fl32(1 / max_elem)), rounded up to a power of two.
      const float reciprocal = static_cast<float>(1.0 / max_finite(elem));
      const float v = static_cast<float>(t.amax) * reciprocal;
      if (v > 0) {
        int e = 0;
        const float fraction = std::frexp(v, &e);  // v = fraction * 2^e, fraction in [0.5, 1)
        shared = fraction == 0.5f ? e - 1 : e;
      }
    }
    shared = std::clamp(shared, -127, 127);
    t.scale = std::ldexp(1.0, -shared);
    t.scale_bits = static_cast<std::uint64_t>(shared + 127);
    t.decode_scale = std::ldexp(1.0, shared);
  }
  Quantized q = finish(x, layout, element, std::move(tiles), ScaleRule::mx_e8m0, false);
  q.tensor_amax = amax(x);
  return q;
}

Quantized quantize_nvfp4(std::span<const float> x, const Layout& layout) {
  detail::check_layout(x, layout);
  const double tensor_amax = amax(x);
  // core_nvfp4.cuh, compute_global_encode_scaling_factor_FP4.
  double s_enc = std::min(f32(448.0 * 6.0 / tensor_amax), kFloatMax);
  if (tensor_amax == 0 || s_enc == 0) s_enc = 1;
  const double s_dec = f32(1.0 / s_enc);  // quantize_transpose_nvfp4.cuh: 1.0 / S_enc
  const double sixth = f32(1.0 / 6.0);
  std::vector<Tile> tiles = tiles_of(x, layout);
  for (Tile& t : tiles) {
    // compute_decoding_scaling_factor: block_amax * (S_enc * (1/6)), converted to e4m3 satfinite.
    const double decode_wanted = f32(t.amax * f32(s_enc * sixth));
    const Rounded sb = numeric::round_scale(formats::ue4m3, Rounding::nearest_even,
                                            std::isnan(decode_wanted) ? 0.0 : decode_wanted);
    t.scale_bits = sb.bits;
    // block_scale_inverse = fminf(1.0f / (float(S_dec_b) * S_dec), float max).
    const double product = f32(sb.value * s_dec);
    t.scale = product == 0 ? kFloatMax : std::min(f32(1.0 / product), kFloatMax);
    t.decode_scale = sb.value * s_dec;  // exact: 4 and 24 significant bits
  }
  Quantized q = finish(x, layout, formats::e2m1, std::move(tiles), ScaleRule::nvfp4, true);
  q.global_scale = s_enc;
  q.global_decode = s_dec;
  q.tensor_amax = tensor_amax;
  return q;
}

Quantized row_slice(const Quantized& q, std::size_t first, std::size_t count) {
  // A tensor of one row of tiles (a per-tensor scale) slices anywhere: its tiles span every row.
  const bool one_tile_row = q.block_rows == q.rows;
  if (count == 0 || first + count > q.rows ||
      (!one_tile_row &&
       (q.block_rows == 0 || first % q.block_rows != 0 || count % q.block_rows != 0))) {
    throw std::invalid_argument(
        fmt::format("rows {}..{} of a {}-row tensor in blocks of {} rows are no whole blocks",
                    first, first + count, q.rows, q.block_rows));
  }
  Quantized s;
  s.element = q.element;
  s.mode = q.mode;
  s.rule = q.rule;
  s.rows = count;
  s.cols = q.cols;
  s.block_rows = one_tile_row ? count : q.block_rows;
  s.block_cols = q.block_cols;
  s.global_scale = q.global_scale;
  s.global_decode = q.global_decode;
  s.tensor_amax = q.tensor_amax;
  s.events = q.events;
  const auto range = [&](const auto& v) {
    const auto begin = v.begin() + static_cast<std::ptrdiff_t>(first * q.cols);
    return std::decay_t<decltype(v)>(begin, begin + static_cast<std::ptrdiff_t>(count * q.cols));
  };
  s.bits = range(q.bits);
  s.values = range(q.values);
  s.dequantized = range(q.dequantized);
  s.element_events = range(q.element_events);
  const std::size_t tiles_per_row = q.cols / q.block_cols;
  if (one_tile_row) {
    for (Tile tile : q.tiles) {
      tile.rows = count;
      s.tiles.push_back(tile);
    }
    return s;
  }
  for (std::size_t t = (first / q.block_rows) * tiles_per_row;
       t < ((first + count) / q.block_rows) * tiles_per_row; ++t) {
    Tile tile = q.tiles.at(t);
    tile.row -= first;
    s.tiles.push_back(tile);
  }
  return s;
}

}  // namespace ampbench::quant
