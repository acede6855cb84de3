// infer: the fusert demo. Loads a YAML model, runs it on an image, a .npy or a seeded input,
// prints top-k labels and timing; see --help.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>

#include "apps/infer/analysis.h"
#include "apps/infer/images.h"
#include "apps/infer/options.h"
#include "apps/infer/report.h"
#include "apps/infer/text.h"
#include "apps/preprocess/image.h"
#include "graph/fusion/explain.h"
#include "graph/onnx/onnx_import.h"
#include "graph/printer.h"
#include "runtime/backend.h"
#include "runtime/npy.h"

namespace fusert::app {
namespace {

constexpr const char* kDefaultModel = FUSERT_SOURCE_DIR "/models/efficientnet_lite0.yaml";
constexpr const char* kDefaultPhoto = FUSERT_SOURCE_DIR "/models/data/coffee.png";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void list_ops() {
  for (int k = 0; k < static_cast<int>(OpKind::kCount); ++k) {
    const OpInfo& o = op_info(static_cast<OpKind>(k));
    std::printf("%-20s %-11s inputs %d..%d  %s\n", o.name, pattern_kind_name(o.pattern), o.min_inputs, o.max_inputs,
                o.doc);
    for (const AttrSchema& a : o.attrs) {
      std::printf("    %-16s %-6s %s\n", a.name.c_str(), attr_type_name(a.type),
                  a.required ? "required" : ("default " + attr_to_string(a.default_value)).c_str());
    }
  }
}

// --input NAME=FILE.npy: each graph input from its file, by name; every input given.
Result<TensorMap> named_inputs(const InferOptions& o, const Session& s) {
  TensorMap in;
  std::string missing;
  for (const Session::TensorInfo& info : s.inputs()) {
    auto it = o.named_inputs.find(info.name);
    if (it == o.named_inputs.end()) {
      missing += (missing.empty() ? "'" : ", '") + info.name + "'";
      continue;
    }
    FUSERT_ASSIGN_OR_RETURN(Tensor t, read_npy(it->second));
    if (t.dtype() != info.dtype || t.shape().size() != info.dims.size()) {
      return error(StatusCode::kShapeMismatch)
             << it->second << ": input '" << info.name << "' expects " << dtype_name(info.dtype) << " of rank "
             << info.dims.size() << ", the file holds " << dtype_name(t.dtype()) << " " << shape_str(t.shape());
    }
    std::printf("input: '%s' = %s %s\n", info.name.c_str(), it->second.c_str(), shape_str(t.shape()).c_str());
    in[info.name] = t;
  }
  for (const auto& [name, file] : o.named_inputs) {
    if (!in.count(name))
      return error(StatusCode::kInvalidArgument)
             << "--input " << name << "=" << file << ": model '" << s.graph().name << "' has no input '" << name << "'";
  }
  if (!missing.empty())
    return error(StatusCode::kInvalidArgument)
           << "--input: model '" << s.graph().name << "' also needs " << missing << " (give each as NAME=FILE.npy)";
  return in;
}

Result<TensorMap> make_inputs(const InferOptions& o, const Session& s) {
  if (!o.named_inputs.empty()) return named_inputs(o, s);
  if (o.input.empty()) {
    DimValues dims;
    if (o.batch >= 0) {
      const Session::Dim d = s.inputs()[0].dims.at(0);
      if (d.symbol.empty()) {
        return error(StatusCode::kInvalidArgument)
               << "--batch: model '" << s.graph().name << "' has no symbolic batch dim (its input '"
               << s.inputs()[0].name << "' has a fixed leading dim of " << d.value << ")";
      }
      if (o.batch < d.min || o.batch > d.max) {
        return error(StatusCode::kInvalidArgument) << "--batch " << o.batch << ": outside the range " << d.min << ".."
                                                   << d.max << " of dim '" << d.symbol << "'";
      }
      dims[d.symbol] = o.batch;
    }
    std::printf("input: seeded (seed %llu)%s\n", static_cast<unsigned long long>(o.session.seed),
                o.batch >= 0 ? (", batch " + std::to_string(o.batch)).c_str() : "");
    return s.seeded_inputs(o.session.seed, dims);
  }
  const Value& in = s.graph().value(s.graph().inputs[0]);
  std::string expected = "[";  // symbolic dims by name: [batch, 3, height, x.3]
  const std::vector<Session::TensorInfo> infos = s.inputs();
  for (const Session::Dim& d : infos[0].dims)
    expected += (expected.size() > 1 ? ", " : "") + (d.symbol.empty() ? std::to_string(d.value) : d.symbol);
  expected += "]";
  if (ends_with(o.input, ".npy")) {
    FUSERT_ASSIGN_OR_RETURN(Tensor t, read_npy(o.input));
    // A model with symbolic dims takes any shape in range (the session's error names the dim).
    const bool shape_ok = s.model().dims.empty() ? t.shape() == in.shape : t.shape().size() == in.shape.size();
    if (!shape_ok || t.dtype() != in.dtype) {
      return error(StatusCode::kShapeMismatch)
             << o.input << ": input '" << in.name << "' of model '" << s.graph().name << "' expects "
             << dtype_name(in.dtype) << " " << expected << ", the file holds " << dtype_name(t.dtype()) << " "
             << shape_str(t.shape())
             << (s.graph().inputs.size() > 1 ? " (--input feeds the first graph input only)" : "");
    }
    std::printf("input: %s %s\n", o.input.c_str(), shape_str(t.shape()).c_str());
    return TensorMap{{in.name, t}};
  }
  if (!s.model().preprocess.present) {
    return error(StatusCode::kInvalidArgument)
           << o.input << ": model '" << s.graph().name
           << "' declares no image preprocessing; pass a .npy tensor of shape " << expected;
  }
  FUSERT_ASSIGN_OR_RETURN(Tensor img, decode_image(o.input));
  std::printf("input: %s (%lldx%lld)\n", o.input.c_str(), static_cast<long long>(img.shape()[1]),
              static_cast<long long>(img.shape()[0]));
  auto x = preprocess_image(img, s.model().preprocess);
  if (!x.ok())
    return error(x.status().code()) << o.input << ": " << x.status().message() << " (preprocess of " << s.model().path
                                    << ")";
  return TensorMap{{in.name, *x}};
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) return error(StatusCode::kIoError) << path << ": cannot open for writing";
  f << text;
  f.close();
  if (!f) return error(StatusCode::kIoError) << path << ": write failed (disk full or not writable?)";
  std::printf("wrote %s\n", path.c_str());
  return Status();
}

// --compare-cpu: the same model, weights, fusion mode and input on the CPU backend; relative
// L2 error ||cuda - cpu|| / ||cpu|| of every output against the bound (fp32 1e-5; TF32 1e-2: its 10-bit mantissa
// alone gives 1.6-2.2e-3 over a 50-layer ReLU stack, and more on deep models).
Status compare_with_cpu(const InferOptions& o, const TensorMap& inputs, const TensorMap& outputs) {
  SessionOptions co = o.session;
  co.device = "cpu";
  FUSERT_ASSIGN_OR_RETURN(auto cpu, Session::load(o.model, co));
  FUSERT_ASSIGN_OR_RETURN(TensorMap ref, cpu->run(inputs));
  const double bound = o.session.tf32 ? 1e-2 : 1e-5;
  bool ok = true;
  for (const auto& [name, t] : ref) {
    const Tensor& got = outputs.at(name);
    if (t.dtype() != DType::kF32) {  // integer/bool outputs must match exactly
      const bool same = t.nbytes() == got.nbytes() && std::memcmp(t.raw(), got.raw(), t.nbytes()) == 0;
      ok &= same;
      std::printf("cuda vs cpu: exact match %s for output '%s' (%s)\n", same ? "yes" : "NO", name.c_str(),
                  dtype_name(t.dtype()));
      continue;
    }
    double num = 0, den = 0, max_abs = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double d = static_cast<double>(got.f32()[i]) - t.f32()[i];
      num += d * d;
      den += static_cast<double>(t.f32()[i]) * t.f32()[i];
      max_abs = std::max(max_abs, std::fabs(d));
    }
    double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    bool pass = rel <= bound && std::isfinite(rel);
    ok &= pass;
    std::printf("cuda vs cpu: rel L2 %.3g, max abs %.3g (bound %.0e) for output '%s': %s\n", rel, max_abs, bound,
                name.c_str(), pass ? "ok" : "FAIL");
  }
  if (!ok) return error(StatusCode::kInternal) << "CUDA output differs from the CPU backend beyond the bound " << bound;
  return Status();
}

// --dump: the model as imported (an ONNX file with the --shape bindings and --dim ranges given).
Status dump_model(const InferOptions& o) {
  if (!is_onnx_path(o.model) && (!o.session.input_shapes.empty() || !o.session.dim_ranges.empty())) {
    return error(StatusCode::kInvalidArgument) << o.model << ": --shape and --dim are for ONNX models; a YAML "
                                               << "model declares its input shapes and symbolic dims";
  }
  std::vector<SymbolicDim> dims;
  for (const auto& [name, r] : o.session.dim_ranges) dims.push_back(declared_dim(name, r.min, r.max, r.opt));
  FUSERT_ASSIGN_OR_RETURN(ModelSpec m, is_onnx_path(o.model) ? load_onnx(o.model, o.session.input_shapes, dims, true)
                                                             : load_model(o.model));
  std::fputs(dump_graph(m.graph).c_str(), stdout);
  return Status();
}

// Loads the session and prints its plan (with --explain, the planner's and the backend's view).
// CUDA: plans and compiles first (no device needed), so --explain shows the CUDA plan with its
// register counts even on a machine without a GPU; then attaches the device.
Result<std::unique_ptr<Session>> load_and_report(const InferOptions& o) {
  std::printf("model: %s\n", o.model.c_str());
  const bool cuda = o.session.device == "cuda";
  SessionOptions so = o.session;
  // Without --explain or --dump-kernels (both useful without a GPU), a missing device fails
  // before any planning.
  so.plan_only = cuda && (o.explain || !o.session.dump_kernels.empty());
  FUSERT_ASSIGN_OR_RETURN(auto session, Session::load(o.model, so));
  const SessionStats& st = session->stats();
  std::printf(
      "weights: %s\nplan: %lld nodes -> %lld kernels, peak activations %.2f MiB (%.2f MiB without reuse), plan %.2f "
      "ms\n",
      st.weights_source.c_str(), static_cast<long long>(st.nodes), static_cast<long long>(st.kernels),
      st.peak_activation_bytes / 1048576.0, st.naive_activation_bytes / 1048576.0, st.plan_ms);
  if (o.session.fusion != "none" && o.session.fusion != "raw") {
    std::printf("fusion: %s (family %s), planner %.2f ms\n", o.session.fusion.c_str(),
                session->fusion_plan().family.c_str(), st.fusion_plan_ms);
  }
  if (o.explain) std::fputs(session->explain().c_str(), stdout);
  if (o.explain) std::fputs(session->backend_report().c_str(), stdout);
  if (cuda) {
    std::printf("cuda: %lld generated kernels (NVRTC %.0f ms), %lld cuDNN/cuBLASLt calls, %lld host-fallback steps\n",
                static_cast<long long>(st.generated_kernels), st.compile_ms, static_cast<long long>(st.library_calls),
                static_cast<long long>(st.host_fallback_steps));
    std::fflush(stdout);
    FUSERT_RETURN_IF_ERROR(session->init_device());
    std::printf("device: %s\n", session->stats().device_name.c_str());
  }
  return session;
}

// --dot: the fusion plan (or the graph, unfused) as Graphviz.
Status write_dot(const InferOptions& o, const Session& session) {
  if (session.stats().execution_stages > 1) {
    return error(StatusCode::kUnsupported)
           << "--dot: the model runs in " << session.stats().execution_stages << " execution stages (an output "
           << "size that depends on the data, or an If decided at run time); --dot draws a plan of one stage "
              "(--explain prints every stage's)";
  }
  const bool unfused = o.session.fusion == "none" || o.session.fusion == "raw";
  const std::string dot = unfused ? graph_to_dot(session.graph()) : plan_to_dot(session.graph(), session.fusion_plan());
  return write_text(o.dot, dot);
}

// --output: the first output to a .npy file, or every output, by name, into a directory ("DIR/").
Status write_outputs(const std::string& output, const Session& session, const TensorMap& outputs) {
  if (!output.empty() && output.back() == '/') {
    std::filesystem::create_directories(output);
    for (ValueId v : session.graph().outputs) {
      const std::string& name = session.graph().value(v).name;
      std::string file = name;
      for (char& c : file)
        if (c == '/' || c == '\\') c = '_';
      FUSERT_RETURN_IF_ERROR(write_npy(output + file + ".npy", outputs.at(name)));
      std::printf("wrote %s%s.npy\n", output.c_str(), file.c_str());
    }
  } else if (!output.empty()) {
    FUSERT_RETURN_IF_ERROR(write_npy(output, outputs.at(session.graph().value(session.graph().outputs[0]).name)));
    std::printf("wrote %s\n", output.c_str());
  }
  return Status();
}

// One input timed: the session's first run is cold (first touch of weights and arenas, oneDNN
// primitive or CUDA Graph creation), timed apart and labelled; the latency is the median of warm
// runs. Then the outputs, the CPU comparison, --output and --stats-json.
Status time_and_report(const InferOptions& o, Session& session, const TensorMap& inputs) {
  const bool cuda = o.session.device == "cuda";
  TensorMap outputs;
  auto timed_run = [&]() -> Result<double> {
    auto t0 = std::chrono::steady_clock::now();
    FUSERT_ASSIGN_OR_RETURN(outputs, session.run(inputs));
    return cuda ? session.stats().last_run_device_ms
                : std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  FUSERT_ASSIGN_OR_RETURN(const double cold_ms, timed_run());
  for (int i = 0; i < o.warmup; ++i) FUSERT_RETURN_IF_ERROR(timed_run().status());
  std::vector<double> times;
  for (int i = 0; i < o.runs; ++i) {
    FUSERT_ASSIGN_OR_RETURN(double ms, timed_run());
    times.push_back(ms);
  }
  if (o.compare_cpu) FUSERT_RETURN_IF_ERROR(compare_with_cpu(o, inputs, outputs));
  print_outputs(outputs, read_labels(session.model().labels_path), o.topk);
  Latency lat = summarize(times);
  std::printf("latency (%s, warm: %d run%s after the first and %d warm-up): median %.2f ms, min %.2f ms, max %.2f ms\n",
              o.session.device.c_str(), o.runs, o.runs == 1 ? "" : "s", o.warmup, lat.median, lat.min, lat.max);
  std::printf("first run (cold: first touch of weights and arenas, %s set-up): %.2f ms\n",
              cuda ? "CUDA Graph capture" : "primitive", cold_ms);
  FUSERT_RETURN_IF_ERROR(write_outputs(o.output, session, outputs));
  if (!o.stats_json.empty()) {
    FUSERT_RETURN_IF_ERROR(write_stats_json(o.stats_json, session, lat, o.runs, cold_ms));
    std::printf("wrote %s\n", o.stats_json.c_str());
  }
  return Status();
}

Status run(InferOptions o) {
  bool default_model = o.model.empty();
  if (default_model) o.model = kDefaultModel;
  // The bundled photo unless --batch asks for a seeded input of that batch.
  if (default_model && o.input.empty() && o.batch < 0) o.input = kDefaultPhoto;
  if (o.dump) return dump_model(o);
  FUSERT_ASSIGN_OR_RETURN(auto session, load_and_report(o));
  if (!o.dot.empty()) FUSERT_RETURN_IF_ERROR(write_dot(o, *session));
  if (!o.text_file.empty()) {
    FUSERT_ASSIGN_OR_RETURN(auto lines, read_text_file(o.text_file));
    o.texts.insert(o.texts.end(), lines.begin(), lines.end());
  }
  if (!o.texts.empty()) return run_texts(*session, o.texts, {o.runs, o.batch_size, o.output});
  if (!o.images.empty()) return run_images(*session, o);
  FUSERT_ASSIGN_OR_RETURN(TensorMap inputs, make_inputs(o, *session));
  if (o.verify) FUSERT_RETURN_IF_ERROR(print_verify(*session, inputs));
  if (o.ablation) return print_ablation(o, inputs);
  if (o.profile) return print_profile(o, *session, inputs);
  return time_and_report(o, *session, inputs);
}

}  // namespace
}  // namespace fusert::app

int main(int argc, char** argv) {
  using namespace fusert::app;
  auto opts = parse_args(argc, argv);
  if (!opts.ok()) {
    std::cerr << "infer: " << opts.status().message() << "\n";
    return 2;
  }
  if (opts->help) {
    std::fputs(usage(), stdout);
    std::printf("\nDevices in this build: %s.\n", fusert::backend_list().c_str());
    return 0;
  }
  if (opts->list_ops) {
    list_ops();
    return 0;
  }
  fusert::Status st;
  try {
    st = run(*opts);
  } catch (const std::bad_alloc&) {  // the seeded inputs, a batch of images or texts: larger than memory
    st = fusert::Status(fusert::StatusCode::kIoError,
                        "out of memory: the inputs, activations or outputs at these shapes do not fit (try a smaller "
                        "--batch, --batch-size or --shape)");
  }
  if (!st.ok()) {
    std::cerr << "infer: error: " << st.to_string() << "\n";
    return 1;
  }
  return 0;
}
