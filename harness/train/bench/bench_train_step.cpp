// One training step of the default MLP (32 features, hidden 256, 10 classes, batch 64): forward,
// backward, binary32 master gradients and an AdamW step, in fp32 emulation, in amp-fp16 emulation
// and in the 113-bit reference, in steps/s, each against fp32 emulation in the same run. No
// targets: the ratios say what a reference step costs (the bound is on the whole run:
// `ampbench train --model mlp`, 200 steps of four policies and the reference, within 2 minutes).
#include <benchmark/benchmark.h>

#include <vector>

#include "harness/bench/ratios.hpp"
#include "harness/policy/policy.hpp"
#include "harness/train/data.hpp"
#include "harness/train/models.hpp"
#include "harness/train/ops.hpp"
#include "harness/train/optimizer.hpp"

namespace {

namespace bench = ampbench::bench;
namespace train = ampbench::train;
using ampbench::reference::Real;

constexpr std::size_t kBatch = 64;

struct Setup {
  train::Mlp model{train::MlpShape{32, 256, 10}};
  train::Dataset data = train::make_clusters(1, 1024);
  std::vector<std::vector<double>> initial = train::initial_parameters(model.parameters(), 1);
};

template <class Ops, class Master>
void run_steps(benchmark::State& state, Ops ops, const typename Ops::Scalar& d_loss) {
  const Setup s;
  std::vector<std::vector<Master>> weights;
  for (const auto& v : s.initial) {
    std::vector<Master> w;
    for (const double x : v) w.push_back(Master(x));
    weights.push_back(std::move(w));
  }
  train::Optimizer<Master> optimizer(train::AdamWOptions{});
  std::uint64_t step = 0;
  for (auto _ : state) {
    const auto batch =
        train::gather(s.data, train::batch_indices(s.data.samples(), kBatch, step++, 1));
    std::vector<typename Ops::Tensor> params, grads;
    for (const auto& w : weights) params.push_back(ops.parameter(w));
    benchmark::DoNotOptimize(s.model.loss_and_gradients(ops, params, batch.inputs, batch.targets,
                                                        kBatch, d_loss, grads));
    std::vector<std::vector<Master>> master;
    for (const auto& g : grads) master.push_back(ops.master_gradient(g));
    optimizer.step(weights, master);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_step_fp32(benchmark::State& state) {
  run_steps<train::EmulatedOps, float>(
      state, train::EmulatedOps(*ampbench::policy::find_builtin("fp32")), 1.0);
}

void BM_step_amp_fp16(benchmark::State& state) {
  run_steps<train::EmulatedOps, float>(
      state, train::EmulatedOps(*ampbench::policy::find_builtin("amp-fp16")), 65536.0);
}

void BM_step_reference_113_bits(benchmark::State& state) {
  const ampbench::reference::WorkingPrecision bits(113);
  run_steps<train::ReferenceOps, Real>(state, train::ReferenceOps(), Real(1));
}

}  // namespace

BENCHMARK(BM_step_fp32)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_step_amp_fp16)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_step_reference_113_bits)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  const bench::RatioTable table{"fp32 emulation, one MLP training step (steps/s)",
                                [](const bench::Results& results, const bench::Throughput& t) {
                                  if (t.family == "BM_step_fp32") return -1.0;
                                  const auto it = results.find("BM_step_fp32");
                                  return it == results.end() ? -1.0 : bench::median_of(it->second);
                                },
                                [](std::string_view) { return 0.0; }};
  return bench::run_with_ratios(argc, argv, {table});
}
