# Builder of driver.nix's vendor directory. Input: $crateSpecs (lines "CRATE DIR CHECKSUM").
# Each .crate unpacks to DIR (<name>-<version>); cargo checks the package checksum against
# Cargo.lock, and an empty file list spares listing every file's hash.
mkdir -p "$out"
echo "$crateSpecs" | while read -r crate dir checksum; do
  tar -xzf "$crate" -C "$out"
  [ -f "$out/$dir/Cargo.toml" ] || { echo "cuwheel: $crate did not unpack to $dir/Cargo.toml" >&2; exit 1; }
  printf '{"files":{},"package":"%s"}' "$checksum" > "$out/$dir/.cargo-checksum.json"
done
