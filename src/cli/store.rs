//! `cuwheel store …`: the Nix store formats from the command line, so a user
//! can see the names cuwheel predicts and compare them with Nix's own.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Subcommand;

use cuwheel::store::derivation::Derivation;
use cuwheel::store::hash::{Hash, HashingWriter};
use cuwheel::store::nar;
use cuwheel::store::path::{self, FileIngestion, StorePath};

#[derive(Subcommand)]
pub enum StoreCommand {
    /// Print the sha256 of a file or tree's NAR, like `nix-hash --type sha256 --base32`
    NarHash {
        /// A file, symlink or directory
        path: PathBuf,
    },
    /// Print the store path `nix-store --add-fixed sha256 PATH` would give, without adding it
    FixedPath {
        /// The file (or, with --recursive, the tree) to name
        path: PathBuf,
        /// Hash the NAR of the tree instead of the file's bytes (`--add-fixed --recursive`)
        #[arg(long)]
        recursive: bool,
        /// The store name to use instead of the file's own name
        #[arg(long)]
        name: Option<String>,
    },
    /// Check a `.drv` file: parse it, print it as JSON with its computed path and outputs
    ShowDrv {
        /// A `.drv` file: a store path (`/nix/store/<hash>-<name>.drv`, whose computed
        /// path must be its own) or a file named `<name>.drv`
        file: PathBuf,
    },
}

pub fn run(command: StoreCommand) -> Result<ExitCode> {
    match command {
        StoreCommand::NarHash { path } => {
            let (hash, _) = nar::nar_hash(&path)?;
            println!("{}", hash.to_base32());
        }
        StoreCommand::FixedPath {
            path,
            recursive,
            name,
        } => {
            let name = match name {
                Some(name) => name,
                None => file_name(&path)?,
            };
            let (ingestion, hash) = if recursive {
                (FileIngestion::Recursive, nar::nar_hash(&path)?.0)
            } else {
                (FileIngestion::Flat, file_hash(&path)?)
            };
            println!("{}", path::fixed_output_path(ingestion, &hash, &name)?);
        }
        StoreCommand::ShowDrv { file } => {
            let file_name = file_name(&file)?;
            // A store path's name starts with its hash, which is not part of
            // the derivation's name.
            let store_path: Option<StorePath> =
                format!("{}/{file_name}", path::STORE_DIR).parse().ok();
            let base = store_path
                .as_ref()
                .map_or(file_name.as_str(), StorePath::name);
            let Some(name) = base.strip_suffix(".drv") else {
                bail!(
                    "{} is not named like a derivation: its name must end in .drv",
                    file.display()
                );
            };
            let bytes =
                std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let drv = Derivation::parse(&bytes, name)
                .with_context(|| format!("in {}", file.display()))?;
            let drv_path = drv.drv_path()?;
            if let Some(own) = &store_path {
                if drv_path.hash_part() != own.hash_part() {
                    bail!(
                        "{}: its contents give the store path {drv_path}, not its own name {own}; \
                         the file was changed after Nix wrote it, or is not a .drv Nix wrote",
                        file.display()
                    );
                }
            }
            let outputs = drv.output_paths()?;
            let json = serde_json::json!({
                "drvPath": drv_path.to_string(),
                "outputs": outputs.iter().map(|(k, v)| (k, v.to_string())).collect::<BTreeMap<_, _>>(),
                "inputDrvs": drv.input_drvs.iter().map(|(k, v)| (k.to_string(), v)).collect::<BTreeMap<_, _>>(),
                "inputSrcs": drv.input_srcs.iter().map(StorePath::to_string).collect::<Vec<_>>(),
                "system": drv.system,
                "builder": drv.builder,
                "args": drv.args,
                "env": drv.env,
            });
            println!("{}", serde_json::to_string_pretty(&json)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn file_name(path: &std::path::Path) -> Result<String> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .with_context(|| format!("{} has no file name usable as a store name", path.display()))
}

fn file_hash(path: &std::path::Path) -> Result<Hash> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut hasher = HashingWriter::sha256();
    std::io::copy(&mut file, &mut hasher)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(hasher.finish().0)
}
