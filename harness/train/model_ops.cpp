#include "harness/train/model_ops.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/ops/autocast_ops.hpp"
#include "harness/ops/convolution.hpp"
#include "harness/policy/policy.hpp"
#include "harness/train/models.hpp"
#include "harness/train/trainer.hpp"

namespace ampbench::train {
namespace {

// A tensor of the recording backend: its size, and the format the type flow holds it in.
struct Sized {
  std::size_t size = 0;
  numeric::Format format = numeric::formats::fp32;
};

// Kernels on tensors of sizes only (ops/autocast_ops.hpp says what a backend's kernels are): each
// gives its result's size, and computes nothing. The type flow over them (ops::AutocastOps) tells
// ran_as each catalog op a method runs as and the policy op it runs under, as it tells every
// backend's: what EmulatedOps and CudaOps run is recorded from the same code, not from a list.
class RecordingKernels {
 public:
  using Tensor = Sized;
  using Scalar = double;
  using Master = float;

  // Which policy does not matter: the catalog ops a method runs as are the same under each.
  RecordingKernels() : policy_(*policy::find_builtin("fp32")) {}
  const policy::Policy& policy() const { return policy_; }

  struct NoPhase {
    ~NoPhase() {}  // user-provided: a phase held only for its scope is not an unused variable
  };
  NoPhase phase(const char*) const { return {}; }
  Tensor constant(std::span<const double> v) const { return {v.size()}; }
  Tensor parameter(std::span<const Master> v) const { return {v.size()}; }
  std::vector<Master> master_gradient(const Tensor& t) const { return std::vector<Master>(t.size); }
  static std::vector<double> to_doubles(const Tensor& t) { return std::vector<double>(t.size); }
  static double to_double(Scalar s) { return s; }
  static std::size_t elements(const Tensor& t) { return t.size; }

  // The catalog ops run so far, each with its policy op once, in the order first run.
  std::vector<ops::ModelOp> ran;
  void ran_as(const ops::OpInfo& op, policy::Op precision) {
    const bool seen = std::any_of(ran.begin(), ran.end(), [&](const ops::ModelOp& m) {
      return m.op == &op && m.precision == precision;
    });
    if (!seen) ran.push_back({&op, precision});
  }

 protected:
  using Precision = policy::OpPrecision;
  NoPhase op_range(const char*) const { return {}; }
  Tensor cast(const Tensor& t, const numeric::Format& to, numeric::Rounding) const {
    return {t.size, to};
  }

  // The catalog op's result: its output shape's size.
  Tensor run(const Precision&, const ops::OpInfo& op, const ops::Shape& shape,
             const std::vector<Tensor>&, std::span<const std::int64_t>) {
    return {ops::element_count(ops::output_shape(op, shape))};
  }
  ops::LayerNormGradients<Tensor> layer_norm_backward(const Precision&, const Tensor& x,
                                                      const Tensor&, const Tensor& gamma,
                                                      std::size_t, std::size_t) {
    return {x, gamma, gamma};
  }
  Tensor cross_entropy_backward(const Precision&, const Tensor& logits,
                                std::span<const std::int64_t>, std::size_t, std::size_t, Scalar) {
    return logits;
  }
  Tensor batch_norm(const Precision&, const Tensor& x, const Tensor&, const Tensor&, std::size_t,
                    std::size_t, std::size_t) {
    return x;
  }
  ops::LayerNormGradients<Tensor> batch_norm_backward(const Precision&, const Tensor& x,
                                                      const Tensor&, const Tensor& gamma,
                                                      std::size_t, std::size_t, std::size_t) {
    return {x, gamma, gamma};
  }
  Tensor attention(const Precision&, const Tensor& q, const Tensor&, const Tensor&, std::size_t,
                   std::size_t, std::size_t) {
    return q;
  }
  ops::AttentionGradients<Tensor> attention_backward(const Precision&, const Tensor& q,
                                                     const Tensor& k, const Tensor& v,
                                                     const Tensor&, std::size_t, std::size_t,
                                                     std::size_t) {
    return {q, k, v};
  }

 private:
  policy::Policy policy_;
};

using RecordingOps = ops::AutocastOps<RecordingKernels>;
static_assert(ops::TrainingOps<RecordingOps>);

// The ops one step of `model` runs on a batch of two samples of `inputs` values (all of them) and
// `targets` targets.
template <class Model>
std::vector<ops::ModelOp> ops_of(const Model& model, std::size_t inputs, std::size_t targets) {
  RecordingOps ops;
  std::vector<Sized> params;
  for (const auto& spec : model.parameters()) params.push_back({element_count(spec)});
  const std::vector<double> x(inputs, 0.0);
  const std::vector<std::int64_t> t(targets, 0);
  std::vector<Sized> grads;
  model.loss_and_gradients(ops, params, x, t, 2, 1.0, grads);
  return std::move(ops.ran);
}

}  // namespace

std::vector<ops::ModelOp> model_ops(std::string_view model) {
  if (model == "mlp") {
    const Mlp mlp(MlpShape{});
    return ops_of(mlp, 2 * mlp.shape().inputs, 2);
  }
  if (model == "cnn") {
    const Cnn cnn(CnnShape{});
    const CnnShape& s = cnn.shape();
    return ops_of(cnn, 2 * s.channels * s.size * s.size, 2);
  }
  if (model == "transformer") {
    const Transformer transformer(TransformerShape{});
    const TransformerShape& s = transformer.shape();
    return ops_of(transformer, 2 * s.length * s.features, 2 * s.length);
  }
  const std::vector<std::string> models = model_names();
  throw std::invalid_argument(
      fmt::format("model {}: the models are {}", model, fmt::join(models, ", ")));
}

}  // namespace ampbench::train
