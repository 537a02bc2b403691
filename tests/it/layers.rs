//! The layer table of `docs/architecture.md`, checked against the `crate::` paths of every
//! file under `src/`: the table is the one statement of which part may use which.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One row of the table: the layer, the module paths of its files (`lod`, `shards`,
/// `shards/remote`), and what it may use (layer names, and `module::Item` paths allowed
/// one by one).
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

/// The code of `source` without its comments (what follows `//` on each line).
fn code_of(source: &str) -> String {
    source
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether a path starts at byte `at` of `code`: not inside a longer name or path
/// (`a::crate::`, `my_crate::`) nor after a macro's `$`.
fn starts_a_path(code: &str, at: usize) -> bool {
    let before = code[..at].chars().next_back();
    !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$')
}

/// The `crate::` paths in the code (not the comments) of one source file, a group
/// (`crate::{lod::Lod, error::Result}`, `crate::shards::{manifest::Manifest, remote::Form}`,
/// nested or not) giving one path per item.
fn crate_paths(source: &str) -> Vec<String> {
    let code = code_of(source);
    let mut paths = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if !starts_a_path(&code, at) {
            continue;
        }
        use_tree(&code[at + "crate::".len()..], "", &mut paths);
    }
    paths.retain(|p| !p.is_empty());
    paths
}

/// The paths of the use tree that `text` starts with (`a::b`, `a::{b, c::{d}}`), each
/// after `prefix`, added to `out`.
fn use_tree(text: &str, prefix: &str, out: &mut Vec<String>) {
    let text = text.trim_start();
    let head = path_at(text);
    let joined = match (prefix.is_empty(), head.is_empty()) {
        (true, _) => head.clone(),
        (false, true) => prefix.to_owned(),
        (false, false) => format!("{prefix}::{head}"),
    };
    let after = text[text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len())..]
        .trim_start();
    let Some(group) = after.strip_prefix('{') else {
        out.push(joined);
        return;
    };
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
    for item in items.filter(|i| !i.trim().is_empty()) {
        use_tree(item, &joined, out);
    }
}

/// The path that `text` starts with.
fn path_at(text: &str) -> String {
    let path: String = text
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    path.trim_end_matches(':').to_owned()
}

/// The row of the module path `path` (`shards/remote/cache`, a file's path under `src/`
/// without `.rs`, or a `crate::` path with `/` for `::`): the row with the longest of its
/// module paths that `path` starts with, whole names only (`shards/remote` holds
/// `shards/remote/cache`, not `shards/remote_options`).
fn layer_of<'t>(table: &'t [Layer], path: &str) -> Option<&'t Layer> {
    let covers = |m: &String| {
        path.strip_prefix(m.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    table
        .iter()
        .filter_map(|l| {
            Some((
                l.modules
                    .iter()
                    .filter(|m| covers(m))
                    .map(String::len)
                    .max()?,
                l,
            ))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, l)| l)
}

/// The `super::` and `self::` paths in the code of the file `file` (its path under `src/`),
/// resolved to paths from the crate root as `crate_paths` gives them (`super::remote::x` in
/// `shards/files.rs` is `shards::remote::x`). A path that resolves to the crate root itself
/// is left out: `super::` inside a file's inline `mod tests` names the file's own module,
/// one level below what the file's path says.
fn relative_paths(file: &str, source: &str) -> Vec<String> {
    let module: Vec<&str> = file
        .trim_end_matches(".rs")
        .trim_end_matches("/mod")
        .split('/')
        .collect();
    let code = code_of(source);
    let mut paths = Vec::new();
    for (at, word) in code
        .match_indices("super::")
        .chain(code.match_indices("self::"))
    {
        if !starts_a_path(&code, at) {
            continue;
        }
        let mut rest = &code[at + word.len()..];
        let mut up = usize::from(word == "super::");
        while let Some(more) = rest.strip_prefix("super::") {
            (up, rest) = (up + 1, more);
        }
        let Some(kept) = module.len().checked_sub(up).filter(|&k| k > 0) else {
            continue;
        };
        let mut found = Vec::new();
        use_tree(rest, &module[..kept].join("::"), &mut found);
        paths.extend(found);
    }
    paths
}

/// The paths in the code of a `mod.rs` file `file` that start with one of its own child
/// modules (`remote::Remote` in `shards/mod.rs`, declared by `mod remote;`), resolved from
/// the crate root. A public re-export (`pub use remote::…;`) is the child's public API
/// declared where the child is, and is left out; any other use, `pub(crate) use`
/// included, counts.
fn child_paths(file: &str, source: &str) -> Vec<String> {
    let Some(module) = file.strip_suffix("/mod.rs") else {
        return Vec::new();
    };
    let code: Vec<&str> = source
        .lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .collect();
    let children: Vec<&str> = code
        .iter()
        .filter_map(|l| l.strip_prefix("pub(crate) mod ").or(l.strip_prefix("mod ")))
        .filter_map(|l| l.strip_suffix(';'))
        .collect();
    let mut statement = String::new();
    let mut paths = Vec::new();
    for line in code.into_iter().filter(|l| !l.starts_with('#')) {
        statement.push_str(line);
        statement.push('\n');
        if !(line.ends_with(';') || line.ends_with('{') || line.ends_with('}')) {
            continue;
        }
        let text = std::mem::take(&mut statement);
        if text.starts_with("pub use ") {
            continue;
        }
        for child in &children {
            let word = format!("{child}::");
            for (at, _) in text.match_indices(&word) {
                if !starts_a_path(&text, at) {
                    continue;
                }
                use_tree(&text[at..], &module.replace('/', "::"), &mut paths);
            }
        }
    }
    paths
}

/// Every way `sources` (a file's path under `src/` → its text) breaks `table`.
fn violations(table: &[Layer], sources: &BTreeMap<String, String>) -> Vec<String> {
    let mut found = Vec::new();
    for (file, source) in sources {
        if file == "lib.rs" {
            continue;
        }
        let Some(layer) = layer_of(table, file.trim_end_matches(".rs")) else {
            found.push(format!("src/{file}: in no row of the table"));
            continue;
        };
        let allowed = allowed(table, layer);
        for path in crate_paths(source)
            .into_iter()
            .chain(relative_paths(file, source))
            .chain(child_paths(file, source))
        {
            let first = path.split("::").next().unwrap_or("");
            if first.starts_with(|c: char| c.is_uppercase()) {
                found.push(format!(
                    "src/{file}: crate::{path} goes through the crate root"
                ));
                continue;
            }
            let Some(used) = layer_of(table, &path.replace("::", "/")) else {
                continue; // a module of lib.rs itself (`crate::arrow`)
            };
            let by_item = allowed.iter().any(|a| {
                a.contains("::")
                    && (path.strip_prefix(a.as_str()))
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
            });
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
    edges_between_rows(&one);
    edges_of_the_nested_remote_row(&one);
    assert_eq!(
        dispatch_outside_location(&BTreeMap::from([(
            "shards/files.rs".to_owned(),
            "crate::shards::remote::open_remote(u, &o)".to_owned(),
        )])),
        vec!["src/shards/files.rs: crate::shards::remote::open_remote".to_owned()]
    );
    assert_eq!(
        dispatch_outside_location(&BTreeMap::from([(
            "shards/reader.rs".to_owned(),
            "super::remote::open_remote(u, &o)".to_owned(),
        )])),
        vec!["src/shards/reader.rs: crate::shards::remote::open_remote".to_owned()]
    );
}

/// The violations of one file (its path under `src/`, its text).
type One<'a> = dyn Fn(&str, &str) -> Vec<String> + 'a;

/// Edges between the table's plain rows: allowed ones, transitive ones, forbidden ones,
/// the crate root's re-exports, a file in no row, a path named in a comment, an item
/// allowed alone.
fn edges_between_rows(one: &One<'_>) {
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

/// Relative paths resolve from the file's module: `super::remote` in a file of `shards/`
/// is the remote store; `super::` in the remote store's files is `shards/remote`.
fn relative_edges_of_the_nested_remote_row(one: &One<'_>) {
    let relative = one("shards/files.rs", "use super::remote::cache::ShardCache;");
    assert_eq!(relative.len(), 1, "{relative:?}");
    assert!(
        relative[0].contains("crate::shards::remote::cache::ShardCache is in layer remote store"),
        "{relative:?}"
    );
    assert_eq!(
        one("shards/reader.rs", "use self::super::remote::Remote;").len(),
        1
    );
    assert_eq!(
        one(
            "shards/remote/cache.rs",
            "use super::super::manifest::ShardEntry;"
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        one(
            "shards/remote/mod.rs",
            "use super::{files, reader::ShardedDataset};"
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        one("lod.rs", "mod tests { use super::*; use super::Lod; }"),
        Vec::<String>::new()
    );
    // A `mod.rs` re-exports its child's public API; any other use of the child is an edge.
    let declared = "mod remote;\npub use remote::{commit_with, index_url};\n";
    assert_eq!(one("shards/mod.rs", declared), Vec::<String>::new());
    let inner = format!("{declared}pub(crate) use remote::{{Remote, store_error}};\n");
    assert_eq!(
        one("shards/mod.rs", &inner).len(),
        2,
        "{:?}",
        one("shards/mod.rs", &inner)
    );
}

/// The nested row: the shards never use the remote store but through the items of
/// location.rs's dispatch; the remote store uses the shards.
fn edges_of_the_nested_remote_row(one: &One<'_>) {
    relative_edges_of_the_nested_remote_row(one);
    let cache = one(
        "shards/files.rs",
        "use crate::shards::remote::cache::ShardCache;",
    );
    assert_eq!(cache.len(), 1, "{cache:?}");
    assert!(
        cache[0].contains("layer remote store, which layer shards may not use"),
        "{cache:?}"
    );
    assert_eq!(
        one(
            "shards/reader.rs",
            "use crate::shards::{manifest::Manifest, remote::Form};"
        )
        .len(),
        1
    );
    assert_eq!(
        one(
            "shards/location.rs",
            "crate::shards::remote::open_remote(url, &o)"
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        one(
            "shards/location.rs",
            "crate::shards::remote::staged::stage(url)"
        )
        .len(),
        1
    );
    assert_eq!(
        one(
            "shards/remote/cache.rs",
            "use crate::shards::manifest::ShardEntry;"
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        one(
            "shards/writer.rs",
            "use crate::shards::remote_options::RemoteOptions;"
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        one(
            "loader/store/lazy.rs",
            "crate::shards::remote::open_remote(u, &o)"
        )
        .len(),
        1
    );
}

/// The `crate::shards::remote::` paths of the files under `shards/` but outside
/// `shards/remote/` other than `location.rs`: the shards' row may use the remote store's
/// entry points for `location.rs`'s dispatch only.
fn dispatch_outside_location(sources: &BTreeMap<String, String>) -> Vec<String> {
    let mut found = Vec::new();
    for (file, source) in sources {
        let outside = file.starts_with("shards/") && !file.starts_with("shards/remote/");
        if !outside || file == "shards/location.rs" {
            continue;
        }
        for path in crate_paths(source)
            .into_iter()
            .chain(relative_paths(file, source))
            .chain(child_paths(file, source))
        {
            if path.starts_with("shards::remote::") {
                found.push(format!("src/{file}: crate::{path}"));
            }
        }
    }
    found
}

#[test]
fn only_location_dispatches_to_the_remote_store() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = BTreeMap::new();
    sources(&root, &root, &mut all);
    assert_eq!(dispatch_outside_location(&all), Vec::<String>::new());
}
