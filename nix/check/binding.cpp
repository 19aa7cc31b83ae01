// The toolchain check's binding: what a torch extension's bindings.cpp does (torch/extension.h,
// which pulls in Python.h and pybind11), exposing the kernel of aten_scale.cu.
#include <torch/extension.h>

at::Tensor cuwheel_check_scale(const at::Tensor& x, double alpha);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scale", &cuwheel_check_scale, "y = x * alpha on the GPU");
}
