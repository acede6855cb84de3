// Parsing of infer's flags: every flag validated with a message naming it.
#include "apps/infer/options.h"

#include "graph/onnx/onnx_import.h"
#include "runtime/backend.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace fusert::app {

// The --help text (data, kept apart from the parser).
const char kUsage[] = R"(usage: infer [options]

Runs a fusert YAML model or an ONNX file. With no options: EfficientNet-Lite0 with real
ImageNet weights on the bundled photo models/data/coffee.png, printing the top-5 labels and
timing.

  --model M.yaml|M.onnx   model file (default: models/efficientnet_lite0.yaml)
  --shape NAME=DxDx..     ONNX models: fix an input's shape, e.g. --shape input=1x3x224x224
                          (default: every symbolic dim stays open, takes any size at run time
                          and is planned at a common size: a batch at 1, an image side at 224)
  --dim NAME=MIN:MAX[:OPT] ONNX models: give symbolic dim NAME (its dim_param, or INPUT.D for an
                          unnamed one) a range, planned at OPT (default MIN); --batch N then
                          runs N, e.g. --dim unk__653=1:64
  --f64-as-f32            ONNX models: run a float64 model in float32 (its float64 inputs and
                          outputs as float32), as OpenVINO's CPU plugin does; without it a
                          float64 input is an error
  --weights W.safetensors weights file (default: the model's own file if it declares one,
                          else seeded weights)
  --seeded                use seeded weights even if the model has a weights file (an ONNX
                          file's weights are its own: nothing to replace)
  --seed N                seed for seeded weights and seeded inputs (default 0)
  --input FILE            image (.png, .jpg, ...: decoded and preprocessed as the model says) or
                          a .npy tensor (default: the bundled photo for the default model
                          without --batch, seeded input otherwise). Repeat it, or name a directory, to classify
                          several images in batches of --batch-size: top-k per image, and
                          --output writes [n, classes]. Several .npy files run one by one at
                          their own shapes (ONNX dims left open take any size); --output
                          out.npy writes out.0.npy, out.1.npy, ...
  --input NAME=FILE.npy   a model with several inputs: each graph input by name (repeat for
                          every input; dims left open take the file's sizes), one run; with
                          --output DIR/ every output is written as DIR/OUTPUT.npy
  --text "..."            a text for a sentence-embedding model (repeatable; e.g.
                          models/minilm_l6.yaml): prints each embedding's dimension, norm and
                          first values, and the cosine-similarity matrix of several texts
  --text-file F           one text per line (UTF-8); texts are sorted by length, run in
                          batches padded to each batch's longest text, and reported (and
                          written by --output as [n, dim] float32) in input order
  --batch-size N          texts or images per run (default 32; 1 for a model without a
                          symbolic batch dim)
  --batch N               seeded input of batch N (a model with a symbolic batch dim)
  --device cpu|cuda       backend (default cpu); cuda needs an NVIDIA GPU (sm_90 kernels)
  --threads N             CPU threads (default 0: OMP_NUM_THREADS if set, else all cores)
  --fusion MODE           all | none | raw | comma list of vertical,horizontal,cross,compound
                          (default all). none: canonicalised (BatchNorm folded, LayerNorm,
                          GELU, hard-swish recognised), one kernel per op: the fair unfused
                          baseline. raw: the graph as written, one kernel per node
  --cpu-kernels K         CPU anchors (Conv, Gemm, MatMul): onednn (default: oneDNN primitives
                          with the fused epilogue as post-ops) or reference (our kernels)
  --precision P           f32 (default) or bf16: Conv, Gemm and MatMul by weights round their
                          input and weights to bfloat16, accumulate in f32 (oneDNN; a CPU
                          with AVX512_BF16 or AMX, else an error); other ops and the tensors
                          between steps stay f32. int8 is not a precision: a quantised ONNX
                          file (QDQ or QOperator, as tools/quantize.py writes one) runs int8
                          as it is; --profile shows its onednn_qconv steps
  --profile-guided        run once unfused, time every op, let hot ops drive vertical
                          fusion first and cold ones horizontal
  --explain               print every fusion group, every refused candidate with its reason,
                          and the depth table
  --verify                run every fused group against the unfused CPU path; print the
                          max error per group
  --ablation              run raw, none, each strategy alone, and all; print kernels,
                          intermediate bytes, peak bytes, latency and max error
  --profile               CPU: where the time goes: each step's median time over --runs
                          runs, the slowest steps with what they run, totals per kernel
  --runs N                timed warm runs (default 10; 1 pass with --text/--text-file or
                          several images); the first run of the session is timed apart
                          and labelled cold (first touch, primitive creation)
  --warmup N              untimed runs after the first, before timing (default 2; 0 for
                          text and image passes)
  --topk K                labels to print for a classifier output (default 5)
  --output out.npy        write the first graph output (with --text, all embeddings [n, dim];
                          with several images, all outputs [n, classes])
  --dot graph.dot         write the graph as Graphviz DOT (fusion groups as clusters
                          coloured by strategy)
  --stats-json s.json     write statistics (model, device, fusion, nodes, kernels,
                          intermediate_bytes, peak_activation_bytes, weight_bytes, plan_ms,
                          latency_ms, ...; with cuda also device_name, generated_kernels,
                          library_calls, host_fallback_steps, cuda_graph, tf32, compile_ms)
  --dump                  print the loaded graph and exit (an ONNX file as imported, with
                          --shape and --dim)
  --list-ops              print the op table (formula, pattern kind, attributes) and exit
  --help                  this text

CUDA backend (--device cuda):
  --no-cuda-graph         enqueue every step each run instead of replaying a CUDA Graph
  --tf32                  allow TF32 tensor-core math in cuBLASLt/cuDNN (default: exact fp32)
  --dump-kernels DIR      write every generated (NVRTC) kernel's CUDA source to DIR
  --register-budget N     registers per thread a fused generated kernel may use before the
                          vertical strategy splits it (default 32: full occupancy on sm_90)
  --compare-cpu           also run the input on the CPU backend and print the relative L2
                          error (bound 1e-5, with --tf32 1e-2); exit 1 beyond it
  FUSERT_CACHE_DIR        compiled-kernel cache (default ~/.cache/fusert/kernels)

Exit status: 0 success, 1 error (message on stderr), 2 bad command line.
)";

const char* usage() { return kUsage; }

namespace {

// "batch=1:64" or "batch=1:64:8" into ranges["batch"].
Status parse_dim_range(const std::string& v, std::map<std::string, DimRange>* ranges) {
  const size_t eq = v.find('=');
  const auto bad = [&v]() -> Status {
    return error(StatusCode::kInvalidArgument)
           << "--dim: expected NAME=MIN:MAX[:OPT] (e.g. batch=1:64), got '" << v << "'";
  };
  if (eq == std::string::npos || eq == 0) return bad();
  std::vector<int64_t> n;
  std::stringstream ss(v.substr(eq + 1));
  std::string d;
  while (std::getline(ss, d, ':')) {
    if (d.empty() || d.size() > 9 || d.find_first_not_of("0123456789") != std::string::npos) return bad();
    n.push_back(std::stoll(d));
  }
  if (n.size() != 2 && n.size() != 3) return bad();
  (*ranges)[v.substr(0, eq)] = DimRange{n[0], n[1], n.size() == 3 ? n[2] : n[0]};
  return Status();
}

Result<int> parse_int(const std::string& flag, const char* v, int lo, int hi = 1000000) {
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  // strtol also takes leading blanks and a '+': " 2" and "+2" are refused like "2x"
  const bool digits_first =
      std::isdigit(static_cast<unsigned char>(v[0])) || (v[0] == '-' && std::isdigit(static_cast<unsigned char>(v[1])));
  if (!digits_first || *end != '\0' || x < lo || x > hi) {
    return error(StatusCode::kInvalidArgument)
           << flag << ": expected an integer in " << lo << ".." << hi << ", got '" << v << "'";
  }
  return static_cast<int>(x);
}

}  // namespace

namespace {

// Options without a value, and what each sets.
struct Flag {
  const char* name;
  void (*set)(InferOptions& o);
};
const Flag kFlags[] = {
    {"--help", [](InferOptions& o) { o.help = true; }},
    {"-h", [](InferOptions& o) { o.help = true; }},
    {"--dump", [](InferOptions& o) { o.dump = true; }},
    {"--list-ops", [](InferOptions& o) { o.list_ops = true; }},
    {"--seeded", [](InferOptions& o) { o.session.seeded = true; }},
    {"--f64-as-f32", [](InferOptions& o) { o.session.f64_as_f32 = true; }},
    {"--explain", [](InferOptions& o) { o.explain = true; }},
    {"--verify", [](InferOptions& o) { o.verify = true; }},
    {"--ablation", [](InferOptions& o) { o.ablation = true; }},
    {"--profile", [](InferOptions& o) { o.profile = true; }},
    {"--profile-guided", [](InferOptions& o) { o.session.profile_guided = true; }},
    {"--no-cuda-graph", [](InferOptions& o) { o.session.cuda_graph = false; }},
    {"--tf32", [](InferOptions& o) { o.session.tf32 = true; }},
    {"--compare-cpu", [](InferOptions& o) { o.compare_cpu = true; }},
};

// Options with a value, and how each reads it (errors name the option).
struct ValueOption {
  const char* name;
  Status (*set)(InferOptions& o, const std::string& flag, const char* v);
};
// An integer option in [lo, hi] into `field` of InferOptions.
#define FUSERT_INT_OPTION(flag, field, lo, hi)                                 \
  {                                                                            \
    flag, [](InferOptions& o, const std::string& a, const char* v) -> Status { \
      FUSERT_ASSIGN_OR_RETURN(o.field, parse_int(a, v, lo, hi));               \
      return Status();                                                         \
    }                                                                          \
  }
// A string option into `field`, or a repeatable one appended to it.
#define FUSERT_STRING_OPTION(flag, field)                                                            \
  {                                                                                                  \
    flag, [](InferOptions& o, const std::string&, const char* v) { return (o.field = v, Status()); } \
  }
#define FUSERT_LIST_OPTION(flag, field)                                                                       \
  {                                                                                                           \
    flag, [](InferOptions& o, const std::string&, const char* v) { return (o.field.push_back(v), Status()); } \
  }
const ValueOption kValueOptions[] = {
    FUSERT_STRING_OPTION("--model", model),
    FUSERT_STRING_OPTION("--weights", session.weights),
    {"--shape", [](InferOptions& o, const std::string&,
                   const char* v) { return parse_shape_binding(v, &o.session.input_shapes); }},  // graph/onnx
    {"--dim",
     [](InferOptions& o, const std::string&, const char* v) { return parse_dim_range(v, &o.session.dim_ranges); }},
    FUSERT_LIST_OPTION("--input", images),
    FUSERT_STRING_OPTION("--device", session.device),
    FUSERT_STRING_OPTION("--fusion", session.fusion),
    FUSERT_STRING_OPTION("--cpu-kernels", session.cpu_kernels),
    FUSERT_STRING_OPTION("--precision", session.precision),
    FUSERT_STRING_OPTION("--output", output),
    FUSERT_STRING_OPTION("--dot", dot),
    FUSERT_STRING_OPTION("--stats-json", stats_json),
    FUSERT_LIST_OPTION("--text", texts),
    FUSERT_STRING_OPTION("--text-file", text_file),
    {"--dump-kernels",
     [](InferOptions& o, const std::string&, const char* v) -> Status {
       if (*v == '\0') return error(StatusCode::kInvalidArgument) << "--dump-kernels needs a directory";
       o.session.dump_kernels = v;
       return Status();
     }},
    FUSERT_INT_OPTION("--register-budget", session.register_budget, 1, 255),
    FUSERT_INT_OPTION("--threads", session.threads, 0, 1024),
    FUSERT_INT_OPTION("--runs", runs, 1, 1000000),
    FUSERT_INT_OPTION("--warmup", warmup, 0, 1000000),
    FUSERT_INT_OPTION("--batch-size", batch_size, 1, 4096),
    FUSERT_INT_OPTION("--batch", batch, 0, 1 << 20),
    FUSERT_INT_OPTION("--topk", topk, 1, 1000000),
    {"--seed",
     [](InferOptions& o, const std::string& a, const char* v) -> Status {
       FUSERT_ASSIGN_OR_RETURN(int s, parse_int(a, v, 0));
       o.session.seed = static_cast<uint64_t>(s);
       return Status();
     }},
};
#undef FUSERT_INT_OPTION
#undef FUSERT_STRING_OPTION
#undef FUSERT_LIST_OPTION

// --input NAME=FILE.npy binds a graph input by name (then every --input must); one file (or
// none) is the single-input path; several, or a directory, classify in batches.
Status resolve_inputs(InferOptions* opts) {
  InferOptions& o = *opts;
  for (const std::string& f : o.images) {
    const size_t eq = f.find('=');
    if (eq == std::string::npos || eq == 0 || f.find('/') < eq) continue;
    if (!o.named_inputs.emplace(f.substr(0, eq), f.substr(eq + 1)).second)
      return error(StatusCode::kInvalidArgument)
             << "--input " << f << ": input '" << f.substr(0, eq) << "' given twice";
  }
  if (!o.named_inputs.empty()) {
    if (o.named_inputs.size() != o.images.size())
      return error(StatusCode::kInvalidArgument)
             << "--input: give every input as NAME=FILE.npy, or none (a model with several inputs takes them by name)";
    if (o.batch >= 0) return error(StatusCode::kInvalidArgument) << "--batch cannot be combined with --input NAME=FILE";
    o.images.clear();
  }
  if (o.images.size() == 1 && !std::filesystem::is_directory(o.images[0])) {
    o.input = o.images[0];
    o.images.clear();
  }
  return Status();
}

// Modes that exclude each other: several images, --batch, texts, the analyses.
Status check_modes(const InferOptions& o) {
  if (!o.images.empty() && (o.verify || o.ablation || o.profile || o.compare_cpu || o.batch >= 0)) {
    return error(StatusCode::kInvalidArgument)
           << "several --input images (or a directory) cannot be combined with --verify, --ablation, --profile, "
              "--compare-cpu or --batch";
  }
  if (o.batch >= 0 && (o.verify || o.ablation)) {
    return error(StatusCode::kInvalidArgument)
           << "--verify and --ablation run at the model's planned shape; drop --batch";
  }
  if (o.batch >= 0 && !o.input.empty())
    return error(StatusCode::kInvalidArgument)
           << "--batch sets the seeded input's batch; it cannot be combined with --input";
  FusionOptions fusion;
  std::string why;
  if (!parse_fusion_mode(o.session.fusion, &fusion, &why))
    return error(StatusCode::kInvalidArgument) << "--fusion: " << why;
  if ((!o.texts.empty() || !o.text_file.empty()) && (!o.input.empty() || !o.images.empty() || o.batch >= 0 ||
                                                     !o.stats_json.empty() || o.verify || o.ablation || o.profile)) {
    return error(StatusCode::kInvalidArgument) << "--text/--text-file cannot be combined with --input, --batch, "
                                                  "--stats-json, --verify, --ablation or --profile";
  }
  return Status();
}

// The kernel set, precision and device, and the options only one device takes.
Status check_device_options(const InferOptions& o) {
  if (o.session.cpu_kernels != "onednn" && o.session.cpu_kernels != "reference") {
    return error(StatusCode::kInvalidArgument)
           << "--cpu-kernels: expected onednn or reference, got '" << o.session.cpu_kernels << "'";
  }
  if (o.session.precision != "f32" && o.session.precision != "bf16")
    return error(StatusCode::kInvalidArgument)
           << "--precision: expected f32 or bf16, got '" << o.session.precision << "'"
           << (o.session.precision == "int8"
                   ? " (an int8 model is a quantised ONNX file, which runs as it is: tools/quantize.py makes one)"
                   : "");
  if (!is_backend(o.session.device)) {
    return error(StatusCode::kInvalidArgument)
           << "--device: expected " << backend_choices() << ", got '" << o.session.device << "'";
  }
  if (o.session.device != "cpu" && (o.verify || o.ablation || o.profile || o.session.profile_guided)) {
    return error(StatusCode::kInvalidArgument)
           << "--verify, --ablation, --profile and --profile-guided run on the CPU backend only; "
              "use --compare-cpu to check --device cuda against the CPU (and Nsight Systems for a CUDA profile)";
  }
  if (o.session.device != "cuda") {
    const char* flag = !o.session.cuda_graph             ? "--no-cuda-graph"
                       : o.session.tf32                  ? "--tf32"
                       : o.compare_cpu                   ? "--compare-cpu"
                       : !o.session.dump_kernels.empty() ? "--dump-kernels"
                       : o.session.register_budget > 0   ? "--register-budget"
                                                         : nullptr;
    if (flag) return error(StatusCode::kInvalidArgument) << flag << " needs --device cuda";
  }
  if (o.compare_cpu && (!o.texts.empty() || !o.text_file.empty())) {
    return error(StatusCode::kInvalidArgument)
           << "--compare-cpu cannot be combined with --text/--text-file (compare on a tensor input)";
  }
  return Status();
}

}  // namespace

Result<InferOptions> parse_args(int argc, char** argv) {
  InferOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto flag = std::find_if(std::begin(kFlags), std::end(kFlags), [&](const Flag& f) { return a == f.name; });
    if (flag != std::end(kFlags)) {
      flag->set(o);
      continue;
    }
    const auto opt = std::find_if(std::begin(kValueOptions), std::end(kValueOptions),
                                  [&](const ValueOption& v) { return a == v.name; });
    if (opt == std::end(kValueOptions))
      return error(StatusCode::kInvalidArgument) << "unknown option '" << a << "' (see --help)";
    // A value that is another option (`--model --explain`) means the value is missing.
    if (i + 1 >= argc || std::strncmp(argv[i + 1], "--", 2) == 0)
      return error(StatusCode::kInvalidArgument)
             << a << " needs a value" << (i + 1 < argc ? std::string(" (got the option '") + argv[i + 1] + "')" : "");
    if (argv[i + 1][0] == '\0' && a != "--dump-kernels")
      return error(StatusCode::kInvalidArgument) << a << " needs a value, got an empty string";
    FUSERT_RETURN_IF_ERROR(opt->set(o, a, argv[++i]));
  }
  FUSERT_RETURN_IF_ERROR(resolve_inputs(&o));
  FUSERT_RETURN_IF_ERROR(check_modes(o));
  FUSERT_RETURN_IF_ERROR(check_device_options(o));
  // Defaults: one inference is timed warm (the median of 10 runs after 2 untimed ones; the cold
  // first run is reported apart); a text file or a set of images is one pass, its first.
  const bool passes = !o.texts.empty() || !o.text_file.empty() || !o.images.empty();
  if (o.runs == 0) o.runs = passes ? 1 : 10;
  if (o.warmup < 0) o.warmup = passes ? 0 : 2;
  return o;
}

}  // namespace fusert::app
