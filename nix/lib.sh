# Sourced first by every cuwheel builder (busybox sh): puts the busybox applets and patchelf on
# PATH and defines the helpers the toolchain builders share. Inputs: $busybox, $patchelf.
bb=$busybox/bin/busybox
mkdir -p "$TMPDIR/.bin"
$bb --install -s "$TMPDIR/.bin"
export PATH="$TMPDIR/.bin:$patchelf/bin"

# The dynamic loader of a Debian root (after debian-root.nix has added merged-/usr links).
root_loader() {
  l=$(readlink -f "$1/lib64/ld-linux-x86-64.so.2")
  [ -f "$l" ] || { echo "cuwheel: $1 has no lib64/ld-linux-x86-64.so.2 (is libc6 in the toolchain's artifacts?)" >&2; exit 1; }
  echo "$l"
}

# The library directories of a Debian root, resolved and without duplicates, colon-separated.
root_libdirs() {
  dirs=""
  for d in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu; do
    [ -d "$1/$d" ] || continue
    r=$(readlink -f "$1/$d")
    case ":$dirs:" in *":$r:"*) ;; *) dirs="${dirs:+$dirs:}$r" ;; esac
  done
  echo "$dirs"
}

# patch_elf TREE ROOT: every dynamic x86_64 ELF file under TREE (programs and shared libraries) gets ROOT's
# loader as interpreter and ROOT's library directories as RUNPATH, after the $ORIGIN entries it
# already had. Shared libraries need the RUNPATH too: the sandbox has no /lib and no ld.so.cache,
# and DT_RUNPATH does not reach a library's own dependencies. The loader and libc stay untouched.
patch_elf() {
  pe_ld=$(root_loader "$2")
  pe_rp=$(root_libdirs "$2")
  find "$1" -type f | sort | while IFS= read -r f; do
    case "$f" in *.h|*.hpp|*.cuh|*.inl|*.a|*.o|*.py|*.txt|*.bc|*.gz|*.html) continue ;; esac
    [ "$(od -An -tx1 -N4 "$f")" = " 7f 45 4c 46" ] || continue
    # Only the host's (x86_64, e_machine 62) files run here: a cross toolchain's target libraries
    # (aarch64) are linked against, never loaded, and keep the interpreter and RUNPATH they have.
    [ "$(od -An -tx1 -j18 -N2 "$f")" = " 3e 00" ] || continue
    case "${f##*/}" in ld-linux-x86-64.so.2|ld-2.*.so|libc.so.6|libc-2.*.so) continue ;; esac
    chmod u+w "$f"
    if patchelf --print-interpreter "$f" >/dev/null 2>&1; then
      patchelf --set-interpreter "$pe_ld" "$f"
    fi
    if old=$(patchelf --print-rpath "$f" 2>/dev/null); then
      keep=$(echo "$old" | tr ':' '\n' | grep '^\$ORIGIN' | tr '\n' ':' || true)
      patchelf --set-rpath "$keep$pe_rp" "$f"
    fi
  done
}

# unpack_deb DEB DIR [MEMBER...]: the data members of a .deb (all, or the named ones; a directory
# such as './usr/include' takes its subtree) into DIR.
unpack_deb() {
  ud_deb=$1 ud_dir=$2; shift 2
  m=$(ar t "$ud_deb" | grep '^data\.tar') || { echo "cuwheel: $ud_deb has no data.tar member" >&2; exit 1; }
  case "$m" in
    data.tar.xz) dec="unxz" ;;
    data.tar.gz) dec="gunzip" ;;
    data.tar) dec="cat" ;;
    *) echo "cuwheel: $ud_deb: $m is not supported (busybox reads xz, gz, plain tar)" >&2; exit 1 ;;
  esac
  mkdir -p "$ud_dir"
  ar p "$ud_deb" "$m" | $dec | tar -x -C "$ud_dir" "$@"
}

# repoint_symlinks DIR: absolute symlinks (Debian's `/lib/...` targets) become relative ones inside
# DIR, so they resolve in the store and never reach the host.
repoint_symlinks() {
  find "$1" -type l | sort | while IFS= read -r l; do
    t=$(readlink "$l")
    case "$t" in /*) ;; *) continue ;; esac
    rel=${l#"$1"/}
    d=${rel%/*}
    if [ "$d" = "$rel" ]; then up="."; else up=$(echo "$d" | sed 's#[^/][^/]*#..#g'); fi
    ln -sfn "$up$t" "$l"
  done
}

# install_nvcc_wrapper CUDA_HOME: bin/nvcc becomes the namespace wrapper (nvcc-wrapper.sh) around
# the real program, renamed bin/nvcc.real beside its nvcc.profile.
install_nvcc_wrapper() {
  mv "$1/bin/nvcc" "$1/bin/nvcc.real"
  sed -e "s|@busybox@|$bb|g" -e "s|@real@|$1/bin/nvcc.real|g" "$nvccWrapper" > "$1/bin/nvcc"
  chmod 0555 "$1/bin/nvcc"
}

# link_unversioned LIBDIR: lib<x>.so -> lib<x>.so.<n> where only the versioned name exists (the
# link-time name `-lcudart` looks for).
link_unversioned() {
  for f in $(cd "$1" && ls | grep '\.so\.[0-9]' | sort -r); do
    base=${f%%.so.*}.so
    [ -e "$1/$base" ] || [ -L "$1/$base" ] || ln -s "$f" "$1/$base"
  done
}
