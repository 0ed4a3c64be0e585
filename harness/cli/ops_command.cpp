// ampbench ops: the op catalog — each op's class, shape syntax, operands, reference and bound.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/ops/catalog.hpp"

namespace ampbench::cli {

int run_ops(bool json, std::ostream& out) {
  nlohmann::json list = nlohmann::json::array();
  // The table's rows as text, each column as wide as its longest entry and two blanks.
  std::vector<std::array<std::string, 7>> rows = {
      {"op", "class", "shape", "default", "operands", "reference", "a-priori bound"}};
  for (const auto& op : ops::catalog()) {
    const ops::Shape shape = ops::parse_shape(op, op.default_shape);
    std::string operands;
    nlohmann::json operand_list = nlohmann::json::array();
    for (const auto& o : ops::operands(op, shape)) {
      operands +=
          fmt::format("{}{}{}", operands.empty() ? "" : ", ", o.name, o.optional ? "?" : "");
      const char* held = o.held_in == ops::HeldIn::output         ? "output"
                         : o.held_in == ops::HeldIn::accumulation ? "accumulation"
                         : o.held_in == ops::HeldIn::input_or_own ? "input_or_own"
                                                                  : "input";
      operand_list.push_back({{"name", o.name},
                              {"index", o.is_index},
                              {"optional", o.optional},
                              {"parameter", o.role == ops::Role::parameter},
                              {"held_in", o.is_index ? "index" : held}});
    }
    list.push_back({{"op", op.name},
                    {"class", op.op_class},
                    {"shape", op.shape_syntax},
                    {"default_shape", op.default_shape},
                    {"operands", operand_list},
                    {"computes", op.summary},
                    {"reference", ops::reference_kind(op)},
                    {"bound", op.bound}});
    rows.push_back({std::string(op.name), std::string(op.op_class), std::string(op.shape_syntax),
                    std::string(op.default_shape), operands, std::string(ops::reference_kind(op)),
                    std::string(op.bound)});
  }
  if (!json) {
    std::array<std::size_t, 7> width{};
    for (const auto& row : rows) {
      for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size() + 2);
    }
    for (const auto& row : rows) {
      std::string line;
      for (std::size_t c = 0; c + 1 < row.size(); ++c)
        line += fmt::format("{:<{}}", row[c], width[c]);
      out << line << row.back() << '\n';
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
