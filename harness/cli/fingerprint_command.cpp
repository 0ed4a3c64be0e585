// ampbench fingerprint: the Tensor Core feature tests (harness/fingerprint/) on the GPU, or on a
// CPU model of a preset, and their comparison with the preset of the architecture.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

#include "harness/cli/backend_options.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/file_plan.hpp"
#include "harness/fingerprint/fingerprint.hpp"
#include "harness/fingerprint/record.hpp"
#include "harness/numeric/mma.hpp"
#include "harness/runtime/cuda.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench fingerprint";

std::optional<numeric::Format> input_format(const std::string& name) {
  if (name == "fp16") return numeric::formats::fp16;
  if (name == "bf16") return numeric::formats::bf16;
  if (name == "tf32") return numeric::formats::tf32;
  if (name == "fp8" || name == "e4m3") return numeric::formats::e4m3;
  if (name == "e5m2") return numeric::formats::e5m2;
  return std::nullopt;
}

// The executor of --backend cuda and the architecture of its device, or the exit status and a
// message on `err` when there is none.
struct DeviceExecutor {
  runtime::MmaExecutor device;
  int status = kExitOk;
};

DeviceExecutor cuda_executor(const numeric::Format& input, numeric::MmaAccumulator accumulator,
                             const std::string& instruction, std::ostream& err) {
  if (refused(kCommand, runtime::open_backends(runtime::Request::cuda), err)) {
    return {{}, kExitNoDevice};
  }
  try {
    return {runtime::cuda_mma_executor(input, accumulator, instruction), kExitOk};
  } catch (const std::invalid_argument& e) {
    err << fmt::format("{}: --backend cuda: {}\n", kCommand, e.what());
    return {{}, kExitUsage};
  } catch (const std::runtime_error& e) {  // CudaError included
    err << fmt::format("{}: --backend cuda: {}\n", kCommand, e.what());
    return {{}, kExitNoDevice};
  }
}

}  // namespace

int run_fingerprint(const FingerprintArgs& args, std::ostream& out, std::ostream& err) {
  // ---- everything is checked before any work starts -----------------------------------------
  std::optional<numeric::Format> input = input_format(args.format);
  if (!input) {
    err << fmt::format("{}: --format: unknown format '{}' (fp16 bf16 tf32 fp8 e4m3 e5m2)\n",
                       kCommand, args.format);
    return kExitUsage;
  }
  if (args.accumulator != "fp32" && args.accumulator != "fp16") {
    err << fmt::format("{}: --accumulator: '{}' is neither fp32 nor fp16\n", kCommand,
                       args.accumulator);
    return kExitUsage;
  }
  auto accumulator =
      args.accumulator == "fp16" ? numeric::MmaAccumulator::fp16 : numeric::MmaAccumulator::fp32;
  std::optional<numeric::MmaModel> named;
  if (!args.preset.empty()) {
    named = numeric::mma_model_named(args.preset);
    if (!named) {
      err << fmt::format("{}: --preset: unknown preset '{}' (see docs/mma-models.md)\n", kCommand,
                         args.preset);
      return kExitUsage;
    }
    // The preset says what is probed.
    input = named->input;
    accumulator = named->accumulator();
  }
  const std::optional<runtime::Request> request =
      read_backend(kCommand, args.backend, err, runtime::kOneBackend);
  if (!request) return kExitUsage;
  if (args.instruction != "auto" && args.instruction != "mma" && args.instruction != "wgmma") {
    err << fmt::format("{}: --instruction: unknown instruction '{}' (auto, mma, wgmma)\n", kCommand,
                       args.instruction);
    return kExitUsage;
  }
  if (args.backend == "cpu" && args.instruction != "auto") {
    err << fmt::format(
        "{}: --instruction {}: the cpu backend runs a preset's model, whose instruction the "
        "preset names; --instruction chooses the GPU's\n",
        kCommand, args.instruction);
    return kExitUsage;
  }
  if (args.backend == "cpu" && args.arch.empty() && !named) {
    err << fmt::format("{}: --backend cpu fingerprints a preset: give --preset or --arch\n",
                       kCommand);
    return kExitUsage;
  }
  if (args.backend == "cuda" && named && !args.arch.empty()) {
    err << fmt::format("{}: --backend cuda: give --arch or --preset, not both\n", kCommand);
    return kExitUsage;
  }
  if (!args.json.empty()) {
    FilePlan files;
    files.output("--json", args.json);
    if (const auto problem = files.problem()) {
      err << fmt::format("{}: {}\n", kCommand, *problem);
      return kExitUsage;
    }
  }
  // The preset of an architecture for what is probed.
  const auto preset_of = [&](const std::string& arch) -> std::optional<numeric::MmaModel> {
    auto model = numeric::mma_model(arch, *input, accumulator);
    if (!model) {
      err << fmt::format("{}: no preset for {} with {} inputs and an {} accumulator\n", kCommand,
                         arch.empty() ? "this device" : arch, input->name,
                         accumulator == numeric::MmaAccumulator::fp16 ? "fp16" : "fp32");
    }
    return model;
  };

  // cpu: the emulated device is --preset (or --arch's preset), compared with --arch's preset (or
  // itself). cuda: the device, compared with --preset, or --arch's preset, or its own
  // architecture's.
  std::unique_ptr<fingerprint::Executor> executor;
  std::optional<numeric::MmaModel> preset = named;
  if (args.backend == "cpu") {
    const std::optional<numeric::MmaModel> device = named ? named : preset_of(args.arch);
    if (!device) return kExitUsage;
    preset = named && !args.arch.empty() ? preset_of(args.arch) : device;
    if (!preset) return kExitUsage;
    executor = std::make_unique<fingerprint::ModelExecutor>(*device);
  } else {
    DeviceExecutor device = cuda_executor(*input, accumulator, args.instruction, err);
    if (device.status != kExitOk) return device.status;
    if (!preset) preset = preset_of(args.arch.empty() ? device.device.arch : args.arch);
    if (!preset) return kExitUsage;
    executor = std::move(device.device.executor);
  }

  // ---- the tests ------------------------------------------------------------------------------
  fingerprint::Fingerprint fp;
  try {
    fp = fingerprint::take_fingerprint(*executor);
  } catch (const std::runtime_error& e) {  // the device failed (CudaError) or gave nonsense
    err << fmt::format("{}: {}\n", kCommand, e.what());
    return kExitNoDevice;
  }
  const auto rows = fingerprint::compare(fp.parameters, fingerprint::predicted_parameters(*preset));
  out << fmt::format("# executor: {}\n# preset: {} ({}; {})\n", fp.executor, preset->name,
                     preset->instruction, preset->source);
  out << "parameter\tinferred\tpreset\tmatch\n";
  for (const auto& row : rows) {
    out << fmt::format("{}\t{}\t{}\t{}\n", row.parameter, row.inferred, row.preset,
                       row.match ? "yes" : "NO");
  }
  const bool match = fingerprint::all_match(rows);
  out << (match ? "# every parameter matches the preset\n"
                : "# MISMATCH with the preset: a finding for the report\n");
  if (!args.json.empty()) {
    if (auto problem = write_json_file(args.json, fingerprint::to_json(fp, *preset, rows))) {
      err << fmt::format("{}: --json {}: {}\n", kCommand, args.json, *problem);
      return kExitUsage;
    }
  }
  return match ? kExitOk : kExitFail;
}

}  // namespace ampbench::cli
