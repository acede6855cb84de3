# ctest `layers`: proves the one-way layering is enforced by the build, not by review. Each probe
# is a one-line translation unit compiled against one layer's include view (the same include
# path that layer's own sources get, see the top-level CMakeLists.txt): an include of the same or
# a lower layer must compile; an upward include must fail with "No such file".
#   cmake -DCXX=<compiler> -DVIEWS=<build>/layer-views -DWORK=<dir> -P check_layers.cmake
file(MAKE_DIRECTORY ${WORK})
set(failures 0)
function(probe layer header expect)
  file(WRITE ${WORK}/probe.cc "#include \"${header}\"\nint main() { return 0; }\n")
  execute_process(COMMAND ${CXX} -std=c++17 -fsyntax-only -I${VIEWS}/${layer} ${WORK}/probe.cc
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
  if(expect STREQUAL "allowed" AND NOT rc EQUAL 0)
    message(SEND_ERROR "layer ${layer}: #include \"${header}\" should compile but failed:\n${err}")
  elseif(expect STREQUAL "rejected" AND rc EQUAL 0)
    message(SEND_ERROR "layer ${layer}: upward #include \"${header}\" compiled; the layer view lets it through")
  elseif(expect STREQUAL "rejected" AND NOT err MATCHES "No such file")
    message(SEND_ERROR "layer ${layer}: #include \"${header}\" failed for another reason than a missing header:\n${err}")
  else()
    message(STATUS "layer ${layer}: #include \"${header}\" ${expect}")
  endif()
endfunction()

probe(base graph/base/tensor.h allowed)
probe(base fusert/fusert.h allowed)  # the public API's vocabulary sits below every layer
probe(base runtime/session.h rejected)
probe(base graph/ir.h rejected)
probe(base runtime/executor.h rejected)
probe(graph graph/ir.h allowed)
probe(graph graph/base/status.h allowed)
probe(graph runtime/session.h rejected)
probe(graph runtime/executor.h rejected)
probe(graph kernels/cpu/cpu_kernels.h rejected)
probe(kernels kernels/cpu/cpu_kernels.h allowed)
probe(kernels graph/base/status.h allowed)
probe(kernels graph/ir.h rejected)
probe(kernels runtime/executor.h rejected)
probe(runtime graph/ir.h allowed)
probe(runtime apps/infer/options.h rejected)
probe(runtime apps/preprocess/image.h rejected)
probe(preprocess graph/loader/model_loader.h allowed)
probe(preprocess runtime/session.h rejected)
probe(api runtime/session_impl.h allowed)
probe(api apps/preprocess/image.h allowed)
probe(api apps/infer/options.h rejected)
