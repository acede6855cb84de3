// MatMulInteger by constant s8 weights on oneDNN's int8 matmul (kernels/cpu/onednn.h
// IntMatMulAnchor): the int32 result is exact, so it is what cpu::matmul_integer computes. The
// source's zero point is a run-time argument (quantize_dynamic's DynamicQuantizeLinear computes one
// per run); the weights are reordered once.
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "kernels/cpu/onednn/internal.h"

namespace fusert::cpu::onednn {

using namespace detail;

namespace {

class IntMatMulImpl final : public IntMatMulAnchor {
 public:
  int64_t m = 0, k = 0, n = 0;
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  memory weights;
  memory::desc a_md, y_md;
  std::string info;

  void run(const void* a, int32_t a_zero_point, int32_t* y) const override {
    dnnl::stream s(cpu_engine());
    memory am(a_md, cpu_engine(), const_cast<void*>(a));
    memory ym(y_md, cpu_engine(), y);
    memory zp(memory::desc({1}, memory::data_type::s32, memory::format_tag::x), cpu_engine(), &a_zero_point);
    prim.execute(s, {{DNNL_ARG_SRC, am},
                     {DNNL_ARG_WEIGHTS, weights},
                     {DNNL_ARG_DST, ym},
                     {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp},
                     {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}});
    s.wait();
  }
  std::string describe() const override { return info; }
};

}  // namespace

std::unique_ptr<IntMatMulAnchor> IntMatMulAnchor::create(int64_t m, int64_t k, int64_t n, DType at, const int8_t* b,
                                                         std::string* why) {
  auto c = std::make_unique<IntMatMulImpl>();
  c->m = m;
  c->k = k;
  c->n = n;
  const memory::data_type adt = at == DType::kI8 ? memory::data_type::s8 : memory::data_type::u8;
  c->a_md = memory::desc({m, k}, adt, memory::format_tag::ab);
  c->y_md = memory::desc({m, n}, memory::data_type::s32, memory::format_tag::ab);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  try {
    const memory::desc any_w({k, n}, memory::data_type::s8, memory::format_tag::any);
    dnnl::matmul::desc d(c->a_md, any_w, c->y_md);
    c->pd = dnnl::matmul::primitive_desc(d, attr, cpu_engine());
  } catch (const dnnl::error& e) {
    *why = std::string("oneDNN has no int8 matmul for it (") + e.what() + ")";
    return nullptr;
  }
  if (is_reference(c->pd.impl_info_str())) {
    *why = "oneDNN has only its reference int8 matmul for it";
    return nullptr;
  }
  c->prim = dnnl::matmul(c->pd);
  c->weights = reordered_weights(c->pd.weights_desc(), {k, n}, b);
  c->info = std::string(c->pd.impl_info_str()) + ", s32 result";
  return c;
}

}  // namespace fusert::cpu::onednn
