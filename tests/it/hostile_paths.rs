//! Hostile paths given to the binary: an output that is a FIFO, a symlink,
//! a directory or (as root) `/dev/null` is refused and left as it was
//! (`symbols -o`); inputs that must be regular files — a FIFO, `/dev/zero`
//! — are refused before a byte is read (`reproduce`, `load-check --torch`),
//! under `timeout 60` so a blocking read fails the test instead of hanging
//! it; and `init` shows no line of a setup.py, or a file it runs, that links
//! out of the project.

use crate::common;
use crate::common::stderr;

use std::os::unix::fs::FileTypeExt as _;
use std::path::Path;
use std::process::Output;

use crate::common::cuwheel_bin;

/// `cuwheel ARGS` under `timeout 60`.
fn on_paths(args: &[&str], paths: &[&Path]) -> Output {
    common::bounded(60, cuwheel_bin().to_str().unwrap())
        .args(args)
        .args(paths)
        .output()
        .expect("cuwheel runs")
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

fn refused_output(path: &Path, what: &str) -> String {
    format!(
        "error: refusing to write {0}: it is {what}, and cuwheel replaces only a regular file or \
         creates a new one; name a file's path instead, or remove {0} first\n",
        path.display()
    )
}

#[test]
fn symbols_writes_only_a_regular_file_or_a_new_path() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("sysroot");
    std::fs::create_dir(&input).unwrap();
    let table = "cuwheel-symbols 1\nsource sysroot\n";

    let fifo = tmp.path().join("fifo");
    mkfifo(&fifo);
    let kept = tmp.path().join("kept.symbols");
    std::fs::write(&kept, "old\n").unwrap();
    let link = tmp.path().join("link.symbols");
    std::os::unix::fs::symlink(&kept, &link).unwrap();
    let dir = tmp.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    for (output, what) in [
        (&fifo, "a FIFO (named pipe)"),
        (&link, "a symbolic link"),
        (&dir, "a directory"),
    ] {
        let out = on_paths(&["symbols", "-o"], &[output, &input]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(out.stdout, b"");
        assert_eq!(stderr(&out), refused_output(output, what));
    }
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(std::fs::symlink_metadata(&dir).unwrap().is_dir());
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "old\n");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);

    // A regular file is replaced, and a new path made.
    for output in [&kept, &tmp.path().join("new.symbols")] {
        let out = on_paths(&["symbols", "-o"], &[output, &input]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stderr(&out), "");
        assert_eq!(std::fs::read_to_string(output).unwrap(), table);
    }
    // No temporary file was left beside them.
    let mut names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "dir",
            "fifo",
            "kept.symbols",
            "link.symbols",
            "new.symbols",
            "sysroot"
        ]
    );
}

#[test]
fn symbols_never_replaces_dev_null_as_root() {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        // Only root could replace /dev/null; the FIFO case above covers
        // the same check for everyone else.
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let null = Path::new("/dev/null");
    let out = on_paths(&["symbols", "-o"], &[null, tmp.path()]);
    let still = std::fs::symlink_metadata(null).unwrap().file_type();
    if !still.is_char_device() {
        // Put the device back before failing, for everything else here.
        let _ = std::fs::remove_file(null);
        let _ = std::process::Command::new("mknod")
            .args(["-m", "666", "/dev/null", "c", "1", "3"])
            .status();
        panic!("/dev/null was replaced: {}", stderr(&out));
    }
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stderr(&out), refused_output(null, "a character device"));
}

#[test]
fn reproduce_refuses_a_fifo_or_a_device_before_reading_it() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("wheel.whl");
    mkfifo(&fifo);
    for (input, what) in [
        (fifo.as_path(), "a FIFO (named pipe)"),
        (Path::new("/dev/zero"), "a character device"),
        (tmp.path(), "a directory"),
    ] {
        let out = on_paths(&["reproduce", "--project"], &[tmp.path(), input]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(out.stdout, b"");
        assert_eq!(
            stderr(&out),
            format!(
                "error: cannot read {}: it is {what}, not a regular file; give the path of a \
                 file\n",
                input.display()
            )
        );
    }
}

#[test]
fn symbols_and_load_check_refuse_a_fifo_or_a_device_as_input() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("libc10.so");
    mkfifo(&fifo);
    for input in [fifo.as_path(), Path::new("/dev/zero")] {
        let what = if input == fifo {
            "a FIFO (named pipe)"
        } else {
            "a character device"
        };
        let out = on_paths(&["symbols"], &[input]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(out.stdout, b"");
        assert_eq!(
            stderr(&out),
            format!(
                "error: cannot read {}: it is {what}, not a wheel, a library or a directory; \
                 give the path of a file or a directory\n",
                input.display()
            )
        );
        let out = on_paths(&["load-check"], &[input]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!(
                "error: cannot read {}: it is {what}, not a regular file; give the path of a \
                 file\n",
                input.display()
            )
        );
    }
}

#[test]
fn load_check_refuses_a_fifo_or_a_device_as_a_symbol_table() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("torch.symbols");
    mkfifo(&fifo);
    let module = tmp.path().join("ext.so");
    std::fs::write(&module, "not read: the tables come first").unwrap();
    for (table, what) in [
        (fifo.display().to_string(), "a FIFO (named pipe)"),
        ("/dev/zero".to_string(), "a character device"),
    ] {
        for flag in ["--torch", "--with"] {
            let mut args = vec!["load-check".to_string()];
            if flag == "--with" {
                // --with needs a --torch table; a real one, read first.
                let good = tmp.path().join("good.symbols");
                std::fs::write(&good, "cuwheel-symbols 1\nsource torch\n").unwrap();
                args.extend(["--torch".into(), format!("2.10.0={}", good.display())]);
            }
            args.extend([flag.to_string(), format!("2.11.0={table}")]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = on_paths(&args, &[&module]);
            assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
            assert_eq!(out.stdout, b"");
            assert_eq!(
                stderr(&out),
                format!(
                    "error: reading the symbol table 2.11.0={table}: cannot read {table}: it is \
                     {what}, not a regular file; give the path of a file\n"
                )
            );
        }
    }
}

#[test]
fn init_shows_no_line_of_a_setup_py_outside_the_project() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let outside = root.join("outside-secret.txt");
    std::fs::write(&outside, "SECRET-LINE first line of a private file\n").unwrap();
    let project = root.join("project");
    std::fs::create_dir(&project).unwrap();
    std::os::unix::fs::symlink(&outside, project.join("setup.py")).unwrap();
    let out = on_paths(
        &["init", "--dry-run", "--cuwheel", "path:/opt/cuwheel"],
        &[&project],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
    assert_eq!(
        stderr(&out),
        format!(
            "error: {}/setup.py is a symbolic link to a file outside the project ({}): cuwheel \
             reads setup.py only inside the project and shows no line of a file outside it; copy \
             the file into the project, or run `cuwheel init --ignore-setup-py` to infer from \
             the source tree\n",
            project.display(),
            outside.display()
        )
    );

    // A symlink within the project is read, and its lines shown.
    std::fs::rename(&outside, project.join("real_setup.py")).unwrap();
    std::fs::remove_file(project.join("setup.py")).unwrap();
    std::os::unix::fs::symlink("real_setup.py", project.join("setup.py")).unwrap();
    let out = on_paths(
        &["init", "--dry-run", "--cuwheel", "path:/opt/cuwheel"],
        &[&project],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "error: setup.py:1:13: expected the end of the line, found `first`\n     1 | SECRET-LINE \
         first line of a private file\n       |             ^\ncuwheel reads setup.py without \
         running it; run `cuwheel init --ignore-setup-py` to infer from the source tree instead\n"
    );

    // A file that setup.py runs (`exec(open(…).read())`) that links out of
    // the project is not read, and none of its lines shown.
    let secret = root.join("outside-version.py");
    std::fs::write(&secret, "SECRET-LINE second private file\n").unwrap();
    std::fs::remove_file(project.join("setup.py")).unwrap();
    std::fs::write(
        project.join("setup.py"),
        "exec(open(\"version.py\").read())\nfrom setuptools import setup\nsetup(name=\"x\")\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&secret, project.join("version.py")).unwrap();
    let out = on_paths(
        &["init", "--dry-run", "--cuwheel", "path:/opt/cuwheel"],
        &[&project],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("SECRET") && !String::from_utf8_lossy(&out.stdout).contains("SECRET"));
    assert_eq!(
        // The first init on a machine says it makes cuwheel's pip venv.
        err.lines()
            .filter(|line| !line.starts_with("cuwheel: making a Python venv for pip"))
            .take(4)
            .collect::<Vec<_>>(),
        [
            "init: inferred from setup.py (read statically, not run)",
            "init: assumed (setup.py was evaluated for a CUDA build host, no environment variables \
             set):",
            "  setup.py:1: `exec(open(\"version.py\").read())`",
            "    version.py links to a file outside the project: not read (cuwheel reads only \
             files inside the project)",
        ]
    );
}
