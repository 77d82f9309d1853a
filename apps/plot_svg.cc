// `ort_train plot` and the plot written at the end of a run with --metrics:
// the runs' --metrics files drawn as one SVG with three panels against the
// step: loss (training as a line, held-out as dots), learning rate, and
// throughput (samples/s). Several files are drawn in distinct colours with a
// legend, so runs compare at a glance. Plain SVG 1.1: any browser shows it.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "apps/commands.h"
#include "graph/onnx_io.h"

namespace ort_train::app {
namespace {

struct Series {
  std::vector<std::pair<double, double>> points;  // (step, value)
};

struct Run {
  std::string name;
  Series loss, eval_loss, lr, throughput;
};

Result<Run> read_run(const std::string& path) {
  std::ifstream in(path);
  if (!in) return io_error("plot: cannot read {}", path);
  Run run;
  run.name = std::filesystem::path(path).filename().string();
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
    if (row.is_discarded() || !row.is_object() || !row.contains("step") || !row["step"].is_number())
      return invalid_argument("plot: {}:{}: not a --metrics line (a JSON object with a step)", path, line_no);
    double step = row["step"].get<double>();
    auto add = [&](const char* key, Series& s) {
      if (row.contains(key) && row[key].is_number()) s.points.emplace_back(step, row[key].get<double>());
    };
    add("loss", run.loss);
    add("eval_loss", run.eval_loss);
    add("lr", run.lr);
    add("samples_per_s", run.throughput);
  }
  if (run.loss.points.empty()) return invalid_argument("plot: {} holds no training steps", path);
  return run;
}

// Five round tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi) {
  double span = hi - lo, raw = span / 4, mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag * (raw / mag < 1.5 ? 1 : raw / mag < 3 ? 2 : raw / mag < 7 ? 5 : 10);
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push_back(t);
  return out;
}

std::string label(double v) { return fmt::format("{:.6g}", std::abs(v) < 1e-12 ? 0.0 : v); }

const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

// One panel at vertical offset `top`: each run's `line` series as a polyline,
// its `dots` series (if any) as circles.
std::string panel(const std::vector<Run>& runs, Series Run::*line, Series Run::*dots, const std::string& title,
                  double top, double min_step, double max_step) {
  const double left = 80, width = 780, height = 200;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const Run& r : runs)
    for (Series Run::*s : {line, dots})
      if (s)
        for (const auto& [x, y] : (r.*s).points) {
          lo = std::min(lo, y);
          hi = std::max(hi, y);
        }
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {  // a constant (the lr without a schedule): from 0 to twice it
    double v = hi;
    lo = v > 0 ? 0 : (v < 0 ? 2 * v : -1);
    hi = v > 0 ? 2 * v : (v < 0 ? 0 : 1);
  }
  double xspan = std::max(max_step - min_step, 1.0);
  auto X = [&](double s) { return left + (s - min_step) / xspan * width; };
  auto Y = [&](double v) { return top + height - (v - lo) / (hi - lo) * height; };
  std::string svg = fmt::format(R"(<text x="{}" y="{}" font-size="14" font-weight="bold">{}</text>)""\n", left,
                                top - 8, title);
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)""\n", left, top, width,
                     height);
  for (double t : ticks(lo, hi)) {
    svg += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#eee"/>)""\n", left, Y(t),
                       left + width, Y(t));
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end">{}</text>)""\n", left - 6,
                       Y(t) + 4, label(t));
  }
  for (double t : ticks(min_step, min_step + xspan))
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="11" text-anchor="middle">{}</text>)""\n", X(t),
                       top + height + 14, label(t));
  for (size_t i = 0; i < runs.size(); ++i) {
    const char* colour = kColours[i % std::size(kColours)];
    std::string pts;
    for (const auto& [x, y] : (runs[i].*line).points) pts += fmt::format("{:.1f},{:.1f} ", X(x), Y(y));
    svg += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>)""\n", colour, pts);
    if (dots)
      for (const auto& [x, y] : (runs[i].*dots).points)
        svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="{}" stroke="black"/>)""\n", X(x), Y(y),
                           colour);
  }
  return svg;
}

}  // namespace

Status write_metrics_plot(const std::vector<std::string>& metrics_files, const std::string& svg_path) {
  std::vector<Run> runs;
  for (const std::string& f : metrics_files) {
    ASSIGN_OR_RETURN(Run r, read_run(f));
    runs.push_back(std::move(r));
  }
  if (runs.empty()) return invalid_argument("plot: give at least one --metrics file");
  double min_step = std::numeric_limits<double>::infinity(), max_step = -min_step;
  for (const Run& r : runs)
    for (const auto& [x, y] : r.loss.points) min_step = std::min(min_step, x), max_step = std::max(max_step, x);
  std::string body;
  body += panel(runs, &Run::loss, &Run::eval_loss, "loss (line: training; dots: held-out)", 60, min_step, max_step);
  body += panel(runs, &Run::lr, nullptr, "learning rate", 320, min_step, max_step);
  body += panel(runs, &Run::throughput, nullptr, "throughput, samples/s", 580, min_step, max_step);
  body += fmt::format(R"(<text x="470" y="818" font-size="12" text-anchor="middle">step</text>)""\n");
  for (size_t i = 0; i < runs.size(); ++i)
    body += fmt::format(R"(<rect x="{}" y="14" width="14" height="4" fill="{}"/><text x="{}" y="20" font-size="12">{}</text>)""\n",
                        80 + 200 * static_cast<double>(i), kColours[i % std::size(kColours)],
                        100 + 200 * static_cast<double>(i), runs[i].name);
  std::string svg = R"(<?xml version="1.0" encoding="UTF-8"?>)""\n"
                    R"(<svg xmlns="http://www.w3.org/2000/svg" width="900" height="830" viewBox="0 0 900 830" font-family="sans-serif">)""\n"
                    R"(<rect width="900" height="830" fill="white"/>)""\n" +
                    body + "</svg>\n";
  // Written whole to a fresh temporary file and renamed over the path: never
  // a half-written plot, and a link at either name is replaced, not written through.
  return write_file_atomic(svg_path, svg, OutputName::kChosen).with_context("plot");
}

void add_plot_command(CLI::App& app, PlotArgs& args) {
  CLI::App* cmd = app.add_subcommand("plot", "Draw --metrics files (one or several runs) as an SVG: loss, held-out "
                                              "loss, learning rate and throughput against the step");
  cmd->add_option("metrics", args.metrics, "--metrics files (JSON lines) of one or more runs")->required();
  cmd->add_option("-o,--output", args.output, "the SVG to write (default: the first file with .svg)");
}

Status plot_command(const PlotArgs& args) {
  std::string out = args.output;
  if (out.empty()) out = std::filesystem::path(args.metrics[0]).replace_extension(".svg").string();
  RETURN_IF_ERROR(write_metrics_plot(args.metrics, out));
  std::printf("wrote %s\n", out.c_str());
  return Status::Ok();
}

}  // namespace ort_train::app
