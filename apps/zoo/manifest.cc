// Reads the zoo manifest (models/ZOO.md) with yaml-cpp: `defaults:` first, then each model's
// keys over them. Every error names the manifest and the line of the offending key.
#include "apps/zoo/manifest.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "graph/base/status.h"
#include "runtime/backend.h"

namespace fs = std::filesystem;

namespace fusert::zoo {

namespace {

struct Reader {
  std::string path;

  ErrorBuilder fail(const YAML::Node& n) const {
    ErrorBuilder b(StatusCode::kParseError);
    b << path << ":" << n.Mark().line + 1 << ": ";
    return b;
  }

  template <typename T>
  Status get(const YAML::Node& n, const char* what, T* out) const {
    try {
      *out = n.as<T>();
    } catch (const YAML::Exception&) {
      return fail(n) << "'" << what << "' has the wrong type";
    }
    return Status();
  }

  Status strings(const YAML::Node& n, const char* what, std::vector<std::string>* out) const {
    if (!n.IsSequence()) return fail(n) << "'" << what << "' must be a list";
    out->clear();
    for (const auto& e : n) {
      std::string s;
      FUSERT_RETURN_IF_ERROR(get(e, what, &s));
      out->push_back(s);
    }
    return Status();
  }

  template <typename T>
  Status per_mode(const YAML::Node& n, const char* what, std::map<std::string, T>* out) const {
    if (!n.IsMap()) return fail(n) << "'" << what << "' must map fusion modes to bounds, e.g. {all: 22}";
    for (const auto& kv : n) {
      T v{};
      FUSERT_RETURN_IF_ERROR(get(kv.second, what, &v));
      const std::string mode = kv.first.as<std::string>();
      FusionOptions fopt;
      std::string why;
      if (!parse_fusion_mode(mode, &fopt, &why)) return fail(kv.first) << "'" << what << "': " << why;
      (*out)[mode] = v;
    }
    return Status();
  }

  std::string resolve(const std::string& p) const {
    if (p.empty() || fs::path(p).is_absolute()) return p;
    return (fs::absolute(fs::path(path)).parent_path() / p).lexically_normal().string();
  }

  // Applies the keys of `n` (defaults or one model) to `m`.
  Status apply(const YAML::Node& n, bool is_model, ZooModel* m) const {
    static const std::set<std::string> common = {"devices", "fusion",    "runs",          "warmup",
                                                 "threads", "tolerance", "latency_margin"};
    static const std::set<std::string> model_only = {"name",  "model",  "shapes",    "weights", "seed",
                                                     "fetch", "inputs", "reference", "expect",  "expect_cuda"};
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      if (!common.count(key) && !(is_model && model_only.count(key))) {
        return fail(kv.first) << "unknown key '" << key << "'" << (is_model ? " in a model" : " in defaults");
      }
      FUSERT_RETURN_IF_ERROR(common.count(key) ? run_key(key, kv.second, m) : model_key(key, kv.second, m));
    }
    return Status();
  }

  // devices, fusion, runs, warmup, threads, tolerance, latency_margin.
  Status run_key(const std::string& key, const YAML::Node& v, ZooModel* m) const {
    if (key == "devices") {
      FUSERT_RETURN_IF_ERROR(strings(v, "devices", &m->devices));
      for (const auto& d : m->devices)
        if (!is_backend(d)) return fail(v) << "device '" << d << "' (" << backend_choices() << ")";
    } else if (key == "fusion") {
      FUSERT_RETURN_IF_ERROR(strings(v, "fusion", &m->fusion));
    } else if (key == "runs") {
      FUSERT_RETURN_IF_ERROR(get(v, "runs", &m->runs));
      if (m->runs < 1) return fail(v) << "runs must be >= 1";
    } else if (key == "warmup") {
      FUSERT_RETURN_IF_ERROR(get(v, "warmup", &m->warmup));
    } else if (key == "threads") {
      FUSERT_RETURN_IF_ERROR(get(v, "threads", &m->threads));
    } else if (key == "tolerance") {
      FUSERT_RETURN_IF_ERROR(get(v, "tolerance", &m->tolerance));
      if (!(m->tolerance >= 0)) return fail(v) << "tolerance must be >= 0";
    } else {
      FUSERT_RETURN_IF_ERROR(get(v, "latency_margin", &m->latency_margin));
      if (!(m->latency_margin >= 1)) return fail(v) << "latency_margin is a ratio >= 1";
    }
    return Status();
  }

  // name, model, shapes, weights, seed, fetch, inputs, reference, expect, expect_cuda.
  Status model_key(const std::string& key, const YAML::Node& v, ZooModel* m) const {
    if (key == "name") return get(v, "name", &m->name);
    if (key == "seed") return get(v, "seed", &m->seed);
    if (key == "fetch") return get(v, "fetch", &m->fetch);
    if (key == "inputs") return inputs(v, m);
    if (key == "reference") return reference(v, m);
    if (key == "expect") return expect(v, key, &m->expect);
    if (key == "expect_cuda") return expect(v, key, &m->expect_cuda);
    if (key == "model") {
      FUSERT_RETURN_IF_ERROR(get(v, "model", &m->model));
      m->model = resolve(m->model);
    } else if (key == "weights") {
      FUSERT_RETURN_IF_ERROR(get(v, "weights", &m->weights));
      if (m->weights != "model" && m->weights != "seeded") m->weights = resolve(m->weights);
    } else {  // shapes
      if (!v.IsMap()) return fail(v) << "'shapes' must map input names to dims";
      for (const auto& s : v) {
        std::vector<int64_t> dims;
        FUSERT_RETURN_IF_ERROR(get(s.second, "shapes", &dims));
        m->shapes[s.first.as<std::string>()] = dims;
      }
    }
    return Status();
  }

  Status inputs(const YAML::Node& v, ZooModel* m) const {
    if (!v.IsMap()) return fail(v) << "'inputs' must be a map (seeded, image, npy)";
    for (const auto& i : v) {
      const std::string k = i.first.as<std::string>();
      if (k == "seeded") {
        FUSERT_RETURN_IF_ERROR(get(i.second, "inputs.seeded", &m->input_seed));
      } else if (k == "image") {
        FUSERT_RETURN_IF_ERROR(get(i.second, "inputs.image", &m->image));
        m->image = resolve(m->image);
      } else if (k == "npy") {
        if (!i.second.IsMap()) return fail(i.second) << "'inputs.npy' must map input names to .npy files";
        for (const auto& f : i.second) {
          std::string file;
          FUSERT_RETURN_IF_ERROR(get(f.second, "inputs.npy", &file));
          m->npy_inputs[f.first.as<std::string>()] = resolve(file);
        }
      } else {
        return fail(i.first) << "unknown input source '" << k << "' (seeded, image, npy)";
      }
    }
    return Status();
  }

  Status reference(const YAML::Node& v, ZooModel* m) const {
    if (!v.IsMap()) return fail(v) << "'reference' must be a map (npy or command, outputs)";
    for (const auto& r : v) {
      const std::string k = r.first.as<std::string>();
      if (k == "npy") {
        FUSERT_RETURN_IF_ERROR(get(r.second, "reference.npy", &m->reference_npy));
        m->reference_npy = resolve(m->reference_npy);
      } else if (k == "command") {
        FUSERT_RETURN_IF_ERROR(get(r.second, "reference.command", &m->reference_command));
      } else if (k == "outputs") {
        FUSERT_RETURN_IF_ERROR(strings(r.second, "reference.outputs", &m->reference_outputs));
      } else {
        return fail(r.first) << "unknown reference key '" << k << "' (npy, command, outputs)";
      }
    }
    if (!m->reference_npy.empty() && !m->reference_command.empty())
      return fail(v) << "a reference is either npy or command, not both";
    return Status();
  }

  Status expect(const YAML::Node& v, const std::string& key, ZooBounds* b) const {
    if (!v.IsMap()) return fail(v) << "'" << key << "' must be a map (kernels, peak_activation_mb, intermediate_mb)";
    for (const auto& e : v) {
      const std::string k = e.first.as<std::string>();
      if (k == "kernels") {
        FUSERT_RETURN_IF_ERROR(per_mode(e.second, (key + ".kernels").c_str(), &b->kernels));
      } else if (k == "peak_activation_mb") {
        FUSERT_RETURN_IF_ERROR(per_mode(e.second, (key + ".peak_activation_mb").c_str(), &b->peak_mb));
      } else if (k == "intermediate_mb") {
        FUSERT_RETURN_IF_ERROR(per_mode(e.second, (key + ".intermediate_mb").c_str(), &b->intermediate_mb));
      } else {
        return fail(e.first) << "unknown bound '" << k << "' (kernels, peak_activation_mb, intermediate_mb)";
      }
    }
    return Status();
  }
};

}  // namespace

namespace {

Result<std::vector<ZooModel>> read_manifest_node(const std::string& path, const YAML::Node& root) {
  Reader r{path};
  if (!root.IsMap() || !root["fusert_zoo"] || root["fusert_zoo"].as<std::string>() != "1")
    return error(StatusCode::kParseError) << path << ": not a zoo manifest (expected `fusert_zoo: 1` first)";
  ZooModel defaults;
  defaults.dir = fs::absolute(fs::path(path)).parent_path().string();
  for (const auto& kv : root) {
    const std::string k = kv.first.as<std::string>();
    if (k != "fusert_zoo" && k != "defaults" && k != "models") return r.fail(kv.first) << "unknown key '" << k << "'";
  }
  if (root["defaults"]) FUSERT_RETURN_IF_ERROR(r.apply(root["defaults"], false, &defaults));
  if (!root["models"] || !root["models"].IsSequence())
    return error(StatusCode::kParseError) << path << ": 'models' must be a list";
  std::vector<ZooModel> out;
  std::set<std::string> names;
  for (const auto& n : root["models"]) {
    ZooModel m = defaults;
    if (!n.IsMap()) return r.fail(n) << "a model must be a map";
    FUSERT_RETURN_IF_ERROR(r.apply(n, true, &m));
    if (m.name.empty() || m.model.empty()) return r.fail(n) << "a model needs 'name' and 'model'";
    if (!names.insert(m.name).second) return r.fail(n) << "model '" << m.name << "' listed twice";
    out.push_back(m);
  }
  return out;
}

}  // namespace

Result<std::vector<ZooModel>> read_manifest(const std::string& path) {
  if (!fs::exists(path)) return error(StatusCode::kNotFound) << path << ": no such manifest";
  if (fs::is_directory(path)) return error(StatusCode::kInvalidArgument) << path << ": a directory, not a manifest";
  try {  // a key or value of the wrong YAML kind (a list where a name belongs) is a parse error
    return read_manifest_node(path, YAML::LoadFile(path));
  } catch (const YAML::BadConversion& e) {
    return error(StatusCode::kParseError)
           << path << ":" << e.mark.line + 1 << ": " << e.msg << " (a list or map where a name or a number belongs?)";
  } catch (const YAML::Exception& e) {
    return error(StatusCode::kParseError) << path << ":" << e.mark.line + 1 << ": " << e.msg;
  }
}

}  // namespace fusert::zoo
