# Builder of check.nix. Inputs: $gcc, $gccMajor, $cuda, $torchHeaders, $torchLibs, $cxxStandard,
# $pythons, $kernel, $binding.
fail() { echo "cuwheel check $name: $1 (report: $out/report.txt, above)" >&2; exit 1; }
# torch's standard; GCC 10 reports C++20 as 201709L, torch checks for 202002L (as
# src/plan/standard.rs does for the cells).
std="-std=$cxxStandard"
cplusplus=""
if [ "$cxxStandard" = c++20 ] && [ "$gccMajor" -lt 11 ]; then cplusplus="-U__cplusplus -D__cplusplus=202002L"; fi
xcplusplus=""
for d in $cplusplus; do xcplusplus="$xcplusplus -Xcompiler $d"; done
cp "$kernel" aten_scale.cu
cp "$binding" binding.cpp
torch_flags="-DTORCH_API_INCLUDE_EXTENSION_H -DTORCH_EXTENSION_NAME=cuwheel_check -D_GLIBCXX_USE_CXX11_ABI=1"
# A cross gcc (it has target/): its crt objects' local symbols would name the root's store path in
# FILE symbols; the cells' links leave local symbols out too (crates/cuwheel-build/src/plan/link.rs).
cross=""
if [ -e "$gcc/target" ]; then cross="-Wl,--discard-all"; fi
"$cuda/bin/nvcc" -ccbin "$gcc/bin/g++" $std $xcplusplus -O2 \
  -Xcompiler -fPIC \
  -Xcompiler "-ffile-prefix-map=$torchHeaders=torch/include" \
  -Xcompiler "-ffile-prefix-map=$cuda=cuda" \
  -isystem "$torchHeaders" -isystem "$torchHeaders/torch/csrc/api/include" \
  -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ \
  -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__ --expt-relaxed-constexpr \
  $torch_flags \
  -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
  -c aten_scale.cu -o aten_scale.o
"$gcc/bin/g++" -shared -o libcuwheel_check.so aten_scale.o -Wl,--no-undefined $cross \
  -L"$torchLibs/lib" -lc10 -lc10_cuda -ltorch_cpu -ltorch_cuda -ltorch \
  -L"$cuda/lib64" -lcudart

# The binding against the first Python, linked with the kernel into an extension module (Python's
# own symbols stay undefined, as in every extension module); Python.h of the others.
first=""
for py in $pythons; do
  inc=$(ls -d "$py"/include/python3.*)
  v=${inc##*/python}
  printf '#include <Python.h>\nstatic_assert(PY_MAJOR_VERSION * 100 + PY_MINOR_VERSION == %s, "version");\n' \
    "$(echo "$v" | awk -F. '{print $1 * 100 + $2}')" > "python$v.cpp"
  "$gcc/bin/g++" $std $cplusplus -fsyntax-only -I"$inc" "python$v.cpp" || fail "Python.h of $v does not compile"
  echo "PYTHON $v" >> pythons.txt
  if [ -z "$first" ]; then
    first=$v
    "$gcc/bin/g++" $std $cplusplus -O2 -fPIC -c binding.cpp -o binding.o \
      "-ffile-prefix-map=$torchHeaders=torch/include" "-ffile-prefix-map=$py=python" \
      -isystem "$torchHeaders" -isystem "$torchHeaders/torch/csrc/api/include" -isystem "$inc" \
      $torch_flags
    "$gcc/bin/g++" -shared -o "cuwheel_check.python$v.so" binding.o aten_scale.o $cross \
      -L"$torchLibs/lib" -lc10 -lc10_cuda -ltorch_cpu -ltorch_cuda -ltorch -ltorch_python \
      -L"$cuda/lib64" -lcudart
  fi
done
[ -n "$first" ] || fail "the bundle has no python-headers toolchain"

re="$gcc/bin/readelf"
mkdir -p "$out"
cp libcuwheel_check.so "cuwheel_check.python$first.so" "$out/"
r="$out/report.txt"
needed() { "$re" -d -W "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/NEEDED \1/p' | sort; }
exports() { "$re" --dyn-syms -W "$1" | awk -v pat="$2" '$7 != "UND" && $8 ~ pat {print "EXPORT " $5 " " $4 " " $8}'; }
needed libcuwheel_check.so > "$r"
exports libcuwheel_check.so cuwheel_check_scale >> "$r"
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
m="cuwheel_check.python$first.so"
needed "$m" | sed "s/^/MODULE /" >> "$r"
exports "$m" '^PyInit_' | sed "s/^/MODULE /" >> "$r"
cat pythons.txt >> "$r"
cat "$r"

# Debian's linker drops unused -l libraries (--as-needed): the kernel uses c10, c10_cuda and ATen.
for lib in libc10.so libc10_cuda.so libtorch_cpu.so; do
  grep -qx "NEEDED $lib" "$r" || fail "libcuwheel_check.so does not need $lib"
done
grep -q '^NEEDED libcudart\.so\.[0-9]*$' "$r" || fail "libcuwheel_check.so does not need libcudart.so.N"
grep -q '^EXPORT GLOBAL FUNC _Z19cuwheel_check_scaleRKN2at6TensorEd$' "$r" || fail "cuwheel_check_scale is not exported"
[ "$(grep '^FATBIN' "$r" | tr '\n' ' ')" = "FATBIN sass sm_80 FATBIN sass sm_90 " ] || fail "the fat binary does not hold exactly sass sm_80 and sm_90"
grep -qx "MODULE NEEDED libtorch_python.so" "$r" || fail "the extension module does not need libtorch_python.so"
grep -qx "MODULE EXPORT GLOBAL FUNC PyInit_cuwheel_check" "$r" || fail "the extension module does not export PyInit_cuwheel_check"
for f in "$out"/*.so; do
  if grep -q "/nix/store" "$f"; then fail "${f##*/} names a store path"; fi
done
