// ampbench ops: the op catalog — each op's class, shape syntax, operands, reference and bound.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "harness/cli/commands.hpp"
#include "harness/ops/catalog.hpp"

namespace ampbench::cli {

int run_ops(bool json, std::ostream& out) {
  nlohmann::json list = nlohmann::json::array();
  if (!json) {
    out << fmt::format("{:<24}{:<14}{:<9}{:<15}{:<20}{:<38}{}\n", "op", "class", "shape", "default",
                       "operands", "reference", "a-priori bound");
  }
  for (const auto& op : ops::catalog()) {
    const ops::Shape shape = ops::parse_shape(op, op.default_shape);
    std::string operands;
    nlohmann::json operand_list = nlohmann::json::array();
    for (const auto& o : ops::operands(op, shape)) {
      operands +=
          fmt::format("{}{}{}", operands.empty() ? "" : ", ", o.name, o.optional ? "?" : "");
      operand_list.push_back({{"name", o.name}, {"index", o.is_index}, {"optional", o.optional}});
    }
    if (json) {
      list.push_back({{"op", op.name},
                      {"class", op.op_class},
                      {"shape", op.shape_syntax},
                      {"default_shape", op.default_shape},
                      {"operands", operand_list},
                      {"computes", op.summary},
                      {"reference", ops::reference_kind(op)},
                      {"bound", op.bound}});
    } else {
      out << fmt::format("{:<24}{:<14}{:<9}{:<15}{:<20}{:<38}{}\n", op.name, op.op_class,
                         op.shape_syntax, op.default_shape, operands, ops::reference_kind(op),
                         op.bound);
    }
  }
  if (json) {
    out << list.dump(2) << '\n';
  } else {
    out << "\nShapes: sizes separated by x (gemm MxNxK: A is MxK, B is KxN). name?: optional "
           "(gemm's "
           "accumulator input C,\nin the accumulation format; 'ampbench eval' takes it). "
           "docs/audit.md defines each op.\n";
  }
  return kExitOk;
}

}  // namespace ampbench::cli
