#include "harness/inputs/tensor_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "harness/io/files.hpp"
#include "harness/io/json_arrays.hpp"
#include "harness/io/number_text.hpp"

namespace ampbench::inputs {
namespace {

using numeric::Format;

std::string read_file(const std::filesystem::path& path) {
  try {
    return io::read_file(path);
  } catch (const io::FileError& e) {
    throw io::InputError(e.what());
  }
}

// ---- .npy -------------------------------------------------------------------------------------

// The header is a Python dict literal, {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
// A small parser for exactly the literals it may hold: strings, True/False, tuples of integers.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  struct Header {
    std::optional<std::string> descr;
    std::optional<bool> fortran_order;
    std::optional<std::vector<std::size_t>> shape;
  };

  Header parse() {
    Header h;
    expect('{');
    while (true) {
      skip_blanks();
      if (peek() == '}') break;
      const std::string key = string_literal("a key");
      expect(':');
      if (key == "descr") {
        if (h.descr) fail("key 'descr' appears twice");
        skip_blanks();
        if (peek() == '[') {
          fail(
              "structured dtypes (a list in 'descr') are not supported; only float16, float32 "
              "and float64 arrays are");
        }
        h.descr = string_literal("the value of 'descr'");
      } else if (key == "fortran_order") {
        if (h.fortran_order) fail("key 'fortran_order' appears twice");
        h.fortran_order = boolean();
      } else if (key == "shape") {
        if (h.shape) fail("key 'shape' appears twice");
        h.shape = tuple();
      } else {
        fail(fmt::format("unexpected key '{}' (expected 'descr', 'fortran_order', 'shape')", key));
      }
      skip_blanks();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail(fmt::format("expected ',' or '}}' {}", at()));
    }
    ++pos_;
    skip_blanks();
    if (pos_ != text_.size()) fail(fmt::format("unexpected text after the dict {}", at()));
    if (!h.descr) fail("missing key 'descr'");
    if (!h.fortran_order) fail("missing key 'fortran_order'");
    if (!h.shape) fail("missing key 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw io::InputError(fmt::format("{}: bad .npy header: {}", name_, what));
  }
  std::string at() const {
    if (pos_ >= text_.size()) return "at the end of the header";
    std::string_view excerpt = text_.substr(pos_, 12);
    while (!excerpt.empty() && std::isspace(static_cast<unsigned char>(excerpt.back()))) {
      excerpt.remove_suffix(1);
    }
    return fmt::format("at '{}' (offset {} of the header)", excerpt, pos_);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_blanks() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_blanks();
    if (peek() != c) fail(fmt::format("expected '{}' {}", c, at()));
    ++pos_;
  }
  std::string string_literal(std::string_view what) {
    skip_blanks();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(fmt::format("expected {} (a string) {}", what, at()));
    const std::size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_blanks();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail(fmt::format("expected True or False for 'fortran_order' {}", at()));
  }
  std::vector<std::size_t> tuple() {
    expect('(');
    std::vector<std::size_t> dims;
    while (true) {
      skip_blanks();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) {
        fail(fmt::format("expected a non-negative integer in 'shape' {}", at()));
      }
      std::size_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        const auto digit = static_cast<std::size_t>(peek() - '0');
        if (v > (std::numeric_limits<std::size_t>::max() - digit) / 10) {
          fail("a dimension in 'shape' is too large");
        }
        v = v * 10 + digit;
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2 long literal
      dims.push_back(v);
      skip_blanks();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') fail(fmt::format("expected ',' or ')' in 'shape' {}", at()));
    }
    ++pos_;
    return dims;
  }

  std::string_view text_;
  std::string_view name_;
  std::size_t pos_ = 0;
};

std::uint64_t load_le(const unsigned char* p, int bytes, bool big_endian) {
  std::uint64_t v = 0;
  for (int k = 0; k < bytes; ++k) {
    const int shift = 8 * (big_endian ? bytes - 1 - k : k);
    v |= static_cast<std::uint64_t>(p[k]) << shift;
  }
  return v;
}

// ---- JSON -------------------------------------------------------------------------------------

// A SAX handler for a nested list of numbers (or an object of them, when `members`): the shape is
// fixed by the first list closed at each depth, and every later list must match it.
class JsonTensorReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  JsonTensorReader(const Conversion& conversion, bool members, std::string_view text)
      : conversion_(conversion), members_(members), text_(text) {}

  std::vector<std::pair<std::string, Loaded>> tensors;
  std::string error;

  bool null() override { return other("null"); }
  bool boolean(bool) override { return other("a boolean"); }
  bool number_integer(number_integer_t v) override { return number(std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) override { return number(std::to_string(v)); }
  bool number_float(number_float_t, const string_t& text) override { return number(text); }
  bool string(string_t& s) override { return number(s); }
  bool binary(binary_t&) override { return other("binary data"); }

  bool start_object(std::size_t) override {
    if (members_ && !in_object_ && !started_) {
      in_object_ = true;
      started_ = true;
      return true;
    }
    return other("an object");
  }
  bool end_object() override { return true; }
  bool key(string_t& k) override {
    for (const auto& [name, loaded] : tensors) {
      if (name == k) return fail(fmt::format("member '{}' appears twice", k));
    }
    begin_tensor(k);
    return true;
  }
  bool start_array(std::size_t) override {
    if (!begin_value("a list")) return false;
    const std::size_t d = counts_.size();  // depth of the new list, from 0
    if (!counts_.empty()) ++counts_.back();
    if (leaf_depth_ && d >= *leaf_depth_) {
      return fail(fmt::format("{}: expected a number, got a list", place()));
    }
    counts_.push_back(0);
    if (dims_.size() <= d) dims_.resize(d + 1);
    return true;
  }
  bool end_array() override {
    const std::size_t d = counts_.size() - 1;
    const std::size_t got = counts_.back();
    if (!dims_[d]) {
      dims_[d] = got;
    } else if (*dims_[d] != got) {
      // The place of the list itself: the indices of its ancestors.
      counts_.pop_back();
      return fail(fmt::format("{}: expected {} elements, got {}", place(), *dims_[d], got));
    }
    counts_.pop_back();
    if (counts_.empty()) finish_tensor();
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& e) override {
    return fail(io::json_error(text_, position, last_token, e) +
                (io::is_number_overflow(e) ? io::as_string_hint(last_token) : ""));
  }

  bool done() const { return members_ ? started_ : !tensors.empty(); }

 private:
  bool fail(std::string message) {
    if (error.empty()) error = std::move(message);
    return false;
  }
  // The place of the current element: root[i][j] with the indices of the open lists.
  std::string place() const {
    std::string s = root_;
    for (const std::size_t c : counts_) s += fmt::format("[{}]", c == 0 ? 0 : c - 1);
    return s;
  }
  void begin_tensor(std::string name) {
    root_ = std::move(name);
    current_ = Loaded{};
    current_.tensor.format = conversion_.format;
    counts_.clear();
    dims_.clear();
    leaf_depth_.reset();
    have_value_ = true;
  }
  // Called for every value; at the top level (no open list) it starts a tensor.
  bool begin_value(const char* what) {
    if (!counts_.empty()) return true;
    if (members_) {
      if (!in_object_) {
        return fail(
            fmt::format("expected an object of tensors {{\"name\": [...], ...}}, got {}", what));
      }
      if (!have_value_) return fail("expected a member name");
      have_value_ = false;
      return true;
    }
    if (started_) return fail("more than one value at the top level");
    started_ = true;
    begin_tensor("$");
    have_value_ = false;
    return true;
  }
  void finish_tensor() {
    std::vector<std::size_t> shape;
    for (const auto& d : dims_) shape.push_back(d.value_or(0));
    current_.tensor.shape = std::move(shape);
    tensors.emplace_back(root_, std::move(current_));
  }
  bool other(const char* what) {
    if (!begin_value(what)) return false;
    if (counts_.empty()) {
      return fail(fmt::format("{}: expected a list or a number, got {}", root_, what));
    }
    ++counts_.back();
    return fail(fmt::format("{}: expected a number or a number string, got {}", place(), what));
  }
  bool number(const std::string& text) {
    if (!begin_value("a number")) return false;
    const std::size_t d = counts_.size();
    if (!leaf_depth_) {
      leaf_depth_ = d;
      // Deeper lists already closed (e.g. [[[]], 1]) contradict a number here.
      if (dims_.size() > d) {
        if (!counts_.empty()) ++counts_.back();
        return fail(fmt::format("{}: expected a list, got a number", place()));
      }
    } else if (d != *leaf_depth_) {
      if (!counts_.empty()) ++counts_.back();
      return fail(fmt::format("{}: expected a list, got a number", place()));
    }
    if (!counts_.empty()) ++counts_.back();
    // Element index: the tensor's elements so far, in row-major order.
    const auto parsed = io::parse_number(text, conversion_.format, conversion_.mode,
                                         conversion_.draw(current_.tensor.data.size()));
    if (!parsed) return fail(fmt::format("{}: '{}' is not a number", place(), io::excerpt(text)));
    const double v = parsed->rounded.value;
    current_.tensor.data.push_back(v);
    current_.report.add(std::isnan(v) && parsed->exact, parsed->rounded);
    if (counts_.empty()) finish_tensor();  // a scalar
    return true;
  }

  const Conversion& conversion_;
  bool members_;
  std::string_view text_;  // what is parsed, for the place of a syntax error
  bool in_object_ = false;
  bool started_ = false;
  bool have_value_ = false;  // a member name was read and its value is awaited
  std::string root_;
  Loaded current_;
  std::vector<std::size_t> counts_;               // elements seen in each open list
  std::vector<std::optional<std::size_t>> dims_;  // the shape, as far as known
  std::optional<std::size_t> leaf_depth_;         // depth of the numbers
};

std::vector<std::pair<std::string, Loaded>> parse_json(std::string_view text, const Conversion& f,
                                                       std::string_view name, bool members) {
  JsonTensorReader reader(f, members, text);
  const bool ok = nlohmann::json::sax_parse(text, &reader);
  if (!ok || !reader.error.empty() || !reader.done()) {
    throw io::InputError(
        fmt::format("{}: {}", name, reader.error.empty() ? "no JSON value" : reader.error));
  }
  return std::move(reader.tensors);
}

}  // namespace

Loaded parse_npy(std::span<const std::byte> data, const Conversion& conversion,
                 std::string_view name) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  const std::size_t size = data.size();
  const auto fail = [&](std::string_view what) {
    throw io::InputError(fmt::format("{}: {}", name, what));
  };
  constexpr unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0) {
    fail("not a .npy file (bad magic: the file must start with \\x93NUMPY)");
  }
  if (size < 8) fail("truncated: the file ends inside the format version");
  const int major = bytes[6];
  const int minor = bytes[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    fail(fmt::format("unsupported .npy format version {}.{} (supported: 1.0, 2.0, 3.0)", major,
                     minor));
  }
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  if (size < 8 + length_bytes) fail("truncated: the file ends inside the header length");
  const std::size_t header_length = load_le(bytes + 8, static_cast<int>(length_bytes), false);
  const std::size_t header_start = 8 + length_bytes;
  if (size - header_start < header_length) {
    fail(fmt::format("truncated: the header is {} bytes but only {} follow", header_length,
                     size - header_start));
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes + header_start), header_length);
  const auto h = HeaderParser(header, name).parse();

  const std::string& descr = *h.descr;
  const bool known_order = descr.size() == 3 && (descr[0] == '<' || descr[0] == '>');
  const int item = known_order && descr[1] == 'f' ? descr[2] - '0' : 0;
  if (item != 2 && item != 4 && item != 8) {
    fail(
        fmt::format("unsupported dtype '{}' (supported: '<f2', '<f4', '<f8' and big-endian "
                    "'>f2', '>f4', '>f8'; bfloat16 is not a NumPy dtype: save bf16 data as "
                    "float32, which holds every bf16 value exactly, and read it as bf16)",
                    descr));
  }
  if (*h.fortran_order) {
    fail(
        "fortran_order is True: only C-order (row-major) arrays are supported; save "
        "np.ascontiguousarray(a)");
  }
  const std::vector<std::size_t>& shape = *h.shape;
  std::size_t count = 0;
  try {
    count = element_count(shape);
  } catch (const io::InputError& e) {
    fail(e.what());
  }
  const std::size_t data_start = header_start + header_length;
  const std::size_t available = size - data_start;
  const auto itemsize = static_cast<std::size_t>(item);
  if (count > available / itemsize) {
    fail(
        fmt::format("truncated data: shape {} of '{}' needs {} elements of {} bytes, but only {} "
                    "bytes follow the header",
                    shape_string(shape), descr, count, itemsize, available));
  }
  if (available != count * itemsize) {
    fail(fmt::format("{} unexpected bytes after the data (shape {} of '{}' needs {} bytes)",
                     available - count * itemsize, shape_string(shape), descr, count * itemsize));
  }

  const bool big = descr[0] == '>';
  const Format& container = item == 2   ? numeric::formats::fp16
                            : item == 4 ? numeric::formats::fp32
                                        : numeric::formats::fp64;
  std::vector<double> exact(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t bits = load_le(bytes + data_start + i * itemsize, item, big);
    exact[i] = numeric::decode(container, bits);  // exact: every format is a subset
  }
  return convert(shape, exact, conversion, fmt::format("file:{}", name));
}

Loaded convert(std::vector<std::size_t> shape, std::span<const double> values,
               const Conversion& conversion, std::string source) {
  Loaded out;
  out.tensor.shape = std::move(shape);
  out.tensor.format = conversion.format;
  out.tensor.source = std::move(source);
  out.tensor.data.resize(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const numeric::Rounded r =
        numeric::round_to(conversion.format, conversion.mode, values[i], conversion.draw(i));
    out.tensor.data[i] = r.value;
    out.report.add(std::isnan(values[i]), r);
  }
  return out;
}

Loaded read_npy(const std::filesystem::path& path, const Conversion& f) {
  const std::string bytes = read_file(path);
  return parse_npy(std::as_bytes(std::span(bytes.data(), bytes.size())), f, path.string());
}

Loaded parse_json_tensor(std::string_view text, const Conversion& f, std::string_view name) {
  auto tensors = parse_json(text, f, name, false);
  Loaded out = std::move(tensors.front().second);
  out.tensor.source = fmt::format("file:{}", name);
  return out;
}

std::map<std::string, Loaded> parse_json_tensors(std::string_view text, const Conversion& f,
                                                 std::string_view name) {
  std::map<std::string, Loaded> out;
  for (auto& [member, loaded] : parse_json(text, f, name, true)) {
    loaded.tensor.source = fmt::format("file:{}#{}", name, member);
    out.emplace(member, std::move(loaded));
  }
  return out;
}

Loaded read_json_tensor(const std::filesystem::path& path, const Conversion& f) {
  return parse_json_tensor(read_file(path), f, path.string());
}

namespace {

// The position of the '#' of PATH.json#member, or npos.
std::size_t member_hash(std::string_view path) {
  const std::size_t hash = path.rfind('#');
  return hash != std::string_view::npos && path.substr(0, hash).ends_with(".json")
             ? hash
             : std::string_view::npos;
}

}  // namespace

std::string tensor_file_path(std::string_view path) {
  return std::string(path.substr(0, member_hash(path)));
}

Loaded read_tensor_file(std::string_view path, const Conversion& f) {
  const auto ends_with = [](std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
  };
  if (const std::size_t hash = member_hash(path); hash != std::string_view::npos) {
    const std::string_view file = path.substr(0, hash);
    const std::string member(path.substr(hash + 1));
    auto tensors = parse_json_tensors(read_file(std::filesystem::path(file)), f, file);
    const auto it = tensors.find(member);
    if (it == tensors.end()) {
      std::string known;
      for (const auto& [k, v] : tensors)
        known += fmt::format("{}'{}'", known.empty() ? "" : ", ", k);
      throw io::InputError(fmt::format("{}: no member '{}' (members: {})", file, member,
                                       known.empty() ? "none" : known));
    }
    return std::move(it->second);
  }
  if (ends_with(path, ".npy")) return read_npy(std::filesystem::path(path), f);
  if (ends_with(path, ".json")) return read_json_tensor(std::filesystem::path(path), f);
  throw io::InputError(fmt::format(
      "{}: unknown tensor file type (expected a name ending in .npy, .json or .json#member)",
      path));
}

void check_shape(const Tensor& tensor, std::span<const std::size_t> expected,
                 std::string_view what) {
  if (std::equal(tensor.shape.begin(), tensor.shape.end(), expected.begin(), expected.end())) {
    return;
  }
  throw io::InputError(fmt::format("{}: shape {} does not match the expected {}", what,
                                   shape_string(tensor.shape), shape_string(expected)));
}

}  // namespace ampbench::inputs
