# Builder of driver.nix's binaries. Inputs: $rust, $rustRoot, $vendor, $source, which binary:
# $package (the workspace member) and $bin (its binary), and $workspace: empty for the root
# workspace, else the directory in $source whose Cargo.toml and Cargo.lock are the workspace's.
# The sandbox's build directory is always /build; it, the vendor directory and the toolchain are
# mapped out of the binary's strings (panic locations), so the output names no store path.
export HOME="$TMPDIR" CARGO_HOME="$TMPDIR/cargo-home" CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never
export PATH="$rust/bin:$PATH"
# C code of crates (zstd-sys, which reads .deb data archives) is archived by the root's
# binutils: busybox's ar cannot create an archive.
export AR="$rustRoot/usr/bin/ar"
mkdir -p "$CARGO_HOME"
cat > "$CARGO_HOME/config.toml" <<EOC
[source.crates-io]
replace-with = "pinned"
[source.pinned]
directory = "$vendor"
[net]
offline = true
EOC
cp -r "$source" "$TMPDIR/cuwheel"
chmod -R u+w "$TMPDIR/cuwheel"
cd "$TMPDIR/cuwheel"
if [ -n "$workspace" ]; then
  cp "$workspace/Cargo.toml" "$workspace/Cargo.lock" .
fi
# With --target, these flags reach only the target's crates, not build scripts and proc macros
# (which stay dynamic programs that the toolchain's cc points at the root's loader).
sep=$(printf '\037')
export CARGO_ENCODED_RUSTFLAGS="-Ctarget-feature=+crt-static${sep}--remap-path-prefix=$TMPDIR/cuwheel=cuwheel${sep}--remap-path-prefix=$vendor=crates${sep}--remap-path-prefix=$rustRoot=rust"
# Nix's `cores = 0` means every core, which is cargo's default too.
jobs=""
if [ "${NIX_BUILD_CORES:-0}" -gt 0 ]; then jobs="-j $NIX_BUILD_CORES"; fi
# shellcheck disable=SC2086 # $jobs is empty or two words
# No default features: the CLI's `init` is for a project's author, never a build (Cargo.toml's
# [features]), and its sources are not even among the inputs (driver.nix).
# The profile `nix` (the workspace's Cargo.toml; the driver's and the root's are the same): release, at opt-level 0 but for the hot loops.
cargo build --profile nix --offline --frozen --locked --no-default-features \
  --target x86_64-unknown-linux-gnu -p "$package" --bin "$bin" $jobs
mkdir -p "$out/bin"
cp "target/x86_64-unknown-linux-gnu/nix/$bin" "$out/bin/$bin"
# The sandbox has no /lib64 and no ld.so.cache: this proves the binary needs no loader.
"$out/bin/$bin" --version
