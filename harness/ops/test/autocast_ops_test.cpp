// Autocast's type flow as the trainer's backends run it (autocast_ops.hpp), on a recording backend:
// its kernels compute nothing and note the formats of the operands they receive, its casts note
// each conversion. The CPU emulation and the CUDA backend are the same class over their own
// kernels, so what these tests pin is what both run, the GPU's included, without a GPU. The
// expected flows are written from PyTorch's rules (autocast's lists, the cuBLASLt epilogue adding
// addmm's bias in the output type, autograd returning a gradient in its tensor's dtype), case by
// case, not derived from the code under test.
#include "harness/ops/autocast_ops.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/numeric/options.hpp"

namespace ampbench::ops {
namespace {

namespace formats = numeric::formats;
using numeric::Format;

// A tensor of sizes and formats only; `name` says where it came from in the log.
struct Recorded {
  std::size_t size = 0;
  Format format = formats::fp32;
  std::string name;
};

class RecordingKernels {
 public:
  using Tensor = Recorded;
  using Scalar = double;
  using Master = float;

  explicit RecordingKernels(policy::Policy policy) : policy_(std::move(policy)) {}
  const policy::Policy& policy() const { return policy_; }
  std::vector<std::string> log;

 protected:
  using Precision = policy::OpPrecision;
  struct NoRange {
    ~NoRange() {}  // user-provided: a range held only for its scope is not an unused variable
  };
  NoRange op_range(const char*) { return {}; }
  // "x fp32->fp16 rne" for a rounding, "x fp16=>fp32" for an exact change of format.
  Tensor cast(const Tensor& t, const Format& to, numeric::Rounding mode) {
    if (numeric::same_format(t.format, to)) return t;
    if (policy::contains(to, t.format)) {
      log.push_back(fmt::format("{} {}=>{}", t.name, t.format.name, to.name));
    } else {
      log.push_back(fmt::format("{} {}->{} {}", t.name, t.format.name, to.name,
                                numeric::rounding_name(mode)));
    }
    return {t.size, to, t.name};
  }

  // Each kernel notes "name(q.input/q.output: formats of its operands)" and gives its result in
  // its first operand's format, as the device's kernels write their operands' type.
  Tensor kernel(std::string_view name, const Precision& q, std::span<const Tensor* const> in) {
    std::string operands;
    for (const Tensor* t : in) {
      operands += fmt::format("{}{} {}", operands.empty() ? "" : ", ", t->name, t->format.name);
    }
    log.push_back(fmt::format("{}[{}->{}]({})", name, q.input.name, q.output.name, operands));
    return {in.front()->size, in.front()->format, std::string(name)};
  }
  Tensor kernel(std::string_view name, const Precision& q,
                std::initializer_list<const Tensor*> in) {
    return kernel(name, q, std::span<const Tensor* const>(in.begin(), in.size()));
  }
  static std::size_t elements(const Tensor& t) { return t.size; }
  static std::vector<double> to_doubles(const Tensor& t) { return std::vector<double>(t.size); }

  // The backend's one entry to the catalog's ops, noted by the op's catalog name; an absent
  // optional operand (an empty tensor, without a name) is left out of the note.
  Tensor run(const Precision& q, const OpInfo& op, const Shape&, const std::vector<Tensor>& in,
             std::span<const std::int64_t>) {
    std::vector<const Tensor*> given;
    for (const Tensor& t : in) {
      if (!t.name.empty()) given.push_back(&t);
    }
    return kernel(op.name, q, given);
  }

  LayerNormGradients<Tensor> layer_norm_backward(const Precision& q, const Tensor& x,
                                                 const Tensor& dy, const Tensor& gamma, std::size_t,
                                                 std::size_t) {
    const Tensor dx = kernel("layer_norm_backward", q, {&x, &dy, &gamma});
    return {dx, {gamma.size, dx.format, "dgamma"}, {gamma.size, dx.format, "dbeta"}};
  }
  Tensor cross_entropy_backward(const Precision& q, const Tensor& logits,
                                std::span<const std::int64_t>, std::size_t, std::size_t, Scalar) {
    return kernel("cross_entropy_backward", q, {&logits});
  }
  Tensor batch_norm(const Precision& q, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                    std::size_t, std::size_t, std::size_t) {
    return kernel("batch_norm", q, {&x, &gamma, &beta});
  }
  LayerNormGradients<Tensor> batch_norm_backward(const Precision& q, const Tensor& x,
                                                 const Tensor& dy, const Tensor& gamma, std::size_t,
                                                 std::size_t, std::size_t) {
    const Tensor dx = kernel("batch_norm_backward", q, {&x, &dy, &gamma});
    return {dx, {gamma.size, dx.format, "dgamma"}, {gamma.size, dx.format, "dbeta"}};
  }
  Tensor attention(const Precision& q, const Tensor& queries, const Tensor& keys,
                   const Tensor& values, std::size_t, std::size_t, std::size_t) {
    return kernel("attention", q, {&queries, &keys, &values});
  }
  AttentionGradients<Tensor> attention_backward(const Precision& q, const Tensor& queries,
                                                const Tensor& keys, const Tensor& values,
                                                const Tensor& d_out, std::size_t, std::size_t,
                                                std::size_t) {
    const Tensor dq = kernel("attention_backward", q, {&queries, &keys, &values, &d_out});
    return {dq, {keys.size, dq.format, "dk"}, {values.size, dq.format, "dv"}};
  }

 private:
  policy::Policy policy_;
};

using Ops = AutocastOps<RecordingKernels>;

Ops under(std::string_view policy) {
  return Ops(*policy::find_builtin(policy));
}

Recorded tensor(const char* name, const Format& f, std::size_t size = 4) {
  return {size, f, name};
}

using Log = std::vector<std::string>;

TEST(AutocastOps, LinearUnderAmpFp16CastsItsInputsAndBiasToFp16) {
  // autocast's fp16 list has linear (addmm): x, w and the bias go to fp16; the product is fp16.
  Ops ops = under("amp-fp16");
  const Recorded y = ops.linear(tensor("x", formats::fp32), tensor("w", formats::fp32),
                                tensor("b", formats::fp32), 2, 2, 2);
  EXPECT_EQ(ops.log, (Log{"x fp32->fp16 rne", "w fp32->fp16 rne", "b fp32->fp16 rne",
                          "linear[fp16->fp16](x fp16, w fp16, b fp16)"}));
  EXPECT_EQ(std::string_view(y.format.name), "fp16");
}

TEST(AutocastOps, LinearsGradientsComeBackInTheirTensorsFormats) {
  // The backward of an fp16 linear whose x, w and b are fp32: the products read fp16 operands
  // and their fp16 results go back to fp32, autograd's cast back of autocast's casts.
  Ops ops = under("amp-fp16");
  const auto g =
      ops.linear_backward(tensor("x", formats::fp32), tensor("w", formats::fp32),
                          tensor("b", formats::fp32), tensor("dy", formats::fp16), 2, 2, 2, true);
  EXPECT_EQ(ops.log,
            (Log{"x fp32->fp16 rne", "w fp32->fp16 rne",
                 "gemm_backward_a[fp16->fp16](dy fp16, w fp16)", "gemm_backward_a fp16=>fp32",
                 "gemm_backward_b[fp16->fp16](x fp16, dy fp16)", "gemm_backward_b fp16=>fp32",
                 "linear_backward_bias[fp16->fp16](dy fp16)", "linear_backward_bias fp16=>fp32"}));
  EXPECT_EQ(std::string_view(g.dx.format.name), "fp32");
  EXPECT_EQ(std::string_view(g.dw.format.name), "fp32");
  EXPECT_EQ(std::string_view(g.db.format.name), "fp32");

  // Without need_dx (the first layer) w is not converted and no dx product runs.
  Ops first = under("amp-fp16");
  first.linear_backward(tensor("x", formats::fp32), tensor("w", formats::fp32),
                        tensor("b", formats::fp32), tensor("dy", formats::fp16), 2, 2, 2, false);
  EXPECT_EQ(first.log.front(), "x fp32->fp16 rne");
  EXPECT_EQ(first.log.size(), 5u);
}

TEST(AutocastOps, Tf32RoundsTheProductsInputsButNotTheBias) {
  Ops ops = under("tf32");
  ops.linear(tensor("x", formats::fp32), tensor("w", formats::fp32), tensor("b", formats::fp32), 2,
             2, 2);
  // (The recording kernel writes its first operand's format, tf32, which the flow widens to the
  // output's fp32; cuBLASLt writes fp32 itself.)
  EXPECT_EQ(ops.log, (Log{"x fp32->tf32 rne", "w fp32->tf32 rne",
                          "linear[tf32->fp32](x tf32, w tf32, b fp32)", "linear tf32=>fp32"}));
}

TEST(AutocastOps, APolicysInputModeReachesTheOperands) {
  // A Tensor Core fed raw fp32 registers (docs/policies.md): tf32 by truncation.
  const policy::Policy rz = policy::parse_policy(
      "name = \"tf32-rz\"\nbase = \"tf32\"\n[matmul]\ninput_mode = \"rz\"\n", "test");
  Ops ops(rz);
  ops.linear(tensor("x", formats::fp32), tensor("w", formats::fp32), tensor("b", formats::fp32), 2,
             2, 2);
  // (The recording kernel writes its first operand's format, tf32, which the flow widens to the
  // output's fp32; cuBLASLt writes fp32 itself.)
  EXPECT_EQ(ops.log, (Log{"x fp32->tf32 rz", "w fp32->tf32 rz",
                          "linear[tf32->fp32](x tf32, w tf32, b fp32)", "linear tf32=>fp32"}));
}

TEST(AutocastOps, LayerNormRunsInFp32UnderAutocastAndItsGradientGoesBackToBf16) {
  // layer_norm is on autocast's fp32 list: a bf16 x widens (exactly), the fp32 weights stay, the
  // output is fp32; dx returns to x's bf16 (a rounding), dgamma and dbeta stay fp32.
  Ops ops = under("amp-bf16");
  const Recorded y = ops.layer_norm(tensor("x", formats::bf16), tensor("gamma", formats::fp32),
                                    tensor("beta", formats::fp32), 2, 2);
  EXPECT_EQ(std::string_view(y.format.name), "fp32");
  const auto g =
      ops.layer_norm_backward(tensor("x", formats::bf16), tensor("dy", formats::fp32),
                              tensor("gamma", formats::fp32), tensor("beta", formats::fp32), 2, 2);
  EXPECT_EQ(ops.log,
            (Log{"x bf16=>fp32", "layer_norm[fp32->fp32](x fp32, gamma fp32, beta fp32)",
                 "x bf16=>fp32", "layer_norm_backward[fp32->fp32](x fp32, dy fp32, gamma fp32)",
                 "layer_norm_backward fp32->bf16 rne"}));
  EXPECT_EQ(std::string_view(g.dx.format.name), "bf16");
  EXPECT_EQ(std::string_view(g.dgamma.format.name), "fp32");
  EXPECT_EQ(std::string_view(g.dbeta.format.name), "fp32");
}

TEST(AutocastOps, BatchNormKeepsItsFp32WeightsUnderAutocastAndHalvesThemUnderHalfModel) {
  Ops amp = under("amp-fp16");
  amp.batch_norm(tensor("x", formats::fp16), tensor("gamma", formats::fp32),
                 tensor("beta", formats::fp32), 1, 2, 2);
  EXPECT_EQ(amp.log, (Log{"batch_norm[fp16->fp16](x fp16, gamma fp32, beta fp32)"}));

  Ops half = under("half-model");
  half.batch_norm(tensor("x", formats::fp16), tensor("gamma", formats::fp32),
                  tensor("beta", formats::fp32), 1, 2, 2);
  EXPECT_EQ(half.log, (Log{"gamma fp32->fp16 rne", "beta fp32->fp16 rne",
                           "batch_norm[fp16->fp16](x fp16, gamma fp16, beta fp16)"}));
}

TEST(AutocastOps, TheLossRunsInFp32AndItsGradientReturnsToTheLogitsFp16) {
  // cross_entropy's parts are on autocast's fp32 list: fp16 logits widen; the fp32 gradient a
  // device kernel writes is rounded back to the logits' fp16.
  Ops ops = under("amp-fp16");
  const std::int64_t targets[] = {0, 1};
  ops.cross_entropy(tensor("logits", formats::fp16), targets, 2, 2);
  const Recorded g =
      ops.cross_entropy_backward(tensor("logits", formats::fp16), targets, 2, 2, 1.0);
  EXPECT_EQ(ops.log, (Log{"logits fp16=>fp32", "cross_entropy[fp32->fp32](logits fp32)",
                          "logits fp16=>fp32", "cross_entropy_backward[fp32->fp32](logits fp32)",
                          "cross_entropy_backward fp32->fp16 rne"}));
  EXPECT_EQ(std::string_view(g.format.name), "fp16");
}

TEST(AutocastOps, AddPromotesToTheWidestOfItsInputs) {
  // add is on no list: an fp16 residual plus an fp32 one runs in fp32 (torch.promote_types).
  Ops ops = under("amp-fp16");
  const Recorded y = ops.add(tensor("a", formats::fp16), tensor("b", formats::fp32));
  EXPECT_EQ(ops.log, (Log{"a fp16=>fp32", "add[fp32->fp32](a fp32, b fp32)"}));
  EXPECT_EQ(std::string_view(y.format.name), "fp32");
}

TEST(AutocastOps, AttentionUnderAmpFp16ReadsFp16Operands) {
  Ops ops = under("amp-fp16");
  const Recorded y = ops.attention(tensor("q", formats::fp32), tensor("k", formats::fp32),
                                   tensor("v", formats::fp32), 1, 2, 2);
  EXPECT_EQ(ops.log, (Log{"q fp32->fp16 rne", "k fp32->fp16 rne", "v fp32->fp16 rne",
                          "attention[fp16->fp16](q fp16, k fp16, v fp16)"}));
  EXPECT_EQ(std::string_view(y.format.name), "fp16");
}

TEST(AutocastOps, AKernelsResultInItsOperandsTypeIsRoundedToTheOutputFormat) {
  // A device kernel writes its operands' type; when the policy's output is narrower the flow
  // rounds the result (in the op's mode), and a gradient goes on to its input's format.
  const policy::Policy narrow =
      policy::parse_policy("name = \"gelu-out-fp16\"\n[ops.gelu]\noutput = \"fp16\"\n", "test");
  Ops ops(narrow);
  const Recorded y = ops.gelu(tensor("x", formats::fp32), 2, 2);
  const Recorded dx = ops.gelu_backward(tensor("x", formats::fp32), tensor("dy", formats::fp16));
  EXPECT_EQ(ops.log, (Log{"gelu[fp32->fp16](x fp32)", "gelu fp32->fp16 rne", "dy fp16=>fp32",
                          "gelu_backward[fp32->fp16](x fp32, dy fp32)",
                          "gelu_backward fp32->fp16 rne", "gelu_backward fp16=>fp32"}));
  EXPECT_EQ(std::string_view(y.format.name), "fp16");
  EXPECT_EQ(std::string_view(dx.format.name), "fp32");
}

TEST(AutocastOps, GradientForCastsToTheInputsFormat) {
  Ops ops = under("amp-fp16");
  const Recorded g = ops.gradient_for(tensor("x", formats::fp32), tensor("g", formats::fp16));
  EXPECT_EQ(ops.log, (Log{"g fp16=>fp32"}));
  EXPECT_EQ(std::string_view(g.format.name), "fp32");
}

}  // namespace
}  // namespace ampbench::ops
