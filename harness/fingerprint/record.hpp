// The fingerprint's record "ampbench.fingerprint/1" (docs/fingerprint.md): what `ampbench
// fingerprint --json` writes and what a suite's fingerprint case keeps as its detail.
#pragma once

#include <nlohmann/json.hpp>
#include <span>

#include "harness/fingerprint/fingerprint.hpp"

namespace ampbench::fingerprint {

// {schema, executor, input, accumulator, preset, match, parameters: [{parameter, inferred, preset,
// match}], evidence: [{parameter, test, source, verdict, outputs, probes, hypotheses}]}; numbers
// that JSON lacks (NaN, infinities) as the strings "nan", "inf", "-inf".
nlohmann::json to_json(const Fingerprint& fp, const numeric::MmaModel& preset,
                       std::span<const Comparison> rows);

}  // namespace ampbench::fingerprint
