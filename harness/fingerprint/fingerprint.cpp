// The feature tests of the fingerprint (see fingerprint.hpp and docs/fingerprint.md). Every probe
// is built from the input and accumulator formats alone, scaled so that its operands are normal
// numbers of the input format (subnormals only where a test is about them) and its expected
// results normal numbers of the accumulator; later tests use the parameters inferred by earlier
// ones, never a model's fields.
#include "harness/fingerprint/fingerprint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ampbench::fingerprint {
namespace {

using numeric::Format;
using numeric::MmaAccumulator;
using numeric::Rounding;

double p2(int e) {
  return std::ldexp(1.0, e);
}

// The formats a test builds its probes for.
struct Formats {
  Format in;
  Format acc;  // fp32 or fp16: what c and d hold
  int instruction_k;
};

// One product a * b of a probe.
struct Term {
  double a;
  double b;
};

// A product of value m_a * m_b * 2^e whose operands are normal numbers of the input format, the
// exponent split evenly where the range allows (m_a, m_b in [1, 2) with few bits); throws
// std::invalid_argument when the format cannot hold them.
Term product(const Format& in, int e, double m_a = 1.0, double m_b = 1.0) {
  const int lo = std::max(in.emin, e - in.emax);
  const int hi = std::min(in.emax, e - in.emin);
  if (lo > hi) {
    throw std::invalid_argument(
        fmt::format("{} cannot hold two normal factors of 2^{}", in.name, e));
  }
  const int half = e >= 0 ? e / 2 : -((1 - e) / 2);  // floor(e / 2)
  const int ea = std::clamp(half, lo, hi);
  return {m_a * p2(ea), m_b * p2(e - ea)};
}
Term negated(Term t) {
  return {-t.a, t.b};
}

Probe probe(double c, std::initializer_list<Term> terms) {
  Probe p{c, {}, {}};
  for (const Term& t : terms) {
    p.a.push_back(t.a);
    p.b.push_back(t.b);
  }
  return p;
}
Probe negated(Probe p) {
  p.c = -p.c;
  for (double& a : p.a) a = -a;
  return p;
}

// Whether a hypothesis predicts the outputs: as values (NaN never matches), and with `signs`, the
// signs of zeros too.
bool predicts(const std::vector<double>& expected, const std::vector<double>& outputs, bool signs) {
  if (expected != outputs) return false;
  for (std::size_t i = 0; signs && i < expected.size(); ++i) {
    if (std::signbit(expected[i]) != std::signbit(outputs[i])) return false;
  }
  return true;
}

// The single hypothesis whose predictions equal the outputs.
std::optional<std::size_t> matching(const std::vector<Hypothesis>& hypotheses,
                                    const std::vector<double>& outputs, bool signs) {
  std::optional<std::size_t> found;
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    if (predicts(hypotheses[i].expected, outputs, signs)) {
      if (found) return std::nullopt;  // ambiguous: the probes do not tell these apart
      found = i;
    }
  }
  return found;
}

constexpr const char* kUnexplained = "no hypothesis explains the outputs";

// The executor's outputs, one per probe (anything else is an executor error).
std::vector<double> run(Executor& executor, const std::vector<Probe>& probes) {
  std::vector<double> d = executor.run(probes);
  if (d.size() != probes.size()) {
    throw std::runtime_error(fmt::format("{}: {} results for {} probes", executor.description(),
                                         d.size(), probes.size()));
  }
  return d;
}

// Runs the probes and picks the matching hypothesis (`signs`: the signs of zeros must match too);
// a sweep keeps only the match and its neighbours in the evidence.
std::optional<std::size_t> decide(Executor& executor, Evidence& e, bool sweep, bool signs = false) {
  e.outputs = run(executor, e.probes);
  const std::optional<std::size_t> match = matching(e.hypotheses, e.outputs, signs);
  e.verdict = match ? e.hypotheses[*match].name : kUnexplained;
  if (sweep && match) {
    const std::size_t first = *match == 0 ? 0 : *match - 1;
    const std::size_t last = std::min(e.hypotheses.size(), *match + 2);
    e.hypotheses =
        std::vector<Hypothesis>(e.hypotheses.begin() + static_cast<std::ptrdiff_t>(first),
                                e.hypotheses.begin() + static_cast<std::ptrdiff_t>(last));
  }
  return match;
}

Evidence evidence(const char* parameter, const char* test, const char* source) {
  Evidence e;
  e.parameter = parameter;
  e.test = test;
  e.source = source;
  return e;
}

// A test that needs an earlier parameter that could not be inferred.
Evidence not_run(const char* parameter, const char* test, const char* needs) {
  Evidence e = evidence(parameter, test, "");
  e.verdict = fmt::format("not run: needs {}", needs);
  return e;
}

// --- The tests ----------------------------------------------------------------------------------

// Fasi21 test A: the smallest subnormal of the input times a power of two that makes the product
// a normal of the accumulator, with the subnormal in A and then in B.
Evidence subnormal_inputs(Executor& x, const Formats& f, Parameters& out) {
  Evidence e = evidence("subnormal_inputs", "smallest input subnormal times 2^k, in A and in B",
                        "Fasi21 test A (tc_test_numerics-*.cu)");
  const int tiny_exp = f.in.emin - f.in.fraction_bits();
  const int k = std::max(0, f.acc.emin - tiny_exp);
  if (k > f.in.emax) throw std::invalid_argument("subnormal inputs: no normal product");
  const double tiny = p2(tiny_exp), scale = p2(k), d = tiny * scale;
  e.probes = {probe(0.0, {{tiny, scale}}), probe(0.0, {{scale, tiny}})};
  e.hypotheses = {{"used", {d, d}}, {"flushed to zero", {0.0, 0.0}}};
  if (const auto m = decide(x, e, false)) out.subnormal_inputs = *m == 0;
  return e;
}

// Fasi21 test A, outputs: a result half the accumulator's smallest normal, from a product alone and
// from c minus a product. Where no product of normal inputs is that small (fp16 inputs, fp32
// accumulator), c itself is the subnormal, passed through with no products.
Evidence subnormal_outputs(Executor& x, const Formats& f, Parameters& out) {
  Evidence e = evidence("subnormal_outputs", "a result of half the accumulator's smallest normal",
                        "Fasi21 test A (tc_test_numerics-*.cu)");
  const double half = p2(f.acc.emin - 1);
  try {
    const Term t = product(f.in, f.acc.emin - 1);
    e.probes = {probe(0.0, {t}), probe(p2(f.acc.emin), {negated(t)})};
  } catch (const std::invalid_argument&) {
    e.test += " (c alone: no product of normal inputs is that small)";
    e.probes = {probe(half, {}), probe(-half, {})};
  }
  const double second = e.probes[1].c > 0 ? half : -half;
  e.hypotheses = {{"written", {half, second}}, {"flushed to zero", {0.0, 0.0}}};
  if (const auto m = decide(x, e, false)) out.subnormal_outputs = *m == 0;
  return e;
}

// Fasi21 test B: with u = 2^-p, (1-u) * (1-u) 2^s - (1-2u) 2^s = u^2 2^s exactly; a product first
// rounded to the input format ((1-u)^2 to 1-2u) gives 0.
Evidence exact_products(Executor& x, const Formats& f, Parameters& out) {
  Evidence e = evidence("exact_products", "(1-u)(1-u)2^s - (1-2u)2^s with u = 2^-p",
                        "Fasi21 test B (products are computed exactly)");
  const int p = f.in.precision;
  const double u = p2(-p);
  const int s = std::max(0, f.acc.emin + 2 * p);
  e.probes = {probe(0.0, {{1 - u, (1 - u) * p2(s)}, {-(1 - 2 * u), p2(s)}})};
  e.hypotheses = {{"exact", {u * u * p2(s)}}, {"rounded to the input format", {0.0}}};
  if (const auto m = decide(x, e, false)) out.exact_products = *m == 0;
  return e;
}

// Fasi21 test D1, generalised: 2^E - 2^E + 2^(E-g). The terms are aligned to 2^E, so the small
// one survives exactly when its g bits lie within the F kept fraction bits: the largest g that
// gives 2^(E-g) is F.
Evidence fraction_bits(Executor& x, const Formats& f, Parameters& out) {
  Evidence e =
      evidence("fraction_bits", "2^E - 2^E + 2^(E-g) for g = 1, 2, ...: the largest g kept is F",
               "Fasi21 test D1 (extra alignment bits), as a sweep");
  const int big = std::min({2 * f.in.emax, f.acc.emax + 1, 30});
  const int g_max = std::min({numeric::kMaxFractionBits, big - 2 * f.in.emin, big - f.acc.emin});
  const Term top = product(f.in, big);
  for (int g = 1; g <= g_max; ++g) {
    e.probes.push_back(probe(0.0, {top, negated(top), product(f.in, big - g)}));
  }
  for (int candidate = 0; candidate <= g_max; ++candidate) {
    Hypothesis h{
        candidate == g_max ? fmt::format("F >= {}", g_max) : fmt::format("F = {}", candidate), {}};
    for (int g = 1; g <= g_max; ++g) h.expected.push_back(g <= candidate ? p2(big - g) : 0.0);
    e.hypotheses.push_back(std::move(h));
  }
  if (const auto m = decide(x, e, true)) out.fraction_bits = static_cast<int>(*m);
  return e;
}

// Products summing to 4 * 2^s from terms of exponent s (2.25 + 1.75), so that the result's leading
// bit lies two binades above the alignment exponent and bits below the output's last one survive
// alignment. The scale s keeps everything in range.
struct CarryScale {
  int s;
  int j_max;  // the smallest addend is 2^(s + 2 - j_max)
};
CarryScale carry_scale(const Formats& f) {
  const int wanted = std::max(0, 2 * f.in.emin + 30);
  const int s = std::min({f.acc.emax - 3, 2 * f.in.emax - 1, wanted});
  return {s, std::min(30, s + 1 - 2 * f.in.emin)};
}
Probe four(const Formats& f, int s, std::optional<Term> addend) {
  Probe pr = probe(0.0, {product(f.in, s, 1.5, 1.5), product(f.in, s, 1.75, 1.0)});
  if (addend) {
    pr.a.push_back(addend->a);
    pr.b.push_back(addend->b);
  }
  return pr;
}

// The output's precision: 4 * 2^s + 2^(s+2-j) is written exactly for j up to the output's
// fraction bits q and inexactly beyond, whatever the rounding (a tie rounds to even 4 * 2^s, or
// away, or in a direction): q is the length of the run of exact results, which must be followed
// only by inexact ones. The hypotheses shown are for truncation.
Evidence output_bits(Executor& x, const Formats& f, Parameters& out) {
  Evidence e = evidence("output_bits", "2.25*2^s + 1.75*2^s + 2^(s+2-j) for j = 1, 2, ...",
                        "Fasi21 tests C and D4 (fraction bits of the result, carry-out)");
  const auto [s, j_max] = carry_scale(f);
  std::vector<double> exact;
  for (int j = 1; j <= j_max; ++j) {
    e.probes.push_back(four(f, s, product(f.in, s + 2 - j)));
    exact.push_back(p2(s + 2) + p2(s + 2 - j));
  }
  e.outputs = run(x, e.probes);
  const auto first_inexact = std::mismatch(exact.begin(), exact.end(), e.outputs.begin()).first;
  const int q = static_cast<int>(first_inexact - exact.begin());
  for (int candidate = std::max(0, q - 1); candidate <= std::min(j_max, q + 1); ++candidate) {
    Hypothesis h{
        candidate == j_max ? fmt::format(">= {} bits", j_max) : fmt::format("{} bits", candidate),
        {}};
    for (int j = 1; j <= j_max; ++j) {
      h.expected.push_back(j <= candidate ? exact[static_cast<std::size_t>(j - 1)] : p2(s + 2));
    }
    e.hypotheses.push_back(std::move(h));
  }
  bool consistent = q > 0;  // even a bf16 output keeps 7 fraction bits
  for (std::size_t i = static_cast<std::size_t>(q); i < exact.size(); ++i) {
    consistent = consistent && e.outputs[i] != exact[i] && std::isfinite(e.outputs[i]);
  }
  if (!consistent) {
    e.verdict = kUnexplained;
    return e;
  }
  e.verdict = q == j_max ? fmt::format(">= {} bits", j_max) : fmt::format("{} bits", q);
  out.output_bits = q;
  return e;
}

// Fasi21 test C, generalised: 4 * 2^s plus 3/4 and 1/2 of the output's last unit, and their
// negations: truncation, round to nearest (even or away) and the directed roundings each give a
// different set of four results.
Evidence output_rounding(Executor& x, const Formats& f, Parameters& out) {
  const char* test = "4*2^s + 3/4 ulp and + 1/2 ulp, and their negations";
  if (!out.output_bits) return not_run("output_rounding", test, "output_bits");
  Evidence e =
      evidence("output_rounding", test, "Fasi21 test C (truncation, incl. the negated case)");
  const int s = carry_scale(f).s;
  const int q = *out.output_bits;
  const double four_s = p2(s + 2), ulp = p2(s + 2 - q);
  const Probe three_quarters = four(f, s, product(f.in, s + 1 - q, 1.5));
  const Probe half = four(f, s, product(f.in, s + 1 - q));
  e.probes = {three_quarters, negated(three_quarters), half, negated(half)};
  const double lo = four_s, hi = four_s + ulp;
  e.hypotheses = {{"truncation (toward zero)", {lo, -lo, lo, -lo}},
                  {"round to nearest, ties to even", {hi, -hi, lo, -lo}},
                  {"round to nearest, ties away", {hi, -hi, hi, -hi}},
                  {"round up", {hi, -lo, hi, -lo}},
                  {"round down", {lo, -hi, lo, -hi}}};
  constexpr Rounding kModes[] = {Rounding::toward_zero, Rounding::nearest_even,
                                 Rounding::nearest_away, Rounding::upward, Rounding::downward};
  if (const auto m = decide(x, e, false)) out.output_rounding = kModes[*m];
  return e;
}

// Fasi21 tests D2/D3 (normalisation): 2.25 * 2^s + 2^(s-F) - 2.25 * 2^s. Normalised once at the
// end, the terms are aligned to 2^s and the small one survives; a sum normalised after each
// addition holds 2.25 * 2^s at exponent s+1 with F fraction bits and loses it.
Evidence normalisation(Executor& x, const Formats& f, Parameters& out) {
  const char* test = "2.25*2^s + 2^(s-F) - 2.25*2^s, and negated";
  if (!out.fraction_bits) return not_run("normalise_once", test, "fraction_bits");
  Evidence e = evidence("normalise_once", test, "Fasi21 tests D2 and D3 (normalisation)");
  const int F = *out.fraction_bits;
  const int s = std::max({0, F + 2 * f.in.emin, F + f.acc.emin});
  const Term big = product(f.in, s, 1.5, 1.5);
  const Probe pr = probe(0.0, {big, product(f.in, s - F), negated(big)});
  e.probes = {pr, negated(pr)};
  e.hypotheses = {{"once, at the end", {p2(s - F), -p2(s - F)}},
                  {"after each addition", {0.0, 0.0}}};
  if (const auto m = decide(x, e, false)) out.normalise_once = *m == 0;
  return e;
}

// Khattak & Mikaitis 2025 (block size): c = 2^t, 2^E and -2^E in slots 0 and 1, and a small
// 2^(t-q) in slot j. In the fused step of slots 0 and 1 the terms are aligned to 2^E and the small
// one is lost; in a later step c = 2^t sets the alignment and it is kept. The first j that keeps
// it is the number of products per fused step.
Evidence fused_k(Executor& x, const Formats& f, Parameters& out) {
  const char* test = "c = 2^t, 2^E - 2^E in slots 0-1, 2^(t-q) in slot j: lost while fused";
  if (!out.fraction_bits || !out.output_bits) {
    return not_run("fused_k", test, "fraction_bits and output_bits");
  }
  Evidence e = evidence("fused_k", test,
                        "Khattak & Mikaitis 2025 (products per fused step); Fasi21 (V100: 4)");
  const int F = *out.fraction_bits;
  const int q = std::min(*out.output_bits, F);
  const int t = std::max(0, 2 * f.in.emin + q);
  const int big = t + F - q + 1;  // 2^t survives alignment to 2^big, 2^(t-q) does not
  const int k = 2 * f.instruction_k;
  const Term top = product(f.in, big);
  const Term small = product(f.in, t - q);
  for (int j = 2; j < k; ++j) {
    Probe pr{p2(t), std::vector<double>(static_cast<std::size_t>(k), 0.0),
             std::vector<double>(static_cast<std::size_t>(k), 0.0)};
    pr.a[0] = top.a;
    pr.b[0] = top.b;
    pr.a[1] = -top.a;
    pr.b[1] = top.b;
    pr.a[static_cast<std::size_t>(j)] = small.a;
    pr.b[static_cast<std::size_t>(j)] = small.b;
    e.probes.push_back(std::move(pr));
  }
  for (int candidate = 2; candidate <= k; ++candidate) {
    Hypothesis h{
        candidate == k ? fmt::format("fused_k >= {}", k) : fmt::format("fused_k = {}", candidate),
        {}};
    for (int j = 2; j < k; ++j) h.expected.push_back(p2(t) + (j < candidate ? 0.0 : p2(t - q)));
    e.hypotheses.push_back(std::move(h));
  }
  if (const auto m = decide(x, e, true)) out.fused_k = static_cast<int>(*m) + 2;
  return e;
}

// Mikaitis 2024 (monotonicity of multi-term adders), Fasi21 test D5: c = 2^s and its fp32
// predecessor with the same products, m1 of 2^(s-F-1) and m2 of 3 * 2^(s-F-1), for every
// m1 + m2 up to the fused step. With c = 2^s the terms are aligned to 2^s and lose their last
// bit; with the smaller c they are aligned to 2^(s-1) and keep it, which can make the result with
// the smaller c the larger one.
Evidence monotonicity(Executor& x, const Formats& f, std::optional<int> F, std::optional<int> fused,
                      std::optional<bool>& out) {
  const char* test = "c = pred(2^s) and c = 2^s with m1 x 2^(s-F-1) and m2 x 3*2^(s-F-1)";
  if (!same_values(f.acc, numeric::formats::fp32)) {
    Evidence e = evidence("monotonic", test, "Mikaitis 2024; Fasi21 test D5");
    e.verdict = "not applicable: fp16 output (the alignment losses lie below its precision)";
    return e;
  }
  if (!F || !fused) return not_run("monotonic", test, "fraction_bits and fused_k");
  Evidence e = evidence("monotonic", test, "Mikaitis 2024 (monotonicity); Fasi21 test D5");
  const int s = std::max(0, *F + 1 + 2 * f.in.emin);
  const double c_high = p2(s), c_low = p2(s) - p2(s - 24);
  const Term one = product(f.in, s - *F - 1), three = product(f.in, s - *F, 1.5);
  const int most = std::min(*fused, 32);
  std::vector<Probe> probes;
  for (int m1 = 0; m1 <= most; ++m1) {
    for (int m2 = 0; m1 + m2 <= most; ++m2) {
      Probe low{c_low, {}, {}};
      for (int i = 0; i < m1 + m2; ++i) {
        const Term& t = i < m1 ? one : three;
        low.a.push_back(t.a);
        low.b.push_back(t.b);
      }
      Probe high = low;
      high.c = c_high;
      probes.push_back(std::move(low));
      probes.push_back(std::move(high));
    }
  }
  const std::vector<double> d = run(x, probes);
  for (std::size_t i = 0; i + 1 < d.size(); i += 2) {
    if (d[i] > d[i + 1]) {
      e.probes = {probes[i], probes[i + 1]};
      e.outputs = {d[i], d[i + 1]};
      e.verdict = fmt::format("not monotonic: the smaller c gives {} > {}", d[i], d[i + 1]);
      out = false;
      return e;
    }
  }
  // No pair violates it: the evidence shows the last one, with the most products.
  e.probes = {probes[probes.size() - 2], probes.back()};
  e.outputs = {d[d.size() - 2], d.back()};
  e.verdict = fmt::format("monotonic on {} pairs", probes.size() / 2);
  out = true;
  return e;
}

// The sign of a zero: c = +0 plus one negative product below half the accumulator's smallest
// subnormal, a nonzero sum that truncation and rounding to nearest both make a zero. IEEE 754
// rounding keeps the sum's sign (-0); MMA-Sim's reference implementation gives +0. The product is
// the square of the input format's smallest normal where that is small enough (fp16 and e5m2 into
// an fp16 accumulator: -2^-14 * 2^-14), otherwise half the smallest subnormal itself (bf16 and
// tf32 into fp32: -2^-75 * 2^-75 = -2^-150, a tie, which ties-to-even takes to zero). It must
// also survive the alignment against c, whose zero the models (and MMA-Sim) give exponent -126:
// it lies within F bits of 2^-126. Where no product of normal inputs qualifies (fp16 or fp8 inputs
// into fp32; F < 24 with an fp32 accumulator) the test does not apply. The product stands in the
// instruction's last slot, after zero products: an instruction of two fused steps (Ampere's and
// Ada's m16n8k16) would otherwise add the second step's zero products to a -0 from the first, an
// exact zero sum, which is +0 under every hypothesis (as in IEEE arithmetic, -0 + +0 = +0).
Evidence zero_sign(Executor& x, const Formats& f, std::optional<int> F, std::optional<bool>& out) {
  const char* test = "c = +0 plus one negative product too small for the output";
  if (!F) return not_run("zero_sign_kept", test, "fraction_bits");
  Evidence e = evidence("zero_sign_kept", test,
                        "IEEE 754-2019 6.3 (the sign of a rounded result); MMA-Sim (+0)");
  const int half_subnormal = f.acc.emin - f.acc.precision;
  const int squared_min = 2 * f.in.emin;
  const int lowest_kept = -126 - *F;
  const int e_product =
      squared_min <= half_subnormal && squared_min >= lowest_kept ? squared_min : half_subnormal;
  if (e_product < squared_min || e_product < lowest_kept) {
    e.verdict =
        "not applicable: no product of normal inputs is below half the accumulator's smallest "
        "subnormal and within F bits of c";
    return e;
  }
  const Term t = negated(product(f.in, e_product));
  const auto slots = static_cast<std::size_t>(f.instruction_k);
  Probe pr{0.0, std::vector<double>(slots, 0.0), std::vector<double>(slots, 0.0)};
  pr.a.back() = t.a;
  pr.b.back() = t.b;
  e.probes = {std::move(pr)};
  e.hypotheses = {{"-0 (the sign kept, as IEEE 754 rounding)", {-0.0}},
                  {"+0 (as MMA-Sim's reference)", {0.0}}};
  if (const auto m = decide(x, e, false, true)) out = *m == 0;
  return e;
}

// Runs one test; probes that the formats cannot hold (an unusual user model) leave its parameter
// unknown instead of stopping the fingerprint.
template <typename Test>
Evidence guarded(const char* parameter, Test test) {
  try {
    return test();
  } catch (const std::invalid_argument& error) {
    Evidence e = evidence(parameter, "", "");
    e.verdict = fmt::format("cannot build the probes: {}", error.what());
    return e;
  }
}

Formats formats_of(const Executor& x) {
  const Format acc =
      x.accumulator() == MmaAccumulator::fp16 ? numeric::formats::fp16 : numeric::formats::fp32;
  return {x.input(), acc, x.instruction_k()};
}

int output_fraction_bits(numeric::MmaOutput output) {
  switch (output) {
    case numeric::MmaOutput::fp32_truncate: return 23;
    case numeric::MmaOutput::e8m13_truncate: return 13;
    case numeric::MmaOutput::fp16_nearest_even: return 10;
  }
  return 0;
}

}  // namespace

ModelExecutor::ModelExecutor(const numeric::MmaModel& model) : model_(model) {
  if (const char* error = numeric::mma_model_error(model)) {
    throw std::invalid_argument(fmt::format("model {}: {}", model.name, error));
  }
}

std::string ModelExecutor::description() const {
  return fmt::format("cpu model {} ({})", model_.name, model_.instruction);
}

std::vector<double> ModelExecutor::run(std::span<const Probe> probes) {
  std::vector<double> d;
  d.reserve(probes.size());
  for (const Probe& p : probes) {
    if (p.a.size() != p.b.size()) throw std::invalid_argument("probe: a and b differ in length");
    // Whole instructions, at least one, as the hardware runs them: the padding adds zero
    // products (mma_dot of k = 0 would return c without a fused step).
    const std::size_t k = static_cast<std::size_t>(model_.instruction_k);
    const std::size_t padded = std::max<std::size_t>(1, (p.a.size() + k - 1) / k) * k;
    std::vector<double> a = p.a, b = p.b;
    a.resize(padded, 0.0);
    b.resize(padded, 0.0);
    d.push_back(numeric::mma_dot(model_, p.c, a.data(), b.data(), static_cast<int>(padded)));
  }
  return d;
}

Fingerprint take_fingerprint(Executor& executor) {
  const Formats f = formats_of(executor);
  Fingerprint fp{executor.description(), f.in, executor.accumulator(), {}, {}};
  Parameters& p = fp.parameters;
  using Test = Evidence (*)(Executor&, const Formats&, Parameters&);
  const std::pair<const char*, Test> tests[] = {
      {"subnormal_inputs", subnormal_inputs}, {"subnormal_outputs", subnormal_outputs},
      {"exact_products", exact_products},     {"fraction_bits", fraction_bits},
      {"output_bits", output_bits},           {"output_rounding", output_rounding},
      {"normalise_once", normalisation},      {"fused_k", fused_k}};
  for (const auto& [parameter, test] : tests) {
    const Test run = test;  // a lambda may not capture a structured binding before C++20's clang 16
    fp.evidence.push_back(guarded(parameter, [&] { return run(executor, f, p); }));
  }
  fp.evidence.push_back(guarded("monotonic", [&] {
    return monotonicity(executor, f, p.fraction_bits, p.fused_k, p.monotonic);
  }));
  fp.evidence.push_back(guarded(
      "zero_sign_kept", [&] { return zero_sign(executor, f, p.fraction_bits, p.zero_sign_kept); }));
  return fp;
}

Parameters predicted_parameters(const numeric::MmaModel& model) {
  Parameters p;
  p.subnormal_inputs = model.subnormal_inputs;
  p.subnormal_outputs = model.subnormal_outputs;
  p.exact_products = true;  // the model's terms are exact products
  p.fraction_bits = model.fraction_bits;
  // A result 2 binades above the alignment exponent shows up to F + 2 bits; a later fused step
  // of the same instruction (split-k), with only zero products, aligns it again and keeps F.
  const bool split = model.fused_k > 0 && model.fused_k < model.instruction_k;
  p.output_bits = std::min(output_fraction_bits(model.output),
                           split ? model.fraction_bits : model.fraction_bits + 2);
  p.output_rounding = model.output == numeric::MmaOutput::fp16_nearest_even ? Rounding::nearest_even
                                                                            : Rounding::toward_zero;
  p.normalise_once = true;                      // the model normalises the exact sum once
  const int longest = 2 * model.instruction_k;  // the fused_k test's probes
  p.fused_k = model.fused_k == 0 ? longest : std::min(model.fused_k, longest);
  ModelExecutor executor(model);
  monotonicity(executor, formats_of(executor), p.fraction_bits, p.fused_k, p.monotonic);
  zero_sign(executor, formats_of(executor), p.fraction_bits, p.zero_sign_kept);
  return p;
}

const char* mma_architecture(int major, int minor) {
  if (major == 7) return minor < 5 ? "volta" : "turing";
  if (major == 8) return minor < 9 ? "ampere" : "ada";
  if (major == 9) return "hopper";
  if (major >= 10 && major <= 12) return "blackwell";
  return nullptr;
}

std::string describe(const std::optional<bool>& value) {
  return value ? (*value ? "yes" : "no") : "unknown";
}
std::string describe(const std::optional<int>& value) {
  return value ? std::to_string(*value) : "unknown";
}
std::string describe(const std::optional<Rounding>& value) {
  if (!value) return "unknown";
  switch (*value) {
    case Rounding::toward_zero: return "truncation";
    case Rounding::nearest_even: return "nearest-even";
    case Rounding::nearest_away: return "nearest-away";
    case Rounding::upward: return "upward";
    case Rounding::downward: return "downward";
    default: return "other";
  }
}

std::vector<Comparison> compare(const Parameters& inferred, const Parameters& predicted) {
  std::vector<Comparison> rows;
  const auto row = [&rows](const char* name, const auto& got, const auto& want) {
    // Neither side has a value where the test does not apply (monotonicity with an fp16 output).
    if (!got && !want) {
      rows.push_back({name, "n/a", "n/a", true});
    } else {
      rows.push_back({name, describe(got), describe(want), got == want});
    }
  };
  row("subnormal_inputs", inferred.subnormal_inputs, predicted.subnormal_inputs);
  row("subnormal_outputs", inferred.subnormal_outputs, predicted.subnormal_outputs);
  row("exact_products", inferred.exact_products, predicted.exact_products);
  row("fraction_bits", inferred.fraction_bits, predicted.fraction_bits);
  row("output_bits", inferred.output_bits, predicted.output_bits);
  row("output_rounding", inferred.output_rounding, predicted.output_rounding);
  row("normalise_once", inferred.normalise_once, predicted.normalise_once);
  row("fused_k", inferred.fused_k, predicted.fused_k);
  row("monotonic", inferred.monotonic, predicted.monotonic);
  row("zero_sign_kept", inferred.zero_sign_kept, predicted.zero_sign_kept);
  return rows;
}

bool all_match(std::span<const Comparison> rows) {
  return std::all_of(rows.begin(), rows.end(), [](const Comparison& r) { return r.match; });
}

}  // namespace ampbench::fingerprint
