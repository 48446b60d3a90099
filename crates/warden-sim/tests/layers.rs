//! The crate's layering (lib.rs, "Layers") stays true: every `crate::` path
//! in a module's code names a module of a lower layer, and inside the
//! `checkers/` and `scenarios/` folders every `super::` path names a sibling
//! file of a lower rank (never an item of the folder's `mod.rs`, which
//! lists the files). Rule defended: "imports run one way inside a crate".

use std::path::Path;

/// Crate-level layers, lowest first (lib.rs and main.rs sit on top).
const LAYERS: &[(&str, u32)] = &[
    ("env", 0),
    ("bugs", 0),
    ("world", 1),
    ("checkers", 2),
    ("history", 3),
    ("faults", 4),
    ("scenarios", 5),
    ("run", 6),
];

/// Ranks of the files inside a folder, lowest first (`mod` on top).
const FOLDERS: &[(&str, &[(&str, u32)])] = &[
    (
        "checkers",
        &[
            ("checker", 0),
            ("fence", 1),
            ("fifo", 1),
            ("l2_bounded_extension", 1),
            ("lease_owners", 1),
            ("read_write", 1),
            ("s1_exclusion", 1),
            ("s2_fencing", 1),
            ("s3_durability", 1),
            ("s4_no_early_expiry", 1),
            ("s5_client_honesty", 1),
            ("s6_ownership", 1),
            ("s7_exactly_once", 1),
            ("s8_clean_waiters", 1),
            ("semaphore", 1),
            ("multi", 1),
            ("mod", 2),
        ],
    ),
    (
        "scenarios",
        &[
            ("shape", 0),
            ("client", 1),
            ("random", 2),
            ("leases", 2),
            ("handoff", 2),
            ("retries", 2),
            ("slow_links", 2),
            ("regions", 2),
            ("owners", 2),
            ("flood", 2),
            ("kinds", 3),
            ("mod", 4),
        ],
    ),
];

fn rank(table: &[(&str, u32)], name: &str) -> Option<u32> {
    table.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}

/// The first path segment of every `prefix` path in `code`: `crate::a::b`
/// gives `a`, `crate::{a::x, b}` gives `a` and `b`; `super::*` is skipped.
fn first_segments(code: &str, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        rest = &rest[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item = String::new();
            let mut at_start = true;
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => at_start = true,
                    c if at_start && (c.is_alphanumeric() || c == '_') => item.push(c),
                    _ if at_start && !item.is_empty() => {
                        found.push(std::mem::take(&mut item));
                        at_start = false;
                    }
                    _ => {}
                }
            }
            if !item.is_empty() {
                found.push(item);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
    }
    found
}

/// The file's code without its comment lines.
fn code_of(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn rs_files(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            let stem = p.file_stem().expect("stem").to_string_lossy().into_owned();
            (stem, p)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn imports_run_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    let mut checked = 0;
    // Every module: a file `src/m.rs` or a folder `src/m/`.
    let mut modules: Vec<(String, Vec<(String, std::path::PathBuf)>)> = Vec::new();
    for (stem, path) in rs_files(&src) {
        if stem != "lib" && stem != "main" {
            modules.push((stem, vec![(String::new(), path)]));
        }
    }
    for (folder, _) in FOLDERS {
        modules.push((folder.to_string(), rs_files(&src.join(folder))));
    }
    for (module, files) in &modules {
        let Some(own) = rank(LAYERS, module) else {
            wrong.push(format!("module {module} is in no layer of lib.rs"));
            continue;
        };
        let inner = FOLDERS.iter().find(|(f, _)| f == module).map(|(_, r)| *r);
        for (file, path) in files {
            let code = code_of(path);
            checked += 1;
            for used in first_segments(&code, "crate::") {
                match rank(LAYERS, &used) {
                    Some(r) if r < own => {}
                    _ => wrong.push(format!(
                        "{}: crate::{used} (layer of {module})",
                        path.display()
                    )),
                }
            }
            let Some(inner) = inner else { continue };
            let Some(file_rank) = rank(inner, file) else {
                wrong.push(format!("{}: not ranked in FOLDERS", path.display()));
                continue;
            };
            for used in first_segments(&code, "super::") {
                match rank(inner, &used) {
                    Some(r) if r < file_rank && used != "mod" => {}
                    _ => wrong.push(format!("{}: super::{used}", path.display())),
                }
            }
        }
    }
    assert!(checked >= 25, "only {checked} files read");
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
}

// The scanner itself: paths, groups, and `super::*` (a test module's).
#[test]
fn first_segments_reads_paths_and_groups() {
    let code = "use crate::world::{a, b};\nuse crate::{env::x, bugs::{Bugs, C}};\nuse super::*;\nlet y = crate::run::run(c);";
    assert_eq!(
        first_segments(code, "crate::"),
        ["world", "env", "bugs", "run"]
    );
    assert!(first_segments(code, "super::").is_empty());
}
