// Fuzz target: user training recipes in TOML (quant::parse_recipe, harness/quant/recipe.hpp).
// Bad input is a quant::RecipeError whose message starts with the source's name.
//
// Invariants of an accepted recipe: a name that is not empty and not a built-in's; to_toml writes
// it as a file that parse_recipe reads back to the same settings.
#include <string>
#include <string_view>

#include "harness/fuzz/fuzz.hpp"
#include "harness/quant/recipe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ampbench;
  constexpr std::string_view kName = "r.toml";
  quant::Recipe r;
  if (!fuzz::accepts<quant::RecipeError>(
          kName, [&] { r = quant::parse_recipe(fuzz::text(data, size), kName); })) {
    return 0;
  }
  fuzz::check(!r.name.empty() && quant::find_recipe(r.name) == nullptr,
              "an empty or built-in name: " + r.name);
  const std::string written = quant::to_toml(r);
  quant::Recipe again;
  try {
    again = quant::parse_recipe(written, "again.toml");
  } catch (const std::exception& e) {
    fuzz::finding("to_toml's text does not read back: " + std::string(e.what()) + "\n" + written);
  }
  fuzz::check(quant::same_settings(r, again),
              "to_toml's text reads back to other settings:\n" + written);
  return 0;
}
