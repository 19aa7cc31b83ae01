# Builder of cuda-wheels.nix. Inputs: $wheels, $runtime, $nvccWrapper.
w="$TMPDIR/wheels"
mkdir -p "$w" "$out"
for whl in $wheels; do
  case "${whl#*-}" in
    nvidia_cuda_nvcc-*|nvidia_cuda_crt-*|nvidia_nvvm-*|nvidia_cuda_runtime-*|nvidia_cuda_cccl-*)
      unzip -q -o "$whl" 'nvidia/*' -x 'nvidia/*/.metadata/*' '*.py' -d "$w" ;;
    *)
      unzip -q -o "$whl" 'nvidia/*/include/*' -x '*.py' -d "$w" ;;
  esac
done
n=$(ls "$w/nvidia" | wc -l)
[ "$n" = 1 ] || { echo "cuwheel: the CUDA wheels unpack into $n trees under nvidia/ ($(ls "$w/nvidia")), expected one (cuNN)" >&2; exit 1; }
cp -a "$w"/nvidia/*/. "$out/"
find "$out" -name __pycache__ -prune -exec rm -rf {} +
for f in bin/nvcc bin/nvcc.profile bin/ptxas bin/fatbinary nvvm/bin/cicc; do
  [ -e "$out/$f" ] || { echo "cuwheel: the CUDA wheels lack $f (is nvidia-cuda-nvcc / nvidia-nvvm in the lock?)" >&2; exit 1; }
done
ln -s lib "$out/lib64"
link_unversioned "$out/lib"
patch_elf "$out" "$runtime"
install_nvcc_wrapper "$out"
