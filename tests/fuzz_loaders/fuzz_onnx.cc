// libFuzzer target: the ONNX import (protobuf ModelProto, tensor decoding, op mapping, folding,
// shape inference) on arbitrary bytes, then the fusion planner on what imports, and, when every
// tensor of the graph is small (a crafted attribute of a ConvTranspose, Resize or Pad then
// reaches the kernels' index arithmetic), a CPU session that runs it once on seeded inputs.
// load_onnx reads a path (external data resolves against its directory), so each input goes to
// a scratch file.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "graph/fusion/planner.h"
#include "graph/onnx/onnx_import.h"
#include "runtime/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/fusert_fuzz_onnx_" + std::to_string(::getpid()) + ".onnx";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto m = fusert::load_onnx(path, {}, {}, /*open_dims=*/true);  // as a session imports it
  if (m.ok()) {
    fusert::FusionOptions o;
    (void)fusert::plan_fusion(m->graph, o);
    int64_t elements = 0;
    for (const fusert::Value& v : m->graph.values) elements += v.shape_known ? fusert::shape_numel(v.shape) : 0;
    if (elements < (int64_t{1} << 22)) {
      fusert::SessionOptions so;
      so.threads = 1;
      auto s = fusert::Session::load(path, so);
      if (s.ok()) (void)(*s)->run((*s)->seeded_inputs(0));
    }
  }
  std::remove(path.c_str());
  return 0;
}
