# Builder of torch.nix's headers. Inputs: $wheel.
unzip -q "$wheel" 'torch/include/*' -d "$TMPDIR/w"
[ -d "$TMPDIR/w/torch/include" ] || { echo "cuwheel: $wheel has no torch/include/" >&2; exit 1; }
find "$TMPDIR/w/torch/include" -type f -exec chmod 0444 {} +
mv "$TMPDIR/w/torch/include" "$out"
