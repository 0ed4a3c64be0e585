#include "harness/train/data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "harness/inputs/tensor_file.hpp"
#include "harness/io/files.hpp"
#include "harness/io/number_text.hpp"
#include "harness/numeric/rounding.hpp"

// The generated values must not depend on the platform: single binary64 operations only, no
// excess precision, no fused multiply-adds (CMakeLists.txt builds this file with
// -ffp-contract=off), and the transcendental functions are inputs' portable ones.
static_assert(FLT_EVAL_METHOD == 0, "binary64 arithmetic with excess precision is not supported");

namespace ampbench::train {
namespace {

namespace formats = numeric::formats;
constexpr auto kRne = numeric::Rounding::nearest_even;

// A value rounded to fp32 and counted in the data set's report.
double to_fp32(double x, inputs::RoundingReport& report) {
  const numeric::Rounded r = numeric::round_to(formats::fp32, kRne, x);
  report.add(std::isnan(x), r);
  return r.value;
}

// N(0, 1) from draws 0 and 1 of element `index` of the stream: the draws inputs' `normal`
// distribution uses, and its platform-independent Box-Muller.
double normal(std::uint64_t stream, std::uint64_t index) {
  return inputs::standard_normal(inputs::unit_double(inputs::draw(stream, index, 0)),
                                 inputs::unit_double(inputs::draw(stream, index, 1)));
}

double uniform(std::uint64_t stream, std::uint64_t index, int j) {
  return inputs::unit_double(inputs::draw(stream, index, j));
}

// cos(2 pi u) and sin(2 pi u) = cos(2 pi (u + 3/4)), u in [0, 1).
double cos_turns(double u) {
  return inputs::det_cos_2pi(u);
}
double sin_turns(double u) {
  const double v = u + 0.75;
  return inputs::det_cos_2pi(v < 1 ? v : v - 1);
}

// The streams of one generator, operand_seed(seed, k) = splitmix64(seed, 2^63 + k): apart from
// each other and from the batch order's splitmix64(seed, epoch) for the first 2^63 epochs.
enum Stream : std::uint64_t { kCentres = 0, kLabels = 1, kPlacement = 2, kNoise = 3 };
std::uint64_t stream(std::uint64_t seed, Stream s) {
  return inputs::operand_seed(seed, s);
}

// A label (or token) stream of its own per sample, so that sample i depends on (seed, i) only.
std::uint64_t sample_stream(std::uint64_t seed, std::size_t i) {
  return numeric::splitmix64(stream(seed, kLabels), i);
}

void require_positive(std::string_view what, std::size_t value) {
  if (value == 0) throw std::invalid_argument(fmt::format("{} must be at least 1", what));
}

std::size_t product(std::span<const std::size_t> shape) {
  std::size_t n = 1;
  for (const std::size_t d : shape) n *= d;
  return n;
}

// ---- files ------------------------------------------------------------------------------------

[[noreturn]] void fail(std::string_view file, std::string_view what) {
  throw DataError(fmt::format("{}: {}", file, what));
}

std::string read_file(const std::filesystem::path& path) {
  std::string bytes;
  try {
    bytes = io::read_file(path);
  } catch (const io::FileError& e) {
    throw DataError(e.what());
  }
  if (bytes.empty()) fail(path.string(), "empty file");
  return bytes;
}

// A label: a decimal integer, or a number whose value is an integer ("3.0", as written by tools
// that store labels as floats). Empty when the text is neither.
std::optional<std::int64_t> integer_value(std::string_view text) {
  std::int64_t v = 0;
  const char* first = text.data() + (!text.empty() && text.front() == '+' ? 1 : 0);
  const char* last = text.data() + text.size();
  if (const auto [end, ec] = std::from_chars(first, last, v);
      ec == std::errc() && end == last && first != last) {
    return v;
  }
  const auto parsed = io::parse_number(text, formats::fp64);
  if (!parsed || !parsed->exact) return std::nullopt;
  const double x = parsed->rounded.value;
  if (!(std::abs(x) <= 0x1p53) || std::floor(x) != x) return std::nullopt;
  return static_cast<std::int64_t>(x);
}

// Checks the labels against `classes` (or sets classes = max + 1) and the sample count.
void finish_targets(Dataset& d, std::optional<std::size_t> classes, std::string_view file,
                    const std::function<std::string(std::size_t)>& place) {
  std::int64_t max = -1;
  for (std::size_t k = 0; k < d.targets.size(); ++k) {
    const std::int64_t t = d.targets[k];
    if (t < 0) fail(file, fmt::format("{}: label {} is not a non-negative integer", place(k), t));
    if (classes && static_cast<std::uint64_t>(t) >= *classes) {
      fail(file, fmt::format("{}: label {} is not below the number of classes, {}", place(k), t,
                             *classes));
    }
    max = std::max(max, t);
  }
  // In unsigned arithmetic: max + 1 overflows an int64 for the label 2^63 - 1.
  d.classes = classes ? *classes : static_cast<std::size_t>(max) + 1;
}

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(trim(line.substr(start, comma - start)));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

// ---- .npy targets -----------------------------------------------------------------------------

// inputs::parse_npy reads float arrays only; labels are usually saved as integers. This reads the
// header of a .npy file (the version, the length, and the three keys of the dict) as far as the
// dtype and shape of an integer array need; float arrays go to parse_npy.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::size_t> shape;
  std::size_t data_offset = 0;
};

NpyHeader npy_header(std::string_view bytes, std::string_view file) {
  const auto bad = [&](std::string_view what) {
    fail(file, fmt::format("bad .npy file: {}", what));
  };
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY") {
    bad("the file must start with \\x93NUMPY");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3 || bytes.size() < 8 + length_bytes) {
    bad(fmt::format("unsupported format version {}", major));
  }
  std::size_t length = 0;
  for (std::size_t k = 0; k < length_bytes; ++k) {
    length |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
  }
  const std::size_t start = 8 + length_bytes;
  if (bytes.size() - start < length) bad("truncated header");
  const std::string_view dict = bytes.substr(start, length);

  // The text after 'key': up to the end of the dict.
  const auto value_of = [&](std::string_view key) {
    std::size_t at = dict.find(fmt::format("'{}'", key));
    if (at == std::string_view::npos) at = dict.find(fmt::format("\"{}\"", key));
    if (at == std::string_view::npos) bad(fmt::format("no '{}' in the header", key));
    std::string_view rest = dict.substr(at + key.size() + 2);
    rest = trim(rest);
    if (rest.empty() || rest.front() != ':') bad(fmt::format("no ':' after '{}'", key));
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    return rest;
  };
  NpyHeader h;
  const std::string_view descr = value_of("descr");
  const std::size_t close = descr.empty() ? 0 : descr.find(descr.front(), 1);
  if (descr.empty() || (descr.front() != '\'' && descr.front() != '"') ||
      close == std::string_view::npos) {
    bad("'descr' is not a string (structured dtypes are not supported)");
  }
  h.descr = std::string(descr.substr(1, close - 1));
  h.fortran_order = value_of("fortran_order").substr(0, 4) == "True";
  std::string_view shape = value_of("shape");
  if (shape.empty() || shape.front() != '(') bad("'shape' is not a tuple");
  shape.remove_prefix(1);
  while (true) {
    shape = trim(shape);
    while (!shape.empty() && (shape.front() == ' ' || shape.front() == ',')) shape.remove_prefix(1);
    if (!shape.empty() && shape.front() == ')') break;
    std::size_t d = 0;
    const auto [end, ec] = std::from_chars(shape.data(), shape.data() + shape.size(), d);
    if (ec != std::errc()) bad("'shape' is not a tuple of non-negative integers");
    h.shape.push_back(d);
    shape.remove_prefix(static_cast<std::size_t>(end - shape.data()));
    if (!shape.empty() && shape.front() == 'L') shape.remove_prefix(1);  // Python 2 longs
  }
  h.data_offset = start + length;
  return h;
}

// The labels of a targets .npy, row-major, with its shape.
std::pair<std::vector<std::int64_t>, std::vector<std::size_t>> read_npy_labels(
    const std::filesystem::path& path) {
  const std::string file = path.string();
  const std::string bytes = read_file(path);
  const NpyHeader h = npy_header(bytes, file);
  const std::string& descr = h.descr;
  const bool ordered = descr.size() == 3 && (descr[0] == '<' || descr[0] == '>' || descr[0] == '|');
  const char kind = ordered ? descr[1] : '?';
  const int item = ordered ? descr[2] - '0' : 0;

  if (kind == 'f') {
    // Labels saved as floats: the inputs reader, every value read exactly.
    inputs::Loaded loaded;
    try {
      loaded = inputs::parse_npy(std::as_bytes(std::span(bytes.data(), bytes.size())),
                                 formats::fp64, file);
    } catch (const io::InputError& e) {
      throw DataError(e.what());
    }
    std::vector<std::int64_t> labels(loaded.tensor.size());
    for (std::size_t k = 0; k < labels.size(); ++k) {
      const double x = loaded.tensor.data[k];
      if (!(std::abs(x) <= 0x1p53) || std::floor(x) != x) {
        fail(file, fmt::format("index {}: label {} is not a non-negative integer", k, x));
      }
      labels[k] = static_cast<std::int64_t>(x);
    }
    return {std::move(labels), loaded.tensor.shape};
  }
  if ((kind != 'i' && kind != 'u') || (item != 1 && item != 2 && item != 4 && item != 8)) {
    fail(file, fmt::format("unsupported dtype '{}' for targets (supported: signed and unsigned "
                           "integers of 1, 2, 4 or 8 bytes, and floats holding integers)",
                           io::excerpt(descr)));
  }
  if (h.fortran_order) {
    fail(file,
         "fortran_order is True: only C-order arrays are supported; save "
         "np.ascontiguousarray(a)");
  }
  std::size_t count = 0;
  try {
    count = inputs::element_count(h.shape);
  } catch (const io::InputError& e) {
    fail(file, e.what());
  }
  const auto itemsize = static_cast<std::size_t>(item);
  const std::size_t available = bytes.size() - h.data_offset;
  if (count > available / itemsize || available != count * itemsize) {
    fail(file, fmt::format("shape {} of '{}' needs {} elements of {} bytes, but {} bytes follow "
                           "the header",
                           inputs::shape_string(h.shape), descr, count, itemsize, available));
  }
  const bool big = descr[0] == '>';
  std::vector<std::int64_t> labels(count);
  for (std::size_t k = 0; k < count; ++k) {
    std::uint64_t v = 0;
    for (std::size_t b = 0; b < itemsize; ++b) {
      const auto byte = static_cast<unsigned char>(bytes[h.data_offset + k * itemsize + b]);
      v |= std::uint64_t{byte} << (8 * (big ? itemsize - 1 - b : b));
    }
    if (kind == 'i' && itemsize < 8 && (v >> (8 * itemsize - 1)) != 0) {
      v |= ~std::uint64_t{0} << (8 * itemsize);  // sign extension
    }
    // A uint64 label beyond 2^63 - 1 is not an int64 label.
    if (kind == 'u' && v >> 63) {
      fail(file, fmt::format("index {}: label {} is too large", k, v));
    }
    labels[k] = static_cast<std::int64_t>(v);  // negative labels are refused by finish_targets
  }
  return {std::move(labels), h.shape};
}

// The samples `indices` of `d`, as a data set named `name`.
Dataset subset(const Dataset& d, std::span<const std::size_t> indices, std::string name) {
  Batch b = gather(d, indices);
  Dataset out;
  out.name = std::move(name);
  out.sample_shape = d.sample_shape;
  out.classes = d.classes;
  out.targets_per_sample = d.targets_per_sample;
  out.inputs = std::move(b.inputs);
  out.targets = std::move(b.targets);
  return out;
}

}  // namespace

std::size_t Dataset::sample_size() const {
  return product(sample_shape);
}

std::size_t Dataset::samples() const {
  const std::size_t n = sample_size();
  return n == 0 ? 0 : inputs.size() / n;
}

// ---- generators -------------------------------------------------------------------------------

Dataset make_clusters(std::uint64_t seed, std::size_t samples, std::size_t features,
                      std::size_t classes, double sigma) {
  require_positive("samples", samples);
  require_positive("features", features);
  require_positive("classes", classes);
  if (!(sigma >= 0) || !std::isfinite(sigma)) {
    throw std::invalid_argument(fmt::format("sigma must be finite and >= 0 (got {})", sigma));
  }
  Dataset d;
  d.name = fmt::format("clusters(seed={}, samples={}, features={}, classes={}, sigma={})", seed,
                       samples, features, classes, sigma);
  d.sample_shape = {features};
  d.classes = classes;
  d.targets_per_sample = 1;
  // The centres stay in binary64: only the samples are data.
  std::vector<double> centres(classes * features);
  for (std::size_t k = 0; k < centres.size(); ++k) centres[k] = normal(stream(seed, kCentres), k);
  d.inputs.resize(samples * features);
  d.targets.resize(samples);
  for (std::size_t i = 0; i < samples; ++i) {
    std::uint64_t counter = 0;
    const std::uint64_t label = uniform_below(sample_stream(seed, i), &counter, classes);
    d.targets[i] = static_cast<std::int64_t>(label);
    for (std::size_t f = 0; f < features; ++f) {
      const std::size_t k = i * features + f;
      const double x = centres[label * features + f] + sigma * normal(stream(seed, kNoise), k);
      d.inputs[k] = to_fp32(x, d.rounding);
    }
  }
  return d;
}

Dataset make_images(std::uint64_t seed, std::size_t samples, std::size_t channels, std::size_t size,
                    std::size_t classes) {
  require_positive("samples", samples);
  require_positive("channels", channels);
  require_positive("classes", classes);
  if (size < 4) throw std::invalid_argument(fmt::format("size must be at least 4 (got {})", size));
  constexpr double kNoiseSigma = 0.4;
  Dataset d;
  d.name = fmt::format("images(seed={}, samples={}, channels={}, size={}, classes={})", seed,
                       samples, channels, size, classes);
  d.sample_shape = {channels, size, size};
  d.classes = classes;
  d.targets_per_sample = 1;
  const std::size_t plane = size * size;
  const std::size_t sample_size = channels * plane;
  d.inputs.resize(samples * sample_size);
  d.targets.resize(samples);
  // The bar: `half` pixels either side of its centre along its direction, one pixel wide; the
  // centre ranges over [half, size - 1 - half] in both coordinates, so the bar stays (nearly)
  // inside the image.
  const double half = static_cast<double>(size) / 4;
  const double span = static_cast<double>(size) - 1 - 2 * half;
  for (std::size_t i = 0; i < samples; ++i) {
    std::uint64_t counter = 0;
    const std::uint64_t label = uniform_below(sample_stream(seed, i), &counter, classes);
    d.targets[i] = static_cast<std::int64_t>(label);
    // The angle pi label / classes, as a fraction of a turn.
    const double turns = static_cast<double>(label) / static_cast<double>(2 * classes);
    const double c = cos_turns(turns);
    const double s = sin_turns(turns);
    const double cx = half + span * uniform(stream(seed, kPlacement), i, 0);
    const double cy = half + span * uniform(stream(seed, kPlacement), i, 1);
    const double brightness = 0.5 + uniform(stream(seed, kPlacement), i, 2);
    for (std::size_t y = 0; y < size; ++y) {
      for (std::size_t x = 0; x < size; ++x) {
        const double dx = static_cast<double>(x) - cx;
        const double dy = static_cast<double>(y) - cy;
        const double along = std::abs(dx * c + dy * s);
        const double across = std::abs(dy * c - dx * s);
        const double bar = std::max(0.0, 1 - across) * std::clamp(half + 0.5 - along, 0.0, 1.0);
        for (std::size_t ch = 0; ch < channels; ++ch) {
          const std::size_t k = i * sample_size + ch * plane + y * size + x;
          const double noise = kNoiseSigma * normal(stream(seed, kNoise), k);
          d.inputs[k] = to_fp32(brightness * bar + noise, d.rounding);
        }
      }
    }
  }
  return d;
}

std::size_t positional_dims(std::size_t length) {
  std::size_t pairs = 1;
  for (std::size_t period = 4; period < 2 * length; period *= 2) ++pairs;
  return 2 * pairs;
}

Dataset make_sequences(std::uint64_t seed, std::size_t samples, std::size_t length,
                       std::size_t vocab) {
  require_positive("samples", samples);
  require_positive("length", length);
  require_positive("vocab", vocab);
  if (length > (std::size_t{1} << 40)) throw std::invalid_argument("length must be below 2^40");
  const std::size_t pos_dims = positional_dims(length);
  const std::size_t width = vocab + pos_dims;
  Dataset d;
  d.name = fmt::format("sequences(seed={}, samples={}, length={}, vocab={})", seed, samples, length,
                       vocab);
  d.sample_shape = {length, width};
  d.classes = vocab;
  d.targets_per_sample = length;
  d.inputs.assign(samples * length * width, 0.0);
  d.targets.resize(samples * length);
  // The encoding is the same for every sample: sin and cos of 2 pi p / T for T = 4, 8, ...;
  // p mod T over T is exact, T being a power of two.
  std::vector<double> encoding(length * pos_dims);
  inputs::RoundingReport encoding_report;
  for (std::size_t p = 0; p < length; ++p) {
    for (std::size_t k = 0; k < pos_dims / 2; ++k) {
      const std::size_t period = std::size_t{4} << k;
      const double u = static_cast<double>(p % period) / static_cast<double>(period);
      encoding[p * pos_dims + 2 * k] = to_fp32(sin_turns(u), encoding_report);
      encoding[p * pos_dims + 2 * k + 1] = to_fp32(cos_turns(u), encoding_report);
    }
  }
  std::vector<std::uint64_t> tokens(length);
  for (std::size_t i = 0; i < samples; ++i) {
    std::uint64_t counter = 0;
    const std::uint64_t stream_i = sample_stream(seed, i);
    for (std::size_t p = 0; p < length; ++p) tokens[p] = uniform_below(stream_i, &counter, vocab);
    for (std::size_t p = 0; p < length; ++p) {
      double* row = d.inputs.data() + (i * length + p) * width;
      for (std::size_t v = 0; v < vocab; ++v) {
        row[v] = to_fp32(v == tokens[p] ? 1.0 : 0.0, d.rounding);
      }
      std::copy_n(encoding.data() + p * pos_dims, pos_dims, row + vocab);
      d.targets[i * length + p] = static_cast<std::int64_t>(tokens[p == 0 ? 0 : p - 1]);
    }
    d.rounding += encoding_report;
  }
  return d;
}

// ---- files ------------------------------------------------------------------------------------

Dataset load_dataset_csv(const std::filesystem::path& path, std::optional<std::size_t> classes) {
  const std::string file = path.string();
  const std::string text = read_file(path);
  Dataset d;
  d.name = file;
  std::size_t columns = 0;       // fields per row, set by the first data row
  std::size_t columns_line = 0;  // the line that set it
  bool header = false;
  bool first = true;
  std::vector<std::size_t> label_lines;  // the line of each label, for messages
  std::size_t line_no = 0;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = trim(std::string_view(text).substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const auto fields = fields_of(line);
    const auto where = [&](std::size_t field) {
      return fmt::format("line {}, field {}", line_no, field + 1);
    };
    if (first) {
      first = false;
      const bool numbers = std::all_of(fields.begin(), fields.end(), [](std::string_view f) {
        return io::parse_number(f, formats::fp64).has_value();
      });
      if (!numbers) {
        header = true;
        columns = fields.size();
        columns_line = line_no;
        continue;
      }
    }
    if (columns == 0) {
      columns = fields.size();
      columns_line = line_no;
    }
    if (fields.size() != columns) {
      fail(file, fmt::format("line {}: {} fields, but {} {} has {}", line_no, fields.size(),
                             header ? "the header on line" : "line", columns_line, columns));
    }
    if (columns < 2) {
      fail(file, fmt::format("line {}: a row needs at least one feature and a label, got {} "
                             "field",
                             line_no, fields.size()));
    }
    for (std::size_t k = 0; k + 1 < columns; ++k) {
      if (fields[k].empty()) fail(file, fmt::format("{}: empty field", where(k)));
      const auto parsed = io::parse_number(fields[k], formats::fp32, kRne);
      const std::string quoted = io::excerpt(fields[k]);
      if (!parsed) fail(file, fmt::format("{}: '{}' is not a number", where(k), quoted));
      if (!std::isfinite(parsed->rounded.value)) {
        fail(file, parsed->rounded.event == numeric::RoundingEvent::overflow
                       ? fmt::format("{}: '{}' is beyond the range of fp32", where(k), quoted)
                       : fmt::format("{}: '{}' is not a finite number", where(k), quoted));
      }
      d.rounding.add(false, parsed->rounded);
      d.inputs.push_back(parsed->rounded.value);
    }
    const std::string_view label = fields[columns - 1];
    const auto value = integer_value(label);
    if (!value || *value < 0) {
      fail(file, fmt::format("{} (the label): '{}' is not a non-negative integer",
                             where(columns - 1), io::excerpt(label)));
    }
    d.targets.push_back(*value);
    label_lines.push_back(line_no);
  }
  if (d.targets.empty()) fail(file, header ? "no data rows after the header" : "no data rows");
  d.sample_shape = {columns - 1};
  d.targets_per_sample = 1;
  finish_targets(d, classes, file, [&](std::size_t k) {
    return fmt::format("line {}, field {} (the label)", label_lines[k], columns);
  });
  return d;
}

Dataset load_dataset_npy(const std::filesystem::path& inputs_path,
                         const std::filesystem::path& targets_path,
                         std::optional<std::size_t> classes) {
  const std::string inputs_file = inputs_path.string();
  const std::string targets_file = targets_path.string();
  const std::string input_bytes = read_file(inputs_path);
  inputs::Loaded loaded;
  try {
    loaded = inputs::parse_npy(std::as_bytes(std::span(input_bytes.data(), input_bytes.size())),
                               formats::fp32, inputs_file);
  } catch (const io::InputError& e) {
    throw DataError(e.what());
  }
  const std::vector<std::size_t>& shape = loaded.tensor.shape;
  if (shape.empty()) fail(inputs_file, "a scalar (shape []) has no sample dimension");
  const std::size_t samples = shape[0];
  if (samples == 0)
    fail(inputs_file, fmt::format("no samples (shape {})", inputs::shape_string(shape)));
  Dataset d;
  d.name = fmt::format("{} + {}", inputs_file, targets_file);
  d.sample_shape.assign(shape.begin() + 1, shape.end());
  if (d.sample_shape.empty()) d.sample_shape = {1};
  const std::size_t sample_size = d.sample_size();
  for (std::size_t k = 0; k < loaded.tensor.size(); ++k) {
    if (!std::isfinite(loaded.tensor.data[k])) {
      fail(inputs_file, fmt::format("element {} (sample {}) is {} in fp32: training inputs must be "
                                    "finite",
                                    k, k / sample_size, loaded.tensor.data[k]));
    }
  }
  d.inputs = std::move(loaded.tensor.data);
  d.rounding = loaded.report;

  auto [labels, target_shape] = read_npy_labels(targets_path);
  if (target_shape.empty() || target_shape.size() > 2) {
    fail(targets_file, fmt::format("shape {}: expected [samples] or [samples, k]",
                                   inputs::shape_string(target_shape)));
  }
  if (target_shape[0] != samples) {
    fail(targets_file,
         fmt::format("{} samples, but {} has {}", target_shape[0], inputs_file, samples));
  }
  d.targets_per_sample = target_shape.size() == 2 ? target_shape[1] : 1;
  if (d.targets_per_sample == 0) {
    fail(targets_file,
         fmt::format("shape {} has no targets per sample", inputs::shape_string(target_shape)));
  }
  d.targets = std::move(labels);
  finish_targets(d, classes, targets_file,
                 [](std::size_t k) { return fmt::format("index {}", k); });
  return d;
}

// ---- batches ----------------------------------------------------------------------------------

std::uint64_t uniform_below(std::uint64_t stream, std::uint64_t* counter, std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("uniform_below: n must be at least 1");
  // 2^64 mod n: the draws at or above 2^64 - that would favour the smallest integers.
  const std::uint64_t partial = (0 - n) % n;
  while (true) {
    const std::uint64_t x = numeric::splitmix64(stream, (*counter)++);
    if (partial == 0 || x < 0 - partial) return x % n;
  }
}

std::vector<std::size_t> epoch_permutation(std::size_t samples, std::uint64_t epoch,
                                           std::uint64_t seed) {
  std::vector<std::size_t> order(samples);
  for (std::size_t i = 0; i < samples; ++i) order[i] = i;
  const std::uint64_t stream_e = numeric::splitmix64(seed, epoch);
  std::uint64_t counter = 0;
  for (std::size_t i = samples; i-- > 1;) {
    std::swap(order[i], order[uniform_below(stream_e, &counter, i + 1)]);
  }
  return order;
}

std::vector<std::size_t> batch_indices(std::size_t samples, std::size_t batch_size,
                                       std::uint64_t step, std::uint64_t seed) {
  require_positive("samples", samples);
  require_positive("batch_size", batch_size);
  constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
  if (step > (kMax - batch_size) / batch_size) {
    throw std::invalid_argument(
        fmt::format("batch {} of size {} lies beyond 2^64 samples", step, batch_size));
  }
  std::vector<std::size_t> out;
  out.reserve(batch_size);
  std::uint64_t epoch = kMax;  // the epoch whose order `order` holds; none yet
  std::vector<std::size_t> order;
  for (std::uint64_t pos = step * batch_size; pos < (step + 1) * batch_size; ++pos) {
    if (pos / samples != epoch) {
      epoch = pos / samples;
      order = epoch_permutation(samples, epoch, seed);
    }
    out.push_back(order[pos % samples]);
  }
  return out;
}

Batch gather(const Dataset& dataset, std::span<const std::size_t> indices) {
  const std::size_t n = dataset.samples();
  const std::size_t width = dataset.sample_size();
  const std::size_t tps = dataset.targets_per_sample;
  Batch b;
  b.size = indices.size();
  b.inputs.reserve(indices.size() * width);
  b.targets.reserve(indices.size() * tps);
  for (const std::size_t i : indices) {
    if (i >= n) {
      throw std::out_of_range(
          fmt::format("sample index {} is beyond the {} samples of {}", i, n, dataset.name));
    }
    const auto in = dataset.inputs.begin() + static_cast<std::ptrdiff_t>(i * width);
    b.inputs.insert(b.inputs.end(), in, in + static_cast<std::ptrdiff_t>(width));
    const auto t = dataset.targets.begin() + static_cast<std::ptrdiff_t>(i * tps);
    b.targets.insert(b.targets.end(), t, t + static_cast<std::ptrdiff_t>(tps));
  }
  return b;
}

Split split(const Dataset& dataset, std::size_t eval_count, std::uint64_t seed) {
  const std::size_t n = dataset.samples();
  if (eval_count > n) {
    throw std::invalid_argument(
        fmt::format("cannot hold out {} of the {} samples of {}", eval_count, n, dataset.name));
  }
  const std::vector<std::size_t> order =
      epoch_permutation(n, std::numeric_limits<std::uint64_t>::max(), seed);
  std::vector<bool> held_out(n, false);
  for (std::size_t k = 0; k < eval_count; ++k) held_out[order[k]] = true;
  std::vector<std::size_t> train_indices;
  std::vector<std::size_t> eval_indices;
  for (std::size_t i = 0; i < n; ++i) (held_out[i] ? eval_indices : train_indices).push_back(i);
  return Split{subset(dataset, train_indices, dataset.name + " [train]"),
               subset(dataset, eval_indices, dataset.name + " [eval]")};
}

Split split_fraction(const Dataset& dataset, double eval_fraction, std::uint64_t seed) {
  if (!(eval_fraction >= 0 && eval_fraction <= 1)) {
    throw std::invalid_argument(
        fmt::format("eval_fraction must be in [0, 1] (got {})", eval_fraction));
  }
  const double n = static_cast<double>(dataset.samples());
  return split(dataset, static_cast<std::size_t>(std::floor(eval_fraction * n + 0.5)), seed);
}

}  // namespace ampbench::train
