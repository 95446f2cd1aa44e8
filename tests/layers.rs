//! The crate's layers depend one way only:
//!
//! buffer (dtypes, storage, layouts) <- kernels <- tensor <- autograd/ops
//! <- nn/optim <- python
//!
//! Each file under `src/` is read and every `crate::` path it names is
//! checked against its own layer: a layer may use itself and the layers
//! below it, never one above (so kernels never see a `Tensor`, and the
//! tensor handle never sees autograd). The binding folders of
//! `src/python` import only `core/`, and no source file is over 800 lines.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layer of a top-level module of the crate, lowest first. `parallel`
/// and `error` are leaves every layer may use.
fn rank(module: &str) -> Option<u32> {
    Some(match module {
        "error" | "parallel" => 0,
        "buffer" => 1,
        "kernels" => 2,
        "tensor" => 3,
        "autograd" | "ops" => 4,
        "nn" | "optim" => 5,
        "python" => 6,
        _ => return None,
    })
}

/// The module a name re-exported at the crate root comes from.
fn root_item(name: &str) -> Option<&'static str> {
    Some(match name {
        "Tensor" | "manual_seed" => "tensor",
        "DType" | "Scalar" => "buffer",
        "num_threads" | "set_num_threads" => "parallel",
        "Error" | "ErrorKind" | "Result" => "error",
        _ => return None,
    })
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules that `line` names through `crate::` (or a
/// macro's `$crate::`), including the items of a `crate::{...}` group.
fn named_modules(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            group[..end].split(',').collect()
        } else {
            vec![rest]
        };
        for n in names {
            let n = n.trim();
            let head: String = n
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if rank(&head).is_some() {
                found.push(head);
            } else if let Some(m) = root_item(&head) {
                found.push(m.to_string());
            }
        }
    }
    found
}

#[test]
fn layers_depend_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = BTreeSet::new();
    let mut checked = 0;
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let own = first.trim_end_matches(".rs").to_string();
        let Some(own_rank) = rank(&own) else {
            continue; // lib.rs: the root re-exports every layer
        };
        checked += 1;
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
            for m in named_modules(code) {
                if rank(&m).unwrap() > own_rank {
                    wrong.insert(format!("{}:{}: {own} uses {m}", rel.display(), n + 1));
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} files found under {src:?}");
    assert!(wrong.is_empty(), "upward dependencies:\n{wrong:#?}");
}

#[test]
fn the_checker_sees_paths_groups_and_root_items() {
    assert_eq!(named_modules("use crate::tensor::Tensor;"), ["tensor"]);
    assert_eq!(
        named_modules("use crate::{bail, DType, Tensor};"),
        ["buffer", "tensor"]
    );
    assert_eq!(
        named_modules("$crate::buffer::DType::F32 => crate::ops::conv::f(x)"),
        ["buffer", "ops"]
    );
}

/// The folders of `src/python` that a `crate::python::...` path in `line`
/// names.
fn named_binding_folders(line: &str) -> Vec<String> {
    line.match_indices("crate::python::")
        .map(|(i, m)| {
            line[i + m.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

/// Inside the bindings, every folder (`autograd/`, `ops/`, `create/`,
/// `nn/`, and `optim.rs`) imports only `core/` and itself, `core/` imports
/// no other folder (so there is no cycle between the folders), and an op
/// file imports no other op file. The extension's root `mod.rs` registers
/// them all.
#[test]
fn binding_folders_import_only_core() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/python");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut wrong = BTreeSet::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap();
        if rel == Path::new("mod.rs") {
            continue;
        }
        let first = rel.components().next().unwrap().as_os_str();
        let own = first.to_string_lossy().trim_end_matches(".rs").to_string();
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
            for folder in named_binding_folders(code) {
                let across = folder != own && folder != "core";
                let core_up = own == "core" && folder != "core";
                // op files are independent of each other: what two share
                // belongs in core.
                let op_to_op = own == "ops" && folder == "ops";
                if across || core_up || op_to_op {
                    wrong.insert(format!("{}:{}: {own} uses {folder}", rel.display(), n + 1));
                }
            }
        }
    }
    assert!(files.len() > 30, "only {} binding files found", files.len());
    assert!(
        wrong.is_empty(),
        "binding folders that import each other:\n{wrong:#?}"
    );
}

#[test]
fn the_binding_checker_sees_folders() {
    assert_eq!(
        named_binding_folders(
            "use crate::python::core::tensor::{wrap, PyTensor}; $crate::python::ops::x"
        ),
        ["core", "ops"]
    );
}

/// Every `.rs` and `.py` file below `dir` (build outputs left out).
fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy();
        if p.is_dir() {
            if name != "target" && name != "__pycache__" && !name.starts_with('.') {
                source_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "rs" || e == "py") {
            out.push(p);
        }
    }
}

/// No hand-written source file is over 800 lines (the `.pyi` stubs are
/// generated and not counted): a longer one is split along its seams.
#[test]
fn no_source_file_over_800_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for top in ["src", "python", "tests", "benches", "examples", "tools"] {
        source_files(&root.join(top), &mut files);
    }
    assert!(files.len() > 200, "only {} source files found", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > 800).then(|| format!("{}: {n} lines", f.strip_prefix(root).unwrap().display()))
        })
        .collect();
    assert!(long.is_empty(), "source files over 800 lines:\n{long:#?}");
}
