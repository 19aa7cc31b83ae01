{
  description = "A PyTorch CUDA extension built into a matrix of audited wheels by cuwheel";

  # cuwheel's flake: replace with the URL of the cuwheel checkout or release you build with.
  inputs.cuwheel.url = "git+file:///path/to/cuwheel";

  # Everything a project needs: wheels.<cell>, wheels.all, nodes, kernels, toolchains, plan,
  # apps.publish and checks, for pyproject.toml's [tool.cuwheel] and cuwheel.lock beside it.
  outputs = { self, cuwheel }: cuwheel.lib.mkProject { src = ./.; };
}
