// fusert-zoo's table, JSON and JUnit XML, and the baseline comparison.
#include "apps/zoo/report.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "graph/base/status.h"

namespace fusert::zoo {

namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') out += c;
    }
  }
  return out;
}

std::string err_str(double e) {
  if (e < 0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1e", e);
  return b;
}

}  // namespace

void print_table(const std::vector<Row>& rows, const std::string& manifest, double seconds) {
  std::printf("%-20s %-6s %-10s %7s %9s %9s %10s %9s %9s  %s\n", "model", "device", "fusion", "kernels", "inter MB",
              "peak MB", "median ms", "vs ref", "vs none", "status");
  int ok = 0, fail = 0, err = 0, skip = 0;
  for (const Row& r : rows) {
    const bool ran = r.status == "ok" || r.status == "FAIL";
    char lat[32] = "-", kern[32] = "-", inter[32] = "-", peak[32] = "-";
    if (ran) {
      std::snprintf(lat, sizeof lat, "%.2f", r.latency_ms);
      std::snprintf(kern, sizeof kern, "%lld", static_cast<long long>(r.kernels));
      std::snprintf(inter, sizeof inter, "%.2f", mib(r.intermediate_bytes));
      std::snprintf(peak, sizeof peak, "%.2f", mib(r.peak_bytes));
    }
    std::printf("%-20s %-6s %-10s %7s %9s %9s %10s %9s %9s  %s%s%s\n", r.model.c_str(), r.device.c_str(),
                r.fusion.c_str(), kern, inter, peak, lat, err_str(r.err_reference).c_str(),
                err_str(r.err_unfused).c_str(), r.status.c_str(), r.reason.empty() ? "" : ": ", r.reason.c_str());
    ok += r.status == "ok";
    fail += r.status == "FAIL";
    err += r.status == "error";
    skip += r.status == "skipped";
  }
  std::printf("[zoo] %s: %zu rows: %d ok, %d failed, %d errors, %d skipped (%.1f s)\n", manifest.c_str(), rows.size(),
              ok, fail, err, skip, seconds);
}

Status write_json(const std::string& path, const std::vector<Row>& rows, const std::string& manifest) {
  nlohmann::json j;
  j["manifest"] = manifest;
  j["rows"] = nlohmann::json::array();
  for (const Row& r : rows) {
    j["rows"].push_back({{"model", r.model},
                         {"device", r.device},
                         {"fusion", r.fusion},
                         {"status", r.status},
                         {"reason", r.reason},
                         {"kernels", r.kernels},
                         {"intermediate_bytes", r.intermediate_bytes},
                         {"peak_activation_bytes", r.peak_bytes},
                         {"latency_ms", r.latency_ms},
                         {"ratio_to_unfused", r.ratio_to_unfused},
                         {"rel_l2_reference", r.err_reference},
                         {"rel_l2_unfused", r.err_unfused},
                         {"seconds", r.seconds}});
  }
  std::ofstream f(path);
  f << j.dump(1) << "\n";
  if (!f) return error(StatusCode::kIoError) << path << ": cannot write";
  return Status();
}

Status write_junit(const std::string& path, const std::vector<Row>& rows, double seconds) {
  int fail = 0, err = 0, skip = 0;
  for (const Row& r : rows) fail += r.status == "FAIL", err += r.status == "error", skip += r.status == "skipped";
  std::ofstream f(path);
  f << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  f << "<testsuites name=\"fusert-zoo\" tests=\"" << rows.size() << "\" failures=\"" << fail << "\" errors=\"" << err
    << "\" skipped=\"" << skip << "\" time=\"" << seconds << "\">\n";
  f << "  <testsuite name=\"fusert-zoo\" tests=\"" << rows.size() << "\" failures=\"" << fail << "\" errors=\"" << err
    << "\" skipped=\"" << skip << "\" time=\"" << seconds << "\">\n";
  for (const Row& r : rows) {
    f << "    <testcase classname=\"zoo." << xml_escape(r.model) << "\" name=\""
      << xml_escape(r.device + "/" + r.fusion) << "\" time=\"" << r.seconds << "\">";
    const std::string why = xml_escape(r.reason);
    if (r.status == "FAIL")
      f << "\n      <failure message=\"" << why << "\" type=\"regression\">" << why << "</failure>\n    ";
    if (r.status == "error") f << "\n      <error message=\"" << why << "\" type=\"load\">" << why << "</error>\n    ";
    if (r.status == "skipped") f << "\n      <skipped message=\"" << why << "\"/>\n    ";
    f << "<system-out>kernels " << r.kernels << ", intermediate " << r.intermediate_bytes << " B, peak " << r.peak_bytes
      << " B, median " << r.latency_ms << " ms, rel. L2 vs reference " << r.err_reference << ", vs none "
      << r.err_unfused << "</system-out></testcase>\n";
  }
  f << "  </testsuite>\n</testsuites>\n";
  if (!f) return error(StatusCode::kIoError) << path << ": cannot write";
  return Status();
}

Result<std::vector<Baseline>> read_baseline(const std::string& path) {
  std::ifstream f(path);
  if (!f) return error(StatusCode::kNotFound) << path << ": no baseline (write one with --update-baseline)";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
    std::vector<Baseline> out;
    for (const auto& r : j.at("rows")) {
      if (r.at("status") != "ok") continue;
      out.push_back({r.at("model"), r.at("device"), r.at("fusion"), r.at("kernels"), r.at("peak_activation_bytes"),
                     r.at("latency_ms"), r.at("ratio_to_unfused")});
    }
    return out;
  } catch (const nlohmann::json::exception& e) {
    return error(StatusCode::kParseError) << path << ": not a fusert-zoo JSON report: " << e.what();
  }
}

void compare_with_baseline(const std::vector<Baseline>& base, double margin, Row* r) {
  if (r->status != "ok" && r->status != "FAIL") return;
  // Below a millisecond a median of a few runs is mostly noise: latency is not compared there.
  constexpr double kTimedMs = 1.0;
  for (const Baseline& b : base) {
    if (b.model != r->model || b.device != r->device || b.fusion != r->fusion) continue;
    std::vector<std::string> fails;
    char buf[200];
    if (r->kernels > b.kernels) {
      std::snprintf(buf, sizeof buf, "kernels %lld > baseline %lld", static_cast<long long>(r->kernels),
                    static_cast<long long>(b.kernels));
      fails.push_back(buf);
    }
    if (r->peak_bytes > b.peak_bytes) {
      std::snprintf(buf, sizeof buf, "peak activations %.2f MiB > baseline %.2f MiB", mib(r->peak_bytes),
                    mib(b.peak_bytes));
      fails.push_back(buf);
    }
    const bool timed = r->latency_ms >= kTimedMs && b.latency_ms >= kTimedMs;
    if (timed && r->fusion != "none" && b.ratio_to_unfused > 0 && r->ratio_to_unfused > b.ratio_to_unfused * margin) {
      std::snprintf(buf, sizeof buf, "latency %.2fx the unfused run's, baseline %.2fx (margin %.2f)",
                    r->ratio_to_unfused, b.ratio_to_unfused, margin);
      fails.push_back(buf);
    }
    if (timed && r->fusion == "none" && r->latency_ms > b.latency_ms * margin) {
      std::snprintf(buf, sizeof buf, "unfused latency %.2f ms > baseline %.2f ms x margin %.2f", r->latency_ms,
                    b.latency_ms, margin);
      fails.push_back(buf);
    }
    for (const std::string& f : fails) {
      r->status = "FAIL";
      r->reason += (r->reason.empty() ? "" : "; ") + f;
    }
    return;
  }
}

}  // namespace fusert::zoo
