#include "harness/train/model_ops.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/train/models.hpp"
#include "harness/train/trainer.hpp"

namespace ampbench::train {
namespace {

using policy::Op;

struct Sized {
  std::size_t size = 0;
};

// The ops interface on tensors of sizes only: each method notes the catalog ops it runs as and the
// policy op it runs under, as EmulatedOps and CudaOps run it.
class RecordingOps {
 public:
  using Tensor = Sized;
  using Scalar = double;
  using Master = float;
  using LinearGradients = ops::LinearGradients<Tensor>;
  using LayerNormGradients = ops::LayerNormGradients<Tensor>;
  using ConvolutionGradients = ops::ConvolutionGradients<Tensor>;
  using BatchNormGradients = ops::LayerNormGradients<Tensor>;
  using AttentionGradients = ops::AttentionGradients<Tensor>;

  struct NoPhase {
    ~NoPhase() {}
  };
  NoPhase phase(const char*) const { return {}; }
  Tensor constant(std::span<const double> v) const { return {v.size()}; }
  Tensor parameter(std::span<const Master> v) const { return {v.size()}; }
  std::vector<Master> master_gradient(const Tensor& t) const { return std::vector<Master>(t.size); }
  static std::vector<double> to_doubles(const Tensor& t) { return std::vector<double>(t.size); }
  static double to_double(Scalar s) { return s; }

  Tensor linear(const Tensor&, const Tensor&, const Tensor&, std::size_t rows, std::size_t,
                std::size_t out) {
    return note(Op::linear, {"linear"}, rows * out);
  }
  LinearGradients linear_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                  std::size_t rows, std::size_t in, std::size_t out, bool need_dx) {
    if (need_dx) note(Op::linear, {"gemm_backward_a"});
    note(Op::linear, {"gemm_backward_b", "linear_backward_bias"});
    return {{rows * in}, {in * out}, {out}};
  }
  Tensor gelu(const Tensor& x, std::size_t, std::size_t) {
    return note(Op::gelu, {"gelu"}, x.size);
  }
  Tensor gelu_backward(const Tensor& x, const Tensor&) {
    return note(Op::gelu, {"gelu_backward"}, x.size);
  }
  Tensor layer_norm(const Tensor& x, const Tensor&, const Tensor&, std::size_t, std::size_t) {
    return note(Op::layer_norm, {"layer_norm"}, x.size);
  }
  LayerNormGradients layer_norm_backward(const Tensor& x, const Tensor&, const Tensor& gamma,
                                         const Tensor& beta, std::size_t, std::size_t) {
    note(Op::layer_norm,
         {"layer_norm_backward", "layer_norm_backward_gamma", "layer_norm_backward_beta"});
    return {x, gamma, beta};
  }
  Scalar cross_entropy(const Tensor&, std::span<const std::int64_t>, std::size_t, std::size_t) {
    note(Op::cross_entropy, {"cross_entropy"});
    return 0;
  }
  Tensor cross_entropy_backward(const Tensor& logits, std::span<const std::int64_t>, std::size_t,
                                std::size_t, Scalar) {
    return note(Op::cross_entropy, {"cross_entropy_backward"}, logits.size);
  }
  Tensor conv2d(const Tensor&, const Tensor&, const ops::convolution::Geometry& g) {
    return note(Op::conv, {"conv2d"}, g.batch * g.filters * g.out_h() * g.out_w());
  }
  ConvolutionGradients conv2d_backward(const Tensor& x, const Tensor& w, const Tensor&,
                                       const ops::convolution::Geometry&, bool need_dx) {
    if (need_dx) note(Op::conv, {"conv2d_backward_data"});
    note(Op::conv, {"conv2d_backward_filter"});
    return {x, w};
  }
  Tensor batch_norm(const Tensor& x, const Tensor&, const Tensor&, std::size_t, std::size_t,
                    std::size_t) {
    return note(Op::batch_norm, {"batch_norm"}, x.size);
  }
  BatchNormGradients batch_norm_backward(const Tensor& x, const Tensor&, const Tensor& gamma,
                                         const Tensor& beta, std::size_t, std::size_t,
                                         std::size_t) {
    note(Op::batch_norm,
         {"batch_norm_backward", "batch_norm_backward_gamma", "batch_norm_backward_beta"});
    return {x, gamma, beta};
  }
  Tensor relu(const Tensor& x) { return note(Op::relu, {"relu"}, x.size); }
  Tensor relu_backward(const Tensor& x, const Tensor&) {
    return note(Op::relu, {"relu_backward"}, x.size);
  }
  Tensor mean_pool(const Tensor&, std::size_t rows, std::size_t) {
    return note(Op::mean, {"mean_pool"}, rows);
  }
  Tensor mean_pool_backward(const Tensor& x, const Tensor&, std::size_t, std::size_t) {
    return note(Op::mean, {"mean_pool_backward"}, x.size);
  }
  // The gradient of a residual input: no op of its own (the sum of two gradients is an add).
  Tensor gradient_for(const Tensor& input, const Tensor&) { return input; }
  Tensor add(const Tensor& a, const Tensor&) { return note(Op::add, {"add"}, a.size); }
  Tensor attention(const Tensor& q, const Tensor&, const Tensor&, std::size_t, std::size_t,
                   std::size_t) {
    return note(Op::attention, {"attention"}, q.size);
  }
  AttentionGradients attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor&, std::size_t, std::size_t, std::size_t) {
    note(Op::attention, {"attention_backward_q", "attention_backward_k", "attention_backward_v"});
    return {q, k, v};
  }

  std::vector<ops::ModelOp> ran;

 private:
  Tensor note(Op precision, std::initializer_list<std::string_view> names, std::size_t size = 0) {
    for (const std::string_view name : names) {
      const ops::OpInfo* op = ops::find_op(name);
      if (op == nullptr) {
        throw std::logic_error(fmt::format("model_ops: {} is not a catalog op", name));
      }
      const bool seen = std::any_of(ran.begin(), ran.end(), [&](const ops::ModelOp& m) {
        return m.op == op && m.precision == precision;
      });
      if (!seen) ran.push_back({op, precision});
    }
    return {size};
  }
};
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
