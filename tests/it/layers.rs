//! The layer table of `docs/architecture.md`, checked against the `crate::` paths of every
//! file under `src/`: the table is the one statement of which part may use which.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One row of the table: the layer, the top-level modules of its files, and what it may
/// use (layer names, and `module::Item` paths allowed one by one).
#[derive(Debug)]
struct Layer {
    name: String,
    modules: Vec<String>,
    may_use: Vec<String>,
}

/// The rows of the first table in `doc` whose "files" column names files under `src/`.
fn layers(doc: &str) -> Vec<Layer> {
    let mut rows = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        let [name, files, _, may_use] = cells[..] else {
            continue;
        };
        let modules: Vec<String> = ticked(files)
            .filter_map(|f| f.strip_prefix("src/"))
            .map(|f| f.trim_end_matches('/').trim_end_matches(".rs").to_owned())
            .collect();
        if modules.is_empty() {
            continue;
        }
        // "(the mapped reader)", "(never files)": what is in brackets only explains.
        let mut plain = String::new();
        let mut depth = 0usize;
        for c in may_use.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                c if depth == 0 => plain.push(c),
                _ => {}
            }
        }
        let mut may_use: Vec<String> = ticked(&plain).map(str::to_owned).collect();
        may_use.extend(
            plain
                .split(',')
                .map(str::trim)
                .filter(|w| !w.contains('`'))
                .map(str::to_owned),
        );
        rows.push(Layer {
            name: name.to_owned(),
            modules,
            may_use,
        });
    }
    rows
}

/// The `…`-quoted words of a cell.
fn ticked(cell: &str) -> impl Iterator<Item = &str> {
    cell.split('`').skip(1).step_by(2)
}

/// The `crate::` paths in the code (not the comments) of one source file, a group
/// (`crate::{lod::Lod, error::Result}`) giving one path per item.
fn crate_paths(source: &str) -> Vec<String> {
    let code: String = source
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut paths = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let end = group
                .find(|c| {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => return true,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    false
                })
                .unwrap_or(group.len());
            let mut depth = 0usize;
            let items = group[..end].split(|c| {
                match c {
                    '{' => depth += 1,
                    '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                c == ',' && depth == 0
            });
            paths.extend(items.map(|item| path_at(item.trim())));
        } else {
            paths.push(path_at(rest));
        }
    }
    paths.retain(|p| !p.is_empty());
    paths
}

/// The path that `text` starts with.
fn path_at(text: &str) -> String {
    let path: String = text
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    path.trim_end_matches(':').to_owned()
}

/// Every way `sources` (a file's path under `src/` → its text) breaks `table`.
fn violations(table: &[Layer], sources: &BTreeMap<String, String>) -> Vec<String> {
    let layer_of = |module: &str| table.iter().find(|l| l.modules.iter().any(|m| m == module));
    let mut found = Vec::new();
    for (file, source) in sources {
        if file == "lib.rs" {
            continue;
        }
        let top = file.split('/').next().unwrap().trim_end_matches(".rs");
        let Some(layer) = layer_of(top) else {
            found.push(format!("src/{file}: in no row of the table"));
            continue;
        };
        let allowed = allowed(table, layer);
        for path in crate_paths(source) {
            let first = path.split("::").next().unwrap_or("");
            if first.starts_with(|c: char| c.is_uppercase()) {
                found.push(format!(
                    "src/{file}: crate::{path} goes through the crate root"
                ));
                continue;
            }
            let Some(used) = layer_of(first) else {
                continue; // a module of lib.rs itself (`crate::arrow`)
            };
            let by_item = allowed
                .iter()
                .any(|a| a.contains("::") && path.starts_with(a.as_str()));
            if used.name != layer.name && !allowed.contains(&used.name) && !by_item {
                found.push(format!(
                    "src/{file}: crate::{path} is in layer {}, which layer {} may not use",
                    used.name, layer.name
                ));
            }
        }
    }
    found
}

/// What `layer` may use: its own entries and, through each layer named, that layer's
/// layers.
fn allowed(table: &[Layer], layer: &Layer) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&str> = layer.may_use.iter().map(String::as_str).collect();
    while let Some(name) = todo.pop() {
        if seen.insert(name.to_owned())
            && let Some(next) = table.iter().find(|l| l.name == name)
        {
            // An item allowed alone (`values::DType`) is the row's own, not passed on.
            todo.extend(
                next.may_use
                    .iter()
                    .map(String::as_str)
                    .filter(|u| !u.contains("::")),
            );
        }
    }
    seen
}

fn sources(dir: &Path, root: &Path, into: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, root, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            into.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
}

fn the_table() -> Vec<Layer> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    layers(&std::fs::read_to_string(root.join("docs/architecture.md")).unwrap())
}

#[test]
fn src_imports_only_across_the_edges_the_architecture_allows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = BTreeMap::new();
    sources(&root, &root, &mut all);
    let table = the_table();
    assert!(
        table.len() >= 10,
        "the table of docs/architecture.md was not found: {table:?}"
    );
    let found = violations(&table, &all);
    assert!(
        found.is_empty(),
        "docs/architecture.md's layers are broken:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_forbidden_edge_is_found() {
    let table = the_table();
    let one = |file: &str, source: &str| {
        violations(
            &table,
            &BTreeMap::from([(file.to_owned(), source.to_owned())]),
        )
    };
    // Operations never use files; values never use tensors; the loader uses files.
    let ops = one("ops/pad.rs", "use crate::io::ipc_reader::MappedDataset;\n");
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert!(
        ops[0].contains("layer files, which layer operations may not use"),
        "{ops:?}"
    );
    assert_eq!(
        one(
            "values.rs",
            "fn f() -> crate::tensor::LodTensor { todo!() }"
        )
        .len(),
        1
    );
    assert_eq!(
        one(
            "loader/gather.rs",
            "use crate::io::ipc_reader::MappedDataset;"
        ),
        Vec::<String>::new()
    );
    // Through the transitive rows: the loader uses files, which use the dataset.
    assert_eq!(
        one("loader/plan.rs", "use crate::dataset::Dataset;"),
        Vec::<String>::new()
    );
    // The crate root's re-exports, a file in no row, and comments.
    assert_eq!(one("lod.rs", "use crate::{Lod, error::Result};").len(), 1);
    let nested = "use crate::{\n    error::{Error, Result},\n    values::DType,\n};";
    assert_eq!(
        one("lod.rs", nested).len(),
        1,
        "{:?}",
        one("lod.rs", nested)
    );
    assert_eq!(one("newpart.rs", "").len(), 1);
    assert_eq!(
        one("values.rs", "// crate::loader::Loader is only named\n"),
        Vec::<String>::new()
    );
    // An item allowed alone: errors name `values::DType`, and nothing else of values.
    assert_eq!(
        one("error/details.rs", "x: crate::values::DType,"),
        Vec::<String>::new()
    );
    assert_eq!(
        one("error/details.rs", "x: crate::values::Values,").len(),
        1
    );
}
