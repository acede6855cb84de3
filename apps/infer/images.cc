// Batched image classification for infer (several --input, or a directory).
#include "apps/infer/images.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "apps/infer/report.h"
#include "apps/preprocess/image.h"
#include "runtime/npy.h"

namespace fusert::app {

Result<std::vector<std::string>> collect_images(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      if (!fs::exists(p, ec)) return error(StatusCode::kNotFound) << p << ": no such file or directory";
      out.push_back(p);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(p, ec)) {
      std::string ext = e.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
      if (e.is_regular_file() &&
          (ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp" || ext == ".gif" || ext == ".tga"))
        found.push_back(e.path().string());
    }
    if (ec) return error(StatusCode::kIoError) << p << ": cannot list the directory: " << ec.message();
    if (found.empty()) return error(StatusCode::kNotFound) << p << ": no .png/.jpg/.jpeg/.bmp/.gif/.tga files";
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

Status run_tensors(Session& s, const InferOptions& o) {
  const std::string in_name = s.graph().value(s.graph().inputs[0]).name;
  const std::string out_name = s.graph().value(s.graph().outputs[0]).name;
  std::vector<double> times;
  for (size_t k = 0; k < o.images.size(); ++k) {
    const std::string& f = o.images[k];
    FUSERT_ASSIGN_OR_RETURN(Tensor x, read_npy(f));
    const auto t0 = std::chrono::steady_clock::now();
    Result<TensorMap> out = s.run({{in_name, x}});
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!out.ok()) return error(out.status().code()) << f << ": " << out.status().message();
    const Tensor& y = out->at(out_name);
    std::printf("%s %s -> '%s' %s\n", f.c_str(), shape_str(x.shape()).c_str(), out_name.c_str(),
                shape_str(y.shape()).c_str());
    if (o.output.empty()) continue;
    std::string path = o.output;
    const size_t dot = path.rfind(".npy");
    path = (dot == std::string::npos ? path : path.substr(0, dot)) + "." + std::to_string(k) + ".npy";
    FUSERT_RETURN_IF_ERROR(write_npy(path, y));
    std::printf("wrote %s\n", path.c_str());
  }
  const SessionStats& st = s.stats();
  std::printf(
      "ran %zu tensors, one run each (first run of a new shape includes its planning); shapes planned %lld "
      "(%.1f ms), reused %lld\n",
      o.images.size(), static_cast<long long>(st.shape_cache_misses), st.shape_build_ms_total,
      static_cast<long long>(st.shape_cache_hits));
  if (!o.stats_json.empty()) {  // latency over these runs (each at its own shape), the first apart
    const std::vector<double> rest(times.begin() + 1, times.end());
    FUSERT_RETURN_IF_ERROR(write_stats_json(o.stats_json, s, summarize(rest.empty() ? times : rest),
                                            static_cast<int>(rest.size()), times[0]));
    std::printf("wrote %s\n", o.stats_json.c_str());
  }
  return Status();
}

namespace {

// Images files[first, first + b) decoded, preprocessed as the model declares and stacked along
// the batch dim; errors name the file.
Result<Tensor> image_batch(const Session& s, const std::vector<std::string>& files, size_t first, size_t b) {
  std::vector<Tensor> xs;
  for (size_t k = first; k < first + b; ++k) {
    FUSERT_ASSIGN_OR_RETURN(Tensor img, decode_image(files[k]));
    auto x = preprocess_image(img, s.model().preprocess);
    if (!x.ok()) return error(x.status().code()) << files[k] << ": " << x.status().message();
    xs.push_back(*x);
  }
  Shape shape = xs[0].shape();
  shape[0] = static_cast<int64_t>(b);
  Tensor x(DType::kF32, shape);
  for (size_t k = 0; k < b; ++k)
    std::memcpy(x.f32() + k * static_cast<size_t>(xs[0].numel()), xs[k].f32(), xs[k].nbytes());
  return x;
}

}  // namespace

Status run_images(Session& s, const InferOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool tensors = std::all_of(o.images.begin(), o.images.end(), [](const std::string& f) {
    return f.size() > 4 && f.compare(f.size() - 4, 4, ".npy") == 0;
  });
  if (tensors) return run_tensors(s, o);
  FUSERT_ASSIGN_OR_RETURN(std::vector<std::string> files, collect_images(o.images));
  if (!s.model().preprocess.present) {
    return error(StatusCode::kInvalidArgument)
           << "--input: model '" << s.graph().name << "' declares no image preprocessing";
  }
  const Session::TensorInfo in = s.inputs()[0];
  const Session::Dim& bd = in.dims.at(0);
  if (bd.symbol.empty() && bd.value != 1) {
    return error(StatusCode::kInvalidArgument)
           << "--input: model '" << s.graph().name << "' input '" << in.name << "' has a fixed batch of " << bd.value;
  }
  const size_t batch = bd.symbol.empty() ? 1 : static_cast<size_t>(std::min<int64_t>(o.batch_size, bd.max));
  const std::vector<std::string> labels = read_labels(s.model().labels_path);
  const std::string out_name = s.graph().value(s.graph().outputs[0]).name;
  std::vector<Tensor> rows(files.size());
  int batches = 0;
  for (size_t first = 0; first < files.size(); first += batch, ++batches) {
    const size_t b = std::min(batch, files.size() - first);
    FUSERT_ASSIGN_OR_RETURN(Tensor x, image_batch(s, files, first, b));
    FUSERT_ASSIGN_OR_RETURN(TensorMap out, s.run({{in.name, x}}));
    const Tensor& y = out.at(out_name);
    const int64_t per = y.numel() / static_cast<int64_t>(b);
    for (size_t k = 0; k < b; ++k) {
      Shape one = y.shape();
      one[0] = 1;
      rows[first + k] = Tensor::f32(one, std::vector<float>(y.f32() + static_cast<int64_t>(k) * per,
                                                            y.f32() + static_cast<int64_t>(k + 1) * per));
      std::printf("%s\n", files[first + k].c_str());
      if (y.shape().size() == 2) print_topk(rows[first + k].f32(), per, labels, o.topk);
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const SessionStats& st = s.stats();
  std::printf(
      "classified %zu images in %d batches of up to %zu (decode, preprocess and run): %.1f ms, %.1f images/s; "
      "shapes planned %lld (%.1f ms), reused %lld\n",
      files.size(), batches, batch, ms, 1000.0 * static_cast<double>(files.size()) / ms,
      static_cast<long long>(st.shape_cache_misses), st.shape_build_ms_total,
      static_cast<long long>(st.shape_cache_hits));
  if (!o.output.empty()) {
    Shape all = rows[0].shape();
    all[0] = static_cast<int64_t>(files.size());
    Tensor t(DType::kF32, all);
    for (size_t k = 0; k < rows.size(); ++k)
      std::memcpy(t.f32() + k * static_cast<size_t>(rows[k].numel()), rows[k].f32(), rows[k].nbytes());
    FUSERT_RETURN_IF_ERROR(write_npy(o.output, t));
    std::printf("wrote %s %s float32, in input order\n", o.output.c_str(), shape_str(all).c_str());
  }
  return Status();
}

}  // namespace fusert::app
