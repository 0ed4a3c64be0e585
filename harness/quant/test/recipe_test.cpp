// The recipes as values: the built-ins' definitions (Transformer Engine's, DeepSeek-V3's, OCP MX
// v1.0, NVIDIA's NVFP4), each written as TOML and read back, and every error of a user recipe with
// the line and column it names.
#include "harness/quant/recipe.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ampbench::quant {
namespace {

namespace formats = numeric::formats;

TEST(Recipe, BuiltinsAsTheAnchorsDefineThem) {
  EXPECT_EQ(builtin_recipe_names(),
            "fp8-delayed, fp8-current, fp8-block, mxfp8, mxfp6, mxfp4, nvfp4");
  const Recipe& delayed = *find_recipe("fp8-delayed");
  EXPECT_EQ(delayed.delayed.amax_history_len, 1024u);
  EXPECT_EQ(delayed.delayed.amax_compute_algo, AmaxAlgo::max);
  EXPECT_EQ(delayed.delayed.margin, 0);
  EXPECT_STREQ(delayed.operand(Role::x).element.name, "e4m3");
  EXPECT_STREQ(delayed.operand(Role::dy).element.name, "e5m2");  // HYBRID
  EXPECT_EQ(delayed.operand(Role::w).scale, ScaleChoice::delayed);
  EXPECT_EQ(delayed.operand(Role::w).granularity, Granularity::tensor);

  const Recipe& block = *find_recipe("fp8-block");
  EXPECT_EQ(block.promote_interval, 128u);
  EXPECT_EQ(block.operand(Role::x).granularity, Granularity::tile);
  EXPECT_EQ(block.operand(Role::w).granularity, Granularity::block);
  EXPECT_EQ(block.operand(Role::w).block, 128u);
  EXPECT_EQ(block.operand(Role::dy).scale, ScaleChoice::pow2);

  const Recipe& mx = *find_recipe("mxfp6");
  EXPECT_EQ(mx.operand(Role::w).block, 32u);
  EXPECT_EQ(mx.operand(Role::w).scale_format, ScaleFormat::ue8m0);
  EXPECT_EQ(mx.element_options.size(), 2u);

  const Recipe& nv = *find_recipe("nvfp4");
  EXPECT_EQ(nv.operand(Role::w).granularity, Granularity::block);
  EXPECT_EQ(nv.operand(Role::x).block, 16u);
  EXPECT_EQ(nv.operand(Role::dy).rounding, numeric::Rounding::stochastic_proportional);
  EXPECT_EQ(nv.operand(Role::x).rounding, numeric::Rounding::nearest_even);
  EXPECT_TRUE(nv.operand(Role::x).hadamard);
  EXPECT_TRUE(nv.operand(Role::dy).hadamard);
  EXPECT_FALSE(nv.operand(Role::w).hadamard);
  EXPECT_TRUE(applies_hadamard(nv, Role::x, Gemm::wgrad));
  EXPECT_FALSE(applies_hadamard(nv, Role::x, Gemm::fprop));
  EXPECT_FALSE(applies_hadamard(nv, Role::dy, Gemm::dgrad));
  EXPECT_EQ(find_recipe("fp9"), nullptr);
}

// Each built-in written out as TOML reads back to the same settings, from its own base and from
// another one (every setting is in the file, none inherited).
TEST(Recipe, EveryBuiltinRoundTrips) {
  for (const Recipe& b : builtin_recipes()) {
    Recipe mine = b;
    mine.name = "my-" + b.name;
    const std::string text = to_toml(mine);
    const Recipe back = parse_recipe(text, "round-trip.toml");
    EXPECT_TRUE(same_settings(back, b)) << text;
    EXPECT_EQ(back.name, mine.name);
    EXPECT_EQ(back.base, b.name);
    EXPECT_EQ(back.description, b.description);
    for (const Recipe& other : builtin_recipes()) {
      std::string rebased = text;
      const std::string from = "base = \"" + b.name + "\"";
      rebased.replace(rebased.find(from), from.size(), "base = \"" + other.name + "\"");
      EXPECT_TRUE(same_settings(parse_recipe(rebased, "rebased.toml"), b))
          << b.name << " on " << other.name;
    }
  }
  Recipe seeded = *find_recipe("nvfp4");
  seeded.name = "seeded";
  seeded.hadamard_seed = 12345;
  seeded.delayed.margin = 3;
  seeded.delayed.amax_compute_algo = AmaxAlgo::most_recent;
  EXPECT_TRUE(same_settings(parse_recipe(to_toml(seeded), "s.toml"), seeded));
}

// Names and descriptions with TOML's special characters are written escaped (a fuzz finding:
// an escaped quote in a description was written back raw, and the file no longer read).
TEST(Recipe, TextWithQuotesBackslashesAndControlsRoundTrips) {
  Recipe mine = *find_recipe("fp8-block");
  mine.name = "my \"quoted\" \\ recipe";
  mine.description = "a \"description\"\n\twith a backslash \\ and \x7f, \u00e9";
  const Recipe back = parse_recipe(to_toml(mine), "escaped.toml");
  EXPECT_EQ(back.name, mine.name);
  EXPECT_EQ(back.description, mine.description);
  EXPECT_TRUE(same_settings(back, mine));
}

TEST(Recipe, UserRecipeOverridesItsBase) {
  const Recipe r = parse_recipe(R"(name = "fp8-block-fp32"
base = "fp8-block"
promote_interval = 0
[w]
granularity = "tile"
block = 64
scale = "current"
[dy]
element = "e5m2"
rounding = "sr"
)",
                                "user.toml");
  const Recipe& base = *find_recipe("fp8-block");
  EXPECT_EQ(r.promote_interval, 0u);
  EXPECT_EQ(r.operand(Role::w).granularity, Granularity::tile);
  EXPECT_EQ(r.operand(Role::w).block, 64u);
  EXPECT_EQ(r.operand(Role::w).scale, ScaleChoice::current);
  EXPECT_EQ(r.operand(Role::w).scale_format, ScaleFormat::fp32);
  EXPECT_STREQ(r.operand(Role::dy).element.name, "e5m2");
  EXPECT_EQ(r.operand(Role::dy).rounding, numeric::Rounding::stochastic_proportional);
  EXPECT_EQ(r.operand(Role::x), base.operand(Role::x));
}

// Transformer Engine's MXFP8 as a user recipe: mxfp8 with the round-up scale (mx-ceil), which
// stores E8M0 scales like mx and goes where mx goes.
TEST(Recipe, MxCeilIsAnMxScale) {
  const Recipe r = parse_recipe(R"(name = "mxfp8-te"
base = "mxfp8"
[x]
scale = "mx-ceil"
[w]
scale = "mx-ceil"
[dy]
scale = "mx-ceil"
scale_format = "ue8m0"
)",
                                "te.toml");
  for (const Role role : {Role::x, Role::w, Role::dy}) {
    EXPECT_EQ(r.operand(role).scale, ScaleChoice::mx_ceil);
    EXPECT_EQ(r.operand(role).scale_format, ScaleFormat::ue8m0);
  }
  EXPECT_TRUE(mx_scale(ScaleChoice::mx_ceil));
  EXPECT_FALSE(mx_scale(ScaleChoice::pow2));
  EXPECT_EQ(scale_choice_name(ScaleChoice::mx_ceil), "mx-ceil");
  EXPECT_TRUE(same_settings(parse_recipe(to_toml(r), "again.toml"), r));
  // Like mx, only on 1xN tiles.
  EXPECT_THROW(parse_recipe("name = \"t\"\nbase = \"mxfp8\"\n[w]\nscale = \"mx-ceil\"\n"
                            "granularity = \"tensor\"\n",
                            "t.toml"),
               RecipeError);
}

TEST(Recipe, ErrorsNameTheKeyLineAndColumn) {
  const struct {
    std::string text;
    int line;
    int column;
    std::string message;
  } cases[] = {
      {"name = \"r\"\nbase = \"nvfp4\"\n[x]\nelement = \"e9m9\"\n", 4, 11, "key 'x.element':"},
      {"name = \"r\"\nbase = \"fp8-current\"\n[x]\nelement = \"fp64\"\n", 4, 11,
       "key 'x.element': format 'fp64' has no finite largest value within binary32's range"},
      {"name = \"r\"\nbase = \"fp8-block\"\n[x]\nblock = 0\n", 4, 9,
       "key 'x.block': 0 is not a positive block size"},
      {"name = \"r\"\nbase = \"fp8-block\"\n[w]\nblock = -128\n", 4, 9,
       "key 'w.block': -128 is not a positive block size"},
      {"name = \"r\"\nbase = \"fp8-block\"\n[x]\nblock = \"16\"\n", 4, 9,
       "key 'x.block': expected an integer, got string"},
      {"name = \"r\"\nbase = \"fp8-current\"\n[x]\nscale_format = \"ue8m0\"\n", 4, 16,
       "key 'x.scale_format': ue8m0 cannot hold the current scale (it is stored in fp32)"},
      {"name = \"r\"\nbase = \"mxfp8\"\n[dy]\nscale = \"mx\"\nscale_format = \"ue4m3\"\n", 5, 16,
       "key 'dy.scale_format': ue4m3 cannot hold the mx scale (it is stored in ue8m0)"},
      {"name = \"r\"\nbase = \"nvfp4\"\n[x]\nelement = \"e4m3\"\n", 4, 11,
       "key 'x.scale': nvfp4 scales go with e2m1 elements, not e4m3"},
      {"name = \"r\"\nbase = \"fp8-current\"\n[x]\ngranularity = \"tile\"\n", 4, 15,
       "key 'x.granularity': a tile needs key 'x.block'"},
      {"name = \"r\"\nbase = \"fp8-current\"\n[x]\ngranularity = \"row\"\n", 4, 15,
       "key 'x.granularity': unknown value 'row' (expected tensor, tile, block)"},
      {"name = \"r\"\nbase = \"fp8-delayed\"\n[x]\ngranularity = \"tile\"\nblock = 128\n", 4, 15,
       "delayed scaling keeps one scale per tensor"},
      {"name = \"r\"\nbase = \"fp8-current\"\n[x]\nblock = 32\n", 4, 9,
       "key 'x.block': a tensor-wide scale has no block"},
      {"name = \"r\"\nbase = \"nvfp4\"\n[dy]\nrounding = \"sometimes\"\n", 4, 12,
       "key 'dy.rounding': unknown rounding mode 'sometimes'"},
      {"name = \"r\"\nbase = \"nvfp4\"\n[w]\nhadamard = true\n", 4, 12,
       "key 'w.hadamard': w is not an input of the weight-gradient GEMM"},
      {"name = \"r\"\nbase = \"nvfp4\"\n[x]\nhadamard = false\n", 4, 12,
       "key 'x.hadamard': the Hadamard transform must apply to both inputs"},
      {"name = \"r\"\nbase = \"nvfp4\"\n[x]\npromote_interval = 128\n", 4, 1,
       "key 'x.promote_interval': promote_interval belongs to the GEMM"},
      {"name = \"r\"\nbase = \"nvfp4\"\npromote_interval = -1\n", 3, 20,
       "key 'promote_interval': -1 is not 0 (never) or a positive interval"},
      {"name = \"r\"\nbase = \"fp8-delayed\"\namax_compute_algo = \"mean\"\n", 3, 21,
       "key 'amax_compute_algo': unknown value 'mean'"},
      {"name = \"r\"\nbase = \"fp8-delayed\"\nmargin = 300\n", 3, 10, "key 'margin': 300"},
      {"name = \"r\"\nbase = \"fp8-delayed\"\ncolour = 1\n", 3, 1, "unknown key 'colour'"},
      {"name = \"r\"\nbase = \"fp8-delayed\"\n[x]\ncolour = 1\n", 4, 1, "unknown key 'x.colour'"},
      {"name = \"r\"\nbase = \"fp8-delayed\"\nx = 1\n", 3, 5, "key 'x': expected a table ([x])"},
      {"name = \"r\"\nbase = \"fp9\"\n", 2, 8, "key 'base': unknown recipe 'fp9' (built-in: "},
      {"name = \"nvfp4\"\nbase = \"nvfp4\"\n", 1, 8, "key 'name': 'nvfp4' is a built-in recipe"},
      {"name = \"r\"\n", 1, 1, "missing key 'base'"},
      {"base = \"nvfp4\"\n", 1, 1, "missing key 'name'"},
      {"name = \"r\"\nbase = \"nvfp4\"\n[x\n", 3, 3, "not valid TOML"},
  };
  for (const auto& c : cases) {
    try {
      (void)parse_recipe(c.text, "bad.toml");
      ADD_FAILURE() << "no error for:\n" << c.text;
    } catch (const RecipeError& e) {
      EXPECT_EQ(e.source(), "bad.toml");
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_EQ(e.column(), c.column) << e.what();
      EXPECT_NE(e.message().find(c.message), std::string::npos) << e.what();
      EXPECT_EQ(
          std::string(e.what()).rfind(
              "bad.toml:" + std::to_string(c.line) + ":" + std::to_string(c.column) + ": ", 0),
          0u)
          << e.what();
    }
  }
}

TEST(Recipe, ByNameOrFile) {
  EXPECT_EQ(recipe_by_name_or_file("mxfp8").name, "mxfp8");
  try {
    (void)recipe_by_name_or_file("fp9");
    FAIL();
  } catch (const RecipeError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown recipe 'fp9' (known: fp8-delayed, fp8-current, fp8-block, mxfp8, mxfp6, "
              "mxfp4, nvfp4; or a FILE.toml)");
  }
  try {
    (void)recipe_by_name_or_file("/nonexistent/r.toml");
    FAIL();
  } catch (const RecipeError& e) {
    EXPECT_EQ(e.source(), "/nonexistent/r.toml");
    EXPECT_EQ(e.line(), 0);
  }
}

}  // namespace
}  // namespace ampbench::quant
