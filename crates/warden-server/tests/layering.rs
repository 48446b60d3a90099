//! The server crate's layering, checked on its source: imports run one way.
//!
//! The top-level modules form layers, top to bottom:
//!
//! 1. the crate root (`lib.rs`, `start.rs`, `inject.rs`): assembly;
//! 2. `services/`: the gRPC and HTTP edge;
//! 3. `node/`: the write path, the read paths, leader duties, membership;
//! 4. `raft/`: the Raft handle, the peer network, bootstrap, the log-format
//!    gate, backups;
//! 5. `store/`: the log store and the state machine;
//! 6. the vocabulary at the bottom (`types.rs`, `config.rs`, `clock.rs`, `cluster_time.rs`,
//!    `events.rs`, `wakes.rs`, `hot_locks.rs`, `sim_hooks.rs`, `metrics/`), which name
//!    nothing else of the crate.
//!
//! A file may name (`crate::…`, `super::…`) only its own layer's items or
//! those of a lower layer, never a higher one and never another module of
//! the bottom layer. Inside one folder the files must not name each other in
//! a circle; the folder's `mod.rs` is its interface (children may use it, and
//! what it takes from its children is its own declaration, so those edges do
//! not count). A file that breaks this fails the test with the path it named.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layer of a top-level module: higher numbers sit higher.
fn rank(top: &str) -> Option<u32> {
    Some(match top {
        "" | "start" | "inject" => 6,
        "services" => 5,
        "node" => 4,
        "raft" => 3,
        "store" => 2,
        "types" | "config" | "clock" | "cluster_time" | "events" | "wakes" | "hot_locks"
        | "sim_hooks" | "metrics" => 1,
        _ => return None,
    })
}

/// The module path of a source file: `node/submit.rs` → [node, submit],
/// `node/mod.rs` → [node], `lib.rs` → [].
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().unwrap_or_default();
    let stem = file.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text of `src` with comments and string literals blanked, so a path
/// in a doc comment or a message is not an import.
fn code_only(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut chars = src.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
                out.push_str("\"\"");
            }
            // A char literal such as '"' or '{' (not a lifetime: those are
            // followed by an identifier and no closing quote right after).
            '\'' => {
                let mut probe = chars.clone();
                let first = probe.next();
                let second = probe.next();
                match (first, second) {
                    (Some('\\'), _) => {
                        for c in chars.by_ref() {
                            if c == '\'' {
                                break;
                            }
                        }
                    }
                    (Some(_), Some('\'')) => {
                        chars.next();
                        chars.next();
                    }
                    _ => out.push(c),
                }
            }
            c => out.push(c),
        }
    }
    out
}

fn ident_at(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every module path the code names through `crate::` or `super::`,
/// resolved to an absolute module path (its first two segments are enough).
fn named_paths(module: &[String], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if boundary && (rest.starts_with("crate::") || rest.starts_with("super::")) {
            let (mut base, mut j) = if rest.starts_with("crate::") {
                (Vec::new(), i + "crate::".len())
            } else {
                // `super` is one level up from the module the file defines.
                let mut b = module.to_vec();
                b.pop();
                (b, i + "super::".len())
            };
            while code[j..].starts_with("super::") {
                base.pop();
                j += "super::".len();
            }
            if code[j..].starts_with('{') {
                // A group: each top-level item in the braces.
                let mut depth = 0;
                let mut item = String::new();
                for c in code[j..].chars() {
                    match c {
                        '{' => {
                            depth += 1;
                            if depth == 1 {
                                continue;
                            }
                        }
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    if depth == 1 && c == ',' {
                        push_item(&mut out, &base, &item);
                        item.clear();
                    } else if depth >= 1 {
                        item.push(c);
                    }
                }
                push_item(&mut out, &base, &item);
            } else {
                let mut path = base.clone();
                let mut k = j;
                loop {
                    let id = ident_at(&code[k..]);
                    if id.is_empty() {
                        break;
                    }
                    path.push(id.clone());
                    k += id.len();
                    if code[k..].starts_with("::") && !code[k + 2..].starts_with('{') {
                        k += 2;
                    } else {
                        break;
                    }
                }
                out.push(path);
            }
            i = j;
        } else {
            i += rest.chars().next().map(char::len_utf8).unwrap_or(1);
        }
    }
    out
}

fn push_item(out: &mut Vec<Vec<String>>, base: &[String], item: &str) {
    let item = item.trim();
    if item.is_empty() || item == "self" || item == "*" {
        if item == "*" || item == "self" {
            out.push(base.to_vec());
        }
        return;
    }
    let mut path = base.to_vec();
    for seg in item.split("::") {
        let id = ident_at(seg.trim());
        if id.is_empty() || id == "self" {
            break;
        }
        path.push(id);
    }
    out.push(path);
}

// ARCHITECTURE.md "Crates": imports inside the server run one way (top
// to bottom), and no folder's files name each other in a circle. The three
// circles this crate once had (raft types ↔ store ↔ services ↔ node, and two
// more) would each fail here.
#[test]
fn imports_run_one_way_and_no_folder_has_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut violations = Vec::new();
    // Within-folder edges: (folder, from file module, to sibling module).
    let mut edges: BTreeMap<Vec<String>, BTreeSet<(String, String)>> = BTreeMap::new();
    let mut checked = 0;
    for path in &files {
        let rel = path.strip_prefix(&src).expect("under src");
        let module = module_of(rel);
        let is_mod_rs = rel.file_name().is_some_and(|f| f == "mod.rs");
        let code = code_only(&std::fs::read_to_string(path).expect("read"));
        let top = module.first().cloned().unwrap_or_default();
        let my_rank =
            rank(&top).unwrap_or_else(|| panic!("{}: unknown layer {top:?}", rel.display()));
        for named in named_paths(&module, &code) {
            checked += 1;
            let Some(named_top) = named.first() else {
                continue; // the crate root's own items: only the root names them
            };
            let Some(their_rank) = rank(named_top) else {
                continue; // an item of lib.rs (e.g. ServerError)
            };
            if named_top != &top {
                // The crate root's files (lib.rs, start.rs, inject.rs) are one
                // layer and may name each other; the bottom's may not.
                if their_rank > my_rank
                    || (their_rank == my_rank && my_rank != rank("").unwrap_or(0))
                {
                    violations.push(format!(
                        "{} names {} (layer of `{}` is above or beside `{}`)",
                        rel.display(),
                        named.join("::"),
                        named_top,
                        if top.is_empty() { "crate root" } else { &top }
                    ));
                }
                continue;
            }
            // Same top-level module: a sibling edge inside the folder.
            if module.len() >= 2 && named.len() >= 2 && !is_mod_rs {
                let folder = module[..module.len() - 1].to_vec();
                if named.len() > folder.len() && named[..folder.len()] == folder[..] {
                    let to = named[folder.len()].clone();
                    let from = module[module.len() - 1].clone();
                    if to != from {
                        edges.entry(folder).or_default().insert((from, to));
                    }
                }
            }
        }
    }
    // Items of lib.rs (`crate::ServerError`) parse as a top segment with no
    // layer and are skipped above; every other top segment has one.
    for (folder, es) in &edges {
        if let Some(cycle) = find_cycle(es) {
            violations.push(format!(
                "files of {}/ name each other in a circle: {}",
                folder.join("/"),
                cycle.join(" -> ")
            ));
        }
    }
    assert!(
        checked > 100,
        "the scan found only {checked} paths: is it reading the source?"
    );
    assert!(
        violations.is_empty(),
        "layering broken:\n{}",
        violations.join("\n")
    );
}

fn find_cycle(edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges {
        graph.entry(a).or_default().push(b);
    }
    fn visit<'a>(
        n: &'a str,
        graph: &BTreeMap<&'a str, Vec<&'a str>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(pos) = stack.iter().position(|s| *s == n) {
            let mut c: Vec<String> = stack[pos..].iter().map(|s| s.to_string()).collect();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n);
        for next in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(next, graph, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n);
        None
    }
    let mut done = BTreeSet::new();
    for n in graph.keys() {
        if let Some(c) = visit(n, &graph, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

// The checker itself: a path named upward is caught, grouped imports are
// read item by item, and comments and strings are not imports.
#[test]
fn the_scan_reads_paths_groups_and_skips_comments() {
    let module = vec!["store".to_string(), "db".to_string()];
    let code = code_only(
        "use crate::types::Entry;\nuse super::{rows::decode, wal::{self, Wal}};\n\
         // crate::services::nothing\nlet s = \"crate::node::x\";\nfn f() { crate::node::Node::new() }",
    );
    let named = named_paths(&module, &code);
    let joined: Vec<String> = named.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        joined,
        vec![
            "types::Entry",
            "store::rows::decode",
            "store::wal",
            "node::Node::new"
        ]
    );
    assert!(rank("node") > rank("store"));
}
