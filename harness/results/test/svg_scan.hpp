// Reading the generated SVG back in the tests: the value of one attribute of every element of a
// kind, in document order, by plain string search (the writer's own output, one known layout).
#pragma once

#include <string>
#include <vector>

namespace ampbench::results::test {

inline std::vector<std::string> attribute_texts(const std::string& svg, const std::string& element,
                                                const std::string& attribute) {
  std::vector<std::string> values;
  const std::string open = "<" + element + " ";
  const std::string name = " " + attribute + "=\"";
  for (auto at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const auto end = svg.find('>', at);
    const auto value = svg.find(name, at);
    if (value == std::string::npos || value > end) continue;
    const auto first = value + name.size();
    values.push_back(svg.substr(first, svg.find('"', first) - first));
  }
  return values;
}

// The number of points of each polyline.
inline std::vector<std::size_t> polyline_points(const std::string& svg) {
  std::vector<std::size_t> points;
  for (const auto& list : attribute_texts(svg, "polyline", "points")) {
    std::size_t n = 0;
    for (const char c : list) n += c == ',' ? 1 : 0;
    points.push_back(n);
  }
  return points;
}

}  // namespace ampbench::results::test
