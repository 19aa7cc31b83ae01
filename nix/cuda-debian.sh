# Builder of cuda-debian.nix. Inputs: $root, $nvccWrapper.
t="$root/usr/lib/nvidia-cuda-toolkit"
[ -x "$t/bin/nvcc" ] || { echo "cuwheel: $t/bin/nvcc is missing: is nvidia-cuda-toolkit in the lock's cuda-debian toolchain?" >&2; exit 1; }
mkdir -p "$out/bin" "$out/nvvm/bin" "$out/lib"
cp "$t/bin/nvcc" "$out/bin/nvcc"
cp -RP "$t/bin/crt" "$out/bin/crt"
for p in ptxas fatbinary nvlink cudafe++ bin2c cuobjdump nvdisasm nvprune cu++filt; do
  cp "$root/usr/bin/$p" "$out/bin/$p"
done
cp "$t/bin/cicc" "$out/nvvm/bin/cicc"
cp -RP "$t/libdevice" "$out/nvvm/libdevice"
cp -RP "$root/usr/include" "$out/include"
l="$root/usr/lib/x86_64-linux-gnu"
for f in "$l"/libcudart* "$l"/libcudadevrt.a "$l"/libnvvm.so*; do cp -RP "$f" "$out/lib/"; done
cp -RP "$l/stubs" "$out/lib/stubs"
ln -s lib "$out/lib64"
link_unversioned "$out/lib"
cat > "$out/bin/nvcc.profile" <<'EOS'
# Written by cuwheel for this relocated tree: every path relative to nvcc's own directory.
TOP              = $(_HERE_)/..
CICC_PATH        = $(TOP)/nvvm/bin
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib:
PATH            += $(CICC_PATH):$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib/stubs" "-L$(TOP)/lib"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
EOS
install_nvcc_wrapper "$out"
