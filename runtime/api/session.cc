// The public fusert::Session: forwards to SessionImpl (runtime/session_impl.h), and the image
// and label helpers an application needs around it (decoding and preprocessing from
// apps/preprocess). Sits above the runtime and preprocessing layers.
#include <fstream>
#include <new>

#include "apps/preprocess/image.h"
#include "graph/base/status.h"
#include "runtime/session_impl.h"

namespace fusert {

Result<std::unique_ptr<Session>> Session::load(const std::string& model_path, const SessionOptions& options) {
  FUSERT_ASSIGN_OR_RETURN(auto impl, SessionImpl::load(model_path, options));
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Session::Session(std::unique_ptr<SessionImpl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Result<TensorMap> Session::run(const TensorMap& inputs) {
  try {
    return impl_->run(inputs);
  } catch (const std::bad_alloc&) {  // an output or a new shape's plan larger than the machine's memory
    size_t bytes = 0;
    for (const auto& [name, t] : inputs) bytes += t.nbytes();
    return error(StatusCode::kIoError) << "out of memory while running (inputs of " << bytes
                                       << " bytes): the activations or outputs at these shapes do not fit";
  }
}
Result<std::vector<StepTime>> Session::profile(const TensorMap& inputs, int runs) const {
  try {
    return impl_->profile(inputs, runs);
  } catch (const std::bad_alloc&) {
    return error(StatusCode::kIoError) << "out of memory while profiling: the activations at these shapes do not fit";
  }
}
std::vector<TensorInfo> Session::inputs() const { return impl_->inputs(); }
std::vector<TensorInfo> Session::outputs() const { return impl_->outputs(); }
TensorMap Session::seeded_inputs(uint64_t seed, const DimValues& dims) const {
  return impl_->seeded_inputs(seed, dims);
}
Status Session::init_device() { return impl_->init_device(); }
std::string Session::backend_report() const { return impl_->backend_report(); }
std::string Session::explain() const { return impl_->explain(); }
const SessionStats& Session::stats() const { return impl_->stats(); }
const SessionOptions& Session::options() const { return impl_->options(); }
size_t Session::execution_contexts() const { return impl_->execution_contexts(); }
const ModelSpec& Session::model() const { return impl_->model(); }
const Graph& Session::graph() const { return impl_->graph(); }
const ExecutionPlan& Session::plan() const { return impl_->plan(); }
const FusionPlan& Session::fusion_plan() const { return impl_->fusion_plan(); }

Result<Tensor> Session::read_image(const std::string& path) const {
  const ModelSpec& m = impl_->model();
  if (!m.preprocess.present) {
    return error(StatusCode::kUnsupported) << m.path << ": the model declares no image preprocessing (preprocess:)";
  }
  FUSERT_ASSIGN_OR_RETURN(Tensor hwc, decode_image(path));
  return preprocess_image(hwc, m.preprocess);
}

Result<std::vector<std::string>> Session::labels() const {
  const std::string& path = impl_->model().labels_path;
  std::vector<std::string> labels;
  if (path.empty()) return labels;
  std::ifstream f(path);
  if (!f) return error(StatusCode::kNotFound) << path << ": cannot open the model's labels file";
  std::string line;
  while (std::getline(f, line)) labels.push_back(line);
  if (f.bad()) return error(StatusCode::kIoError) << path << ": read error";
  return labels;
}

const char* version() { return FUSERT_VERSION; }

}  // namespace fusert
