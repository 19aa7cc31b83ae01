//! `cuwheel symbols` writes the symbol table of shared libraries
//! ([`crate::audit::symbols`]); `cuwheel load-check` judges a wheel (or
//! bare extension modules) against such tables ([`crate::audit::load`]):
//! whether it loads with each torch release, and the first missing symbol
//! where it does not.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::audit::elf::ElfFacts;
use crate::audit::load::{self, Labelled, LoadInputs, WheelObject};
use crate::audit::loader::{self, LoadedObject};
use crate::audit::symbols::{self, SymbolTable};
use crate::audit::{AuditContext, AuditOptions, TorchLoad, scan};
use crate::wheel::WheelFile;

/// Exit status when a claimed torch release would not load the wheel.
const EXIT_LOAD_FAILED: u8 = 3;

#[derive(Args)]
pub struct SymbolsArgs {
    /// Wheels (torch's), directories (a sysroot, an unpacked toolkit) or ELF
    /// shared libraries; every shared library found goes into one table
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Write the table here (atomically) instead of to standard output; FILE
    /// must be a regular file or not exist (a device, FIFO, symlink or
    /// directory is refused)
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Keep only this architecture's libraries (`x86_64`, `aarch64`): a
    /// cross toolkit holds the host programs' libraries beside the target's
    #[arg(long, value_name = "ARCH")]
    arch: Option<crate::wheel::Arch>,
}

pub fn run_symbols(args: SymbolsArgs) -> Result<ExitCode> {
    if let Some(path) = &args.output {
        crate::safe_io::replaceable(path)?;
    }
    // A FIFO would block the extraction's open, a device never end it.
    for input in &args.inputs {
        let odd = std::fs::metadata(input)
            .ok()
            .filter(|meta| !meta.is_file() && !meta.is_dir());
        if let Some(meta) = odd {
            bail!(
                "cannot read {}: it is {}, not a wheel, a library or a directory; give the path \
                 of a file or a directory",
                input.display(),
                crate::safe_io::kind(meta.file_type())
            );
        }
    }
    let table = symbols::extract_paths_of(&args.inputs, args.arch)?;
    let text = table.write();
    match &args.output {
        Some(path) => crate::safe_io::write_atomically(path, text.as_bytes())?,
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .context("writing the table to standard output")?,
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
#[command(after_help = "\
Exit status:
  0  the wheel loads with every claimed torch release
  1  an input could not be read
  2  the command line is wrong
  3  a claimed torch release would not load it")]
pub struct LoadCheckArgs {
    /// A wheel, or extension modules (ELF files) to judge as if in one wheel
    #[arg(required = true, value_name = "WHEEL")]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    tables: LoadTables,
    /// Print the verdict as JSON (the table, findings and notes) instead of text
    #[arg(long)]
    json: bool,
}

/// The load check's symbol tables and claims, as `cuwheel load-check` and
/// `cuwheel audit` take them.
#[derive(Args)]
pub struct LoadTables {
    /// A torch release's symbol table (from `cuwheel symbols torch-X.whl`):
    /// `2.11.0=torch-2.11.0.symbols`; repeat for the compatibility table,
    /// oldest release first
    #[arg(long, value_name = "VERSION=TABLE", value_parser = labelled)]
    torch: Vec<(String, PathBuf)>,
    /// A table present beside every torch release: the CUDA runtime, the
    /// baseline system (`"baseline system=bullseye.symbols"`)
    #[arg(long = "with", value_name = "WHAT=TABLE", value_parser = labelled)]
    with: Vec<(String, PathBuf)>,
    /// The torch releases the wheel claims (default: every --torch); the others
    /// only fill the compatibility table
    #[arg(long, value_name = "VERSION")]
    claims: Vec<String>,
    /// The wheel claims torch's stable ABI: every torch symbol it binds to must
    /// be one of the stable C shim's (`aoti_torch_*`, `torch_*`)
    #[arg(long)]
    stable_abi: bool,
}

impl LoadTables {
    /// The tables read and the claims checked; empty when no --torch was
    /// given (then --with and --stable-abi are refused, and a --claims
    /// names no table).
    pub fn inputs(&self) -> Result<LoadInputs> {
        if self.torch.is_empty() && (!self.with.is_empty() || self.stable_abi) {
            bail!(
                "--with and --stable-abi need the torch releases' tables: add \
                 --torch VERSION=TABLE (from `cuwheel symbols <torch wheel>`)"
            );
        }
        let torch: Vec<Labelled> = self.torch.iter().map(read_table).collect::<Result<_>>()?;
        for claimed in &self.claims {
            if !torch.iter().any(|t| t.label == *claimed) {
                bail!("--claims {claimed}: no --torch {claimed}=TABLE was given");
            }
        }
        let claimed: BTreeSet<String> = if self.claims.is_empty() {
            torch.iter().map(|t| t.label.clone()).collect()
        } else {
            self.claims.iter().cloned().collect()
        };
        Ok(LoadInputs {
            torch,
            claimed,
            base: self.with.iter().map(read_table).collect::<Result<_>>()?,
            stable_abi: self.stable_abi,
        })
    }
}

/// One `LABEL=TABLE` argument's table, read and parsed.
fn read_table((label, path): &(String, PathBuf)) -> Result<Labelled> {
    // A FIFO or a device (`--torch 2.11.0=/dev/zero`) is refused unread.
    let text = crate::safe_io::read_regular_to_string(path)
        .with_context(|| format!("reading the symbol table {label}={}", path.display()))?;
    let table = SymbolTable::parse(&text).with_context(|| {
        format!(
            "{} is not a symbol table; make one with `cuwheel symbols`",
            path.display()
        )
    })?;
    Ok(Labelled {
        label: label.clone(),
        table,
    })
}

fn labelled(arg: &str) -> Result<(String, PathBuf), String> {
    match arg.split_once('=') {
        Some((label, path)) if !label.is_empty() && !path.is_empty() => {
            Ok((label.to_string(), PathBuf::from(path)))
        }
        _ => Err(format!(
            "`{arg}` is not LABEL=TABLE: write e.g. `2.11.0=torch-2.11.0.symbols`"
        )),
    }
}

pub fn run_load_check(args: LoadCheckArgs) -> Result<ExitCode> {
    let inputs = args.tables.inputs()?;

    let verdict = match args.inputs.as_slice() {
        [wheel] if wheel.extension().is_some_and(|e| e == "whl") => {
            let file = WheelFile::open(wheel)?;
            let members = scan::scan_members(&file)?;
            let options = AuditOptions::default();
            let ctx = AuditContext::new(&file, &members, Vec::new(), &options);
            load::judge_context(&ctx, &inputs)
        }
        files => {
            let members = read_files(files)?;
            let names: BTreeSet<String> = members.iter().map(|(n, _)| n.clone()).collect();
            let loaded: Vec<LoadedObject<'_>> = members
                .iter()
                .map(|(member, facts)| LoadedObject { member, facts })
                .collect();
            let resolved =
                loader::resolve_needed(&loaded, &names, &loader::runtime_provided().sonames());
            let objects: Vec<WheelObject<'_>> = members
                .iter()
                .map(|(member, facts)| WheelObject { member, facts })
                .collect();
            load::judge(&objects, &resolved, &inputs)
        }
    };

    let names: Vec<String> = args
        .inputs
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let failed = !verdict.findings.is_empty();
    if args.json {
        let table = TorchLoad::new(&verdict.releases, &inputs.claimed);
        let json = serde_json::json!({
            "inputs": names,
            "passed": !failed,
            "claimed": table.claimed,
            "releases": table.releases,
            "findings": verdict.findings,
            "notes": verdict.notes,
        });
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        println!("{}:", names.join(", "));
        print!("{}", verdict.table_text());
        for f in &verdict.findings {
            println!("  FAIL {}: {}\n    fix: {}", f.member, f.problem, f.fix);
        }
        for note in &verdict.notes {
            println!("  note: {note}");
        }
        println!("{}", if failed { "FAILED" } else { "PASSED" });
    }
    Ok(if failed {
        ExitCode::from(EXIT_LOAD_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// The given ELF files as members of one wheel, named by file name.
fn read_files(files: &[PathBuf]) -> Result<Vec<(String, ElfFacts)>> {
    files
        .iter()
        .map(|path| {
            let data = crate::safe_io::read_regular(path)?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string());
            let facts = ElfFacts::parse(&name, &data)?;
            Ok((name, facts))
        })
        .collect()
}
