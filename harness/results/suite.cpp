#include "harness/results/suite.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include "harness/audit/recipe_audit.hpp"
#include "harness/inputs/distributions.hpp"
#include "harness/inputs/tensor_file.hpp"
#include "harness/io/files.hpp"
#include "harness/ops/convolution.hpp"
#include "harness/quant/recipe.hpp"
#include "harness/quant/recipe_gemm.hpp"
#include "harness/train/limits.hpp"
#include "harness/train/recipe_ops.hpp"

namespace ampbench::results {
namespace {

// Messages name the file, the line, the column, the table and the key: "suites/x.toml:7:1:
// [[audit]] ops: ...". The files the suite reads are collected in `files`.
class Reader {
 public:
  Reader(std::string_view source, std::vector<std::string>& files)
      : source_(source), files_(&files) {}

  void reads(std::string path) const { files_->push_back(std::move(path)); }

  [[noreturn]] void fail(const toml::node& node, std::string_view where,
                         const std::string& message) const {
    throw SuiteError(fmt::format("{}:{}:{}: {}{}", source_, node.source().begin.line,
                                 node.source().begin.column, where,
                                 where.empty() ? message : ": " + message));
  }

  // Every key of `table` must be one of `known`: a misspelt key is an error, not a default.
  void check_keys(const toml::table& table, std::string_view table_name,
                  const std::vector<std::string_view>& known) const {
    for (const auto& [key, node] : table) {
      if (std::find(known.begin(), known.end(), key.str()) == known.end()) {
        const std::string where = table_name.empty() ? std::string(key.str())
                                                     : fmt::format("{} {}", table_name, key.str());
        fail(node, where, fmt::format("unknown key (known: {})", fmt::join(known, ", ")));
      }
    }
  }

  std::string string(const toml::node& node, std::string_view where) const {
    const auto* s = node.as_string();
    if (s == nullptr) fail(node, where, "must be a string");
    return s->get();
  }

  // A finite number >= 0, integer or float.
  double non_negative(const toml::node& node, std::string_view where) const {
    const std::optional<double> value = node.value<double>();
    if (!value || !std::isfinite(*value) || *value < 0) {
      fail(node, where, "must be a finite number >= 0");
    }
    return *value;
  }

  bool boolean(const toml::node& node, std::string_view where) const {
    const auto* b = node.as_boolean();
    if (b == nullptr) fail(node, where, "must be true or false");
    return b->get();
  }

  std::uint64_t natural(const toml::node& node, std::string_view where, std::int64_t least) const {
    const auto* i = node.as_integer();
    if (i == nullptr || i->get() < least) {
      fail(node, where, fmt::format("must be an integer >= {}", least));
    }
    return static_cast<std::uint64_t>(i->get());
  }

  // A non-empty array of strings, none twice (an entry's lists multiply: a repeated one would
  // make every case twice), each with its node for messages.
  std::vector<std::pair<std::string, const toml::node*>> strings(const toml::node& node,
                                                                 std::string_view where) const {
    const auto* array = node.as_array();
    if (array == nullptr || array->empty())
      fail(node, where, "must be a non-empty array of strings");
    std::vector<std::pair<std::string, const toml::node*>> items;
    for (const auto& item : *array) {
      std::string text = string(item, where);
      for (const auto& [seen, seen_node] : items) {
        if (seen == text) fail(item, where, fmt::format("'{}' appears twice", text));
      }
      items.emplace_back(std::move(text), &item);
    }
    return items;
  }

 private:
  std::string source_;
  std::vector<std::string>* files_;
};

std::string audit_key(const audit::Case& c, std::string_view mma_name) {
  return audit_key(AuditKey{c.op->name, ops::to_string(c.shape), c.policy.name, c.distribution,
                            c.seed, mma_name, c.samples});
}

std::string train_key(const train::TrainConfig& config) {
  std::string key =
      fmt::format("train/{}/steps={}/seed={}", config.model, config.steps, config.seed);
  if (config.batch != train::TrainConfig{}.batch) key += fmt::format("/batch={}", config.batch);
  return key;
}

// A policy as --policy takes it; a relative policy file is found next to the suite. A file is one
// of the files the suite reads.
policy::Policy suite_policy(const Reader& reader, const std::string& name,
                            const std::filesystem::path& directory) {
  const bool is_file = policy::find_builtin(name) == nullptr &&
                       (name.ends_with(".toml") || name.find('/') != std::string::npos);
  const std::string path =
      is_file && std::filesystem::path(name).is_relative() ? (directory / name).string() : name;
  if (is_file) reader.reads(path);
  return policy::policy_by_name_or_file(path);
}

std::vector<policy::Policy> read_policies(const Reader& reader, const toml::node& node,
                                          std::string_view where,
                                          const std::filesystem::path& directory) {
  std::vector<policy::Policy> policies;
  for (const auto& [name, item] : reader.strings(node, where)) {
    try {
      policies.push_back(suite_policy(reader, name, directory));
    } catch (const policy::PolicyError& e) {
      reader.fail(*item, where, e.what());
    }
  }
  return policies;
}

const toml::node& required(const Reader& reader, const toml::table& table, std::string_view key,
                           std::string_view table_name) {
  const toml::node* node = table.get(key);
  if (node == nullptr) reader.fail(table, table_name, fmt::format("missing key '{}'", key));
  return *node;
}

// The entry's `dists` (default ["normal"]), each checked; a file: distribution's tensor file is
// one of the files the suite reads.
std::vector<std::string> read_dists(const Reader& reader, const toml::table& table,
                                    std::string_view where) {
  const toml::node* node = table.get("dists");
  if (node == nullptr) return {"normal"};
  std::vector<std::string> dists;
  for (const auto& [dist, item] : reader.strings(*node, where)) {
    try {
      const inputs::Spec spec = inputs::parse_spec(dist);
      if (spec.kind == inputs::Kind::file) reader.reads(inputs::tensor_file_path(spec.path));
    } catch (const inputs::SpecError& e) {
      reader.fail(*item, where, e.what());
    }
    dists.push_back(dist);
  }
  return dists;
}

void expand_audit(const Reader& reader, const toml::table& table, std::uint64_t seed,
                  const std::filesystem::path& directory, std::vector<SuiteCase>& cases) {
  constexpr std::string_view kTable = "[[audit]]";
  reader.check_keys(table, kTable, {"ops", "shapes", "policies", "dists", "mma", "samples"});
  std::vector<const ops::OpInfo*> op_list;
  for (const auto& [name, item] :
       reader.strings(required(reader, table, "ops", kTable), "[[audit]] ops")) {
    const ops::OpInfo* op = ops::find_op(name);
    if (op == nullptr) {
      reader.fail(*item, "[[audit]] ops",
                  fmt::format("unknown op '{}' (known: {})", name, ops::op_names()));
    }
    op_list.push_back(op);
  }
  std::vector<std::pair<std::string, const toml::node*>> shape_texts;
  if (const toml::node* shapes = table.get("shapes")) {
    shape_texts = reader.strings(*shapes, "[[audit]] shapes");
  }
  const auto policies = read_policies(reader, required(reader, table, "policies", kTable),
                                      "[[audit]] policies", directory);
  const std::vector<std::string> dists = read_dists(reader, table, "[[audit]] dists");
  std::string mma_name;
  std::vector<std::optional<numeric::MmaModel>> models(policies.size());
  if (const toml::node* node = table.get("mma")) {
    mma_name = reader.string(*node, "[[audit]] mma");
    for (std::size_t j = 0; j < policies.size(); ++j) {
      try {
        models[j] = audit::mma_for(mma_name, policies[j]);
      } catch (const std::invalid_argument& e) {
        reader.fail(*node, "[[audit]] mma", e.what());
      }
    }
    for (const auto* op : op_list) {
      if (const auto problem = ops::why_no_mma(*op)) reader.fail(*node, "[[audit]] mma", *problem);
    }
  }
  std::size_t samples = 0;
  if (const toml::node* node = table.get("samples")) {
    samples = reader.natural(*node, "[[audit]] samples", 0);
  }
  // Counted before the cases are made: a few lines of lists can multiply to millions of them.
  const std::size_t shape_count = std::max<std::size_t>(shape_texts.size(), 1);
  std::size_t product = 1;
  for (const std::size_t n : {op_list.size(), shape_count, policies.size(), dists.size()}) {
    product = product > kMaxSuiteCases / n ? kMaxSuiteCases + 1 : product * n;
  }
  if (cases.size() + product > kMaxSuiteCases) {
    reader.fail(
        table, kTable,
        fmt::format("{} ops x {} shapes x {} policies x {} dists would make the suite more "
                    "than {} cases; split it",
                    op_list.size(), shape_count, policies.size(), dists.size(), kMaxSuiteCases));
  }

  for (const auto* op : op_list) {
    std::vector<ops::Shape> shapes;
    if (shape_texts.empty()) shapes.push_back(ops::parse_shape(*op, op->default_shape));
    for (const auto& [text, item] : shape_texts) {
      try {
        shapes.push_back(ops::parse_shape(*op, text));
      } catch (const ops::OpError& e) {
        reader.fail(*item, "[[audit]] shapes", fmt::format("{}: {}", op->name, e.what()));
      }
    }
    for (std::size_t j = 0; j < policies.size(); ++j) {
      if (const auto problem = audit::why_not_runnable(*op, policies[j], models[j].has_value())) {
        reader.fail(required(reader, table, "policies", kTable), "[[audit]] policies", *problem);
      }
    }
    for (const auto& shape : shapes) {
      for (std::size_t j = 0; j < policies.size(); ++j) {
        for (const auto& dist : dists) {
          audit::Case c{op,
                        shape,
                        policies[j],
                        dist,
                        seed,
                        samples,
                        backends::cpu::Summation::sequential,
                        models[j]};
          cases.push_back(SuiteCase{audit_key(c, mma_name), std::move(c)});
        }
      }
    }
  }
}

// Recipes as --recipe takes them, each with its item: a built-in name, or a recipe file (a
// relative one found next to the suite; a file is one of the files the suite reads).
std::vector<std::pair<quant::Recipe, const toml::node*>> read_recipes(
    const Reader& reader, const toml::node& node, std::string_view where,
    const std::filesystem::path& directory) {
  std::vector<std::pair<quant::Recipe, const toml::node*>> recipes;
  for (const auto& [name, item] : reader.strings(node, where)) {
    const bool is_file = quant::find_recipe(name) == nullptr &&
                         (name.ends_with(".toml") || name.find('/') != std::string::npos);
    const std::string path =
        is_file && std::filesystem::path(name).is_relative() ? (directory / name).string() : name;
    if (is_file) reader.reads(path);
    try {
      recipes.emplace_back(quant::recipe_by_name_or_file(path), item);
    } catch (const quant::RecipeError& e) {
      reader.fail(*item, where, e.what());
    }
  }
  return recipes;
}

// The model, policies, steps and batch of a [[train]] or [[profile]] entry (`table_name`), within
// the limits of train::size_problem against the model's default data set: its training split
// (all but kSuiteEvalSamples) for [[train]], all of it for [[profile]], with `warmup` steps first.
train::TrainConfig read_training(const Reader& reader, const toml::table& table,
                                 std::string_view table_name, std::uint64_t seed,
                                 const std::filesystem::path& directory, std::size_t default_steps,
                                 std::optional<std::size_t> warmup) {
  const auto where = [&](std::string_view key) { return fmt::format("{} {}", table_name, key); };
  train::TrainConfig config;
  const toml::node& model = required(reader, table, "model", table_name);
  config.model = reader.string(model, where("model"));
  const auto models = train::model_names();
  if (std::find(models.begin(), models.end(), config.model) == models.end()) {
    reader.fail(
        model, where("model"),
        fmt::format("unknown model '{}' (available: {})", config.model, fmt::join(models, ", ")));
  }
  config.policies = read_policies(reader, required(reader, table, "policies", table_name),
                                  where("policies"), directory);
  config.steps = default_steps != 0 ? default_steps : train::default_steps(config.model);
  if (const toml::node* node = table.get("steps")) {
    config.steps = reader.natural(*node, where("steps"), 1);
  }
  if (const toml::node* node = table.get("batch")) {
    config.batch = reader.natural(*node, where("batch"), 1);
  }
  config.seed = seed;
  // As `ampbench train` runs: PyTorch's scaler defaults with the collapse warnings.
  config.scaler_options.collapse = train::CollapseDetection{};
  train::DataSize data = train::default_dataset_size(config.model);
  if (!warmup) {
    data.samples -= kSuiteEvalSamples;
    data.what =
        fmt::format("the training split ({} less the {} held out)", data.what, kSuiteEvalSamples);
  }
  if (const auto problem = train::size_problem(config, data, warmup.value_or(0))) {
    const toml::node* node = table.get(problem->option);
    reader.fail(node != nullptr ? *node : table, where(problem->option), problem->message);
  }
  return config;
}

void expand_train(const Reader& reader, const toml::table& table, std::uint64_t seed,
                  const std::filesystem::path& directory, std::vector<SuiteCase>& cases) {
  constexpr std::string_view kTable = "[[train]]";
  reader.check_keys(table, kTable,
                    {"model", "policies", "recipes", "arch", "keep_bf16", "sensitivity",
                     "sensitivity_seeds", "steps", "batch"});
  train::TrainConfig config =
      read_training(reader, table, kTable, seed, directory, 0, std::nullopt);
  // Recipes trained beside the policies, their GEMMs on `arch` (as train --recipe, --arch).
  const toml::node* arch = table.get("arch");
  if (arch != nullptr) config.recipe_arch = reader.string(*arch, "[[train]] arch");
  if (const toml::node* node = table.get("recipes")) {
    for (auto& [recipe, item] : read_recipes(reader, *node, "[[train]] recipes", directory)) {
      try {
        (void)train::RecipeOps(recipe, train::recipe_arch(recipe, config), 0);
      } catch (const std::invalid_argument& e) {
        reader.fail(arch != nullptr ? *arch : *item,
                    arch != nullptr ? "[[train]] arch" : "[[train]] recipes", e.what());
      }
      config.recipes.push_back(std::move(recipe));
    }
  } else {
    for (const char* key : {"arch", "keep_bf16", "sensitivity", "sensitivity_seeds"}) {
      if (const toml::node* given = table.get(key)) {
        reader.fail(*given, fmt::format("[[train]] {}", key), "goes with recipes");
      }
    }
  }
  // Layers every recipe keeps in bf16, and the per-layer ranking (train --keep-bf16,
  // --sensitivity).
  const std::vector<std::string> layers = train::gemm_layers(config.model);
  if (const toml::node* node = table.get("keep_bf16")) {
    for (auto& [name, item] : reader.strings(*node, "[[train]] keep_bf16")) {
      if (std::find(layers.begin(), layers.end(), name) == layers.end()) {
        reader.fail(*item, "[[train]] keep_bf16",
                    fmt::format("'{}' is not a linear or convolution layer of the {} (its: {})",
                                name, config.model, fmt::join(layers, ", ")));
      }
      config.keep_bf16.push_back(std::move(name));
    }
  }
  if (const toml::node* node = table.get("sensitivity")) {
    config.sensitivity = reader.boolean(*node, "[[train]] sensitivity");
    if (config.sensitivity && config.keep_bf16.size() == layers.size()) {
      reader.fail(*node, "[[train]] sensitivity",
                  fmt::format("keep_bf16 keeps every linear and convolution layer of the {}",
                              config.model));
    }
  }
  if (const toml::node* node = table.get("sensitivity_seeds")) {
    if (!config.sensitivity) {
      reader.fail(*node, "[[train]] sensitivity_seeds", "goes with sensitivity = true");
    }
    config.sensitivity_seeds = reader.natural(*node, "[[train]] sensitivity_seeds", 1);
    if (const auto problem =
            train::sensitivity_seeds_problem(config.seed, config.sensitivity_seeds)) {
      reader.fail(*node, "[[train]] sensitivity_seeds", *problem);
    }
  }
  cases.push_back(SuiteCase{train_key(config), std::move(config)});
}

// As `ampbench profile` runs by default: 20 timed steps after 3 untimed ones.
void expand_profile(const Reader& reader, const toml::table& table, std::uint64_t seed,
                    const std::filesystem::path& directory, std::vector<SuiteCase>& cases) {
  constexpr std::string_view kTable = "[[profile]]";
  reader.check_keys(table, kTable, {"model", "policies", "steps", "warmup", "batch"});
  std::size_t warmup = 3;
  if (const toml::node* node = table.get("warmup")) {
    warmup = reader.natural(*node, "[[profile]] warmup", 0);
  }
  ProfileConfig profile{read_training(reader, table, kTable, seed, directory, 20, warmup), warmup};
  std::string key = fmt::format("profile/{}/steps={}/warmup={}/seed={}", profile.config.model,
                                profile.config.steps, profile.warmup, profile.config.seed);
  if (profile.config.batch != train::TrainConfig{}.batch) {
    key += fmt::format("/batch={}", profile.config.batch);
  }
  cases.push_back(SuiteCase{std::move(key), std::move(profile)});
}

// One case per preset: "fingerprint/PRESET", and "/instruction=NAME" for an instruction other than
// auto. A preset named twice, in one entry or in two with the same instruction, is an error at
// its second mention.
void expand_fingerprint(const Reader& reader, const toml::table& table,
                        std::vector<SuiteCase>& cases) {
  constexpr std::string_view kTable = "[[fingerprint]]";
  reader.check_keys(table, kTable, {"presets", "instruction"});
  std::string instruction = "auto";
  if (const toml::node* node = table.get("instruction")) {
    instruction = reader.string(*node, "[[fingerprint]] instruction");
    if (instruction != "auto" && instruction != "mma" && instruction != "wgmma") {
      reader.fail(*node, "[[fingerprint]] instruction",
                  fmt::format("unknown instruction '{}' (auto, mma, wgmma)", instruction));
    }
  }
  std::vector<std::string_view> known;
  for (const auto& preset : numeric::mma_presets()) known.emplace_back(preset.name);
  for (const auto& [name, item] :
       reader.strings(required(reader, table, "presets", kTable), "[[fingerprint]] presets")) {
    const std::optional<numeric::MmaModel> preset = numeric::mma_model_named(name);
    if (!preset) {
      reader.fail(*item, "[[fingerprint]] presets",
                  fmt::format("unknown preset '{}' (known: {})", name, fmt::join(known, ", ")));
    }
    std::string key = "fingerprint/" + name;
    if (instruction != "auto") key += "/instruction=" + instruction;
    for (const auto& c : cases) {
      if (c.key == key) {
        reader.fail(
            *item, "[[fingerprint]] presets",
            fmt::format("'{}' is fingerprinted by an earlier entry too (the case {})", name, key));
      }
    }
    cases.push_back(SuiteCase{std::move(key), FingerprintCase{*preset, instruction}});
  }
}

// One case per recipe, shape and distribution: linear's GEMMs (or, with op = "conv2d", a
// convolution's, as the GEMMs it lowers to) under the recipe (a built-in name or a recipe file next
// to the suite), on `arch` (default: hopper where it has a model of the
// recipe's formats, else exact), promoted every `promote_interval` products when given. Every case
// is checked here (audit::why_not_runnable): a block that does not divide a dimension stops the
// suite when it is read.
void expand_recipe(const Reader& reader, const toml::table& table, std::uint64_t seed,
                   const std::filesystem::path& directory, std::vector<SuiteCase>& cases) {
  constexpr std::string_view kTable = "[[recipe]]";
  reader.check_keys(table, kTable,
                    {"recipes", "op", "shapes", "arch", "promote_interval", "dists"});
  const std::vector<std::pair<quant::Recipe, const toml::node*>> recipes = read_recipes(
      reader, required(reader, table, "recipes", kTable), "[[recipe]] recipes", directory);
  std::string op_name = "linear";
  if (const toml::node* node = table.get("op")) {
    op_name = reader.string(*node, "[[recipe]] op");
    if (std::find(std::begin(audit::kRecipeOps), std::end(audit::kRecipeOps), op_name) ==
        std::end(audit::kRecipeOps)) {
      reader.fail(*node, "[[recipe]] op",
                  fmt::format("unknown op '{}' (linear, bmm, conv2d)", op_name));
    }
  }
  const ops::OpInfo& op = *ops::find_op(op_name);
  std::vector<std::pair<ops::Shape, const toml::node*>> shapes;
  if (const toml::node* node = table.get("shapes")) {
    for (const auto& [text, item] : reader.strings(*node, "[[recipe]] shapes")) {
      try {
        shapes.emplace_back(ops::parse_shape(op, text), item);
      } catch (const ops::OpError& e) {
        reader.fail(*item, "[[recipe]] shapes", e.what());
      }
    }
  } else {
    shapes.emplace_back(ops::parse_shape(op, op_name == "conv2d" ? audit::kRecipeConvShape
                                             : op_name == "bmm"  ? audit::kRecipeBmmShape
                                                                 : op.default_shape),
                        &table);
  }
  std::string arch;
  const toml::node* arch_node = table.get("arch");
  if (arch_node != nullptr) arch = reader.string(*arch_node, "[[recipe]] arch");
  std::optional<std::size_t> promote_interval;
  if (const toml::node* node = table.get("promote_interval")) {
    promote_interval = reader.natural(*node, "[[recipe]] promote_interval", 0);
  }
  const std::vector<std::string> dists = read_dists(reader, table, "[[recipe]] dists");
  if (cases.size() + recipes.size() * shapes.size() * dists.size() > kMaxSuiteCases) {
    reader.fail(table, kTable, fmt::format("more than {} cases", kMaxSuiteCases));
  }
  for (const auto& [recipe, recipe_node] : recipes) {
    for (const auto& [shape, shape_node] : shapes) {
      for (const auto& dist : dists) {
        audit::RecipeCase c;
        c.recipe = recipe;
        audit::set_shape(c, op_name, shape);
        c.distribution = dist;
        c.seed = seed;
        c.promote_interval = promote_interval;
        c.arch = arch.empty() ? quant::default_arch(recipe, c.gemms).arch : arch;
        if (const auto why = audit::why_not_runnable(c)) {
          reader.fail(arch_node != nullptr ? *arch_node : *shape_node, kTable, *why);
        }
        std::string key =
            fmt::format("recipe/{}/{}{}/{}/{}/seed={}", recipe.name,
                        op_name == "linear" ? "" : op_name + "/",  // linear's keys predate it
                        ops::to_string(shape), c.arch, dist, seed);
        if (promote_interval) key += fmt::format("/promote={}", *promote_interval);
        cases.push_back(SuiteCase{std::move(key), std::move(c)});
      }
    }
  }
}

// The array of tables `name`, or nothing when the suite has none.
std::vector<const toml::table*> tables(const Reader& reader, const toml::table& root,
                                       std::string_view name) {
  std::vector<const toml::table*> list;
  const toml::node* node = root.get(name);
  if (node == nullptr) return list;
  const auto* array = node->as_array();
  if (array == nullptr) {
    reader.fail(*node, name, fmt::format("must be an array of tables ([[{}]])", name));
  }
  for (const auto& item : *array) {
    const auto* table = item.as_table();
    if (table == nullptr)
      reader.fail(item, name, fmt::format("must be an array of tables ([[{}]])", name));
    list.push_back(table);
  }
  return list;
}

}  // namespace

std::string audit_key(const AuditKey& k) {
  std::string key =
      fmt::format("audit/{}/{}/{}/{}/seed={}", k.op, k.shape, k.policy, k.distribution, k.seed);
  if (!k.mma.empty()) key += fmt::format("/mma={}", k.mma);
  if (k.samples != 0) key += fmt::format("/samples={}", k.samples);
  return key;
}

Suite parse_suite(std::string_view text, std::string_view source_name,
                  const std::filesystem::path& directory) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    throw SuiteError(fmt::format("{}:{}:{}: {}", source_name, e.source().begin.line,
                                 e.source().begin.column, e.description()));
  }
  Suite suite;
  const Reader reader(source_name, suite.files);
  reader.check_keys(root, "",
                    {"name", "description", "seed", "tolerance", "budgets", "audit", "train",
                     "profile", "fingerprint", "recipe"});
  const toml::node* name = root.get("name");
  if (name == nullptr) {
    throw SuiteError(fmt::format("{}:1:1: name: missing (every suite has a name)", source_name));
  }
  suite.name = reader.string(*name, "name");
  if (suite.name.empty() || suite.name.find_first_of("/\\ ") != std::string::npos) {
    reader.fail(*name, "name", "must be a non-empty name without '/', '\\' or blanks");
  }
  if (const toml::node* node = root.get("description")) {
    suite.description = reader.string(*node, "description");
  }
  if (const toml::node* node = root.get("seed")) suite.seed = reader.natural(*node, "seed", 0);
  if (const toml::node* node = root.get("tolerance")) {
    suite.tolerance = reader.non_negative(*node, "tolerance");
  }

  // A budgets file that cannot be read (a directory, a missing file) is an error at the key: a
  // gate read as empty would be off.
  const toml::node* budgets = root.get("budgets");
  if (budgets != nullptr) {
    const std::string path = reader.string(*budgets, "budgets");
    suite.budgets_path =
        std::filesystem::path(path).is_relative() ? (directory / path).string() : path;
  } else if (std::filesystem::exists(directory / "budgets.toml")) {
    suite.budgets_path = (directory / "budgets.toml").string();
  }
  if (!suite.budgets_path.empty()) {
    reader.reads(suite.budgets_path);
    try {
      suite.budgets = audit::load_budgets(suite.budgets_path);
    } catch (const audit::BudgetError& e) {
      if (budgets != nullptr) reader.fail(*budgets, "budgets", e.what());
      throw SuiteError(fmt::format("{}: budgets: {}", source_name, e.what()));
    }
  }

  for (const auto* table : tables(reader, root, "audit")) {
    expand_audit(reader, *table, suite.seed, directory, suite.cases);
  }
  for (const auto* table : tables(reader, root, "train")) {
    expand_train(reader, *table, suite.seed, directory, suite.cases);
  }
  for (const auto* table : tables(reader, root, "profile")) {
    expand_profile(reader, *table, suite.seed, directory, suite.cases);
  }
  for (const auto* table : tables(reader, root, "fingerprint")) {
    expand_fingerprint(reader, *table, suite.cases);
  }
  for (const auto* table : tables(reader, root, "recipe")) {
    expand_recipe(reader, *table, suite.seed, directory, suite.cases);
  }
  if (suite.cases.empty()) {
    throw SuiteError(
        fmt::format("{}:1:1: the suite has no [[audit]], [[train]], [[profile]], [[fingerprint]] "
                    "or [[recipe]] entries",
                    source_name));
  }
  // A budget for a policy neither built in nor the suite's would never apply.
  std::vector<std::string> policy_names;
  for (const auto& c : suite.cases) {
    if (const auto* audit_case = std::get_if<audit::Case>(&c.work)) {
      policy_names.push_back(audit_case->policy.name);
    } else if (const auto* training = std::get_if<train::TrainConfig>(&c.work)) {
      for (const auto& p : training->policies) policy_names.push_back(p.name);
    } else if (const auto* profile = std::get_if<ProfileConfig>(&c.work)) {
      for (const auto& p : profile->config.policies) policy_names.push_back(p.name);
    }
  }
  try {
    audit::check_policies(suite.budgets, policy_names);
  } catch (const audit::BudgetError& e) {
    throw SuiteError(fmt::format("{}: budgets: {}", source_name, e.what()));
  }
  // Keys are what compare matches records by: two cases with one key would be confused.
  std::map<std::string_view, std::size_t> seen;
  for (std::size_t i = 0; i < suite.cases.size(); ++i) {
    if (!seen.emplace(suite.cases[i].key, i).second) {
      throw SuiteError(
          fmt::format("{}: the case {} appears twice", source_name, suite.cases[i].key));
    }
  }
  return suite;
}

std::string_view SuiteCase::kind() const {
  if (std::holds_alternative<audit::Case>(work)) return "audit";
  if (std::holds_alternative<train::TrainConfig>(work)) return "train";
  if (std::holds_alternative<ProfileConfig>(work)) return "profile";
  return std::holds_alternative<FingerprintCase>(work) ? "fingerprint" : "recipe";
}

Suite load_suite(const std::string& path) {
  std::string text;
  try {
    text = io::read_file(path);
  } catch (const io::FileError& e) {
    throw SuiteError(e.what());
  }
  Suite suite = parse_suite(text, path, std::filesystem::path(path).parent_path());
  suite.files.insert(suite.files.begin(), path);
  return suite;
}

Shard parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  Shard shard;
  const auto read = [](std::string_view digits, std::size_t& value) {
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    return !digits.empty() && error == std::errc{} && end == digits.data() + digits.size();
  };
  if (slash == std::string_view::npos || !read(text.substr(0, slash), shard.index) ||
      !read(text.substr(slash + 1), shard.count)) {
    throw std::invalid_argument(fmt::format("'{}' is not I/N (for example 0/4)", text));
  }
  if (shard.count == 0 || shard.index >= shard.count) {
    throw std::invalid_argument(fmt::format(
        "'{}': the shard index must be below the count, and the count at least 1", text));
  }
  return shard;
}

std::string to_string(const Shard& shard) {
  return fmt::format("{}/{}", shard.index, shard.count);
}

BackendCases on_backends(
    const std::vector<SuiteCase>& cases, const std::vector<std::string>& backends,
    const std::function<std::optional<std::string>(const SuiteCase&, const std::string& backend)>&
        why_not,
    const Narrowing& narrow) {
  BackendCases result;
  for (const auto& c : cases) {
    for (const auto& backend : backends) {
      SuiteCase on = c;
      on.backend = backend;
      if (backend != "cpu") on.key += "/backend=" + backend;
      std::vector<std::pair<std::string, std::string>> parts;
      if (narrow) parts = narrow(on, backend);
      if (auto reason = why_not(on, backend)) {
        result.not_run.emplace_back(on.key, std::move(*reason));  // the whole case, not its parts
        continue;
      }
      for (auto& [suffix, reason] : parts) {
        result.not_run.emplace_back(on.key + "/" + suffix, std::move(reason));
      }
      result.cases.push_back(std::move(on));
    }
  }
  return result;
}

std::vector<SuiteCase> select_shard(const std::vector<SuiteCase>& cases, const Shard& shard) {
  std::vector<SuiteCase> selected;
  for (std::size_t i = shard.index; i < cases.size(); i += shard.count)
    selected.push_back(cases[i]);
  return selected;
}

}  // namespace ampbench::results
