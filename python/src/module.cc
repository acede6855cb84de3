// The Python module fusert._fusert (nanobind): a session over fusert::Session, its options and
// its errors. The Python package python/fusert/ wraps it in ONNX Runtime's shape
// (InferenceSession, get_inputs, run(output_names, input_feed)).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <memory>
#include <mutex>

#include "convert.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace fusert::python {

namespace {

// One model loaded: fusert::Session, closed by close() (then every call raises). Each call holds
// its own reference, so several Python threads run at once (the GIL released) and a run in flight
// when another thread closes the session finishes first (the session is freed after it).
class PySession {
 public:
  PySession(const std::string& path, const SessionOptions& options) {
    Result<std::unique_ptr<Session>> s = [&] {
      nb::gil_scoped_release release;
      return Session::load(path, options);
    }();
    if (!s.ok()) raise(s.status());
    session_ = std::shared_ptr<Session>(std::move(*s));
  }

  void close() {
    std::shared_ptr<Session> last;
    {
      std::lock_guard<std::mutex> lock(mu_);
      last.swap(session_);
    }
    nb::gil_scoped_release release;  // freed here unless a run still holds it
    last.reset();
  }

  bool closed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return !session_;
  }

  nb::list io(bool outputs) const {
    const std::shared_ptr<Session> sp = open();
    Session& s = *sp;
    nb::list out;
    for (const TensorInfo& t : outputs ? s.outputs() : s.inputs()) {
      nb::list dims;
      for (const Dim& d : t.dims) {
        if (d.symbol.empty())
          dims.append(d.value);
        else if (d.symbol == "?")
          dims.append(nb::none());
        else
          dims.append(d.symbol);
      }
      out.append(nb::make_tuple(t.name, numpy_name(t.dtype), dims));
    }
    return out;
  }

  nb::dict run(const std::map<std::string, InputArray>& feed) const {
    const std::shared_ptr<Session> sp = open();
    Session& s = *sp;
    TensorMap in = inputs(s, feed);
    Result<TensorMap> r = [&] {
      nb::gil_scoped_release release;
      return s.run(in);
    }();
    if (!r.ok()) raise(r.status());
    nb::dict out;
    for (const auto& [name, t] : *r) out[name.c_str()] = to_numpy(t);
    return out;
  }

  nb::list profile(const std::map<std::string, InputArray>& feed, int runs) const {
    const std::shared_ptr<Session> sp = open();
    Session& s = *sp;
    TensorMap in = inputs(s, feed);
    Result<std::vector<StepTime>> r = [&] {
      nb::gil_scoped_release release;
      return s.profile(in, runs);
    }();
    if (!r.ok()) raise(r.status());
    nb::list out;
    for (const StepTime& t : *r) {
      nb::dict d;
      d["name"] = t.name;
      d["kernel"] = t.kernel;
      d["detail"] = t.detail;
      d["nodes"] = t.nodes;
      d["ms"] = t.ms;
      d["flops"] = t.flops;
      d["reference_loop"] = t.reference_loop;
      out.append(d);
    }
    return out;
  }

  // Wall time of `runs` runs of Session::run on `feed`, each in ms, timed in C++ with the GIL
  // released: the baseline Python's own run is compared against (tools/py_overhead.py).
  std::vector<double> time_runs(const std::map<std::string, InputArray>& feed, int runs) const {
    const std::shared_ptr<Session> sp = open();
    TensorMap in = inputs(*sp, feed);
    std::vector<double> ms;
    Status failed;
    {
      nb::gil_scoped_release release;
      for (int r = 0; r < runs && failed.ok(); ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        Result<TensorMap> out = sp->run(in);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        if (!out.ok()) failed = out.status();
      }
    }
    if (!failed.ok()) raise(failed);
    return ms;
  }

  nb::object read_image(const std::string& path) const {
    const std::shared_ptr<Session> sp = open();
    Result<Tensor> t = [&] {
      nb::gil_scoped_release release;
      return sp->read_image(path);
    }();
    if (!t.ok()) raise(t.status());
    return to_numpy(*t);
  }

  std::vector<std::string> labels() const {
    Result<std::vector<std::string>> l = open()->labels();
    if (!l.ok()) raise(l.status());
    return *l;
  }

  std::string explain() const { return open()->explain(); }

  nb::dict stats() const;

 private:
  std::shared_ptr<Session> open() const {
    std::shared_ptr<Session> s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      s = session_;
    }
    if (!s) raise(StatusCode::kInvalidArgument, Msg() << "the session is closed");
    return s;
  }

  // The feed as tensors, each checked against the model's input of that name (dtype here; shape,
  // missing and unknown names by Session::run, whose errors name them).
  static TensorMap inputs(const Session& s, const std::map<std::string, InputArray>& feed) {
    TensorMap in;
    const std::vector<TensorInfo> infos = s.inputs();
    for (const auto& [name, a] : feed) {
      DType want = DType::kF32;
      bool known = false;
      for (const TensorInfo& t : infos)
        if (t.name == name) want = t.dtype, known = true;
      if (!known) {
        std::string names;
        for (const TensorInfo& t : infos) names += (names.empty() ? "'" : ", '") + t.name + "'";
        raise(StatusCode::kInvalidArgument,
              Msg() << "the model has no input '" << name << "' (its inputs: " << names << ")");
      }
      in[name] = to_tensor(a, name, want);
    }
    return in;
  }

  mutable std::mutex mu_;
  std::shared_ptr<Session> session_;
};

nb::dict PySession::stats() const {
  const std::shared_ptr<Session> sp = open();
  const SessionStats& st = sp->stats();
  nb::dict d;
  d["nodes"] = st.nodes;
  d["kernels"] = st.kernels;
  d["intermediate_bytes"] = st.intermediate_bytes;
  d["peak_activation_bytes"] = st.peak_activation_bytes;
  d["naive_activation_bytes"] = st.naive_activation_bytes;
  d["load_ms"] = st.load_ms;
  d["plan_ms"] = st.plan_ms;
  d["fusion_plan_ms"] = st.fusion_plan_ms;
  d["weights_source"] = st.weights_source;
  d["weight_bytes"] = st.weight_bytes;
  d["device_name"] = st.device_name;
  d["shape_cache_hits"] = st.shape_cache_hits;
  d["shape_cache_misses"] = st.shape_cache_misses;
  d["shape_replans"] = st.shape_replans;
  d["execution_stages"] = st.execution_stages;
  d["execution_contexts"] = sp->execution_contexts();
  return d;
}

void bind_options(nb::module_& m) {
  nb::class_<DimRange>(m, "DimRange", "A symbolic dim's range: min <= opt <= max (the plan is made at opt).")
      .def(nb::init<>())
      .def(
          "__init__",
          [](DimRange* r, int64_t min, int64_t max, int64_t opt) {
            new (r) DimRange{min, max, opt < 0 ? min : opt};
          },
          "min"_a, "max"_a, "opt"_a = -1)
      .def_rw("min", &DimRange::min)
      .def_rw("max", &DimRange::max)
      .def_rw("opt", &DimRange::opt)
      .def("__repr__", [](const DimRange& r) {
        return "DimRange(min=" + std::to_string(r.min) + ", max=" + std::to_string(r.max) +
               ", opt=" + std::to_string(r.opt) + ")";
      });
  nb::class_<SessionOptions>(m, "SessionOptions", "How a session loads, plans and runs a model (fusert/options.h).")
      .def(nb::init<>())
      .def_rw("device", &SessionOptions::device, "'cpu' (default) or 'cuda'")
      .def_rw("threads", &SessionOptions::threads, "CPU worker threads; 0 (default): all cores")
      .def_rw("pin_threads", &SessionOptions::pin_threads,
              "pin a run's OpenMP threads to cores when it takes them all (default True; False beside other "
              "busy processes, as in a server)")
      .def_rw("fusion", &SessionOptions::fusion,
              "fusion mode: 'all' (default), 'none', or a comma list of horizontal, vertical, cross, compound")
      .def_rw("weights", &SessionOptions::weights,
              "safetensors path of a YAML model's weights; empty: the weights file the model names")
      .def_rw("seeded", &SessionOptions::seeded, "use seeded weights instead of a weights file (tests)")
      .def_rw("seed", &SessionOptions::seed)
      .def_rw("input_shapes", &SessionOptions::input_shapes,
              "optional: fix inputs' shapes, {name: [dims]} (the plan is made there; other shapes are errors)")
      .def_rw("dim_ranges", &SessionOptions::dim_ranges, "optional: {dim name: DimRange} for symbolic dims")
      .def_rw("shape_cache_size", &SessionOptions::shape_cache_size,
              "execution plans kept per session, one per input shape (default 16)")
      .def_rw("profile_guided", &SessionOptions::profile_guided)
      .def_rw("cpu_kernels", &SessionOptions::cpu_kernels, "'onednn' (default) or 'reference'")
      .def_rw("precision", &SessionOptions::precision,
              "'f32' (default) or 'bf16': Conv/Gemm/MatMul-by-weights in bf16 with f32 accumulation (CPU with "
              "AVX512_BF16 or AMX; a load error elsewhere)")
      .def_rw("f64_as_f32", &SessionOptions::f64_as_f32, "run a float64 ONNX model in float32")
      .def_rw("cuda_graph", &SessionOptions::cuda_graph)
      .def_rw("tf32", &SessionOptions::tf32);
}

}  // namespace

}  // namespace fusert::python

NB_MODULE(_fusert, m) {
  using namespace fusert::python;
  m.doc() = "fusert's native module; use the package fusert (InferenceSession) instead";
  m.attr("__version__") = fusert::version();
  fusert::python::error_type() = nb::borrow(PyErr_NewExceptionWithDoc(
      "fusert.Error", "An error from fusert: its message names the file, node or tensor; `code` its kind.",
      PyExc_RuntimeError, nullptr));
  m.attr("Error") = error_type();
  bind_options(m);
  nb::class_<PySession>(m, "Session")
      .def(nb::init<const std::string&, const fusert::SessionOptions&>(), "path"_a, "options"_a)
      .def("inputs", [](const PySession& s) { return s.io(false); })
      .def("outputs", [](const PySession& s) { return s.io(true); })
      .def("run", &PySession::run, "feed"_a)
      .def("profile", &PySession::profile, "feed"_a, "runs"_a)
      .def("time_runs", &PySession::time_runs, "feed"_a, "runs"_a)
      .def("read_image", &PySession::read_image, "path"_a)
      .def("labels", &PySession::labels)
      .def("explain", &PySession::explain)
      .def("stats", &PySession::stats)
      .def("close", &PySession::close)
      .def_prop_ro("closed", &PySession::closed);
}
