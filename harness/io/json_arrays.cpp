#include "harness/io/json_arrays.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "harness/io/files.hpp"

namespace ampbench::io {
namespace {

using json = nlohmann::json;

// A SAX handler that accepts {"name": [number-or-string, ...], ...} and nothing else.
class Reader : public nlohmann::json_sax<json> {
 public:
  Reader(std::string_view text, std::span<const std::string_view> names)
      : text_(text), names_(names) {}

  std::map<std::string, std::vector<std::string>> arrays;
  std::string error;

  bool null() override { return element("null"); }
  bool boolean(bool) override { return element("a boolean"); }
  bool number_integer(number_integer_t v) override { return number(std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) override { return number(std::to_string(v)); }
  bool number_float(number_float_t, const string_t& text) override { return number(text); }
  bool string(string_t& s) override { return number(s); }
  bool binary(binary_t&) override { return element("binary data"); }

  bool start_object(std::size_t) override {
    if (depth_++ == 0) return true;
    return element("an object");
  }
  bool end_object() override {
    --depth_;
    for (const auto name : names_) {
      if (!arrays.contains(std::string(name)))
        return fail(fmt::format("missing member '{}'", name));
    }
    return true;
  }
  bool key(string_t& k) override {
    if (std::find(names_.begin(), names_.end(), k) == names_.end()) {
      return fail(fmt::format("unknown member '{}' (expected {})", k, expected_members()));
    }
    if (arrays.contains(k)) return fail(fmt::format("member '{}' appears twice", k));
    key_ = k;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0)
      return fail("expected an object with members " + expected_members() + ", got an array");
    if (depth_++ == 1) {
      arrays[key_];  // present, possibly empty
      return true;
    }
    return element("an array");
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& e) override {
    return fail(json_error(text_, position, last_token, e) +
                (is_number_overflow(e) ? as_string_hint(last_token) : ""));
  }

 private:
  std::string expected_members() const {
    std::string s;
    for (const auto name : names_) s += fmt::format("{}'{}'", s.empty() ? "" : ", ", name);
    return s;
  }
  bool fail(std::string message) {
    if (error.empty()) error = std::move(message);
    return false;
  }
  // A value where a number belongs.
  bool number(std::string text) {
    if (depth_ != 2) return element("a number");
    arrays[key_].push_back(std::move(text));
    return true;
  }
  bool element(const char* what) {
    if (depth_ == 0)
      return fail(
          fmt::format("expected an object with members {}, got {}", expected_members(), what));
    if (depth_ == 1) return fail(fmt::format("member '{}': expected an array, got {}", key_, what));
    return fail(fmt::format("{}[{}]: expected a number or a hex-float string, got {}", key_,
                            arrays[key_].size(), what));
  }

  std::string_view text_;
  std::span<const std::string_view> names_;
  int depth_ = 0;
  std::string key_;
};

}  // namespace

std::string as_string_hint(std::string_view number) {
  return fmt::format("; as a string, \"{}\", it is rounded from its exact value", excerpt(number));
}

std::map<std::string, std::vector<std::string>> read_number_arrays(
    std::string_view text, std::span<const std::string_view> names) {
  Reader reader(text, names);
  const bool ok = json::sax_parse(text, &reader);
  if (!ok || !reader.error.empty()) {
    throw InputError(reader.error.empty() ? std::string("not a JSON object") : reader.error);
  }
  return std::move(reader.arrays);
}

}  // namespace ampbench::io
