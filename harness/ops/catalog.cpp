// The catalog's questions answered from the ops' definitions (definition.hpp; one file per
// family), with what every op shares: shape parsing and the audit's size limits, the lowering of
// gemm-shaped ops onto gemm, and runs at sampled positions.
#include "harness/ops/catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/ops/convolution.hpp"
#include "harness/ops/definition.hpp"
#include "reference/exact/dot.hpp"

namespace ampbench::ops {
namespace {

using backends::cpu::Arithmetic;
using backends::cpu::Summation;

// Every family's records, by enum Op (each enumerator defined exactly once), and the catalog's
// listing in that order.
struct Table {
  std::vector<const Definition*> by_op;
  std::vector<OpInfo> listing;
};

const Table& table() {
  static const Table t = [] {
    Table built;
    for (const auto family : {matmul_ops, convolution_ops, reduction_ops, softmax_ops,
                              normalization_ops, activation_ops, elementwise_ops, attention_ops}) {
      for (const Definition& d : family()) {
        const auto i = static_cast<std::size_t>(d.info.op);
        if (built.by_op.size() <= i) built.by_op.resize(i + 1, nullptr);
        if (built.by_op[i] != nullptr) {
          throw std::logic_error(fmt::format("op {} is defined twice", d.info.name));
        }
        built.by_op[i] = &d;
      }
    }
    for (const Definition* d : built.by_op) {
      if (d == nullptr) throw std::logic_error("an op of enum Op has no definition");
      built.listing.push_back(d->info);
    }
    return built;
  }();
  return t;
}

const OpInfo& gemm_info() {
  return definition(*find_op("gemm")).info;
}

// Positions of the op's output held by one part: the part, the positions in its product
// (increasing), and their indices in the list asked for.
struct PartPositions {
  std::size_t part = 0;
  std::vector<std::size_t> local;
  std::vector<std::size_t> indices;
};
std::vector<PartPositions> by_part(const std::vector<GemmPart>& parts,
                                   std::span<const std::size_t> positions) {
  std::size_t outputs = 0;
  for (const auto& p : parts) outputs += p.place.size();
  std::vector<std::pair<std::size_t, std::size_t>> where(outputs);  // (part, local)
  for (std::size_t g = 0; g < parts.size(); ++g) {
    for (std::size_t l = 0; l < parts[g].place.size(); ++l) where[parts[g].place[l]] = {g, l};
  }
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> pairs(parts.size());
  for (std::size_t e = 0; e < positions.size(); ++e) {
    const auto [g, l] = where.at(positions[e]);
    pairs[g].push_back({l, e});
  }
  std::vector<PartPositions> held;
  for (std::size_t g = 0; g < parts.size(); ++g) {
    if (pairs[g].empty()) continue;
    std::sort(pairs[g].begin(), pairs[g].end());
    PartPositions at{g, {}, {}};
    for (const auto& [l, e] : pairs[g]) {
      at.local.push_back(l);
      at.indices.push_back(e);
    }
    held.push_back(std::move(at));
  }
  return held;
}

// The whole op, part by part: run(part) gives each part's CpuRun, placed in the op's output.
template <class Run>
CpuRun run_parts(const OpInfo& op, const Shape& shape, const Inputs& in, Run run) {
  CpuRun all;
  all.output.resize(element_count(output_shape(op, shape)));
  for (const auto& part : definition(op).gemm_parts(op, shape, in)) {
    const CpuRun r = run(part);
    for (std::size_t l = 0; l < r.output.size(); ++l) all.output[part.place[l]] = r.output[l];
    all.events += r.events;
  }
  return all;
}

// The values at some positions of a set of gemms, part by part: at(part, local positions) gives
// each part's values there, placed at the positions' indices.
template <class At>
void at_parts(const OpInfo& op, const Shape& shape, const Inputs& in,
              std::span<const std::size_t> positions, At at) {
  const auto parts = definition(op).gemm_parts(op, shape, in);
  for (const auto& held : by_part(parts, positions)) at(parts[held.part], held);
}

void check_sizes(const OpInfo& op, const Shape& shape, std::string_view text) {
  for (const auto& operand : operands(op, shape)) {
    checked_product(operand.shape,
                    fmt::format("{} shape '{}': operand {}", op.name, text, operand.name));
  }
  checked_product(output_shape(op, shape), fmt::format("{} shape '{}': output", op.name, text));
}

Reference reference_at(const OpInfo& op, const Shape& shape, const Inputs& in,
                       const numeric::Format& output, numeric::Rounding mode,
                       std::vector<std::size_t> positions, std::uint64_t seed) {
  const Definition& d = definition(op);
  if (d.as_gemm) {
    const GemmPart g = d.as_gemm(op, shape, in);
    return reference_at(gemm_info(), g.shape, g.inputs, output, mode, std::move(positions), seed);
  }
  Reference result;
  result.positions = std::move(positions);
  result.rounded.resize(result.positions.size());
  result.nearest.resize(result.positions.size());
  if (d.gemm_parts) {
    at_parts(op, shape, in, result.positions, [&](const GemmPart& part, const auto& held) {
      const Reference r =
          reference_at(gemm_info(), part.shape, part.inputs, output, mode, held.local, seed);
      for (std::size_t i = 0; i < held.indices.size(); ++i) {
        result.rounded[held.indices[i]] = r.rounded[i];
        result.nearest[held.indices[i]] = r.nearest[i];
      }
    });
    return result;
  }
  return d.reference(op, shape, in, output, mode, std::move(result), seed);
}

}  // namespace

const Definition& definition(const OpInfo& op) {
  return *table().by_op.at(static_cast<std::size_t>(op.op));
}

std::size_t checked_product(const std::vector<std::size_t>& sizes, std::string_view what) {
  std::size_t n = 1;
  for (const auto s : sizes) {
    if (s != 0 && n > kMaxElements / s) {
      throw OpError(fmt::format("{}: more than {} elements (2^27): too large for the audit", what,
                                kMaxElements));
    }
    n *= s;
  }
  if (n > kMaxElements) {
    throw OpError(fmt::format("{}: {} elements, more than the audit's limit of {} (2^27)", what, n,
                              kMaxElements));
  }
  return n;
}

std::span<const OpInfo> catalog() {
  return table().listing;
}

const OpInfo* find_op(std::string_view name) {
  for (const auto& op : catalog()) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

std::string op_names() {
  std::string names;
  for (const auto& op : catalog()) {
    names += fmt::format("{}{}", names.empty() ? "" : ", ", op.name);
  }
  return names;
}

Shape parse_shape(const OpInfo& op, std::string_view text) {
  const Definition& d = definition(op);
  if (d.parse) {
    Shape shape = d.parse(op, text);
    check_sizes(op, shape, text);
    if (d.check) d.check(op, shape, text);
    return shape;
  }
  Shape shape;
  std::string_view rest = text;
  while (true) {
    const auto x = rest.find('x');
    const std::string_view part = rest.substr(0, x);
    std::size_t size = 0;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), size);
    if (part.empty() || error != std::errc() || end != part.data() + part.size() || size == 0) {
      throw OpError(fmt::format("{} shape '{}': '{}' is not a positive size (expected {})", op.name,
                                text, part, op.shape_syntax));
    }
    shape.sizes.push_back(size);
    if (x == std::string_view::npos) break;
    rest = rest.substr(x + 1);
  }
  const std::size_t expected = (op.shape_syntax.size() + 1) / 2;  // "MxNxK" has 3 sizes
  if (shape.sizes.size() != expected) {
    throw OpError(fmt::format("{} shape '{}': expected {} ({} sizes), got {}", op.name, text,
                              op.shape_syntax, expected, shape.sizes.size()));
  }
  if (d.check) d.check(op, shape, text);
  check_sizes(op, shape, text);
  return shape;
}

std::string to_string(const Shape& shape) {
  if (shape.sizes.size() == convolution::kShapeSizes) return convolution::to_string(shape);
  std::string s;
  for (const auto n : shape.sizes) s += fmt::format("{}{}", s.empty() ? "" : "x", n);
  return s;
}

std::size_t element_count(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (const auto s : shape) n *= s;
  return n;
}

std::vector<Operand> operands(const OpInfo& op, const Shape& shape) {
  return definition(op).operands(op, shape);
}

std::vector<Operand> operand_roles(const OpInfo& op) {
  const Definition& d = definition(op);
  return operands(op, d.parse
                          ? convolution::to_shape({})
                          : Shape{std::vector<std::size_t>((op.shape_syntax.size() + 1) / 2, 1)});
}

std::vector<std::size_t> output_shape(const OpInfo& op, const Shape& shape) {
  const Definition& d = definition(op);
  if (d.output_shape) return d.output_shape(op, shape);
  return {shape.sizes[0], shape.sizes[1]};
}

Shape shape_from_operands(const OpInfo& op, const std::vector<std::vector<std::size_t>>& shapes) {
  const Definition& d = definition(op);
  const std::size_t sizes = (op.shape_syntax.size() + 1) / 2;
  const auto first = shapes.empty() ? std::vector<std::size_t>{} : shapes.front();
  Shape shape;
  if (d.shape_of) {
    shape = d.shape_of(op, shapes);
  } else if (sizes == 1) {
    if (first.size() == 1) shape.sizes = {first[0]};
  } else if (first.size() == 2) {
    shape.sizes = {first[0], first[1]};
  }
  std::vector<Operand> expected;  // the required operands
  if (!shape.sizes.empty()) {
    for (auto& o : operands(op, shape)) {
      if (!o.optional) expected.push_back(std::move(o));
    }
  }
  const auto names = [&] {
    std::string list;
    for (const auto& o : operand_roles(op)) {
      list += fmt::format("{}{}", list.empty() ? "" : ", ", o.name);
    }
    return list;
  };
  if (shape.sizes.empty() || shapes.size() != expected.size()) {
    throw OpError(fmt::format("{} takes operands {} ({}: {})", op.name, names(), op.shape_syntax,
                              op.summary));
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (shapes[i] != expected[i].shape) {
      std::string want, got;
      for (const auto n : expected[i].shape) {
        want += fmt::format("{}{}", want.empty() ? "" : "x", n);
      }
      for (const auto n : shapes[i]) got += fmt::format("{}{}", got.empty() ? "" : "x", n);
      throw OpError(fmt::format("{}: operand {} has shape {}, expected {} (from {})", op.name,
                                expected[i].name, got.empty() ? "scalar" : got, want,
                                expected.front().name));
    }
  }
  return parse_shape(op, to_string(shape));  // the size limits
}

std::string_view reference_kind(const OpInfo& op) {
  return definition(op).reference_kind;
}

CpuRun run_cpu(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic,
               Summation summation, const Inputs& in) {
  const Definition& d = definition(op);
  if (d.as_gemm) {
    const GemmPart g = d.as_gemm(op, shape, in);
    return run_cpu(gemm_info(), g.shape, arithmetic, summation, g.inputs);
  }
  if (d.gemm_parts) {
    return run_parts(op, shape, in, [&](const GemmPart& part) {
      return run_cpu(gemm_info(), part.shape, arithmetic, summation, part.inputs);
    });
  }
  return d.run(op, shape, arithmetic, summation, in);
}

CpuRun run_cpu_at(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic,
                  Summation summation, const Inputs& in, std::span<const std::size_t> positions) {
  const Definition& d = definition(op);
  if (d.as_gemm) {
    const GemmPart g = d.as_gemm(op, shape, in);
    return run_cpu_at(gemm_info(), g.shape, arithmetic, summation, g.inputs, positions);
  }
  if (d.gemm_parts) {
    CpuRun run;
    run.output.resize(positions.size());
    at_parts(op, shape, in, positions, [&](const GemmPart& part, const auto& held) {
      const CpuRun r =
          run_cpu_at(gemm_info(), part.shape, arithmetic, summation, part.inputs, held.local);
      for (std::size_t i = 0; i < held.indices.size(); ++i)
        run.output[held.indices[i]] = r.output[i];
      run.events += r.events;
    });
    return run;
  }
  if (d.run_at) return d.run_at(op, shape, arithmetic, summation, in, positions);
  const auto out = output_shape(op, shape);
  if ((out.size() == 1 && out[0] == 1) || d.sampling.by == Sampling::By::whole) {
    CpuRun full = run_cpu(op, shape, arithmetic, summation, in);
    if (full.output.size() == 1) return full;
    CpuRun picked{{}, full.events};
    for (const auto p : positions) picked.output.push_back(full.output.at(p));
    return picked;
  }
  // Row by row: the row of the first `sliced` operands (x, and y for add and mul; the query for
  // attention), the others (per-column parameters, keys and values) whole.
  const auto& s = shape.sizes;
  const std::size_t width = s.back();
  Shape row_shape = shape;
  row_shape.sizes[0] = 1;
  CpuRun run;
  run.output.reserve(positions.size());
  const std::size_t per_row = out.size() == 2 ? out[1] : 1;
  std::size_t e = 0;
  while (e < positions.size()) {
    const std::size_t row = positions[e] / per_row;
    std::size_t end = e;
    while (end < positions.size() && positions[end] / per_row == row) ++end;
    Inputs one = in;
    for (std::size_t k = 0; k < d.sampling.sliced; ++k) {
      const auto first = values(in, k).begin() + static_cast<std::ptrdiff_t>(row * width);
      one.values[k].assign(first, first + static_cast<std::ptrdiff_t>(width));
    }
    const CpuRun r = run_cpu(op, row_shape, arithmetic, summation, one);
    run.events += r.events;
    for (std::size_t i = e; i < end; ++i) run.output.push_back(r.output.at(positions[i] % per_row));
    e = end;
  }
  return run;
}

bool runs_on_mma(const OpInfo& op) {
  return definition(op).tensor_core;
}

std::optional<std::string> why_no_mma(const OpInfo& op) {
  if (runs_on_mma(op)) return std::nullopt;
  std::string with;
  for (const auto& other : catalog()) {
    if (runs_on_mma(other)) with += fmt::format("{}{}", with.empty() ? "" : ", ", other.name);
  }
  return fmt::format("{} has no Tensor Core model (the ops with one: {})", op.name, with);
}

CpuRun run_cpu_mma(const OpInfo& op, const Shape& shape, const numeric::MmaModel& model,
                   const numeric::Format& output, numeric::Rounding mode, const Inputs& in) {
  if (const auto problem = why_no_mma(op)) throw OpError(*problem);
  const Definition& d = definition(op);
  if (d.as_gemm) {
    const GemmPart g = d.as_gemm(op, shape, in);
    return run_cpu_mma(gemm_info(), g.shape, model, output, mode, g.inputs);
  }
  if (d.gemm_parts) {
    return run_parts(op, shape, in, [&](const GemmPart& part) {
      return run_cpu_mma(gemm_info(), part.shape, model, output, mode, part.inputs);
    });
  }
  return d.run_mma(op, shape, model, output, mode, in);
}

Reference reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                    const numeric::Format& output, numeric::Rounding mode, std::size_t samples,
                    std::uint64_t seed) {
  const std::size_t count = element_count(output_shape(op, shape));
  return reference_at(op, shape, in, output, mode,
                      reference::sample_positions(count, samples == 0 ? count : samples, seed),
                      seed);
}

std::vector<double> error_bounds(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic,
                                 Summation summation, const Inputs& in,
                                 std::span<const std::size_t> positions) {
  const Definition& d = definition(op);
  std::vector<double> bounds;
  if (d.as_gemm) {
    const GemmPart g = d.as_gemm(op, shape, in);
    bounds = error_bounds(gemm_info(), g.shape, arithmetic, summation, g.inputs, positions);
  } else if (d.gemm_parts) {
    bounds.resize(positions.size());
    at_parts(op, shape, in, positions, [&](const GemmPart& part, const auto& held) {
      const auto r =
          error_bounds(gemm_info(), part.shape, arithmetic, summation, part.inputs, held.local);
      for (std::size_t i = 0; i < held.indices.size(); ++i) bounds[held.indices[i]] = r[i];
    });
  } else if (d.bounds) {
    bounds = d.bounds(op, shape, arithmetic, summation, in, positions);
  }
  // An infinite or NaN input (log-uniform and near-overflow inputs reach them) makes a term NaN
  // (inf * 0): the output is then inf or NaN, which the mismatch classes judge; no bound applies.
  for (double& b : bounds) {
    if (std::isnan(b)) b = std::numeric_limits<double>::infinity();
  }
  return bounds;
}

}  // namespace ampbench::ops
