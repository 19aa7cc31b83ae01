// pybind11 bindings: the module demo_ext._C, built once per Python version.
// This is the only C++ that sees Python; the kernels never do.

#include <torch/extension.h>

#include <demo_ext/ops.h>

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "demo_ext's CUDA operations (pybind11 bindings)";
  m.def("bias_gelu_forward", &demo_ext::bias_gelu_forward, "gelu(x + bias)", py::arg("x"),
        py::arg("bias"));
  m.def("bias_gelu_backward", &demo_ext::bias_gelu_backward, "[grad_x, grad_bias]",
        py::arg("grad_y"), py::arg("x"), py::arg("bias"));
  m.def("row_norm_forward", &demo_ext::row_norm_forward, "per-row Euclidean norm", py::arg("x"));
  m.def("row_norm_backward", &demo_ext::row_norm_backward, "grad_x of row_norm", py::arg("grad_y"),
        py::arg("x"), py::arg("y"));
  m.def("axpby", &demo_ext::axpby, "alpha * x + beta * y", py::arg("x"), py::arg("y"),
        py::arg("alpha"), py::arg("beta"));
  m.def("tile_matmul", &demo_ext::tile_matmul, "a [m, 16] @ b [16, 8], float16 in, float32 out",
        py::arg("a"), py::arg("b"));
  m.def("tile_matmul_path", &demo_ext::tile_matmul_path,
        "1 when the GPU runs tile_matmul's sm_90a (wgmma) code, 0 for the portable code");
}
