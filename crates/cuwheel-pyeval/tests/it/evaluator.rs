//! The evaluator over small `setup.py` texts and project trees.

use std::path::PathBuf;

use cuwheel_pyeval::test_support::{Plain, write_tree};
use cuwheel_pyeval::{EvalError, Evaluation, Value, evaluate_setup_py, evaluate_setup_py_for};

/// Evaluates `setup_py` at the root of a tree holding `files`.
fn run(
    setup_py: &str,
    files: &[(&str, &str)],
) -> (tempfile::TempDir, Result<Evaluation, EvalError>) {
    let mut all = files.to_vec();
    all.push(("setup.py", setup_py));
    let (dir, root) = write_tree(&all);
    let evaluation = evaluate_setup_py(&root, setup_py, &Plain);
    (dir, evaluation)
}

fn setup_kw(evaluation: &Evaluation, name: &str) -> Value {
    let setup = evaluation.setup.as_ref().expect("setup() was called");
    setup
        .arg(name, None)
        .unwrap_or_else(|| panic!("no {name}"))
        .clone()
}

fn shown(value: &Value) -> String {
    value.repr().unwrap_or_else(|| format!("{value:?}"))
}

fn notes(evaluation: &Evaluation) -> String {
    evaluation
        .notes
        .iter()
        .map(|n| format!("{} {}", n.at, n.text))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_cuda_branch_of_an_environment_test_is_taken() {
    let text = "import os\nfrom setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension, CppExtension\n\
                if os.getenv('WITH_CUDA', '0') == '1':\n    ext = CUDAExtension('a._C', ['a.cu'])\nelse:\n    ext = CppExtension('a._C', ['a.cpp'])\n\
                debug = ['-g'] if os.environ.get('DEBUG') else ['-O3']\n\
                setup(name='a', ext_modules=[ext], version='1', description=debug)\n";
    let (_dir, evaluation) = run(text, &[]);
    let evaluation = evaluation.unwrap();
    let Value::List(exts) = setup_kw(&evaluation, "ext_modules") else {
        panic!()
    };
    let Value::Extension(call) = &exts.borrow()[0] else {
        panic!()
    };
    assert_eq!(call.callee, "torch.utils.cpp_extension.CUDAExtension");
    assert_eq!(shown(&setup_kw(&evaluation, "description")), "['-O3']");
    let said = notes(&evaluation);
    assert!(said.contains("setup.py:4: `if os.getenv('WITH_CUDA', '0') == '1':` reads `WITH_CUDA` from the environment: took this branch (the one that builds a CUDAExtension)"), "{said}");
    assert!(said.contains("setup.py:8: `debug = ['-g'] if os.environ.get('DEBUG') else ['-O3']` reads `DEBUG` from the environment: taken as unset, so skipped this branch"), "{said}");
}

#[test]
fn setup_py_can_set_variables_and_read_them_back() {
    let text = "import os\nfrom setuptools import setup\nos.environ.setdefault('TORCH_CUDA_ARCH_LIST', '8.0 9.0+PTX')\n\
                os.environ['MY_FLAG'] = '1'\nflag = os.environ['MY_FLAG']\nhas = 'MY_FLAG' in os.environ\nsetup(name=flag, version=str(has))\n";
    let (_dir, evaluation) = run(text, &[]);
    let evaluation = evaluation.unwrap();
    assert_eq!(evaluation.environ["TORCH_CUDA_ARCH_LIST"], "8.0 9.0+PTX");
    assert_eq!(shown(&setup_kw(&evaluation, "name")), "'1'");
    assert_eq!(shown(&setup_kw(&evaluation, "version")), "'True'");
    assert!(evaluation.notes.is_empty(), "{}", notes(&evaluation));
}

#[test]
fn runpy_run_path_gives_a_project_file_s_globals() {
    // chamferdist 1.0.3's setup.py reads its version this way.
    let files = [(
        "pkg/version.py",
        "major = 1\n__version__ = f'{major}.0.3'\n",
    )];
    let text = "import runpy\nfrom setuptools import setup\n\
                __version__ = runpy.run_path('pkg/version.py')['__version__']\n\
                setup(name='pkg', version=__version__)\n";
    let (_dir, evaluation) = run(text, &files);
    let evaluation = evaluation.unwrap();
    assert_eq!(shown(&setup_kw(&evaluation, "version")), "'1.0.3'");
    assert!(evaluation.notes.is_empty(), "{}", notes(&evaluation));
    // A path outside the project is not read.
    let text = "import runpy\nfrom setuptools import setup\n\
                v = runpy.run_path('/etc/version.py')['__version__']\n\
                setup(name='pkg', version=v)\n";
    let (_dir, evaluation) = run(text, &[]);
    assert!(
        setup_kw(&evaluation.unwrap(), "version")
            .as_unknown()
            .is_some()
    );
}

#[test]
fn project_modules_are_imported_and_exec_and_files_remembered() {
    let files = [
        ("pkg/__init__.py", "__version__ = '1.2.3'\n"),
        ("pkg/version.py", "major = 2\nversion = f'{major}.0.1'\n"),
        ("VERSION", "3.0.0\n"),
    ];
    let text = "import re\nfrom setuptools import setup\nfrom pkg import __version__\n\
                exec(open('pkg/version.py').read())\n\
                found = re.search(r\"__version__ = '(.*)'\", open('pkg/__init__.py').read()).group(1)\n\
                with open('VERSION') as f:\n    plain = f.read().strip()\n\
                setup(name=__version__, version=version, description=found, url=plain)\n";
    let (_dir, evaluation) = run(text, &files);
    let evaluation = evaluation.unwrap();
    assert_eq!(shown(&setup_kw(&evaluation, "name")), "'1.2.3'");
    assert!(
        evaluation
            .project_values
            .iter()
            .any(|(d, v)| d == "pkg.__version__" && v.as_str() == Some("1.2.3"))
    );
    assert_eq!(shown(&setup_kw(&evaluation, "version")), "'2.0.1'");
    let found = setup_kw(&evaluation, "description");
    let unknown = found.as_unknown().expect("a regex is not evaluated");
    assert_eq!(
        unknown.files.iter().collect::<Vec<_>>(),
        [&PathBuf::from("pkg/__init__.py")]
    );
    let plain = setup_kw(&evaluation, "url");
    assert_eq!(
        plain.as_unknown().unwrap().files.iter().collect::<Vec<_>>(),
        [&PathBuf::from("VERSION")]
    );
}

#[test]
fn functions_comprehensions_and_builtin_types_behave_like_python() {
    let files = [("csrc/a.cu", ""), ("csrc/sub/b.cu", ""), ("csrc/c.cpp", "")];
    let text = "import glob, os\nfrom setuptools import setup\n\
                def make(name, *extra, flags=None, **kw):\n    flags = flags or []\n    return [name, list(extra), flags, sorted(kw)]\n\
                def counter():\n    total = 0\n    def add(n):\n        return total + n\n    return add(5)\n\
                sources = sorted(glob.glob('csrc/**/*.cu', recursive=True))\n\
                flat = glob.glob('csrc/*.cu')\n\
                pairs = {k: v for k, v in zip(['a', 'b'], [1, 2]) if v > 1}\n\
                nested = [x + y for x in ['a', 'b'] for y in ['1', '2'] if y != '2']\n\
                mapped = list(map(lambda s: s.upper(), filter(None, ['', 'x'])))\n\
                text = '{}-{name}'.format('v', name=3) + '%s/%d' % ('p', 4) + f'{sources[0]!r:>0}'\n\
                setup(name=make('m', 1, 2, flags=['-O3'], z=1, a=2), version=counter(),\n\
                      description=[sources, flat, pairs, nested, mapped, text, os.path.splitext('x/y.tar.gz'), 'a/b'.rsplit('/', 1)[-1]])\n";
    let (_dir, evaluation) = run(text, &files);
    let evaluation = evaluation.unwrap();
    assert_eq!(
        shown(&setup_kw(&evaluation, "name")),
        "['m', [1, 2], ['-O3'], ['a', 'z']]"
    );
    assert_eq!(shown(&setup_kw(&evaluation, "version")), "5");
    assert_eq!(
        shown(&setup_kw(&evaluation, "description")),
        "[['csrc/a.cu', 'csrc/sub/b.cu'], ['csrc/a.cu'], {'b': 2}, ['a1', 'b1'], ['X'], \"v-3p/4'csrc/a.cu'\", ('x/y.tar', '.gz'), 'b']"
    );
}

#[test]
fn unknowns_say_why_and_where_and_loops_end() {
    let text = "import subprocess\nfrom setuptools import setup\nfrom torch.utils.cpp_extension import CUDA_HOME\n\
                out = subprocess.check_output(['nvcc', '--version'])\n\
                inc = CUDA_HOME + '/include'\n\
                try:\n    raise RuntimeError('no')\nexcept RuntimeError as e:\n    recovered = True\n\
                setup(name=out, version=inc, description=recovered)\n";
    let (_dir, evaluation) = run(text, &[]);
    let evaluation = evaluation.unwrap();
    let out = setup_kw(&evaluation, "name");
    let unknown = out.as_unknown().unwrap();
    assert_eq!(
        unknown.why,
        "`subprocess.check_output` is not modelled by cuwheel"
    );
    assert_eq!(
        unknown.at,
        "setup.py:4: `out = subprocess.check_output(['nvcc', '--version'])`"
    );
    let inc = setup_kw(&evaluation, "version");
    assert!(
        inc.as_unknown().unwrap().why.contains("CUDA_HOME"),
        "{inc:?}"
    );
    assert_eq!(shown(&setup_kw(&evaluation, "description")), "True");
    assert!(
        notes(&evaluation).contains("setup.py:8: `except RuntimeError as e:` took this handler"),
        "{}",
        notes(&evaluation)
    );
    // A loop that never ends in Python ends here, quoting its line; what
    // it assigns is not inferred, and the evaluation goes on.
    let (_dir, endless) = run(
        "from setuptools import setup\nn = 0\nwhile True:\n    n += 1\nsetup(name=n, version='1')\n",
        &[],
    );
    let endless = endless.unwrap();
    let n = setup_kw(&endless, "name");
    let why = &n.as_unknown().expect("n is not inferred").why;
    assert!(
        why.starts_with("not inferred: more than 2000000 evaluation steps"),
        "{why}"
    );
    assert!(why.contains(" at setup.py:"), "{why}");
    assert_eq!(shown(&setup_kw(&endless, "version")), "'1'");
    // A syntax error quotes the line with a caret.
    let (_dir, bad) = run(
        "from setuptools import setup\nsetup(name='x',, version='1')\n",
        &[],
    );
    let err = bad.unwrap_err().to_string();
    assert_eq!(
        err,
        "setup.py:2:16: expected an expression, found `,`\n     2 | setup(name='x',, version='1')\n       |                ^"
    );
}

#[test]
fn generators_locals_and_skipped_loops() {
    let files = [("pkg/version.py", "__version__ = '4.5.6'\n")];
    let text = "from setuptools import setup\n\
                def get_version():\n    with open('pkg/version.py') as f:\n        exec(compile(f.read(), 'pkg/version.py', 'exec'))\n    return locals()['__version__']\n\
                def gen(items):\n    for i in items:\n        if i != 'b':\n            yield i.upper()\n    yield from ['z']\n\
                def from_file():\n    out = ['known']\n    for line in open('pkg/version.py').readlines():\n        out.append(line)\n    return out\n\
                try:\n    import cv2\nexcept ImportError:\n    cv2 = None\n\
                setup(name=get_version(), version=list(gen(['a', 'b', 'c'])), description=from_file(),\n\
                      url=sorted(set(['x', 'y', 'z']) - set(['y'])))\n";
    let (_dir, evaluation) = run(text, &files);
    let evaluation = evaluation.unwrap();
    assert_eq!(shown(&setup_kw(&evaluation, "name")), "'4.5.6'");
    assert_eq!(shown(&setup_kw(&evaluation, "version")), "['A', 'C', 'z']");
    assert_eq!(shown(&setup_kw(&evaluation, "url")), "['x', 'z']");
    // The loop over the file's lines was skipped: the list says so.
    let Value::List(items) = setup_kw(&evaluation, "description") else {
        panic!()
    };
    let items = items.borrow();
    assert_eq!(items[0].as_str(), Some("known"));
    let skipped = items[1]
        .as_unknown()
        .expect("an unknown item for the skipped loop");
    assert!(skipped.why.contains("was skipped"), "{skipped:?}");
    assert_eq!(
        skipped.files.iter().collect::<Vec<_>>(),
        [&PathBuf::from("pkg/version.py")]
    );
    assert!(
        notes(&evaluation).contains("assumed that `import cv2` succeeds"),
        "{}",
        notes(&evaluation)
    );
}

#[test]
fn versions_compare_as_pep_440_and_the_toolkit_is_unknown_unless_bound() {
    let text = "import subprocess, torch\nfrom packaging.version import Version, parse\nfrom setuptools import setup\n\
                v = parse('12.10')\n\
                checks = [v > Version('12.8'), Version('13') == Version('13.0.0'), Version('13.0rc1') < Version('13.0'),\n\
                          v.major, v.minor, v.release, str(v), v.base_version, Version('1.2.3+cu130').public,\n\
                          Version('2.0') == '2.0']\n\
                out = subprocess.check_output(['nvcc', '-V'], text=True)\n\
                setup(name=checks, version=out, description=torch.version.cuda, url=torch.__version__)\n";
    let (_dir, evaluation) = run(text, &[]);
    let evaluation = evaluation.unwrap();
    assert_eq!(
        shown(&setup_kw(&evaluation, "name")),
        "[True, True, True, 12, 10, (12, 10), '12.10', '12.10', '1.2.3', False]"
    );
    // Without a toolkit bound, what depends on it stays unknown.
    let out = setup_kw(&evaluation, "version");
    assert_eq!(
        out.as_unknown().unwrap().why,
        "`subprocess.check_output` is not modelled by cuwheel"
    );
    assert!(matches!(
        setup_kw(&evaluation, "description"),
        Value::Host(_)
    ));
    assert!(
        setup_kw(&evaluation, "url")
            .as_unknown()
            .unwrap()
            .why
            .contains("torch's version differs per matrix cell")
    );
    // Bound: nvcc answers with the toolkit's release.
    let toolkit = cuwheel_pyeval::Toolkit {
        nvcc: "12.5".into(),
        cuda: "12.8".into(),
        torch: "2.9.0+cu128".into(),
        archs: None,
        device: None,
    };
    let (_dir, root) = write_tree(&[("setup.py", text)]);
    let bound = evaluate_setup_py_for(&root, text, &Plain, Some(&toolkit)).unwrap();
    let out = setup_kw(&bound, "version");
    assert!(
        out.as_str()
            .unwrap()
            .contains("Cuda compilation tools, release 12.5, V12.5.0"),
        "{out:?}"
    );
    assert_eq!(shown(&setup_kw(&bound, "description")), "'12.8'");
    assert_eq!(shown(&setup_kw(&bound, "url")), "'2.9.0+cu128'");
}

#[test]
fn metadata_read_line_by_line_from_a_file_stays_pointed_at_it() {
    // pytorch-fast-transformers 0.4.0: `iter(f)`, `dropwhile` over it
    // for the docstring, then a loop over the rest into a dict.
    let files = [(
        "pkg/__init__.py",
        "\"\"\"Doc.\"\"\"\n__version__ = \"0.4.0\"\n",
    )];
    let text = "from itertools import dropwhile\nfrom setuptools import setup\n\
                def doc(lines):\n    lines = dropwhile(lambda x: not x.startswith('\"'), lines)\n    out = ''\n    for line in lines:\n        out += line\n    return out[3:]\n\
                def meta():\n    m = {}\n    with open('pkg/__init__.py') as f:\n        lines = iter(f)\n        m['description'] = doc(lines)\n        for line in lines:\n            k, v = line.split('=')\n            m[k.strip()[2:-2]] = v.strip()[1:-1]\n    return m\n\
                m = meta()\n\
                setup(version=m['version'], description=m['description'],\n\
                      url=list(dropwhile(lambda x: x < 3, [1, 2, 3, 1])),\n\
                      name=[x for x in __import__('itertools').takewhile(lambda x: x < 3, [1, 2, 3, 1])])\n";
    let (_dir, evaluation) = run(text, &files);
    let evaluation = evaluation.unwrap();
    // Neither is a wrong known value: both point at the file.
    for key in ["version", "description"] {
        let value = setup_kw(&evaluation, key);
        let unknown = value
            .as_unknown()
            .unwrap_or_else(|| panic!("{key}: {value:?}"));
        assert_eq!(
            unknown.files.iter().collect::<Vec<_>>(),
            [&PathBuf::from("pkg/__init__.py")],
            "{key}"
        );
    }
    assert_eq!(shown(&setup_kw(&evaluation, "url")), "[3, 1]");
    let said = notes(&evaluation);
    assert!(
        said.contains("cannot loop over this (computed from the lines of pkg/__init__.py)"),
        "{said}"
    );
}

#[test]
fn an_iterator_over_a_list_is_not_taken_for_the_list() {
    // Two loops over one iterator share its position: not modelled, so
    // not silently read as two loops over the whole list.
    let text = "from setuptools import setup\nit = iter(['a', 'b'])\nfirst = [x for x in it]\n\
                setup(name=first)\n";
    let (_dir, evaluation) = run(text, &[]);
    let evaluation = evaluation.unwrap();
    // A list that says it is incomplete, with why.
    let value = setup_kw(&evaluation, "name");
    let Value::List(items) = &value else {
        panic!("{value:?}")
    };
    let items = items.borrow();
    let unknown = items[0].as_unknown().unwrap_or_else(|| panic!("{value:?}"));
    assert_eq!(items.len(), 1);
    assert!(unknown.why.contains("shares its position"), "{unknown:?}");
}
