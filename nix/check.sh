# Builder of check.nix. Inputs: $gcc, $cuda, $torchHeaders, $torchLibs, $src.
cp "$src" aten_scale.cu
chmod u+w aten_scale.cu
"$cuda/bin/nvcc" -ccbin "$gcc/bin/g++" -std=c++17 -O2 \
  -Xcompiler -fPIC \
  -Xcompiler "-ffile-prefix-map=$torchHeaders=torch/include" \
  -Xcompiler "-ffile-prefix-map=$cuda=cuda" \
  -isystem "$torchHeaders" -isystem "$torchHeaders/torch/csrc/api/include" \
  -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ \
  -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__ --expt-relaxed-constexpr \
  -DTORCH_API_INCLUDE_EXTENSION_H -DTORCH_EXTENSION_NAME=cuwheel_check -D_GLIBCXX_USE_CXX11_ABI=1 \
  -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
  -c aten_scale.cu -o aten_scale.o
"$gcc/bin/g++" -shared -o libcuwheel_check.so aten_scale.o -Wl,--no-undefined \
  -L"$torchLibs/lib" -lc10 -lc10_cuda -ltorch_cpu -ltorch_cuda -ltorch \
  -L"$cuda/lib64" -lcudart
re="$gcc/bin/readelf"
mkdir -p "$out"
cp libcuwheel_check.so "$out/"
r="$out/report.txt"
"$re" -d -W libcuwheel_check.so | sed -n 's/.*(NEEDED).*\[\(.*\)\]/NEEDED \1/p' | sort > "$r"
"$re" --dyn-syms -W libcuwheel_check.so | awk '$7 != "UND" && $8 ~ /cuwheel_check_scale/ {print "EXPORT " $5 " " $4 " " $8}' >> "$r"
# The fat binary: header (magic 0xba55ed50, u16 header size at 6, u64 size at 8), then entries
# (u16 kind at 0: 1 PTX, 2 ELF; u32 header size at 4; u64 payload size at 8; u32 sm at 28).
"$gcc/bin/objcopy" -O binary --only-section=.nv_fatbin libcuwheel_check.so fatbin.bin
od -An -v -tu1 fatbin.bin | tr -s ' ' '\n' | grep . | awk '
  { b[n++] = $1 }
  function u(o, k,  v, i) { v = 0; for (i = k - 1; i >= 0; i--) v = v * 256 + b[o + i]; return v }
  END {
    p = 0
    while (p + 16 <= n && u(p, 4) == 3126193488) {
      h = u(p + 6, 2); s = u(p + 8, 8); e = p + h
      while (e < p + h + s) {
        print "FATBIN " (u(e, 2) == 1 ? "ptx" : u(e, 2) == 2 ? "sass" : "kind" u(e, 2)) " sm_" u(e + 28, 4)
        e += u(e + 4, 4) + u(e + 8, 8)
      }
      p += h + s
    }
  }' | sort -u >> "$r"
cat "$r"
fail() { echo "cuwheel check $name: $1 (report above)" >&2; exit 1; }
# Debian's linker drops unused -l libraries (--as-needed): the kernel uses c10, c10_cuda and ATen.
for lib in libc10.so libc10_cuda.so libtorch_cpu.so; do
  grep -qx "NEEDED $lib" "$r" || fail "libcuwheel_check.so does not need $lib"
done
grep -q '^NEEDED libcudart\.so\.[0-9]*$' "$r" || fail "libcuwheel_check.so does not need libcudart.so.N"
grep -q '^EXPORT GLOBAL FUNC _Z19cuwheel_check_scaleRKN2at6TensorEd$' "$r" || fail "cuwheel_check_scale is not exported"
[ "$(grep '^FATBIN' "$r" | tr '\n' ' ')" = "FATBIN sass sm_80 FATBIN sass sm_90 " ] || fail "the fat binary does not hold exactly sass sm_80 and sm_90"
if grep -q "/nix/store" "$out/libcuwheel_check.so"; then fail "libcuwheel_check.so names a store path"; fi
