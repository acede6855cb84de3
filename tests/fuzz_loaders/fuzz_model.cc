// libFuzzer target: the model loader on arbitrary YAML, through the verifier and shape
// inference (load_model_from_string), then the fusion planner with every strategy on every
// registered backend's cost model (CPU, CUDA), and the --explain printer. Weights are not
// bound (a legal model may declare gigabytes of them); the planner needs shapes only.
#include <string>

#include "graph/fusion/explain.h"
#include "graph/fusion/planner.h"
#include "graph/loader/model_loader.h"
#include "runtime/backend.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = fusert::load_model_from_string(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  if (!m.ok()) return 0;
  for (const std::string& backend : fusert::backend_names()) {  // every backend's roofline
    fusert::FusionOptions o;
    (void)fusert::set_planner_backend(backend, &o);
    auto plan = fusert::plan_fusion(m->graph, o);
    if (plan.ok()) (void)fusert::explain_plan(m->graph, *plan);
  }
  return 0;
}
