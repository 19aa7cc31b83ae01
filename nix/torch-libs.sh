# Builder of torch.nix's libs. Inputs: $wheel.
unzip -q "$wheel" 'torch/lib/*.so*' -d "$TMPDIR/w"
mkdir -p "$out"
mv "$TMPDIR/w/torch/lib" "$out/lib"
