#!/bin/sh
# ctest `onnx_boundary`: only the ONNX front end (graph/onnx, the object library fusert_onnx_objs)
# uses the ONNX protobuf library. Every object file given (those of the other layers) must
# reference no symbol of namespace onnx:: or google::protobuf::.
#   check_onnx_boundary.sh OBJECT...
set -eu
bad=""
for o in "$@"; do
  hits=$(nm -C --undefined-only "$o" | grep -E ' (onnx|google::protobuf)::' | head -n 3 || true)
  [ -z "$hits" ] || bad="$bad
$o:
$hits"
done
if [ -n "$bad" ]; then
  echo "onnx_boundary: FAIL: objects outside graph/onnx use the ONNX protobuf library:$bad" >&2
  exit 1
fi
echo "onnx_boundary: $# objects outside graph/onnx, none uses the ONNX protobuf library"
