// classify: an image classifier embedding fusert through its installed public API only.
//
//   classify MODEL.yaml IMAGE [IMAGE ...] [--threads N] [--fusion MODE] [--runs N]
//
// Loads the model once, classifies each PNG/JPEG image (the model's own preprocessing), prints
// the top 5 classes per image, then the warm latency of one inference: the first (cold) run
// apart, the median of --runs later runs. Exit 1 on any error, with fusert's message.
#include <fusert/fusert.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

int fail(const fusert::Status& st) {
  std::fprintf(stderr, "classify: %s\n", st.to_string().c_str());
  return 1;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Top-k of one row of logits as softmax probabilities.
void print_top(const float* logits, int64_t classes, const std::vector<std::string>& labels, int k) {
  std::vector<int64_t> idx(static_cast<size_t>(classes));
  for (int64_t i = 0; i < classes; ++i) idx[static_cast<size_t>(i)] = i;
  k = static_cast<int>(std::min<int64_t>(k, classes));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  const float mx = logits[idx[0]];
  double sum = 0;
  for (int64_t i = 0; i < classes; ++i) sum += std::exp(static_cast<double>(logits[i] - mx));
  for (int r = 0; r < k; ++r) {
    const int64_t c = idx[static_cast<size_t>(r)];
    const bool named = static_cast<int64_t>(labels.size()) == classes;
    std::printf("  %d. %-30s %.4f (class %lld)\n", r + 1,
                named ? labels[static_cast<size_t>(c)].c_str() : ("class " + std::to_string(c)).c_str(),
                std::exp(static_cast<double>(logits[c] - mx)) / sum, static_cast<long long>(c));
  }
}

}  // namespace

int main(int argc, char** argv) {
  fusert::SessionOptions options;
  std::vector<std::string> args;
  int runs = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--threads" || a == "--fusion" || a == "--runs") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--threads") options.threads = std::atoi(v.c_str());
      if (a == "--fusion") options.fusion = v;
      if (a == "--runs") runs = std::max(1, std::atoi(v.c_str()));
    } else if (a == "-h" || a == "--help" || a.rfind("--", 0) == 0) {
      std::printf("usage: classify MODEL.yaml IMAGE [IMAGE ...] [--threads N] [--fusion MODE] [--runs N]\n");
      return a.rfind("--", 0) == 0 && a != "--help" ? 2 : 0;
    } else {
      args.push_back(a);
    }
  }
  if (args.size() < 2) {
    std::fprintf(stderr, "usage: classify MODEL.yaml IMAGE [IMAGE ...] [--threads N] [--fusion MODE] [--runs N]\n");
    return 2;
  }
  std::printf("fusert %s\n", fusert::version());
  auto session = fusert::Session::load(args[0], options);
  if (!session.ok()) return fail(session.status());
  fusert::Session& s = **session;
  const std::vector<fusert::TensorInfo> ins = s.inputs(), outs = s.outputs();
  if (ins.size() != 1 || outs.empty()) {
    std::fprintf(stderr, "classify: %s: expected one image input and a logits output\n", args[0].c_str());
    return 1;
  }
  auto labels = s.labels();
  if (!labels.ok()) return fail(labels.status());
  std::printf("model %s: input %s, output %s, %lld kernels per inference\n", args[0].c_str(), ins[0].name.c_str(),
              outs[0].name.c_str(), static_cast<long long>(s.stats().kernels));

  fusert::TensorMap last;
  for (size_t i = 1; i < args.size(); ++i) {
    auto image = s.read_image(args[i]);  // [1, 3, H, W] f32, the model's preprocessing
    if (!image.ok()) return fail(image.status());
    auto out = s.run({{ins[0].name, *image}});
    if (!out.ok()) return fail(out.status());
    const fusert::Tensor& logits = out->at(outs[0].name);
    std::printf("%s:\n", args[i].c_str());
    print_top(logits.f32(), logits.shape().back(), *labels, 5);
    last = {{ins[0].name, *image}};
  }

  // Latency of one inference: a fresh session's first run is cold (first touch of the weights
  // and arenas, primitive creation); the median of later runs is what a server sees.
  auto fresh = fusert::Session::load(args[0], options);
  if (!fresh.ok()) return fail(fresh.status());
  auto t0 = std::chrono::steady_clock::now();
  if (auto r = (*fresh)->run(last); !r.ok()) return fail(r.status());
  const double cold = ms_since(t0);
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    t0 = std::chrono::steady_clock::now();
    if (auto r = (*fresh)->run(last); !r.ok()) return fail(r.status());
    ms.push_back(ms_since(t0));
  }
  std::sort(ms.begin(), ms.end());
  std::printf("latency: warm median %.2f ms over %d runs (min %.2f); first run (cold) %.2f ms\n", ms[ms.size() / 2],
              runs, ms.front(), cold);
  return 0;
}
