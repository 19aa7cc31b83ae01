# The digest `cuwheel lock` records as config-sha256: the sha256 of a project's [tool.cuwheel]
# table as compact JSON, less `pypi`, which only picks the cells that also make a wheel for PyPI
# and locks nothing.
#
# In: the table, as `builtins.fromTOML` reads it. Out: its sha256, in hex.
# The CLI computes the same (crates/cuwheel-build/src/lock/mod.rs: config_sha256, through
# json.rs's nix_compact, which writes JSON as builtins.toJSON does); tests/it/store_nix.rs evaluates
# this file on tables chosen to tell the two apart.
config: builtins.hashString "sha256" (builtins.toJSON (builtins.removeAttrs config [ "pypi" ]))
