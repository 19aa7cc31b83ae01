// torch-stable bindings: the demo's operations registered as
// torch.ops.demo_ext.* through torch's stable ABI (STABLE_TORCH_LIBRARY), with
// the schemas of csrc/ops.cpp, so demo_ext/ops.py works unchanged. Built with
// Py_LIMITED_API=0x03090000, TORCH_STABLE_ONLY and TORCH_TARGET_VERSION: one
// cp39-abi3 module serves every Python >= 3.9 and every torch from the target
// on. The module object is empty; importing it runs the registrations.

#if !defined(TORCH_STABLE_ONLY) || !defined(TORCH_TARGET_VERSION)
#error "csrc/stable/ops.cpp needs -DTORCH_STABLE_ONLY and -DTORCH_TARGET_VERSION=0xMMmm000000000000"
#endif

#include <Python.h>
#include <torch/csrc/stable/library.h>

#include <demo_ext/stable/ops.h>

extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {
      PyModuleDef_HEAD_INIT, "_C",
      "demo_ext's CUDA operations (registered as torch.ops.demo_ext through torch's stable ABI)",
      -1, nullptr, nullptr, nullptr, nullptr, nullptr};
  return PyModule_Create(&module);
}

STABLE_TORCH_LIBRARY(demo_ext, m) {
  m.def("bias_gelu_forward(Tensor x, Tensor bias) -> Tensor");
  m.def("bias_gelu_backward(Tensor grad_y, Tensor x, Tensor bias) -> Tensor[]");
  m.def("row_norm_forward(Tensor x) -> Tensor");
  m.def("row_norm_backward(Tensor grad_y, Tensor x, Tensor y) -> Tensor");
  m.def("axpby(Tensor x, Tensor y, float alpha, float beta) -> Tensor");
}

STABLE_TORCH_LIBRARY_IMPL(demo_ext, CUDA, m) {
  m.impl("bias_gelu_forward", TORCH_BOX(&demo_ext::stable::bias_gelu_forward));
  m.impl("bias_gelu_backward", TORCH_BOX(&demo_ext::stable::bias_gelu_backward));
  m.impl("row_norm_forward", TORCH_BOX(&demo_ext::stable::row_norm_forward));
  m.impl("row_norm_backward", TORCH_BOX(&demo_ext::stable::row_norm_backward));
  m.impl("axpby", TORCH_BOX(&demo_ext::stable::axpby));
}
