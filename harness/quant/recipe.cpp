// FP8 and microscaling training recipes as values: the built-ins and user recipes in TOML
// (recipe.hpp, docs/scaling.md).
#include "harness/quant/recipe.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>  // Debian 12 libtomlplusplus-dev 3.3: toml.h, no toml.hpp

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <sstream>
#include <utility>

#include "harness/io/files.hpp"
#include "harness/numeric/options.hpp"

namespace ampbench::quant {
namespace {

namespace formats = numeric::formats;
using numeric::Format;
using numeric::Rounding;

OperandRecipe operand(Format element, Granularity granularity, std::size_t block, ScaleChoice scale,
                      Rounding rounding = Rounding::nearest_even) {
  OperandRecipe o;
  o.element = element;
  o.granularity = granularity;
  o.block = block;
  o.scale = scale;
  o.scale_format = scale_format_of(scale);
  o.rounding = rounding;
  return o;
}

Recipe make(std::string name, std::string description, OperandRecipe x, OperandRecipe w,
            OperandRecipe dy) {
  Recipe r;
  r.base = name;
  r.name = std::move(name);
  r.description = std::move(description);
  r.operands = {x, w, dy};
  return r;
}

// TE DelayedScaling / Float8CurrentScaling with Format.HYBRID: e4m3 forward, e5m2 gradients.
Recipe make_per_tensor(ScaleChoice scale) {
  const bool delayed = scale == ScaleChoice::delayed;
  const OperandRecipe fwd = operand(formats::e4m3, Granularity::tensor, 0, scale);
  return make(delayed ? "fp8-delayed" : "fp8-current",
              delayed ? "Transformer Engine DelayedScaling: a per-tensor fp32 scale from the amax "
                        "history, HYBRID (e4m3 forward, e5m2 gradients)"
                      : "Transformer Engine Float8CurrentScaling: a per-tensor fp32 scale from the "
                        "tensor's own amax, HYBRID (e4m3 forward, e5m2 gradients)",
              fwd, fwd, operand(formats::e5m2, Granularity::tensor, 0, scale));
}

Recipe make_fp8_block() {
  const OperandRecipe tile = operand(formats::e4m3, Granularity::tile, 128, ScaleChoice::pow2);
  Recipe r = make("fp8-block",
                  "DeepSeek-V3 / TE Float8BlockScaling: e4m3, 1x128 tiles for x and dy, 128x128 "
                  "blocks for w, power-of-two fp32 scales, promotion to fp32 every 128 products",
                  tile, operand(formats::e4m3, Granularity::block, 128, ScaleChoice::pow2), tile);
  r.promote_interval = 128;
  return r;
}

Recipe make_mx(std::string name, Format element, std::vector<Format> options) {
  const OperandRecipe o = operand(element, Granularity::tile, 32, ScaleChoice::mx);
  Recipe r = make(std::move(name),
                  fmt::format("OCP MX v1.0: {} elements in blocks of 32 along K with an E8M0 scale",
                              element.name),
                  o, o, o);
  r.element_options = std::move(options);
  return r;
}

Recipe make_nvfp4() {
  OperandRecipe x = operand(formats::e2m1, Granularity::tile, 16, ScaleChoice::nvfp4);
  x.hadamard = true;
  OperandRecipe dy = x;
  dy.rounding = Rounding::stochastic_proportional;
  return make("nvfp4",
              "NVIDIA's NVFP4 pretraining recipe: e2m1 in blocks of 16 with E4M3 block scales and "
              "an fp32 tensor scale, 16x16 blocks for w, stochastic rounding for dy, the 16x16 "
              "random Hadamard transform on the weight-gradient GEMM's inputs",
              x, operand(formats::e2m1, Granularity::block, 16, ScaleChoice::nvfp4), dy);
}

const std::vector<Recipe>& builtins() {
  static const std::vector<Recipe> all = {
      make_per_tensor(ScaleChoice::delayed),
      make_per_tensor(ScaleChoice::current),
      make_fp8_block(),
      make_mx("mxfp8", formats::e4m3, {formats::e4m3, formats::e5m2}),
      make_mx("mxfp6", formats::e3m2, {formats::e3m2, formats::e2m3}),
      make_mx("mxfp4", formats::e2m1, {formats::e2m1}),
      make_nvfp4()};
  return all;
}

constexpr std::array<Role, 3> kRoles = {Role::x, Role::w, Role::dy};

template <typename E, std::size_t N>
std::optional<E> enum_from_name(std::string_view name, const std::array<E, N>& all,
                                std::string_view (*name_of)(E)) {
  for (const E e : all) {
    if (name_of(e) == name) return e;
  }
  return std::nullopt;
}

template <typename E, std::size_t N>
std::string enum_names(const std::array<E, N>& all, std::string_view (*name_of)(E)) {
  std::string out;
  for (const E e : all) out += (out.empty() ? "" : ", ") + std::string(name_of(e));
  return out;
}

constexpr std::array<Granularity, 3> kGranularities = {Granularity::tensor, Granularity::tile,
                                                       Granularity::block};
constexpr std::array<ScaleChoice, 6> kScales = {ScaleChoice::delayed, ScaleChoice::current,
                                                ScaleChoice::pow2,    ScaleChoice::mx,
                                                ScaleChoice::nvfp4,   ScaleChoice::mx_ceil};
constexpr std::array<ScaleFormat, 3> kScaleFormats = {ScaleFormat::fp32, ScaleFormat::ue8m0,
                                                      ScaleFormat::ue4m3};

// A format's name as a recipe file writes it.
std::string format_text(const Format& f) {
  const auto* b = std::find_if(std::begin(formats::builtin), std::end(formats::builtin),
                               [&](const Format& g) { return numeric::same_format(g, f); });
  if (b != std::end(formats::builtin)) return b->name;
  return fmt::format("user:p={},emin={},emax={},specials={}", f.precision, f.emin, f.emax,
                     numeric::specials_name(f.specials));
}

// ---- TOML ---------------------------------------------------------------------------------------

std::string type_of(const toml::node& node) {
  std::ostringstream out;
  out << node.type();
  return out.str();
}

class RecipeReader {
 public:
  explicit RecipeReader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const toml::source_region& where, const std::string& message) const {
    throw RecipeError(source_, static_cast<int>(where.begin.line),
                      static_cast<int>(where.begin.column), message);
  }

  std::string text(const toml::node& node, const std::string& key) const {
    const auto* s = node.as_string();
    if (s == nullptr)
      fail(node.source(), fmt::format("key '{}': expected a string, got {}", key, type_of(node)));
    return s->get();
  }

  std::int64_t integer(const toml::node& node, const std::string& key, std::int64_t lo,
                       std::int64_t hi, std::string_view what) const {
    const auto* i = node.as_integer();
    if (i == nullptr)
      fail(node.source(), fmt::format("key '{}': expected an integer, got {}", key, type_of(node)));
    if (i->get() < lo || i->get() > hi) {
      fail(node.source(), fmt::format("key '{}': {} is not {}", key, i->get(), what));
    }
    return i->get();
  }

  bool boolean(const toml::node& node, const std::string& key) const {
    const auto* b = node.as_boolean();
    if (b == nullptr)
      fail(node.source(),
           fmt::format("key '{}': expected true or false, got {}", key, type_of(node)));
    return b->get();
  }

  template <typename E, std::size_t N>
  E choice(const toml::node& node, const std::string& key, const std::array<E, N>& all,
           std::string_view (*name_of)(E)) const {
    const std::string t = text(node, key);
    const auto e = enum_from_name(t, all, name_of);
    if (!e) {
      fail(node.source(), fmt::format("key '{}': unknown value '{}' (expected {})", key, t,
                                      enum_names(all, name_of)));
    }
    return *e;
  }

  Format element(const toml::node& node, const std::string& key) const {
    const std::string t = text(node, key);
    const numeric::FormatSpec spec = numeric::parse_format(t);
    if (!spec.format) fail(node.source(), fmt::format("key '{}': {}", key, spec.error));
    numeric::RoundingOptions options;
    options.format = *spec.format;
    const numeric::Validation v = numeric::validate(options);
    if (!v.ok()) {
      fail(node.source(), fmt::format("key '{}': format '{}': {}", key, t, v.errors.front()));
    }
    const double top = max_finite(*spec.format);
    if (!(top > 0) || !std::isfinite(top) || top > FLT_MAX) {
      fail(node.source(),
           fmt::format("key '{}': format '{}' has no finite largest value within binary32's "
                       "range for a scale to map the amax to",
                       key, t));
    }
    return *spec.format;
  }

  // Applies a role's table, then checks the operand as a whole.
  void apply(const toml::table& table, Role role, OperandRecipe& o) const {
    const std::string r(role_name(role));
    std::map<std::string, toml::source_region> at;
    for (const auto& [key, node] : table) {
      const std::string k(key.str());
      const std::string full = r + "." + k;
      at[k] = node.source();
      if (k == "element") {
        o.element = element(node, full);
      } else if (k == "granularity") {
        o.granularity = choice(node, full, kGranularities, granularity_name);
      } else if (k == "block") {
        o.block = static_cast<std::size_t>(
            integer(node, full, 1, std::int64_t{1} << 24, "a positive block size (at most 2^24)"));
      } else if (k == "scale") {
        o.scale = choice(node, full, kScales, scale_choice_name);
        if (table.get("scale_format") == nullptr) o.scale_format = scale_format_of(o.scale);
      } else if (k == "scale_format") {
        o.scale_format = choice(node, full, kScaleFormats, scale_format_name);
      } else if (k == "rounding") {
        const numeric::RoundingSpec mode = numeric::parse_rounding(text(node, full));
        if (!mode.mode) fail(node.source(), fmt::format("key '{}': {}", full, mode.error));
        o.rounding = *mode.mode;
      } else if (k == "hadamard") {
        o.hadamard = boolean(node, full);
        if (o.hadamard && role == Role::w) {
          fail(node.source(),
               "key 'w.hadamard': w is not an input of the weight-gradient GEMM "
               "(the transform goes with x and dy)");
        }
      } else if (k == "promote_interval") {
        fail(key.source(), fmt::format("key '{}': promote_interval belongs to the GEMM, not to "
                                       "one operand: set it at the top level",
                                       full));
      } else {
        fail(key.source(), fmt::format("unknown key '{}' (expected element, granularity, block, "
                                       "scale, scale_format, rounding, hadamard)",
                                       full));
      }
    }
    // Where a check that involves several keys points: the first of them the table gives.
    const auto where = [&](std::initializer_list<const char*> keys) {
      for (const char* k : keys) {
        if (auto it = at.find(k); it != at.end()) return it->second;
      }
      return table.source();
    };
    if (o.granularity == Granularity::tensor) {
      if (at.count("block") != 0) {
        fail(at["block"], fmt::format("key '{}.block': a tensor-wide scale has no block "
                                      "(granularity is tensor)",
                                      r));
      }
      o.block = 0;
    } else if (o.block == 0) {
      fail(where({"granularity"}),
           fmt::format("key '{}.granularity': a {} needs key '{}.block' (its N)", r,
                       granularity_name(o.granularity), r));
    }
    if (o.scale_format != scale_format_of(o.scale)) {
      fail(where({"scale_format", "scale"}),
           fmt::format("key '{}.scale_format': {} cannot hold the {} scale (it is stored in {})", r,
                       scale_format_name(o.scale_format), scale_choice_name(o.scale),
                       scale_format_name(scale_format_of(o.scale))));
    }
    if (o.scale == ScaleChoice::nvfp4 && !numeric::same_values(o.element, formats::e2m1)) {
      fail(where({"element", "scale"}),
           fmt::format("key '{}.scale': nvfp4 scales go with e2m1 elements, not {}", r,
                       format_text(o.element)));
    }
    if (o.scale == ScaleChoice::delayed && o.granularity != Granularity::tensor) {
      fail(where({"granularity", "scale"}),
           fmt::format("key '{}.granularity': delayed scaling keeps one scale per tensor, not a {}",
                       r, granularity_name(o.granularity)));
    }
    if (mx_scale(o.scale) && o.granularity != Granularity::tile) {
      fail(where({"granularity", "scale"}),
           fmt::format("key '{}.granularity': MX scales are for 1xN tiles along K, not a {}", r,
                       granularity_name(o.granularity)));
    }
    if (o.scale == ScaleChoice::nvfp4 && o.granularity == Granularity::tensor) {
      fail(where({"granularity", "scale"}),
           fmt::format("key '{}.granularity': nvfp4 scales are per block, not per tensor", r));
    }
  }

 private:
  std::string source_;
};

Recipe build(const toml::table& root, const RecipeReader& r) {
  const toml::node* name = root.get("name");
  const toml::node* base = root.get("base");
  if (name == nullptr) r.fail(root.source(), "missing key 'name' (the recipe's name)");
  if (base == nullptr) {
    r.fail(root.source(), fmt::format("missing key 'base' (the built-in recipe to start from: {})",
                                      builtin_recipe_names()));
  }
  const std::string base_name = r.text(*base, "base");
  const Recipe* b = find_recipe(base_name);
  if (b == nullptr) {
    r.fail(base->source(), fmt::format("key 'base': unknown recipe '{}' (built-in: {})", base_name,
                                       builtin_recipe_names()));
  }
  Recipe recipe = *b;
  recipe.base = b->name;
  recipe.description.clear();
  recipe.name = r.text(*name, "name");
  if (recipe.name.empty()) r.fail(name->source(), "key 'name': the recipe name is empty");
  if (find_recipe(recipe.name) != nullptr) {
    r.fail(name->source(),
           fmt::format("key 'name': '{}' is a built-in recipe; give yours another name (use base "
                       "= \"{}\" to start from it)",
                       recipe.name, recipe.name));
  }
  std::optional<toml::source_region> hadamard_at;
  for (const auto& [key, node] : root) {
    const std::string k(key.str());
    if (k == "name" || k == "base") continue;
    if (k == "description") {
      recipe.description = r.text(node, k);
    } else if (k == "promote_interval") {
      recipe.promote_interval = static_cast<std::size_t>(
          r.integer(node, k, 0, std::int64_t{1} << 24, "0 (never) or a positive interval"));
    } else if (k == "hadamard_seed") {
      recipe.hadamard_seed =
          static_cast<std::uint64_t>(r.integer(node, k, 0, INT64_MAX, "a non-negative seed"));
    } else if (k == "amax_history_len") {
      recipe.delayed.amax_history_len = static_cast<std::size_t>(
          r.integer(node, k, 1, std::int64_t{1} << 20, "a history length in [1, 2^20]"));
    } else if (k == "margin") {
      recipe.delayed.margin = static_cast<int>(r.integer(node, k, -126, 126, "in [-126, 126]"));
    } else if (k == "amax_compute_algo") {
      const std::string algo = r.text(node, k);
      if (algo != "max" && algo != "most_recent") {
        r.fail(node.source(), fmt::format("key 'amax_compute_algo': unknown value '{}' (expected "
                                          "max or most_recent)",
                                          algo));
      }
      recipe.delayed.amax_compute_algo = algo == "max" ? AmaxAlgo::max : AmaxAlgo::most_recent;
    } else if (const auto role = role_from_name(k)) {
      const auto* table = node.as_table();
      if (table == nullptr) {
        r.fail(node.source(),
               fmt::format("key '{}': expected a table ([{}]), got {}", k, k, type_of(node)));
      }
      r.apply(*table, *role, recipe.operand(*role));
      if (table->get("hadamard") != nullptr) hadamard_at = table->get("hadamard")->source();
    } else {
      r.fail(key.source(),
             fmt::format("unknown key '{}' (expected name, base, description, promote_interval, "
                         "hadamard_seed, amax_history_len, amax_compute_algo, margin, or a role "
                         "table [x], [w], [dy])",
                         k));
    }
  }
  if (recipe.operand(Role::x).hadamard != recipe.operand(Role::dy).hadamard) {
    r.fail(hadamard_at.value_or(root.source()),
           fmt::format("key '{}.hadamard': the Hadamard transform must apply to both inputs of the "
                       "weight-gradient GEMM (x and dy) or to neither, or it changes dW",
                       recipe.operand(Role::x).hadamard ? "dy" : "x"));
  }
  return recipe;
}

}  // namespace

bool operator==(const OperandRecipe& a, const OperandRecipe& b) {
  return numeric::same_format(a.element, b.element) && a.granularity == b.granularity &&
         a.block == b.block && a.scale == b.scale && a.scale_format == b.scale_format &&
         a.rounding == b.rounding && a.hadamard == b.hadamard;
}

bool same_settings(const Recipe& a, const Recipe& b) {
  return a.operands == b.operands && a.promote_interval == b.promote_interval &&
         a.delayed == b.delayed && a.hadamard_seed == b.hadamard_seed;
}

std::span<const Recipe> builtin_recipes() {
  return builtins();
}

const Recipe* find_recipe(std::string_view name) {
  for (const Recipe& r : builtins()) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::string builtin_recipe_names() {
  std::string out;
  for (const Recipe& r : builtins()) out += (out.empty() ? "" : ", ") + r.name;
  return out;
}

std::string_view role_name(Role r) {
  switch (r) {
    case Role::x: return "x";
    case Role::w: return "w";
    case Role::dy: return "dy";
  }
  return "?";
}

std::optional<Role> role_from_name(std::string_view name) {
  return enum_from_name(name, kRoles, role_name);
}

std::string_view gemm_name(Gemm g) {
  switch (g) {
    case Gemm::fprop: return "fprop";
    case Gemm::dgrad: return "dgrad";
    case Gemm::wgrad: return "wgrad";
  }
  return "?";
}

std::optional<Gemm> gemm_from_name(std::string_view name) {
  return enum_from_name(name, std::array{Gemm::fprop, Gemm::dgrad, Gemm::wgrad}, gemm_name);
}

std::string_view granularity_name(Granularity g) {
  switch (g) {
    case Granularity::tensor: return "tensor";
    case Granularity::tile: return "tile";
    case Granularity::block: return "block";
  }
  return "?";
}

std::string_view scale_choice_name(ScaleChoice s) {
  switch (s) {
    case ScaleChoice::delayed: return "delayed";
    case ScaleChoice::current: return "current";
    case ScaleChoice::pow2: return "pow2";
    case ScaleChoice::mx: return "mx";
    case ScaleChoice::nvfp4: return "nvfp4";
    case ScaleChoice::mx_ceil: return "mx-ceil";
  }
  return "?";
}

bool mx_scale(ScaleChoice s) {
  return s == ScaleChoice::mx || s == ScaleChoice::mx_ceil;
}

std::string_view scale_format_name(ScaleFormat s) {
  switch (s) {
    case ScaleFormat::fp32: return "fp32";
    case ScaleFormat::ue8m0: return "ue8m0";
    case ScaleFormat::ue4m3: return "ue4m3";
  }
  return "?";
}

ScaleFormat scale_format_of(ScaleChoice s) {
  switch (s) {
    case ScaleChoice::mx:
    case ScaleChoice::mx_ceil: return ScaleFormat::ue8m0;
    case ScaleChoice::nvfp4: return ScaleFormat::ue4m3;
    case ScaleChoice::delayed:
    case ScaleChoice::current:
    case ScaleChoice::pow2: break;
  }
  return ScaleFormat::fp32;
}

ScaleRule scale_rule_of(ScaleChoice s) {
  switch (s) {
    case ScaleChoice::delayed: return ScaleRule::fp32_given;
    case ScaleChoice::mx:
    case ScaleChoice::mx_ceil: return ScaleRule::mx_e8m0;
    case ScaleChoice::nvfp4: return ScaleRule::nvfp4;
    case ScaleChoice::current:
    case ScaleChoice::pow2: break;
  }
  return ScaleRule::fp32_amax;
}

bool enters(Role r, Gemm g) {
  switch (r) {
    case Role::x: return g != Gemm::dgrad;
    case Role::w: return g != Gemm::wgrad;
    case Role::dy: return g != Gemm::fprop;
  }
  return false;
}

Gemm default_gemm(Role r) {
  return r == Role::dy ? Gemm::dgrad : Gemm::fprop;
}

bool applies_hadamard(const Recipe& recipe, Role r, Gemm g) {
  return g == Gemm::wgrad && enters(r, g) && recipe.operand(r).hadamard;
}

Recipe parse_recipe(std::string_view text, std::string_view source_name) {
  const RecipeReader reader(source_name);
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    throw RecipeError(std::string(source_name), static_cast<int>(e.source().begin.line),
                      static_cast<int>(e.source().begin.column),
                      fmt::format("not valid TOML: {}", e.description()));
  }
  return build(root, reader);
}

Recipe load_recipe(const std::string& path) {
  std::string text;
  try {
    text = io::read_file(path);
  } catch (const io::FileError& e) {
    throw RecipeError(path, 0, 0, e.reason());
  }
  return parse_recipe(text, path);
}

Recipe recipe_by_name_or_file(const std::string& name) {
  if (const Recipe* builtin = find_recipe(name)) return *builtin;
  const std::string_view suffix = ".toml";
  if (name.find('/') != std::string::npos || name.ends_with(suffix)) return load_recipe(name);
  throw RecipeError(
      "", 0, 0,
      fmt::format("unknown recipe '{}' (known: {}; or a FILE.toml)", name, builtin_recipe_names()));
}

namespace {

// A TOML basic string: quoted, with the quote and the backslash escaped and control characters
// as \uXXXX (TOML 1.0, section String), so that any name or description reads back as it is.
std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\u{:04X}", c);
    } else {
      out += ch;
    }
  }
  return out + '"';
}

}  // namespace

std::string to_toml(const Recipe& recipe) {
  std::string out =
      fmt::format("name = {}\nbase = {}\n", toml_string(recipe.name), toml_string(recipe.base));
  if (!recipe.description.empty()) {
    out += fmt::format("description = {}\n", toml_string(recipe.description));
  }
  out += fmt::format("promote_interval = {}\n", recipe.promote_interval);
  if (recipe.hadamard_seed) out += fmt::format("hadamard_seed = {}\n", *recipe.hadamard_seed);
  out += fmt::format("amax_history_len = {}\namax_compute_algo = \"{}\"\nmargin = {}\n",
                     recipe.delayed.amax_history_len,
                     recipe.delayed.amax_compute_algo == AmaxAlgo::max ? "max" : "most_recent",
                     recipe.delayed.margin);
  for (const Role role : kRoles) {
    const OperandRecipe& o = recipe.operand(role);
    out += fmt::format("\n[{}]\nelement = \"{}\"\ngranularity = \"{}\"\n", role_name(role),
                       format_text(o.element), granularity_name(o.granularity));
    if (o.granularity != Granularity::tensor) out += fmt::format("block = {}\n", o.block);
    out += fmt::format("scale = \"{}\"\nscale_format = \"{}\"\nrounding = \"{}\"\nhadamard = {}\n",
                       scale_choice_name(o.scale), scale_format_name(o.scale_format),
                       numeric::rounding_name(o.rounding), o.hadamard);
  }
  return out;
}

}  // namespace ampbench::quant
