#include "harness/runtime/backend.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

namespace ampbench::runtime {

std::string_view name_of(Request request) {
  switch (request) {
    case Request::cpu: return "cpu";
    case Request::cuda: return "cuda";
    case Request::all: return "all";
  }
  return "?";
}

ParsedRequest parse_request(std::string_view value, std::span<const Request> allowed,
                            std::string_view option) {
  const auto found =
      std::find_if(allowed.begin(), allowed.end(), [&](Request r) { return name_of(r) == value; });
  if (found != allowed.end()) return {*found, {}};
  std::vector<std::string_view> names;
  for (const Request r : allowed) names.push_back(name_of(r));
  return {std::nullopt, fmt::format("{}: unknown backend '{}' (available: {})", option, value,
                                    fmt::join(names, ", "))};
}

Selection selection_of(Request request) {
  return {request != Request::cuda, request != Request::cpu};
}

std::vector<std::string> names_of(Selection selection) {
  std::vector<std::string> names;
  if (selection.cpu) names.emplace_back("cpu");
  if (selection.cuda) names.emplace_back("cuda");
  return names;
}

CudaStatus cuda_not_built() {
  CudaStatus status;
  status.unavailable = "this build has no CUDA backend (configure with the CUDA toolkit)";
  status.gpu = "not probed: this build has no CUDA backend";
  status.libraries = "none: this build has no CUDA backend";
  return status;
}

Opening opening_for(Request request, CudaStatus cuda) {
  Opening opening;
  opening.runs = selection_of(request);
  if (opening.runs.cuda && !cuda.available) {
    opening.runs.cuda = false;
    const std::string why =
        cuda.unavailable.empty() ? std::string("no usable CUDA device") : cuda.unavailable;
    if (request == Request::cuda) {
      opening.refusal = fmt::format("--backend cuda: {}", why);
    } else {
      opening.cpu_alone = why;
    }
  }
  opening.cuda = std::move(cuda);
  return opening;
}

}  // namespace ampbench::runtime
