//! `cuwheel init`: a project's cuwheel config and flake, inferred from its
//! sources without running any of its code.
//!
//! In: an extension's source tree. Out (so far): the static reading of its
//! setup.py by [`python`].

pub mod python;
