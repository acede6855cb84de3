// libFuzzer target: the ONNX import (protobuf ModelProto, tensor decoding, op mapping, folding,
// shape inference) on arbitrary bytes, then the fusion planner on what imports. load_onnx reads
// a path (external data resolves against its directory), so each input goes to a scratch file.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "graph/fusion/planner.h"
#include "graph/onnx/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/fusert_fuzz_onnx_" + std::to_string(::getpid()) + ".onnx";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto m = fusert::load_onnx(path);
  if (m.ok()) {
    fusert::FusionOptions o;
    (void)fusert::plan_fusion(m->graph, o);
  }
  std::remove(path.c_str());
  return 0;
}
