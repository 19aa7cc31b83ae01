//! The audit: ELF and CUDA fat-binary facts of a wheel judged against manylinux, abi3 and the declared CUDA archs.
