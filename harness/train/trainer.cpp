#include "harness/train/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "harness/quant/recipe_gemm.hpp"
#include "harness/train/models.hpp"
#include "harness/train/ops.hpp"
#include "harness/train/trainer_steps.hpp"

namespace ampbench::train {
namespace {

nlohmann::json optional_number(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// {"w1": values[0], ...}
template <class Value, class Convert>
nlohmann::json by_parameter(const std::vector<std::string>& parameters,
                            const std::vector<Value>& values, Convert convert) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = 0; i < parameters.size(); ++i) j[parameters[i]] = convert(values.at(i));
  return j;
}

nlohmann::json run_json(const RunResult& r, const std::vector<std::string>& parameters) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : r.steps) {
    nlohmann::json step{{"step", s.step}, {"loss", number(s.loss)}, {"skipped", s.skipped}};
    if (s.loss_error) {
      step["loss_rel_error"] = optional_number(s.loss_error);
      step["gradient_normwise_error"] = by_parameter(parameters, s.gradient_error, optional_number);
      step["global_gradient_normwise_error"] = optional_number(s.global_gradient_error);
      step["underflow_unscaled"] = s.underflow_unscaled;
      step["underflow_scaled"] = s.underflow_scaled;
    }
    if (s.scale) step["scale"] = *s.scale;
    if (s.growth_tracker) step["growth_tracker"] = *s.growth_tracker;
    if (!s.scaled.empty()) {
      nlohmann::json scaled = nlohmann::json::array();
      for (const ScaledTensorRecord& t : s.scaled) {
        const double n = static_cast<double>(t.elements);
        const auto fraction = [&](std::uint64_t count) {
          return t.elements == 0 ? 0.0 : static_cast<double>(count) / n;
        };
        nlohmann::json one{{"parameter", parameters.at(t.parameter)},
                           {"gemm", quant::gemm_name(t.gemm)},
                           {"role", quant::role_name(t.role)},
                           {"amax", number(t.amax)},
                           {"scale", t.scale ? number(*t.scale) : nlohmann::json(nullptr)},
                           {"elements", t.elements},
                           {"saturated", fraction(t.saturated)},
                           {"flushed", fraction(t.flushed)},
                           {"subnormal", fraction(t.subnormal)},
                           {"blocks_lost", t.blocks_lost}};
        scaled.push_back(std::move(one));
      }
      step["scaled"] = std::move(scaled);
    }
    steps.push_back(std::move(step));
  }
  nlohmann::json j{{"policy", r.policy},
                   {"backend", r.backend},
                   {"gradient_format", r.gradient_format},
                   {"scaler", r.scaler},
                   {"steps", std::move(steps)},
                   {"eval_loss", number(r.eval_loss)},
                   {"eval_accuracy", number(r.eval_accuracy)}};
  if (!r.recipe.empty()) {
    j["recipe"] = r.recipe;
    j["recipe_arch"] = r.recipe_arch;
    j["kept_bf16"] = r.kept_bf16;
  }
  if (r.policy != "reference") {
    j["weight_divergence"] = by_parameter(parameters, r.weight_divergence, number);
    j["skipped_steps"] = r.skipped_steps;
    j["scaler_warnings"] = r.scaler_warnings;
    j["verdict"] = r.verdict;
    j["pass"] = r.pass;
  }
  return j;
}

}  // namespace

std::vector<std::string> model_names() {
  return {"mlp", "cnn", "transformer"};
}

std::size_t default_steps(const std::string& model) {
  return model == "mlp" ? 200 : 100;
}

Dataset default_dataset(const std::string& model, std::uint64_t seed) {
  if (model == "mlp") return make_clusters(seed, 4096 + 512);
  if (model == "cnn") return make_images(seed, 2048 + 512);
  if (model == "transformer") return make_sequences(seed, 2048 + 512);
  throw std::invalid_argument(
      fmt::format("unknown model '{}' (known: mlp, cnn, transformer)", model));
}

std::vector<std::string> gemm_layers(const std::string& model) {
  std::vector<ParameterSpec> specs;
  if (model == "mlp") {
    specs = Mlp(MlpShape{}).parameters();
  } else if (model == "cnn") {
    specs = Cnn(CnnShape{}).parameters();
  } else if (model == "transformer") {
    specs = Transformer(TransformerShape{}).parameters();
  } else {
    throw std::invalid_argument(
        fmt::format("unknown model '{}' (known: mlp, cnn, transformer)", model));
  }
  std::vector<std::string> names;
  for (const ParameterSpec& p : specs) {
    if (p.shape.size() == 2 || p.shape.size() == 4) names.push_back(p.name);
  }
  return names;
}

std::string recipe_arch(const quant::Recipe& recipe, const TrainConfig& config) {
  if (!config.recipe_arch.empty()) return config.recipe_arch;
  return quant::default_arch(recipe, {quant::Gemm::fprop, quant::Gemm::dgrad, quant::Gemm::wgrad})
      .arch;
}

std::size_t training_steps(const TrainConfig& config) {
  return config.steps *
         (config.sensitivity ? std::max<std::size_t>(1, config.sensitivity_seeds) : 1);
}

TrainResult train(const TrainConfig& config, const Dataset& train_set, const Dataset& eval_set,
                  const std::function<void(std::size_t)>& progress) {
  return train_over_seeds(
      config, progress, [&](const TrainConfig& c, const std::function<void(std::size_t)>& tick) {
        return steps::with_model(c, train_set, [&](const auto& model) {
          return steps::run_training<EmulatedOps>(model, c, train_set, eval_set, tick);
        });
      });
}

TrainResult train_over_seeds(const TrainConfig& config,
                             const std::function<void(std::size_t)>& progress,
                             const TrainOnce& run) {
  TrainResult result = run(config, progress);
  if (!config.sensitivity || config.sensitivity_seeds <= 1) return result;
  // The repeats: the recipes and their sensitivity runs alone, at the next seeds.
  for (std::size_t i = 1; i < config.sensitivity_seeds; ++i) {
    TrainConfig repeat = config;
    repeat.seed = config.seed + i;
    repeat.policies.clear();
    repeat.sensitivity_seeds = 1;
    const auto tick = [&](std::size_t step) {
      if (progress) progress(i * config.steps + step);
    };
    const TrainResult more = run(repeat, tick);
    result.seconds += more.seconds;
    for (RecipeSensitivity& r : result.sensitivity) {
      const auto same = std::find_if(
          more.sensitivity.begin(), more.sensitivity.end(), [&](const RecipeSensitivity& m) {
            return m.recipe == r.recipe && m.run == r.run && m.backend == r.backend;
          });
      if (same == more.sensitivity.end()) {
        throw std::logic_error("train: a sensitivity repeat lacks a recipe's ranking");
      }
      r.seeds.push_back(repeat.seed);
      r.mean_loss_error_by_seed.push_back(same->mean_loss_error);
      r.mean_loss_error += same->mean_loss_error;
      r.eval_loss_error += same->eval_loss_error;
      for (LayerSensitivity& l : r.layers) {
        const auto layer =
            std::find_if(same->layers.begin(), same->layers.end(),
                         [&](const LayerSensitivity& m) { return m.parameter == l.parameter; });
        if (layer == same->layers.end()) {
          throw std::logic_error("train: a sensitivity repeat lacks a layer");
        }
        l.removed_by_seed.push_back(layer->removed);
        l.mean_loss_error += layer->mean_loss_error;
        l.eval_loss_error += layer->eval_loss_error;
        l.removed += layer->removed;
      }
    }
  }
  // The sums become means over the seeds, and the layers are ranked by theirs.
  const auto seeds = static_cast<double>(config.sensitivity_seeds);
  for (RecipeSensitivity& r : result.sensitivity) {
    r.mean_loss_error /= seeds;
    r.eval_loss_error /= seeds;
    for (LayerSensitivity& l : r.layers) {
      l.mean_loss_error /= seeds;
      l.eval_loss_error /= seeds;
      l.removed /= seeds;
    }
    std::stable_sort(
        r.layers.begin(), r.layers.end(),
        [](const LayerSensitivity& a, const LayerSensitivity& b) { return a.removed > b.removed; });
  }
  return result;
}

ProfileResult profile_steps(const TrainConfig& config, const Dataset& train_set,
                            std::size_t warmup) {
  return steps::with_model(config, train_set, [&](const auto& model) {
    return steps::run_profile<EmulatedOps>(model, config, train_set, warmup);
  });
}

nlohmann::json to_json(const TrainResult& result) {
  const TrainConfig& c = result.config;
  nlohmann::json policies = nlohmann::json::array();
  for (const auto& p : c.policies) policies.push_back(p.name);
  nlohmann::json recipes = nlohmann::json::array();
  for (const auto& r : c.recipes) recipes.push_back(r.name);
  nlohmann::json optimizer;
  if (const auto* sgd = std::get_if<SgdOptions>(&c.optimizer)) {
    optimizer = {{"name", "sgd"},
                 {"lr", sgd->lr},
                 {"momentum", sgd->momentum},
                 {"dampening", sgd->dampening},
                 {"weight_decay", sgd->weight_decay},
                 {"nesterov", sgd->nesterov}};
  } else {
    const auto& a = std::get<AdamWOptions>(c.optimizer);
    optimizer = {{"name", "adamw"},     {"lr", a.lr},   {"beta1", a.beta1},
                 {"beta2", a.beta2},    {"eps", a.eps}, {"weight_decay", a.weight_decay},
                 {"amsgrad", a.amsgrad}};
  }
  nlohmann::json j{{"schema", "ampbench.train/1"},
                   {"config",
                    {{"model", c.model},
                     {"policies", policies},
                     {"recipes", recipes},
                     {"recipe_arch", c.recipe_arch},
                     {"keep_bf16", c.keep_bf16},
                     {"sensitivity", c.sensitivity},
                     {"sensitivity_seeds", c.sensitivity_seeds},
                     {"reference_bits", c.reference_bits},
                     {"steps", c.steps},
                     {"batch", c.batch},
                     {"accumulate", c.accumulate},
                     {"seed", c.seed},
                     {"scaler", c.scaler == ScalerMode::automatic ? "auto"
                                : c.scaler == ScalerMode::on      ? "on"
                                                                  : "off"},
                     {"optimizer", optimizer},
                     {"clip_norm", c.clip_norm},
                     {"loss_budget", c.loss_budget},
                     {"accuracy_budget", c.accuracy_budget}}},
                   {"dataset", result.dataset},
                   {"train_samples", result.train_samples},
                   {"eval_samples", result.eval_samples},
                   {"parameters", result.parameters},
                   {"seconds", result.seconds},
                   {"backend", result.backend},
                   {"reference", run_json(result.reference, result.parameters)}};
  if (!result.device.is_null()) j["device"] = result.device;
  if (!result.cuda_unavailable.empty()) j["cuda_unavailable"] = result.cuda_unavailable;
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : result.runs) runs.push_back(run_json(r, result.parameters));
  j["runs"] = std::move(runs);
  if (c.sensitivity) {
    nlohmann::json sensitivity = nlohmann::json::array();
    for (const RecipeSensitivity& r : result.sensitivity) {
      nlohmann::json layers = nlohmann::json::array();
      for (const LayerSensitivity& l : r.layers) {
        nlohmann::json by_seed = nlohmann::json::array();
        for (const double removed : l.removed_by_seed) by_seed.push_back(number(removed));
        layers.push_back({{"parameter", l.parameter},
                          {"run", l.run},
                          {"mean_loss_error", number(l.mean_loss_error)},
                          {"eval_loss_error", number(l.eval_loss_error)},
                          {"removed", number(l.removed)},
                          {"removed_by_seed", std::move(by_seed)}});
      }
      nlohmann::json error_by_seed = nlohmann::json::array();
      for (const double e : r.mean_loss_error_by_seed) error_by_seed.push_back(number(e));
      sensitivity.push_back({{"recipe", r.recipe},
                             {"run", r.run},
                             {"backend", r.backend},
                             {"seeds", r.seeds},
                             {"mean_loss_error", number(r.mean_loss_error)},
                             {"mean_loss_error_by_seed", std::move(error_by_seed)},
                             {"eval_loss_error", number(r.eval_loss_error)},
                             {"layers", std::move(layers)}});
    }
    j["sensitivity"] = std::move(sensitivity);
  }
  return j;
}

}  // namespace ampbench::train
