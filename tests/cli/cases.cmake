# CLI tests: each case runs `infer` through tests/cli/expect.sh, which asserts the exit status
# and that every given extended regex matches a line of stderr (or of stdout with --stdout):
#   fusert_cli_test(NAME [--stdout] CODE REGEX... -- ARGS...)
# Binary fixtures (weights, .npy, broken images) are written at test time by make_fixtures.py
# into the build tree; text fixtures live in tests/cli/data. Every case has the label `cli`.

set(FUSERT_CLI_DIR ${CMAKE_CURRENT_SOURCE_DIR}/cli)
set(FUSERT_CLI_DATA ${FUSERT_CLI_DIR}/data)
set(FUSERT_CLI_FX ${CMAKE_CURRENT_BINARY_DIR}/cli_fixtures)
find_package(Python3 COMPONENTS Interpreter)

function(fusert_cli_test name)
  set(args ${ARGN})
  list(FIND args "--" sep)
  math(EXPR cmd_start "${sep} + 1")
  list(SUBLIST args 0 ${sep} expectations)
  list(SUBLIST args ${cmd_start} -1 infer_args)
  add_test(NAME cli_${name}
           COMMAND sh ${FUSERT_CLI_DIR}/expect.sh ${expectations} -- $<TARGET_FILE:infer> ${infer_args})
  set_tests_properties(cli_${name} PROPERTIES LABELS cli TIMEOUT 120)
endfunction()

# Marks cases that read the generated fixtures.
function(fusert_cli_needs_fixtures)
  foreach(name ${ARGN})
    set_tests_properties(cli_${name} PROPERTIES FIXTURES_REQUIRED cli_fixtures)
  endforeach()
endfunction()

# ---- command line
fusert_cli_test(help --stdout 0 "^usage: infer" "--weights W\\.safetensors" "--stats-json" "^Exit status: 0 success, 1 error"
                -- --help)
fusert_cli_test(list_ops --stdout 0 "^Conv +anchor +inputs 2\\.\\.3" "^Softmax +reduction" "^ +kernel_shape +ints +required"
                -- --list-ops)
fusert_cli_test(unknown_flag 2 "^infer: unknown option '--bogus' \\(see --help\\)" -- --bogus)
fusert_cli_test(threads_not_a_number 2 "^infer: --threads: expected an integer in 0\\.\\.1024, got 'abc'" -- --threads abc)
fusert_cli_test(threads_leading_blank 2 "^infer: --threads: expected an integer in 0\\.\\.1024, got ' 2'" -- --threads " 2")
fusert_cli_test(threads_no_value 2 "^infer: --threads needs a value" -- --threads)
fusert_cli_test(runs_zero 2 "--runs: expected an integer in 1\\.\\.1000000, got '0'" -- --runs 0)
fusert_cli_test(seed_negative 2 "--seed: expected an integer in 0\\.\\.1000000, got '-1'" -- --seed -1)
fusert_cli_test(precision_unknown 2 "^infer: --precision: expected f32 or bf16, got 'fp16'" -- --precision fp16)
fusert_cli_test(device_unknown 2 "--device: expected cpu or cuda, got 'tpu'" -- --device tpu)
fusert_cli_test(value_is_an_option 2 "^infer: --model needs a value \\(got the option '--explain'\\)" -- --model --explain)
fusert_cli_test(cpu_kernels_unknown 2 "--cpu-kernels: expected onednn or reference, got 'mkl'" -- --cpu-kernels mkl)
fusert_cli_test(cpu_kernels_reference --stdout 0 "^cpu plan: reference kernels \\(--cpu-kernels reference\\)"
                "1\\. espresso +0\\.95" -- --cpu-kernels reference --explain)
# --verify runs every fused group (oneDNN steps included, their NHWC buffers converted) on the
# unfused reference path's values; exit 1 when one disagrees.
fusert_cli_test(verify_mobilenet_v2 --stdout 0 "^verify: [0-9]+ fused groups against the unfused CPU path"
                "^verify: all groups within relative L2 1e-4" -- --model ${CMAKE_SOURCE_DIR}/models/mobilenet_v2.yaml --seeded --verify)
fusert_cli_test(verify_resnet18 --stdout 0 "^verify: all groups within relative L2 1e-4"
                -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --seeded --verify)
fusert_cli_test(fusion_none_canonicalized --stdout 0 "^plan: 49 nodes -> 48 kernels"
                -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --seeded --fusion none)
fusert_cli_test(fusion_raw --stdout 0 "^plan: 69 nodes -> 68 kernels"
                -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --seeded --fusion raw)
fusert_cli_test(fusion_unknown 2 "unknown fusion strategy 'fast' \\(all, none, raw, or a comma list"
                -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --seeded --fusion fast)
# ResNet-18 is 1.81 G multiply-adds (torchvision's figure): 3.63 GFLOP.
fusert_cli_test(profile_resnet18 --stdout 0
                "^profile \\(resnet18, fusion all, .*median of 2 runs per step\\): 2[0-9] steps, [0-9.]+ ms, 3\\.6[0-9] GFLOP \\([0-9.]+ GFLOP/s\\)$"
                "^  slowest steps \\(REF: a plain reference loop" "^ +[0-9.]+ +[0-9.]+% +[0-9]+ +onednn_conv$"
                "^ +[0-9.]+ +[0-9.]+% +1 +onednn_pool$" "^reference loops: 0 steps, 0.000 ms, 0.0% of the time$"
                -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --seeded --profile --runs 2)
# A step on a reference loop is marked REF and counted.
fusert_cli_test(profile_reference_loop --stdout 0 "^ +[0-9.]+ +[0-9.]+% +([0-9.]+|-)  argmax +REF  ArgMax"
                "^reference loops: 1 step, [0-9.]+ ms, [0-9.]+% of the time$"
                -- --model ${CMAKE_SOURCE_DIR}/tests/cli/data/ref_loop.yaml --seeded --profile --runs 2)
fusert_cli_test(profile_cuda 2 "--profile and --profile-guided run on the CPU backend only"
                -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --seeded --profile --device cuda)
# The demo's latency: the median of warm runs; the cold first run apart and labelled as such.
fusert_cli_test(demo_warm_latency --stdout 0 "1\\. espresso +0\\.95"
                "^latency \\(cpu, warm: 10 runs after the first and 2 warm-up\\): median [0-9.]+ ms, min [0-9.]+ ms, max"
                "^first run \\(cold: first touch of weights and arenas, primitive set-up\\): [0-9.]+ ms" -- --topk 5)
fusert_cli_test(cpu_kernels_onednn_explain --stdout 0
                "^cpu plan: [0-9]+ oneDNN primitive step\\(s\\), [0-9]+ step\\(s\\) refused by oneDNN \\(reference kernels, reason below\\)"
                "1\\. espresso +0\\.95" -- --explain)

# ---- model files
fusert_cli_test(model_missing 1 "^infer: error: .*/no_such_model\\.yaml: cannot open model file"
                -- --model ${FUSERT_CLI_DATA}/no_such_model.yaml)
fusert_cli_test(malformed_yaml 1 "malformed\\.yaml:5:1: malformed YAML: end of map flow not found"
                -- --model ${FUSERT_CLI_DATA}/malformed.yaml)
fusert_cli_test(unknown_op 1
                "unknown_op\\.yaml:7:21: node 'act': unknown op 'Mish'; known ops: Conv, BatchNormalization, Relu, .*Softmax, .*Identity, .*Cast"
                -- --model ${FUSERT_CLI_DATA}/unknown_op.yaml)
fusert_cli_test(wrong_attribute_type 1
                "wrong_attr_type\\.yaml:7:99: node 'pool': attribute 'ceil_mode' expects int, got float 0\\.5"
                -- --model ${FUSERT_CLI_DATA}/wrong_attr_type.yaml)
fusert_cli_test(shape_mismatch 1
                "shape_mismatch\\.yaml:9:5: node 'stem' \\(Conv\\): weight 'stem\\.weight' expected \\[16, 3, KH, KW\\] for input \\[1, 3, 8, 8\\] and group 1, got \\[16, 4, 3, 3\\]"
                -- --model ${FUSERT_CLI_DATA}/shape_mismatch.yaml)
# Out of memory is an error, not an abort: under a 2 GB address-space limit, the seeded input itself
# (1,000 images of 4 MiB) and, at 200, the run's execution context.
foreach(oom "1000;inputs, activations or outputs at these shapes do not fit" "200;out of memory while running")
  list(GET oom 0 batch)
  list(GET oom 1 message)
  add_test(NAME cli_out_of_memory_batch_${batch}
           COMMAND sh -c "ulimit -v 2000000 && exec sh \"$0\" 1 \"$1\" -- \"$2\" --model \"$3\" --batch $4"
                   ${FUSERT_CLI_DIR}/expect.sh "${message}" $<TARGET_FILE:infer> ${FUSERT_CLI_DATA}/large_activations.yaml
                   ${batch})
  set_tests_properties(cli_out_of_memory_batch_${batch} PROPERTIES LABELS cli TIMEOUT 120)
endforeach()
fusert_cli_test(dump --stdout 0 "^graph tiny \\(4 nodes\\)" "^  weight conv\\.weight\\[2, 3, 3, 3\\] init=kaiming"
                "^  node   conv = Conv\\(x\\[1, 3, 4, 4\\], conv\\.weight\\[2, 3, 3, 3\\], conv\\.bias\\[2\\]\\) -> c\\[1, 2, 4, 4\\]"
                "^  output y\\[1, 2\\]"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --dump)

# ---- weights
fusert_cli_test(weights_file_missing 1
                "missing\\.safetensors: weights file of model 'tiny_w' not found"
                "create it with: python3 tools/fetch_weights\\.py tiny_w" "--seeded"
                -- --model ${FUSERT_CLI_DATA}/tiny_missing_weights.yaml)
fusert_cli_test(weights_missing_seeded_ok --stdout 0 "^weights: seeded \\(seed 0\\)" "^output 'y' \\[1, 2\\]"
                -- --model ${FUSERT_CLI_DATA}/tiny_missing_weights.yaml --seeded)
fusert_cli_test(weights_not_found 1 "no_such\\.safetensors: cannot open weights file"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --weights ${FUSERT_CLI_FX}/no_such.safetensors)
fusert_cli_test(weights_extra 1 "tiny_extra\\.safetensors: 1 weight problem\\(s\\) for model 'tiny':"
                "^  extra: 'bogus' \\[3\\] is not used by model 'tiny'"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --weights ${FUSERT_CLI_FX}/tiny_extra.safetensors)
fusert_cli_test(weights_missing_tensor 1 "tiny_missing\\.safetensors: 1 weight problem" "^  missing: 'conv\\.bias' \\[2\\]"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --weights ${FUSERT_CLI_FX}/tiny_missing.safetensors)
fusert_cli_test(weights_misshaped 1
                "^  wrong shape: 'conv\\.weight' expected \\[2, 3, 3, 3\\], got \\[2, 3, 1, 1\\]"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --weights ${FUSERT_CLI_FX}/tiny_misshaped.safetensors)
fusert_cli_test(weights_truncated 1
                "tiny_truncated\\.safetensors: tensor 'conv\\.bias': data_offsets outside the data section \\(file truncated\\?\\)"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --weights ${FUSERT_CLI_FX}/tiny_truncated.safetensors)
fusert_cli_needs_fixtures(weights_not_found weights_extra weights_missing_tensor weights_misshaped weights_truncated)

# ---- inputs
fusert_cli_test(image_not_an_image 1 "not_an_image\\.png: cannot read image"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --seeded --input ${FUSERT_CLI_FX}/not_an_image.png)
fusert_cli_test(image_truncated 1 "truncated\\.png: cannot read image"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --seeded --input ${FUSERT_CLI_FX}/truncated.png)
fusert_cli_test(image_missing 1 "no_such_photo\\.png: cannot read image"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --seeded --input ${FUSERT_CLI_FX}/no_such_photo.png)
fusert_cli_test(image_ok --stdout 0 "^input: .*coffee\\.png \\(600x400\\)" "^output 'y' \\[1, 2\\]"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --seeded --input ${PROJECT_SOURCE_DIR}/models/data/coffee.png)
fusert_cli_test(npy_wrong_shape 1 "x_wrong_shape\\.npy: input 'x' of model 'tiny' expects f32 \\[1, 3, 4, 4\\], the file holds f32 \\[1, 3, 5, 5\\]"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --seeded --input ${FUSERT_CLI_FX}/x_wrong_shape.npy)
fusert_cli_test(npy_missing 1 "no_such\\.npy: cannot open file"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --seeded --input ${FUSERT_CLI_FX}/no_such.npy)
fusert_cli_test(named_input_unknown 1 "--input q=.*x_ok\\.npy: model 'tiny' has no input 'q'"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --seeded --input q=${FUSERT_CLI_FX}/x_ok.npy)
fusert_cli_test(named_input_mixed 2 "^infer: --input: give every input as NAME=FILE\\.npy, or none"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --input x=a.npy --input b.npy)
fusert_cli_needs_fixtures(image_not_an_image image_truncated npy_wrong_shape named_input_unknown)

# ---- devices
fusert_cli_test(device_cuda_without_gpu 1 "^infer: error: .*--device cuda: .*use --device cpu"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --seeded --device cuda)
set_tests_properties(cli_device_cuda_without_gpu PROPERTIES ENVIRONMENT "CUDA_VISIBLE_DEVICES=")

# ---- generated fixtures and checks of written files (need python3, stdlib only)
if(Python3_Interpreter_FOUND)
  add_test(NAME cli_make_fixtures COMMAND ${Python3_EXECUTABLE} ${FUSERT_CLI_DIR}/make_fixtures.py
           ${FUSERT_CLI_FX} ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli_make_fixtures PROPERTIES LABELS cli FIXTURES_SETUP cli_fixtures)

  # --output of the tiny model on a known input and weights against a naive Python loop.
  add_test(NAME cli_output_matches_reference
           COMMAND ${Python3_EXECUTABLE} ${FUSERT_CLI_DIR}/check.py npy ${FUSERT_CLI_FX}/y.npy ${FUSERT_CLI_FX}/tiny_expected.json
                   -- $<TARGET_FILE:infer> --model ${FUSERT_CLI_DATA}/tiny.yaml --weights ${FUSERT_CLI_FX}/tiny.safetensors
                      --input ${FUSERT_CLI_FX}/x_ok.npy --output ${FUSERT_CLI_FX}/y.npy)
  set_tests_properties(cli_output_matches_reference PROPERTIES LABELS cli FIXTURES_REQUIRED cli_fixtures TIMEOUT 120)
  # The same through --input NAME=FILE and --output DIR/ (every output as DIR/NAME.npy).
  add_test(NAME cli_named_input_output_dir
           COMMAND ${Python3_EXECUTABLE} ${FUSERT_CLI_DIR}/check.py npy ${FUSERT_CLI_FX}/named/y.npy ${FUSERT_CLI_FX}/tiny_expected.json
                   -- $<TARGET_FILE:infer> --model ${FUSERT_CLI_DATA}/tiny.yaml --weights ${FUSERT_CLI_FX}/tiny.safetensors
                      --input x=${FUSERT_CLI_FX}/x_ok.npy --output ${FUSERT_CLI_FX}/named/)
  set_tests_properties(cli_named_input_output_dir PROPERTIES LABELS cli FIXTURES_REQUIRED cli_fixtures TIMEOUT 120)

  add_test(NAME cli_stats_json_resnet18
           COMMAND ${Python3_EXECUTABLE} ${FUSERT_CLI_DIR}/check.py stats ${FUSERT_CLI_FX}/resnet18.stats.json resnet18
                   -- $<TARGET_FILE:infer> --model ${PROJECT_SOURCE_DIR}/models/resnet18.yaml --seeded
                      --stats-json ${FUSERT_CLI_FX}/resnet18.stats.json)
  set_tests_properties(cli_stats_json_resnet18 PROPERTIES LABELS cli FIXTURES_REQUIRED cli_fixtures TIMEOUT 300)

  add_test(NAME cli_dot_graph
           COMMAND ${Python3_EXECUTABLE} ${FUSERT_CLI_DIR}/check.py dot ${FUSERT_CLI_FX}/tiny_graph.dot graph
                   -- $<TARGET_FILE:infer> --model ${FUSERT_CLI_DATA}/tiny.yaml --seeded --fusion none
                      --dot ${FUSERT_CLI_FX}/tiny_graph.dot)
  add_test(NAME cli_dot_plan
           COMMAND ${Python3_EXECUTABLE} ${FUSERT_CLI_DIR}/check.py dot ${FUSERT_CLI_FX}/tiny_plan.dot plan
                   -- $<TARGET_FILE:infer> --model ${FUSERT_CLI_DATA}/tiny.yaml --seeded --dot ${FUSERT_CLI_FX}/tiny_plan.dot)
  set_tests_properties(cli_dot_graph cli_dot_plan PROPERTIES LABELS cli FIXTURES_REQUIRED cli_fixtures TIMEOUT 120)
else()
  message(STATUS "fusert: python3 not found; CLI cases that need generated fixtures are skipped")
  foreach(name weights_not_found weights_extra weights_missing_tensor weights_misshaped weights_truncated
               image_not_an_image image_truncated npy_wrong_shape)
    set_tests_properties(cli_${name} PROPERTIES DISABLED TRUE)
  endforeach()
endif()

# ---- text inputs (sentence-embedding models; seeded weights, so no weights file is needed)
fusert_cli_test(text_file_not_utf8 1 "not_utf8\\.txt:2: not UTF-8: invalid UTF-8 at byte offset 0"
                -- --model ${CMAKE_SOURCE_DIR}/models/minilm_l6.yaml --seeded --text-file ${FUSERT_CLI_DATA}/not_utf8.txt)
fusert_cli_test(text_file_missing 1 "nope\\.txt: cannot open text file"
                -- --model ${CMAKE_SOURCE_DIR}/models/minilm_l6.yaml --seeded --text-file nope.txt)
fusert_cli_test(text_on_image_model 1 "--text: model 'resnet18' has no i64 inputs 'input_ids' and 'attention_mask'"
                -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --text hello)
fusert_cli_test(text_batched --stdout 0 "^text 3 \\([0-9]+ tokens\\): dim 384, norm 1\\.000000"
                "^embedded 3 texts \\([0-9]+ tokens\\) in 2 batches of up to 2, padded to each batch's longest: .* texts/s"
                "^wrote .*emb\\.npy \\[3, 384\\] float32, in input order"
                -- --model ${CMAKE_SOURCE_DIR}/models/minilm_l6.yaml --seeded --batch-size 2 --text "a b c d e f g"
                   --text "hi" --text "three words here" --output ${CMAKE_CURRENT_BINARY_DIR}/cli_emb.npy)

# ---- batches (models with a symbolic batch dim)
fusert_cli_test(batch_seeded --stdout 0 "^input: seeded \\(seed 0\\), batch 3" "^output 'logits' \\[3, 1000\\]"
                "^item 2, top-5" -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --seeded --batch 3)
fusert_cli_test(batch_out_of_range 1 "--batch 65: outside the range 1\\.\\.64 of dim 'batch'"
                -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --seeded --batch 65)
# The default model takes --batch as a seeded input of that batch (not the bundled photo).
fusert_cli_test(batch_default_model 1 "--batch 100: outside the range 1\\.\\.64 of dim 'batch'" -- --batch 100)
fusert_cli_test(batch_fixed_model 1 "--batch: model 'tiny' has no symbolic batch dim"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --seeded --batch 2)
fusert_cli_test(batch_profile --stdout 0 "^input: seeded \\(seed 0\\), batch 4" "^profile \\(resnet18, .*: 2[0-9] steps"
                -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --seeded --batch 4 --profile --runs 2)
fusert_cli_test(batch_verify 2 "--verify and --ablation run at the model's planned shape; drop --batch"
                -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --seeded --batch 4 --verify)
fusert_cli_test(batch_with_input 2 "--batch sets the seeded input's batch; it cannot be combined with --input"
                -- --batch 2 --input ${CMAKE_SOURCE_DIR}/models/data/coffee.png)
fusert_cli_test(images_batched --stdout 0 "models/data/chelsea\\.png$" "models/data/coffee\\.png$" "1\\. espresso +0\\.95"
                "^classified 3 images in 2 batches of up to 2 .* images/s"
                "^wrote .*cls\\.npy \\[3, 1000\\] float32, in input order"
                -- --input ${CMAKE_SOURCE_DIR}/models/data --input ${CMAKE_SOURCE_DIR}/models/data/coffee.png
                   --batch-size 2 --output ${CMAKE_CURRENT_BINARY_DIR}/cli_cls.npy)
fusert_cli_test(images_missing 1 "nope\\.png: no such file or directory"
                -- --input ${CMAKE_SOURCE_DIR}/models/data/coffee.png --input nope.png)
fusert_cli_test(fusion_bad_strategy 2 "--fusion: unknown fusion strategy 'diagonal'"
                -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --fusion vertical,diagonal)

# ---- CUDA backend without a GPU (CUDA_VISIBLE_DEVICES="" hides any device): the CUDA plan with
# measured register counts is printed, then the run fails with the no-device error.
if(FUSERT_HAVE_CUDA)
  fusert_cli_test(cuda_explain_without_gpu --stdout 1 "^cuda plan \\(sm_90\\): [0-9]+ launches"
                  "measured sm_90: [0-9]+ registers, 0 spill bytes" "\\[[0-9]+ regs, 0 spill bytes\\]"
                  -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --seeded --device cuda --explain)
  fusert_cli_test(cuda_error_without_gpu 1 "^infer: error: .*--device cuda: .*use --device cpu"
                  -- --model ${CMAKE_SOURCE_DIR}/models/resnet18.yaml --seeded --device cuda --explain)
  fusert_cli_test(cuda_flags_need_cuda 2 "^infer: --tf32 needs --device cuda" -- --tf32)
  fusert_cli_test(cuda_compare_cpu_with_text 2 "--compare-cpu cannot be combined with --text"
                  -- --model ${CMAKE_SOURCE_DIR}/models/minilm_l6.yaml --device cuda --compare-cpu --text hi)
  fusert_cli_test(cuda_dump_kernels_unwritable 1 "--dump-kernels directory"
                  -- --model ${FUSERT_CLI_DATA}/tiny.yaml --seeded --device cuda --dump-kernels /proc/fusert-no)
  set_tests_properties(cli_cuda_explain_without_gpu cli_cuda_error_without_gpu cli_cuda_dump_kernels_unwritable
                       PROPERTIES ENVIRONMENT "CUDA_VISIBLE_DEVICES=" LABELS "cli;cuda-codegen")
endif()

# ---- ONNX models (graph/onnx): --explain on an imported model, --shape, the unsupported-op list
fusert_cli_test(onnx_explain --stdout 0 "^fusion plan for " "^plan: [0-9]+ nodes -> [0-9]+ kernels"
                -- --model ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_loaders/corpus/onnx/test_Conv2d_depthwise_padded.onnx
                   --seeded --explain)
# An ONNX file's weights are its own initializers, also with --seeded (which seeds only what a
# model file lacks), and the report says so.
fusert_cli_test(onnx_weights_own --stdout 0 "^weights: the model file's own$"
                -- --model ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_loaders/corpus/onnx/test_Conv2d_depthwise_padded.onnx
                   --seeded --runs 1)
fusert_cli_test(onnx_dump --stdout 0 "^graph torch-jit-export \\(1 nodes\\)" "^  input  0\\[2, 4, 6, 6\\] f32"
                "^  node   Conv_0 = Conv\\(.*group=4, kernel_shape=\\[3, 3\\], pads=\\[1, 1, 1, 1\\]"
                -- --model ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_loaders/corpus/onnx/test_Conv2d_depthwise_padded.onnx --dump)
fusert_cli_test(dump_yaml_shape 1 "tiny\\.yaml: --shape and --dim are for ONNX models"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --dump --shape x=1x3x8x8)
fusert_cli_test(onnx_shape_malformed 2 "--shape: expected NAME=DxDx\\.\\.\\. \\(e\\.g\\. input=1x3x224x224\\), got 'x=1xax3'"
                -- --model ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_loaders/corpus/onnx/test_Conv2d_depthwise_padded.onnx
                   --shape x=1xax3)
fusert_cli_test(onnx_unsupported 1 "test_bitshift_left_uint8/model\\.onnx: unsupported by fusert:" "BitShift x1"
                -- --model /usr/share/libonnx-testdata/data/node/test_bitshift_left_uint8/model.onnx --seeded)
fusert_cli_test(onnx_not_a_model 1 "truncated_gemm\\.onnx: not an ONNX model"
                -- --model ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_loaders/regressions/onnx/truncated_gemm.onnx)
# fusert-convert (apps/convert): usage and an unsupported model (the real models' round trip is
# ctest onnx_real_models).
add_test(NAME cli_convert_usage COMMAND sh ${FUSERT_CLI_DIR}/expect.sh 2 "^usage: fusert-convert MODEL\\.onnx -o MODEL\\.yaml"
                                        -- $<TARGET_FILE:fusert-convert> model.onnx)
add_test(NAME cli_convert_unsupported
         COMMAND sh ${FUSERT_CLI_DIR}/expect.sh 1 "^fusert-convert: error: unsupported: .*test_bitshift_left_uint8/model\\.onnx: unsupported by fusert:"
                 "BitShift x1" -- $<TARGET_FILE:fusert-convert> /usr/share/libonnx-testdata/data/node/test_bitshift_left_uint8/model.onnx
                 -o ${CMAKE_CURRENT_BINARY_DIR}/cli_convert_acos.yaml)
set(FUSERT_CONVERT_SRC ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_loaders/corpus/onnx/test_Conv2d_depthwise_padded.onnx)
add_test(NAME cli_convert_overwrite_model
         COMMAND sh ${FUSERT_CLI_DIR}/expect.sh 1 "--weights would overwrite the model being converted"
                 -- $<TARGET_FILE:fusert-convert> ${FUSERT_CONVERT_SRC} -o ${CMAKE_CURRENT_BINARY_DIR}/cli_convert_ow.yaml
                 --weights ${FUSERT_CONVERT_SRC})
add_test(NAME cli_convert_same_outputs
         COMMAND sh ${FUSERT_CLI_DIR}/expect.sh 1 "--weights and -o name the same file"
                 -- $<TARGET_FILE:fusert-convert> ${FUSERT_CONVERT_SRC} -o ${CMAKE_CURRENT_BINARY_DIR}/cli_convert_same.yaml
                 --weights ${CMAKE_CURRENT_BINARY_DIR}/cli_convert_same.yaml)
set_tests_properties(cli_convert_usage cli_convert_unsupported cli_convert_overwrite_model cli_convert_same_outputs
                     PROPERTIES LABELS cli TIMEOUT 60)
fusert_cli_test(onnx_dim_malformed 2 "--dim: expected NAME=MIN:MAX\\[:OPT\\] \\(e\\.g\\. batch=1:64\\), got 'N=1'"
                -- --model ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_loaders/corpus/onnx/test_Conv2d_depthwise_padded.onnx
                   --dim N=1)
fusert_cli_test(yaml_dim_refused 1 "dim_ranges \\(--dim\\) is for ONNX models"
                -- --model ${CMAKE_SOURCE_DIR}/models/branch_merge.yaml --seeded --dim batch=1:4)
# fusert-zoo (apps/zoo): usage and manifest errors, each naming the file and line; the runs
# themselves are ctest zoo_quick and zoo_broken_fixture (tests/zoo/check_zoo.py).
set(FUSERT_ZOO_DATA ${CMAKE_CURRENT_SOURCE_DIR}/zoo/data)
add_test(NAME cli_zoo_help COMMAND sh ${FUSERT_CLI_DIR}/expect.sh --stdout 0 "^usage: fusert-zoo \\[--manifest F\\]"
                                   "--update-baseline" -- $<TARGET_FILE:fusert-zoo> --help)
add_test(NAME cli_zoo_unknown_flag COMMAND sh ${FUSERT_CLI_DIR}/expect.sh 2 "^fusert-zoo: unknown or incomplete option '--bogus'"
                                           -- $<TARGET_FILE:fusert-zoo> --bogus)
add_test(NAME cli_zoo_bad_key COMMAND sh ${FUSERT_CLI_DIR}/expect.sh 2 "bad_key\\.yaml:5: unknown key 'weigths' in a model"
                                      -- $<TARGET_FILE:fusert-zoo> --manifest ${FUSERT_ZOO_DATA}/bad_key.yaml)
add_test(NAME cli_zoo_not_a_manifest
         COMMAND sh ${FUSERT_CLI_DIR}/expect.sh 2 "not_a_manifest\\.yaml: not a zoo manifest \\(expected `fusert_zoo: 1` first\\)"
                 -- $<TARGET_FILE:fusert-zoo> --manifest ${FUSERT_ZOO_DATA}/not_a_manifest.yaml)
add_test(NAME cli_zoo_unknown_model COMMAND sh ${FUSERT_CLI_DIR}/expect.sh 2 "--models: no model 'nope' in "
                                            -- $<TARGET_FILE:fusert-zoo> --models nope)
add_test(NAME cli_zoo_bad_fusion COMMAND sh ${FUSERT_CLI_DIR}/expect.sh 2 "^fusert-zoo: --fusion: 'bogus': unknown fusion"
                                         -- $<TARGET_FILE:fusert-zoo> --fusion none,bogus)
add_test(NAME cli_zoo_bad_device COMMAND sh ${FUSERT_CLI_DIR}/expect.sh 2 "^fusert-zoo: --device must be cpu, cuda"
                                         -- $<TARGET_FILE:fusert-zoo> --device cpu,tpu)
set_tests_properties(cli_zoo_help cli_zoo_unknown_flag cli_zoo_bad_key cli_zoo_not_a_manifest cli_zoo_unknown_model
                     cli_zoo_bad_fusion cli_zoo_bad_device PROPERTIES LABELS cli TIMEOUT 60)
# Zero-size dims: an empty MatMul runs and gives an empty output (fused and unfused); a Resize of
# an empty dim to a non-empty size is an error naming the node.
fusert_cli_test(empty_matmul_all --stdout 0 "^output 'y' \\[2, 0, 5\\]"
                -- --model ${FUSERT_CLI_DATA}/empty_matmul.yaml --seeded --runs 1 --fusion all)
fusert_cli_test(empty_matmul_none --stdout 0 "^output 'y' \\[2, 0, 5\\]"
                -- --model ${FUSERT_CLI_DATA}/empty_matmul.yaml --seeded --runs 1 --fusion none)
fusert_cli_test(empty_resize 1 "lowering node 'rs': input 't' \\[1, 1, 0, 4\\] is empty along dim 2 and cannot be resized to 2"
                -- --model ${FUSERT_CLI_DATA}/empty_resize.yaml --seeded --runs 1)
# --shape names an ONNX input; a typo is an error, not ignored, and YAML models refuse it.
fusert_cli_test(onnx_shape_unknown_input 1 "--shape nope=\\.\\.\\.: the model has no input of that name \\(its inputs: '0'\\)"
                -- --model ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_loaders/corpus/onnx/test_Conv2d_depthwise_padded.onnx
                   --shape nope=1x3 --seeded --runs 1)
fusert_cli_test(yaml_shape_refused 1 "input_shapes \\(--shape\\) is for ONNX models"
                -- --model ${FUSERT_CLI_DATA}/tiny.yaml --shape x=9x9x9x9 --seeded --runs 1)
# A model without initializers reports no weights rather than the seed it did not use.
fusert_cli_test(weights_none --stdout 0 "^weights: none \\(the model has no initializers\\)$"
                -- --model ${FUSERT_CLI_DATA}/ref_loop.yaml --seeded --runs 1)
# bench's --threads takes an integer 0..1024; a typo is an error, not 0 (all cores).
add_test(NAME cli_bench_threads_typo
         COMMAND sh ${FUSERT_CLI_DIR}/expect.sh --stdout 1 "--threads: expected an integer 0\\.\\.1024, got 'abc'"
                 -- $<TARGET_FILE:bench> --serve ${FUSERT_CLI_DATA}/tiny.yaml --threads abc)
add_test(NAME cli_bench_fma_threads_typo
         COMMAND sh ${FUSERT_CLI_DIR}/expect.sh 2 "--threads expects an integer 0\\.\\.1024, got '-1'"
                 -- $<TARGET_FILE:bench> --fma-peak --threads -1)
set_tests_properties(cli_bench_threads_typo cli_bench_fma_threads_typo PROPERTIES LABELS cli TIMEOUT 60)
