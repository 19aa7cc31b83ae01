// torch-library bindings: the same operations registered with the
// dispatcher as torch.ops.demo_ext.*, so the module needs no Python API but
// an empty module object — one cp39-abi3 wheel serves every Python >= 3.9.
// Built with Py_LIMITED_API=0x03090000.

#include <Python.h>
#include <torch/library.h>

#include <demo_ext/ops.h>

extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {
      PyModuleDef_HEAD_INIT, "_C", "demo_ext's CUDA operations (registered as torch.ops.demo_ext)",
      -1, nullptr, nullptr, nullptr, nullptr, nullptr};
  return PyModule_Create(&module);
}

TORCH_LIBRARY(demo_ext, m) {
  m.def("bias_gelu_forward(Tensor x, Tensor bias) -> Tensor");
  m.def("bias_gelu_backward(Tensor grad_y, Tensor x, Tensor bias) -> Tensor[]");
  m.def("row_norm_forward(Tensor x) -> Tensor");
  m.def("row_norm_backward(Tensor grad_y, Tensor x, Tensor y) -> Tensor");
  m.def("axpby(Tensor x, Tensor y, float alpha, float beta) -> Tensor");
  m.def("tile_matmul(Tensor a, Tensor b) -> Tensor");
  // No tensor argument to dispatch on: one kernel for every backend.
  m.def("tile_matmul_path() -> int", &demo_ext::tile_matmul_path);
}

TORCH_LIBRARY_IMPL(demo_ext, CUDA, m) {
  m.impl("bias_gelu_forward", &demo_ext::bias_gelu_forward);
  m.impl("bias_gelu_backward", &demo_ext::bias_gelu_backward);
  m.impl("row_norm_forward", &demo_ext::row_norm_forward);
  m.impl("row_norm_backward", &demo_ext::row_norm_backward);
  m.impl("axpby", &demo_ext::axpby);
  m.impl("tile_matmul", &demo_ext::tile_matmul);
}
