{
  description = "cuwheel: hermetic, reproducible PyTorch CUDA extension wheels";

  # No inputs: every toolchain is assembled from artifacts pinned in a lock (a project's
  # cuwheel.lock; for the driver, nix/driver.lock), added to the store by `cuwheel fetch`, with
  # nix/'s builtin-derivation functions.
  outputs = { self }:
    let
      lib = import ./nix/lib.nix;
      # The demo, built exactly as a project's own flake builds it (templates/default).
      demo = lib.mkProject { src = ./examples/demo-ext; };
    in
    demo // {
      lib = { inherit (lib) mkProject; };
      templates.default = {
        path = ./templates/default;
        description = "A PyTorch CUDA extension built into a matrix of wheels by cuwheel";
      };
    };
}
