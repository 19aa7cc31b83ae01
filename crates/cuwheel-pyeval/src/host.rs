//! The build host `setup.py` is evaluated against: a Linux x86-64 CUDA
//! build host with no environment variables set.
//!
//! In: the names a `setup.py` asks about. Out: their modelled values, and
//! a note wherever one of these assumptions is used:
//! `torch.cuda.is_available()` is true, `CUDA_HOME` is set (to a path that
//! is not known), `torch.version.hip` is `None`, torch's parallel backend
//! is OpenMP (as in torch's Linux wheels), `sys.platform` is `linux`, and
//! every environment variable `setup.py` does not set itself is unset.

use super::eval::Interpreter;
use std::rc::Rc;

use super::value::{Value, shared};

/// The build-host facts, by qualified name (or the name a
/// [`Value::Host`](super::value::Value::Host) carries), and how a note
/// states each.
const FACTS: [(&str, &str); 5] = [
    ("CUDA_HOME", "CUDA_HOME is set"),
    ("torch.version.cuda", "torch.version.cuda is set"),
    (
        "torch.version.hip",
        "torch.version.hip is None (CUDA, not ROCm)",
    ),
    (
        "torch.cuda.is_available",
        "torch.cuda.is_available() is True",
    ),
    (
        "torch.__config__.parallel_info",
        "torch's parallel backend is OpenMP (as in torch's Linux wheels)",
    ),
];

/// How a note states the fact `dotted` names, if it is one
/// (`torch.utils.cpp_extension.CUDA_HOME` → "CUDA_HOME is set").
fn describe(dotted: &str) -> Option<&'static str> {
    let fact = if dotted.ends_with(".CUDA_HOME") {
        "CUDA_HOME"
    } else {
        dotted
    };
    FACTS
        .iter()
        .find(|(name, _)| *name == fact)
        .map(|(_, text)| *text)
}

/// The archs torch was built for, as numbers (`90` is sm_90, 9.0): what
/// `torch.cuda.get_arch_list()` answers. The host reads them (cuwheel
/// from torch's wheels) and passes them in a [`Toolkit`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TorchArchs {
    /// Machine code (`sm_90`), ascending.
    pub sass: Vec<u32>,
    /// PTX (`compute_90`), ascending.
    pub ptx: Vec<u32>,
}

impl TorchArchs {
    /// What `torch.cuda.get_arch_list()` returns: `sm_XY` for each SASS
    /// arch, then `compute_XY` for each PTX arch.
    pub fn arch_list(&self) -> Vec<String> {
        self.sass
            .iter()
            .map(|a| format!("sm_{a}"))
            .chain(self.ptx.iter().map(|a| format!("compute_{a}")))
            .collect()
    }

    /// `7.5, 8.0, …, 12.0`.
    pub fn shown(&self) -> String {
        let mut shown: Vec<String> = self.sass.iter().map(|a| dotted(*a)).collect();
        shown.extend(self.ptx.iter().map(|a| format!("{}+PTX", dotted(*a))));
        shown.join(", ")
    }
}

/// `90` as `9.0`, `100` as `10.0`.
pub fn dotted(arch: u32) -> String {
    format!("{}.{}", arch / 10, arch % 10)
}

/// What `torch.__config__.parallel_info()` reports on the modelled host.
pub(super) const PARALLEL_INFO: &str =
    "ATen/Parallel:\n\tat::get_num_threads() : 1\nATen parallel backend: OpenMP\n";

impl Interpreter<'_> {
    /// Notes the assumption behind `dotted` at `line`, if it is a build-host fact.
    pub(super) fn host_fact(&mut self, dotted: &str, line: usize) {
        if let Some(fact) = describe(dotted).filter(|_| !self.importing) {
            self.note(line, format!("assumed a CUDA build host: {fact}"));
        }
    }

    /// `os.environ[name]`, `os.environ.get(name, default)`, `os.getenv`:
    /// a variable `setup.py` set, or the default (a noted read).
    pub(super) fn environ_get(
        &mut self,
        name: &Value,
        default: Option<Value>,
        line: usize,
    ) -> Value {
        let Some(name) = name.as_str() else {
            return Value::unknown(
                "an environment variable whose name is not known",
                self.at(line),
            );
        };
        if let Some(value) = self.environ.get(name) {
            return Value::str(value.clone());
        }
        self.reads.push(name.to_string());
        match default {
            Some(default) => default,
            None => Value::None,
        }
    }

    /// Whether `name in os.environ`.
    pub(super) fn environ_has(&mut self, name: &Value) -> Option<bool> {
        let name = name.as_str()?;
        if self.environ.contains_key(name) {
            return Some(true);
        }
        self.reads.push(name.to_string());
        Some(false)
    }

    /// `os.environ[name] = value` in setup.py: later reads see it, and the
    /// extraction reads `TORCH_CUDA_ARCH_LIST` from it.
    pub(super) fn environ_set(&mut self, name: &Value, value: &Value, line: usize) {
        match (name.as_str(), value.as_str()) {
            (Some(name), Some(value)) => {
                self.environ.insert(name.to_string(), value.to_string());
            }
            _ => self.note(
                line,
                "sets an environment variable to a value that is not known: ignored",
            ),
        }
    }
}

/// The toolkit and torch one evaluation of `setup.py` is for: `init`
/// evaluates it once per toolkit of the matrix, so that what setup.py asks
/// of the toolkit (`nvcc -V`, `torch.version.cuda`, `torch.__version__`)
/// has that toolkit's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    /// The nvcc that compiles the cells (`12.5`): what `nvcc -V` says.
    pub nvcc: String,
    /// The CUDA torch was built for (`12.8`): `torch.version.cuda`.
    pub cuda: String,
    /// The cells' torch (`2.9.0+cu128`): `torch.__version__`.
    pub torch: String,
    /// The archs that torch was built for, read from its wheel
    /// (`torch.cuda.get_arch_list()`); `None` when not read.
    pub archs: Option<TorchArchs>,
    /// The GPU this evaluation stands for (`90`: 9.0), one of `archs`:
    /// `torch.cuda.get_device_capability()`. `None`: not known.
    pub device: Option<u32>,
}

impl Toolkit {
    /// How a note names the cells this evaluation is for.
    pub fn describe(&self) -> String {
        let gpu = match self.device {
            Some(arch) => format!(", a GPU of compute capability {}", dotted(arch)),
            None => String::new(),
        };
        format!(
            "nvcc {}, torch {} (torch.version.cuda {}){gpu}",
            self.nvcc, self.torch, self.cuda
        )
    }

    /// What `nvcc -V` prints (the release line is what setup.py files read).
    pub fn nvcc_output(&self) -> String {
        format!(
            "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n\
             Cuda compilation tools, release {nvcc}, V{nvcc}.0\nBuild cuda_{nvcc}.r{nvcc}/compiler.0_0\n",
            nvcc = self.nvcc
        )
    }
}

/// `cmd` is `nvcc -V` (or `--version`): a list whose program is nvcc (a
/// name, a path, or a path under `CUDA_HOME`), or one command string.
pub(super) fn is_nvcc_version(cmd: &Value) -> bool {
    let program_is_nvcc = |program: &Value| {
        let path = match program {
            Value::Str(s) | Value::Path(s) => Some(s.clone()),
            Value::Unknown(u) => u.under_cuda_home.clone(),
            _ => None,
        };
        path.is_some_and(|p| p.rsplit('/').next() == Some("nvcc"))
    };
    let asks_version = |arg: &str| arg == "-V" || arg == "--version";
    let command_line = match cmd {
        Value::Str(line) => Some(line.clone()),
        // `f"{CUDA_HOME}/bin/nvcc -V"`
        Value::Unknown(u) => u.under_cuda_home.clone(),
        _ => None,
    };
    match command_line {
        Some(line) => {
            let mut words = line.split_whitespace();
            words
                .next()
                .is_some_and(|p| program_is_nvcc(&Value::str(p)))
                && words.any(asks_version)
        }
        None => match cmd.items() {
            Ok(items) => {
                items.first().is_some_and(program_is_nvcc)
                    && items[1..]
                        .iter()
                        .any(|a| a.as_str().is_some_and(asks_version))
            }
            Err(_) => false,
        },
    }
}

/// The path under `CUDA_HOME` a value is (`""` for `CUDA_HOME` itself).
pub(super) fn under_cuda_home(value: &Value) -> Option<String> {
    match value {
        Value::Host("CUDA_HOME") => Some(String::new()),
        Value::Unknown(u) => u.under_cuda_home.clone(),
        _ => None,
    }
}

/// A path under `CUDA_HOME`: unknown where it is read as text, but a
/// subprocess that runs it (`CUDA_HOME + "/bin/nvcc"`) runs the toolkit's.
pub(super) fn cuda_home_path(suffix: String, at: String) -> Value {
    Value::Unknown(Rc::new(super::value::Unknown {
        why: "depends on CUDA_HOME, which is only known on the build host".into(),
        at,
        files: Default::default(),
        text_of: None,
        under_cuda_home: Some(suffix),
    }))
}

impl Interpreter<'_> {
    /// What a name that differs per toolkit is in this evaluation
    /// (`torch.version.cuda`, `torch.__version__`), noted with its line;
    /// `None` when it is not such a name or no toolkit is bound.
    pub(super) fn toolkit_value(&mut self, dotted: &str, line: usize) -> Option<Value> {
        let toolkit = self.toolkit.clone()?;
        let value = match dotted {
            "torch.version.cuda" => toolkit.cuda.clone(),
            "torch.__version__" => toolkit.torch.clone(),
            _ => return None,
        };
        if !self.importing {
            self.note(
                line,
                format!(
                    "evaluated once per toolkit of the matrix: `{dotted}` is {value:?} for {}",
                    toolkit.describe()
                ),
            );
        }
        Some(match dotted {
            "torch.__version__" => Value::TorchVersion(value),
            _ => Value::str(value),
        })
    }
}

impl Interpreter<'_> {
    /// What setup.py asks of the GPU: `torch.cuda.get_device_capability()`,
    /// the GPU this evaluation stands for (init evaluates once per arch torch
    /// was built for, and notes that once for them all), and
    /// `torch.cuda.get_arch_list()`, the archs torch was built for; unknown
    /// where they were not read from torch's wheel.
    pub(super) fn gpu_call(&mut self, name: &str, line: usize, inputs: &[Value]) -> Value {
        let unknown = |this: &Self, why: &str| Value::unknown_from(why, this.at(line), inputs);
        if name == "torch.cuda.get_device_capability" {
            self.gpu.device = true;
            return match self.toolkit.as_ref().and_then(|t| t.device) {
                Some(arch) => Value::Tuple(Rc::new(vec![
                    Value::Int(i64::from(arch / 10)),
                    Value::Int(i64::from(arch % 10)),
                ])),
                None => unknown(
                    self,
                    "`torch.cuda.get_device_capability()` is the GPU of the machine that runs \
                     setup.py, and the archs torch was built for were not read from its wheel",
                ),
            };
        }
        self.gpu.arch_list = true;
        match self.toolkit.as_ref().and_then(|t| t.archs.as_ref()) {
            Some(archs) => Value::list(archs.arch_list().into_iter().map(Value::str).collect()),
            None => unknown(
                self,
                "`torch.cuda.get_arch_list()` is the archs torch was built for, which were not \
                 read from its wheel",
            ),
        }
    }

    /// `subprocess` running `nvcc -V` (the toolkit's answer), and
    /// `packaging.version`'s `Version`/`parse`.
    pub(super) fn toolkit_call(
        &mut self,
        name: &str,
        args: &[Value],
        kwargs: &super::expr::Kwargs,
        line: usize,
    ) -> Value {
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
        let kw = |k: &str| kwargs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let inputs: Vec<Value> = args
            .iter()
            .chain(kwargs.iter().map(|(_, v)| v))
            .cloned()
            .collect();
        let unknown = |this: &Self, why: String| Value::unknown_from(why, this.at(line), &inputs);
        match name {
            "subprocess.check_output" | "subprocess.run" | "subprocess.getoutput" => {
                let cmd = args.first().cloned().or_else(|| kw("args"));
                match (&self.toolkit, cmd) {
                    (Some(toolkit), Some(cmd)) if super::host::is_nvcc_version(&cmd) => {
                        let output = toolkit.nvcc_output();
                        self.note(
                            line,
                            format!(
                                "evaluated once per toolkit of the matrix: `nvcc -V` says release {} for {}",
                                toolkit.nvcc,
                                toolkit.describe()
                            ),
                        );
                        if name == "subprocess.run" {
                            // A CompletedProcess: its attributes are read
                            // from this dict (see `attribute`).
                            Value::Dict(shared(vec![
                                (Value::str("stdout"), Value::str(output)),
                                (Value::str("stderr"), Value::str("")),
                                (Value::str("returncode"), Value::Int(0)),
                            ]))
                        } else {
                            Value::str(output)
                        }
                    }
                    _ => unknown(self, format!("`{name}` is not modelled by cuwheel")),
                }
            }
            "packaging.version.Version" | "packaging.version.parse" => match &arg(0) {
                Value::Version(v) => Value::Version(v.clone()),
                Value::Str(text) | Value::TorchVersion(text) => {
                    match text.parse::<pep440_rs::Version>() {
                        Ok(v) => Value::Version(Rc::new(v)),
                        Err(e) => unknown(self, format!("`Version({text:?})` raises: {e}")),
                    }
                }
                Value::Unknown(u) => Value::Unknown(u.clone()),
                other => unknown(self, format!("`Version()` of a {}", other.type_name())),
            },
            _ => unknown(self, format!("`{name}` is not modelled by cuwheel")),
        }
    }
}
