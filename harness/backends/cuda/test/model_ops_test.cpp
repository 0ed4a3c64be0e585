// The ops a model runs (train::model_ops, recorded from the model's code) and the audit's CUDA
// planner agree: every op a model runs in training is a catalog op that the audit's CUDA backend
// plans wherever the training planner lets the model train on the device, so an op the trainer
// runs on the GPU that the audit cannot judge there fails here by name.
#include "harness/train/model_ops.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/audit/audit.hpp"
#include "harness/backends/cuda/plan.hpp"
#include "harness/backends/cuda/training_plan.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/policy/policy.hpp"
#include "harness/train/trainer.hpp"

namespace ampbench::backends::cuda {
namespace {

// The names of the catalog ops the model runs, each once.
std::set<std::string> ops_of(std::string_view model) {
  std::set<std::string> names;
  for (const ops::ModelOp& m : train::model_ops(model)) names.insert(std::string(m.op->name));
  return names;
}

void expect_planned_where_trainable(std::string_view model, const std::set<std::string>& ran) {
  std::size_t trainable = 0;
  for (const policy::Policy& p : policy::builtin_policies()) {
    if (why_not_trainable(p, train::model_ops(model))) continue;
    ++trainable;
    for (const std::string& name : ran) {
      const ops::OpInfo* op = ops::find_op(name);
      const Planning planned = plan(*op, audit::precision_of(p, *op));
      EXPECT_TRUE(planned.plan.has_value())
          << model << " trains on the GPU under " << p.name << " but the audit cannot judge "
          << name << " there: " << planned.reason;
    }
  }
  EXPECT_GE(trainable, 6u) << model << ": the built-in policies the GPU trains it under";
}

// The mlp's step, op by op in the order it first runs each, with the precision each runs under:
// the backward of a linear layer under linear's, as autocast runs it.
TEST(ModelOps, TheMlpsOpsInTheOrderItsStepFirstRunsThem) {
  std::vector<std::pair<std::string, policy::Op>> ran;
  for (const ops::ModelOp& m : train::model_ops("mlp")) ran.emplace_back(m.op->name, m.precision);
  using policy::Op;
  const std::vector<std::pair<std::string, policy::Op>> expected{
      {"linear", Op::linear},
      {"gelu", Op::gelu},
      {"layer_norm", Op::layer_norm},
      {"cross_entropy", Op::cross_entropy},
      {"cross_entropy_backward", Op::cross_entropy},
      {"gemm_backward_a", Op::linear},
      {"gemm_backward_b", Op::linear},
      {"linear_backward_bias", Op::linear},
      {"layer_norm_backward", Op::layer_norm},
      {"layer_norm_backward_gamma", Op::layer_norm},
      {"layer_norm_backward_beta", Op::layer_norm},
      {"gelu_backward", Op::gelu}};
  EXPECT_EQ(ran, expected);
}

TEST(ModelOps, EveryModelOfTheTrainerHasOpsAndOthersAreRefusedByName) {
  for (const std::string& model : train::model_names()) {
    EXPECT_FALSE(train::model_ops(model).empty()) << model;
  }
  try {
    train::model_ops("rnn");
    ADD_FAILURE() << "rnn has ops";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "model rnn: the models are mlp, cnn, transformer");
  }
}

TEST(ModelOps, EveryOpTheMlpRunsIsACatalogOpTheAuditPlansOnTheGpu) {
  const auto ran = ops_of("mlp");
  EXPECT_EQ(ran,
            (std::set<std::string>{
                "linear", "gemm_backward_a", "gemm_backward_b", "linear_backward_bias", "gelu",
                "gelu_backward", "layer_norm", "layer_norm_backward", "layer_norm_backward_gamma",
                "layer_norm_backward_beta", "cross_entropy", "cross_entropy_backward"}));
  expect_planned_where_trainable("mlp", ran);
}

TEST(ModelOps, EveryOpTheCnnRunsIsACatalogOpTheAuditPlansOnTheGpu) {
  const auto ran = ops_of("cnn");
  EXPECT_TRUE(ran.contains("batch_norm_backward_gamma") && ran.contains("mean_pool") &&
              ran.contains("conv2d_backward_filter"));
  expect_planned_where_trainable("cnn", ran);
}

TEST(ModelOps, EveryOpTheTransformerRunsIsACatalogOpTheAuditPlansOnTheGpu) {
  const auto ran = ops_of("transformer");
  EXPECT_TRUE(ran.contains("attention_backward_v") && ran.contains("add"));
  expect_planned_where_trainable("transformer", ran);
}

}  // namespace
}  // namespace ampbench::backends::cuda
