//! GPU architectures as setup.py files choose them: `TORCH_CUDA_ARCH_LIST`
//! and nvcc's own `-gencode`/`-arch` flags.
//!
//! In: an arch list string (`"7.0;8.0 9.0+PTX"`, `"Ampere"`) or a module's
//! nvcc flags. Out: cuwheel's [`CudaArch`]es, the flags that remain once
//! the arch flags (which cuwheel sets itself) are taken out, and a problem
//! for each arch or flag that cannot be carried over.

use std::collections::BTreeSet;

use crate::spec::target::CudaArch;

/// torch's names for arch groups, as `torch.utils.cpp_extension`'s
/// `_get_cuda_arch_flags` expands them.
const NAMED_ARCHES: [(&str, &str); 12] = [
    ("Kepler+Tesla", "3.7"),
    ("Kepler", "3.5+PTX"),
    ("Maxwell+Tegra", "5.3"),
    ("Maxwell", "5.0;5.2+PTX"),
    ("Pascal", "6.0;6.1+PTX"),
    ("Volta+Tegra", "7.2"),
    ("Volta", "7.0+PTX"),
    ("Turing", "7.5+PTX"),
    ("Ampere+Tegra", "8.7"),
    ("Ampere", "8.0;8.6+PTX"),
    ("Ada", "8.9+PTX"),
    ("Hopper", "9.0+PTX"),
];

/// nvcc options whose value is the next argument when not joined by `=`.
const TAKES_VALUE: [&str; 8] = [
    "-gencode",
    "--generate-code",
    "-arch",
    "--gpu-architecture",
    "-code",
    "--gpu-code",
    "-ccbin",
    "--compiler-bindir",
];

/// Archs collected from one or more sources, and what could not be read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Archs {
    pub archs: BTreeSet<CudaArch>,
    pub problems: Vec<String>,
}

impl Archs {
    /// One entry per target: "+PTX" wins over its plain form; an
    /// arch-specific target (`9.0a`, `10.0f`) is its own entry.
    fn add_arch(&mut self, arch: CudaArch) {
        let plain = CudaArch { ptx: false, ..arch };
        let with_ptx = CudaArch { ptx: true, ..arch };
        if arch.ptx {
            self.archs.remove(&plain);
            self.archs.insert(with_ptx);
        } else if !self.archs.contains(&with_ptx) {
            self.archs.insert(plain);
        }
    }

    /// `TORCH_CUDA_ARCH_LIST`: entries separated by `;` or spaces.
    pub fn from_arch_list(text: &str) -> Archs {
        let mut archs = Archs::default();
        let expanded = text.replace(' ', ";");
        for entry in expanded.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            if let Some((_, list)) = NAMED_ARCHES.iter().find(|(name, _)| *name == entry) {
                for named in list.split(';') {
                    archs.add_text(named, entry);
                }
            } else {
                archs.add_text(entry, entry);
            }
        }
        archs
    }

    fn add_text(&mut self, text: &str, spelled: &str) {
        match text.parse::<CudaArch>() {
            Ok(arch) => self.add_arch(arch),
            Err(e) => self
                .problems
                .push(format!("`{spelled}` in TORCH_CUDA_ARCH_LIST: {e}")),
        }
    }

    /// `sm_80`/`compute_90a` → (8, 0); the `a`/`f` variants are reported.
    fn add_nvcc_name(&mut self, name: &str, ptx: bool, flag: &str) {
        let digits = name
            .trim_start_matches("sm_")
            .trim_start_matches("compute_")
            .trim_start_matches("lto_");
        let (digits, variant) = match digits.strip_suffix(['a', 'f']) {
            Some(d) => (d, &name[name.len() - 1..]),
            None => (digits, ""),
        };
        let parsed = (digits.len() >= 2)
            .then(|| digits.split_at(digits.len() - 1))
            .and_then(|(major, minor)| {
                Some((major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?))
            });
        match parsed {
            // `sm_90a` is cuda-archs' `9.0a`, `compute_100f` its `10.0f+PTX`.
            Some((major, minor)) if major > 0 => {
                let spelled = format!("{major}.{minor}{variant}{}", if ptx { "+PTX" } else { "" });
                match spelled.parse::<CudaArch>() {
                    Ok(arch) => self.add_arch(arch),
                    Err(e) => self.problems.push(format!("`{flag}`: `{name}`: {e}")),
                }
            }
            _ => self.problems.push(format!(
                "`{flag}`: `{name}` is not an arch cuwheel can read"
            )),
        }
    }

    /// One `arch=compute_80,code=[sm_80,compute_80]` value.
    fn add_gencode(&mut self, value: &str, flag: &str) {
        let value = value.trim_matches(['"', '\'']);
        let mut arch = None;
        let mut codes: Vec<String> = Vec::new();
        for part in split_outside_brackets(value) {
            match part.split_once('=') {
                Some(("arch", a)) => arch = Some(a.to_string()),
                Some(("code", c)) => codes.extend(
                    c.trim_matches(['[', ']', '"'])
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty()),
                ),
                _ => {}
            }
        }
        if codes.is_empty() {
            match arch {
                Some(a) => codes.push(a),
                None => {
                    self.problems.push(format!("`{flag}` names no arch"));
                    return;
                }
            }
        }
        let sass: BTreeSet<String> = codes
            .iter()
            .filter(|c| c.starts_with("sm_"))
            .map(|c| c.trim_start_matches("sm_").to_string())
            .collect();
        for code in &codes {
            if let Some(digits) = code.strip_prefix("compute_") {
                if !sass.contains(digits) {
                    self.problems.push(format!(
                        "`{flag}` embeds PTX for {code} without its SASS; cuwheel's \"+PTX\" embeds both"
                    ));
                }
                self.add_nvcc_name(code, true, flag);
            } else if code.starts_with("sm_") {
                let ptx = codes
                    .iter()
                    .any(|c| c.strip_prefix("compute_") == Some(code.trim_start_matches("sm_")));
                self.add_nvcc_name(code, ptx, flag);
            } else {
                self.problems.push(format!(
                    "`{flag}`: `{code}` is not an arch cuwheel can read"
                ));
            }
        }
    }
}

/// `a=1,b=[x,y]` → `["a=1", "b=[x,y]"]`.
fn split_outside_brackets(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts
}

/// Takes the arch and host-compiler options out of nvcc flags: archs go
/// into `archs`, the host compiler is the pinned toolchain's. Returns the
/// flags that remain.
pub fn split_nvcc_flags(flags: &[String], archs: &mut Archs) -> Vec<String> {
    let mut rest = Vec::new();
    let mut iter = flags.iter();
    while let Some(flag) = iter.next() {
        let (option, joined) = match flag.split_once('=') {
            Some((o, v)) if TAKES_VALUE.contains(&o) => (o, Some(v.to_string())),
            _ => (flag.as_str(), None),
        };
        if !TAKES_VALUE.contains(&option) {
            rest.push(flag.clone());
            continue;
        }
        let value = joined.or_else(|| iter.next().cloned()).unwrap_or_default();
        let spelled = format!("{option} {value}");
        match option {
            "-gencode" | "--generate-code" => archs.add_gencode(&value, &spelled),
            "-arch" | "--gpu-architecture" => match value.as_str() {
                v if v.starts_with("sm_") || v.starts_with("compute_") => {
                    archs.add_nvcc_name(v, true, &spelled)
                }
                _ => archs.problems.push(format!(
                    "`{spelled}` depends on the build machine's GPUs or nvcc's defaults"
                )),
            },
            "-code" | "--gpu-code" => archs.problems.push(format!(
                "`{spelled}` was dropped: cuwheel sets the codes from cuda-archs"
            )),
            _ => archs.problems.push(format!(
                "`{spelled}` was dropped: cuwheel's pinned toolchain is the host compiler"
            )),
        }
    }
    rest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(archs: &Archs) -> Vec<String> {
        archs.archs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn arch_lists_read_like_torch() {
        let archs = Archs::from_arch_list("7.0;8.0 9.0+PTX");
        assert_eq!(shown(&archs), ["7.0", "8.0", "9.0+PTX"]);
        assert!(archs.problems.is_empty());
        assert_eq!(
            shown(&Archs::from_arch_list("Ampere;Hopper")),
            ["8.0", "8.6+PTX", "9.0+PTX"]
        );
        // Arch- and family-specific targets are cuda-archs' own spelling.
        let bad = Archs::from_arch_list("8.0;sm_90;9.0a;10.0f+PTX");
        assert_eq!(shown(&bad), ["8.0", "9.0a", "10.0f+PTX"]);
        assert_eq!(bad.problems.len(), 1, "{:?}", bad.problems);
        assert!(bad.problems[0].contains("`sm_90`"), "{:?}", bad.problems);
    }

    #[test]
    fn gencode_flags_become_archs_and_leave_the_rest() {
        let flags: Vec<String> = [
            "-O3",
            "-gencode=arch=compute_80,code=sm_80",
            "-gencode",
            "arch=compute_90,code=[sm_90,compute_90]",
            "--generate-code=arch=compute_100a,code=sm_100a",
            "-ccbin=/usr/bin/g++",
            "--use_fast_math",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        let mut archs = Archs::default();
        let rest = split_nvcc_flags(&flags, &mut archs);
        assert_eq!(rest, ["-O3", "--use_fast_math"]);
        assert_eq!(shown(&archs), ["8.0", "9.0+PTX", "10.0a"]);
        assert_eq!(archs.problems.len(), 1, "{:?}", archs.problems);
        assert!(archs.problems[0].contains("host compiler"));
        let mut only_ptx = Archs::default();
        split_nvcc_flags(
            &["-gencode=arch=compute_75,code=compute_75".to_string()],
            &mut only_ptx,
        );
        assert_eq!(shown(&only_ptx), ["7.5+PTX"]);
        assert!(only_ptx.problems[0].contains("without its SASS"));
    }
}
