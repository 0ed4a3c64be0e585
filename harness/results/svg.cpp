#include "harness/results/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ampbench::results::svg {
namespace {

// The chart's layout in pixels: the plot area, with the legend to its right.
constexpr double kWidth = 690, kPlotLeft = 64, kPlotRight = 450, kLegendLeft = 466;
constexpr double kPlotTop = 40, kPlotHeight = 220;
constexpr double kPlotBottom = kPlotTop + kPlotHeight;
constexpr double kNoteLine = 16;    // the height of a line of the note under the chart
constexpr double kCharWidth = 6.5;  // of the 11px axis font, for spacing the x labels

std::string number(double v) {
  return fmt::format("{:.1f}", v);
}

bool drawable(double v, int log_base) {
  return std::isfinite(v) && (log_base == 0 || v > 0);
}

// Why a value is not drawn on an axis, for the note; empty when it is drawn.
std::string undrawn_reason(double v, int log_base) {
  if (std::isnan(v)) return "NaN";
  if (!std::isfinite(v)) return "infinite";
  if (log_base != 0 && v == 0) return "0";
  if (log_base != 0 && v < 0) return "negative";
  return "";
}

std::string text(double x, double y, const std::string& content, const std::string& attributes) {
  return fmt::format("<text x=\"{}\" y=\"{}\" {}>{}</text>", number(x), number(y), attributes,
                     escape(content));
}

// The frame, the y ticks with grid lines, the title and the y axis label.
std::string frame(const std::string& title, const Axis& y_axis, const Domain& y,
                  const Scale& y_scale) {
  std::string out = text(kWidth / 2, 20, title, "class=\"title\" text-anchor=\"middle\"");
  for (const double t : y.ticks) {
    const double py = y_scale(t);
    out += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", kPlotLeft,
                       kPlotRight, number(py), number(py));
    out += text(kPlotLeft - 6, py + 4, tick_label(t, y_axis.log_base), "text-anchor=\"end\"");
  }
  out += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                     kPlotLeft, kPlotTop, kPlotRight - kPlotLeft, kPlotHeight);
  out += fmt::format(
      "<text class=\"axis\" transform=\"translate(16 {}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>",
      number(kPlotTop + kPlotHeight / 2), escape(y_axis.label));
  return out;
}

std::string x_label(const std::string& label) {
  return text((kPlotLeft + kPlotRight) / 2, kPlotBottom + 36, label,
              "class=\"axis\" text-anchor=\"middle\"");
}

enum class Swatch { line, dashed, dot, cross, box };

std::string cross(double x, double y, const std::string& colour) {
  return fmt::format("<path class=\"cross\" d=\"M{} {}l8 8m0 -8l-8 8\" stroke=\"{}\"/>",
                     number(x - 4), number(y - 4), colour);
}

std::string legend(const std::vector<std::pair<std::string, std::string>>& entries,
                   const std::vector<Swatch>& swatches) {
  std::string out;
  double y = kPlotTop + 6;
  for (std::size_t i = 0; i < entries.size(); ++i, y += 18) {
    const auto& [name, c] = entries[i];
    switch (swatches[i]) {
      case Swatch::line:
      case Swatch::dashed:
        out += fmt::format(
            "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" "
            "stroke-width=\"2.5\"{}/>",
            kLegendLeft, kLegendLeft + 22, number(y), number(y), c,
            swatches[i] == Swatch::dashed ? " stroke-dasharray=\"5 3\"" : "");
        break;
      case Swatch::dot:
        out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"/>", kLegendLeft + 11,
                           number(y), c);
        break;
      case Swatch::cross: out += cross(kLegendLeft + 11, y, c); break;
      case Swatch::box:
        out += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"{}\" stroke=\"#555\" "
            "stroke-width=\"0.6\"/>",
            kLegendLeft + 4, number(y - 6), c);
        break;
    }
    constexpr std::size_t kLegendChars = 26;  // what fits right of the plot at 12px
    if (name.size() <= kLegendChars) {
      out += text(kLegendLeft + 30, y + 4, name, "class=\"legend\"");
    } else {
      out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"legend\"><title>{}</title>{}…</text>",
                         kLegendLeft + 30, number(y + 4), escape(name),
                         escape(name.substr(0, kLegendChars - 1)));
    }
  }
  return out;
}

// The note under the chart naming what was not drawn, and the <svg> around it all.
std::string wrap(const std::string& title, const std::string& body,
                 const std::vector<std::string>& notes) {
  const double height = kPlotBottom + 50 + kNoteLine * static_cast<double>(notes.size());
  std::string out = fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"{}\">",
      kWidth, height, kWidth, height, escape(title));
  out += body;
  double y = kPlotBottom + 56;
  for (const auto& note : notes) {
    out += text(kPlotLeft, y, note, "class=\"note\"");
    y += kNoteLine;
  }
  return out + "</svg>\n";
}

// "fp16: 3 values 0, 1 NaN (not drawn)" from the reasons of one series' undrawn points.
std::string undrawn_note(const std::string& name, const std::vector<std::string>& reasons) {
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& r : reasons) {
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == r; });
    if (it == counts.end()) {
      counts.emplace_back(r, 1);
    } else {
      ++it->second;
    }
  }
  std::string parts;
  for (const auto& [reason, n] : counts) {
    parts += fmt::format("{}{} {} {}", parts.empty() ? "" : ", ", n, n == 1 ? "value" : "values",
                         reason);
  }
  return fmt::format("{}: {} (not drawn on the log axis)", name, parts);
}

}  // namespace

Domain domain_of(double lo, double hi, int log_base, bool from_zero) {
  if (!(lo <= hi)) {  // nothing to draw
    lo = log_base ? 1 : 0;
    hi = log_base ? log_base : 1;
  }
  if (log_base) {
    // A point on the frame is hard to see: at least a quarter of a power of room at either end.
    // Within the positive binary64 range: the room around 1e-320 or 1e308 would reach 0 or inf.
    const double b = log_base;
    const double dlo = std::max(std::pow(b, std::floor(std::log(lo) / std::log(b) - 0.25)),
                                std::numeric_limits<double>::denorm_min());
    const double dhi = std::min(std::pow(b, std::ceil(std::log(hi) / std::log(b) + 0.25)),
                                std::numeric_limits<double>::max());
    return {dlo, dhi, log_ticks(dlo, dhi, log_base)};
  }
  if (from_zero) lo = std::min(lo, 0.0);
  if (hi == lo) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= from_zero && lo == 0 ? 0 : pad;
    hi += pad;
  }
  const auto rough = linear_ticks(lo, hi, 5);
  const double step = rough.size() >= 2 ? rough[1] - rough[0] : hi - lo;
  const double dlo = std::floor(lo / step + 1e-9) * step;
  const double dhi = std::ceil(hi / step - 1e-9) * step;
  return {dlo, dhi, linear_ticks(dlo, dhi, 5)};
}

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<double> linear_ticks(double lo, double hi, int count) {
  if (!(hi > lo) || count < 1 || !std::isfinite(hi - lo)) return {lo};
  const double raw = (hi - lo) / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
  // At most 1.5 count + 1 ticks, counted: where lo / step is beyond 2^53 (lo = 1e16, hi = lo + 2),
  // k + 1 == k, and a loop on k alone never ended.
  const double first = std::ceil(lo / step - 1e-9);
  std::vector<double> ticks;
  for (int i = 0; i <= 2 * count + 1; ++i) {
    const double t = (first + i) * step;
    if (t > hi + step * 1e-9) break;
    if (ticks.empty() || t > ticks.back()) ticks.push_back(t == 0 ? 0.0 : t);  // no -0
  }
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi, int base) {
  if (!(lo > 0) || !(hi >= lo) || (base != 10 && base != 2)) {
    throw std::invalid_argument(fmt::format("log_ticks({}, {}, {})", lo, hi, base));
  }
  const double b = base;
  const int first = static_cast<int>(std::ceil(std::log(lo) / std::log(b) - 1e-9));
  const int last = static_cast<int>(std::floor(std::log(hi) / std::log(b) + 1e-9));
  const int stride = std::max(1, (last - first + 8) / 8);
  std::vector<double> ticks;
  for (int e = first; e <= last; e += stride) ticks.push_back(std::pow(b, e));
  return ticks;
}

std::string tick_label(double value, int base) {
  if (base == 2 && value > 0) return fmt::format("2^{}", std::lround(std::log2(value)));
  const double magnitude = std::abs(value);
  if (value == 0 || (magnitude >= 1e-3 && magnitude < 1e5)) return fmt::format("{:g}", value);
  // 1e-05 reads better as 1e-5
  const int exponent = static_cast<int>(std::floor(std::log10(magnitude)));
  const double mantissa = value / std::pow(10.0, exponent);
  return std::abs(mantissa - 1) < 1e-9 ? fmt::format("1e{}", exponent)
                                       : fmt::format("{:g}e{}", mantissa, exponent);
}

Scale::Scale(double lo, double hi, double pixel_lo, double pixel_hi, bool log)
    : lo_(log ? std::log(lo) : lo),
      hi_(log ? std::log(hi) : hi),
      pixel_lo_(pixel_lo),
      pixel_hi_(pixel_hi),
      log_(log) {}

double Scale::operator()(double value) const {
  const double v = log_ ? std::log(value) : value;
  return pixel_lo_ + (v - lo_) / (hi_ - lo_) * (pixel_hi_ - pixel_lo_);
}

std::string colour(std::size_t index) {
  // Distinct at a glance and for the common colour-vision deficiencies (Okabe and Ito's palette,
  // then darker tones).
  static const char* const palette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00",
                                        "#56B4E9", "#8C6D00", "#6A3D9A", "#1B7837", "#B2182B"};
  return palette[index % std::size(palette)];
}

std::string segment_colour(std::size_t index) {
  static const char* const palette[] = {"#b3cde3", "#fbb4ae", "#ccebc5", "#decbe4", "#fed9a6",
                                        "#ffffcc", "#e5d8bd", "#fddaec", "#d9d9d9"};
  return palette[index % std::size(palette)];
}

std::string line_chart(const LineChart& chart) {
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo;
  double ylo = xlo, yhi = -xlo;
  std::vector<std::string> notes;
  for (const auto& s : chart.series) {
    std::vector<std::string> reasons;
    for (const auto& [x, y] : s.points) {
      const std::string why =
          undrawn_reason(x, chart.x.log_base) + undrawn_reason(y, chart.y.log_base);
      if (!why.empty()) {
        reasons.push_back(why);
        continue;
      }
      xlo = std::min(xlo, x), xhi = std::max(xhi, x);
      ylo = std::min(ylo, y), yhi = std::max(yhi, y);
    }
    if (!reasons.empty()) notes.push_back(undrawn_note(s.name, reasons));
  }
  if (!(xlo <= xhi)) notes.push_back("no values to draw");
  notes.insert(notes.end(), chart.notes.begin(), chart.notes.end());
  for (const auto& rule : chart.rules) {
    if (drawable(rule.y, chart.y.log_base))
      ylo = std::min(ylo, rule.y), yhi = std::max(yhi, rule.y);
  }
  const Domain xd = domain_of(xlo, xhi, chart.x.log_base, false);
  const Domain yd = domain_of(ylo, yhi, chart.y.log_base, false);
  const Scale xs(xd.lo, xd.hi, kPlotLeft, kPlotRight, chart.x.log_base != 0);
  const Scale ys(yd.lo, yd.hi, kPlotBottom, kPlotTop, chart.y.log_base != 0);

  std::string body = frame(chart.title, chart.y, yd, ys);
  for (const double t : xd.ticks) {
    body +=
        text(xs(t), kPlotBottom + 16, tick_label(t, chart.x.log_base), "text-anchor=\"middle\"");
  }
  body += x_label(chart.x.label);
  std::vector<std::pair<std::string, std::string>> entries;
  std::vector<Swatch> swatches;
  for (std::size_t index = 0; index < chart.series.size(); ++index) {
    const Series& s = chart.series[index];
    // Few points are dots, the earlier series' larger, so that equal values still show each.
    const double radius =
        s.points.size() > 5 ? 2.5 : std::max(3.0, 6.0 - static_cast<double>(index));
    std::vector<std::string> runs;  // the polylines: a point that cannot be drawn breaks the line
    std::string run, marks;
    std::size_t run_points = 0;
    const auto end_run = [&] {
      if (run_points > 1) runs.push_back(run);
      run.clear();
      run_points = 0;
    };
    for (const auto& [x, y] : s.points) {
      if (!drawable(x, chart.x.log_base) || !drawable(y, chart.y.log_base)) {
        end_run();
        continue;
      }
      run += fmt::format("{}{},{}", run.empty() ? "" : " ", number(xs(x)), number(ys(y)));
      ++run_points;
      if (s.crosses) {
        marks += cross(xs(x), ys(y), s.colour);
      } else if (!s.line || s.points.size() <= 30) {  // dots on a dense line would hide it
        marks += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"/>", number(xs(x)),
                             number(ys(y)), radius, s.colour);
      }
    }
    end_run();
    if (s.line) {
      for (const auto& points : runs) {
        body += fmt::format(
            "<polyline class=\"series\" points=\"{}\" stroke=\"{}\" stroke-width=\"{}\"/>", points,
            s.colour, s.width);
      }
    }
    body += marks;
    entries.emplace_back(s.name, s.colour);
    swatches.push_back(s.crosses ? Swatch::cross : runs.empty() ? Swatch::dot : Swatch::line);
  }
  for (const auto& rule : chart.rules) {
    if (!drawable(rule.y, chart.y.log_base)) continue;
    body += fmt::format(
        "<line class=\"rule\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" "
        "stroke-width=\"2\" stroke-dasharray=\"6 4\"/>",
        kPlotLeft, kPlotRight, number(ys(rule.y)), number(ys(rule.y)), kReferenceColour);
    entries.emplace_back(rule.name, kReferenceColour);
    swatches.push_back(Swatch::dashed);
  }
  body += legend(entries, swatches);
  return wrap(chart.title, body, notes);
}

std::string bar_chart(const BarChart& chart) {
  const bool log = chart.y.log_base != 0;
  if (chart.stacked && log) throw std::invalid_argument("bar_chart: stacked bars on a log axis");
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::vector<std::string> notes;
  for (std::size_t s = 0; s < chart.series.size(); ++s) {
    std::vector<std::string> reasons;
    for (std::size_t c = 0; c < chart.categories.size(); ++c) {
      const double v = chart.values.at(s).at(c);
      if (log && v == 0) continue;  // an empty bucket: no bar, which is what it means
      const std::string why = undrawn_reason(v, chart.y.log_base);
      if (!why.empty()) {
        reasons.push_back(why);
        continue;
      }
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    if (!reasons.empty()) notes.push_back(undrawn_note(chart.series[s], reasons));
  }
  if (chart.stacked) {
    for (std::size_t c = 0; c < chart.categories.size(); ++c) {
      double total = 0;
      for (const auto& values : chart.values) total += std::isfinite(values[c]) ? values[c] : 0;
      hi = std::max(hi, total);
    }
  }
  if (!(lo <= hi)) notes.push_back("no values to draw");
  // A log axis starts below the smallest value, so that its bar still shows; ticks below it (0.1
  // of a count) would only puzzle.
  Domain yd = domain_of(lo, hi, chart.y.log_base, !log);
  if (log) std::erase_if(yd.ticks, [&](double t) { return t < lo * (1 - 1e-9); });
  const Scale ys(yd.lo, yd.hi, kPlotBottom, kPlotTop, log);

  std::string body = frame(chart.title, chart.y, yd, ys);
  const double band = (kPlotRight - kPlotLeft) / static_cast<double>(chart.categories.size());
  const double group = band * 0.8;
  const double bar = chart.stacked ? group : group / static_cast<double>(chart.series.size());
  double free_from = kPlotLeft - kWidth;  // a label is drawn where it does not overlap the last
  for (std::size_t c = 0; c < chart.categories.size(); ++c) {
    const double left = kPlotLeft + band * static_cast<double>(c) + (band - group) / 2;
    double base = 0;
    for (std::size_t s = 0; s < chart.series.size(); ++s) {
      const double v = chart.values[s][c];
      if (!drawable(v, chart.y.log_base)) continue;
      const double x = chart.stacked ? left : left + bar * static_cast<double>(s);
      const double bottom = chart.stacked ? ys(base) : kPlotBottom;
      const double top = ys(chart.stacked ? base + v : v);
      base += chart.stacked ? v : 0;
      body += fmt::format(
          "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}>"
          "<title>{}: {:g}</title></rect>",
          number(x), number(top), number(bar), number(bottom - top), chart.colours.at(s),
          chart.stacked ? " stroke=\"#555\" stroke-width=\"0.6\"" : "",
          escape(chart.series[s] + " · " + chart.categories[c]), v);
    }
    const double half_label = static_cast<double>(chart.categories[c].size()) * kCharWidth / 2;
    if (left + group / 2 - half_label >= free_from) {
      body +=
          text(left + group / 2, kPlotBottom + 16, chart.categories[c], "text-anchor=\"middle\"");
      free_from = left + group / 2 + half_label + kCharWidth;
    }
  }
  body += x_label(chart.x_label);
  std::vector<std::pair<std::string, std::string>> entries;
  for (std::size_t s = 0; s < chart.series.size(); ++s) {
    entries.emplace_back(chart.series[s], chart.colours.at(s));
  }
  body += legend(entries, std::vector<Swatch>(entries.size(), Swatch::box));
  return wrap(chart.title, body, notes);
}

}  // namespace ampbench::results::svg
