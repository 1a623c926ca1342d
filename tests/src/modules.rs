//! The import graph of a crate's top-level modules, read from its sources,
//! and the cycles in it: so a crate's tests can hold it to "each module
//! uses only the modules below it".
//!
//! A module is a top-level file (`src/write.rs`) or folder (`src/admission/`,
//! all its files together); an edge is any `crate::<module>` path in a
//! file, `use crate::{a, b::c}` groups included, comments excluded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module → the modules it uses.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The graph of the crate whose sources are in `src` (`lib.rs` and
/// `main.rs`, the roots, are left out).
pub fn graph(src: &Path) -> std::io::Result<Graph> {
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(src)? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if path.is_dir() {
            modules.insert(name.into_owned());
        } else if let Some(stem) = name.strip_suffix(".rs")
            && stem != "lib"
            && stem != "main"
        {
            modules.insert(stem.to_owned());
        }
    }
    let mut graph: Graph = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    let mut files = Vec::new();
    collect_files(src, &mut files)?;
    for file in files {
        let relative = file.strip_prefix(src).unwrap_or(&file);
        let Some(first) = relative.components().next() else {
            continue;
        };
        let first = first.as_os_str().to_string_lossy();
        let module = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
        let Some(uses) = graph.get_mut(&module) else {
            continue;
        };
        let text = std::fs::read_to_string(&file)?;
        for used in used_modules(&text) {
            if used != module && modules.contains(&used) {
                uses.insert(used);
            }
        }
    }
    Ok(graph)
}

fn collect_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The first segment of every `crate::` path in `text`.
fn used_modules(text: &str) -> BTreeSet<String> {
    let text = without_comments(text);
    let mut out = BTreeSet::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `windlass_crate::`, say
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = matching_brace(group);
            for item in split_top_level(&group[..end]) {
                out.extend(first_segment(item));
            }
        } else {
            out.extend(first_segment(rest));
        }
    }
    out
}

fn first_segment(path: &str) -> Option<String> {
    let name: String = path
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty() && name != "self").then_some(name)
}

/// The length of `s` up to the `}` closing a group that was opened just
/// before it.
fn matching_brace(s: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    s.len()
}

/// The items of a `use` group, split at its top-level commas.
fn split_top_level(group: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

/// `text` without `//` comments (doc comments included), which mention
/// modules without using them. String literals are kept as they are: a
/// `//` inside one would cut it short, which at worst hides an edge in a
/// line that is a string anyway.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The cycles of `graph`: its strongly connected components of more than
/// one module, each sorted, in sorted order.
pub fn cycles(graph: &Graph) -> Vec<BTreeSet<String>> {
    // Kosaraju: finish order on the graph, then components on its reverse.
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    for start in graph.keys() {
        if seen.contains(start) {
            continue;
        }
        seen.insert(start.clone());
        let mut stack = vec![(
            start.clone(),
            graph[start].iter().cloned().collect::<Vec<_>>(),
        )];
        while let Some((node, next)) = stack.last_mut() {
            match next.pop() {
                Some(m) if !seen.contains(&m) && graph.contains_key(&m) => {
                    seen.insert(m.clone());
                    let edges = graph[&m].iter().cloned().collect();
                    stack.push((m, edges));
                }
                Some(_) => {}
                None => {
                    order.push(node.clone());
                    stack.pop();
                }
            }
        }
    }
    let mut reverse: Graph = graph.keys().map(|k| (k.clone(), BTreeSet::new())).collect();
    for (from, tos) in graph {
        for to in tos {
            if let Some(r) = reverse.get_mut(to) {
                r.insert(from.clone());
            }
        }
    }
    let mut assigned = BTreeSet::new();
    let mut out = Vec::new();
    for start in order.iter().rev() {
        if assigned.contains(start) {
            continue;
        }
        let mut component = BTreeSet::new();
        let mut stack = vec![start.clone()];
        assigned.insert(start.clone());
        while let Some(node) = stack.pop() {
            for m in &reverse[&node] {
                if assigned.insert(m.clone()) {
                    stack.push(m.clone());
                }
            }
            component.insert(node);
        }
        if component.len() > 1 {
            out.push(component);
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(edges: &[(&str, &[&str])]) -> Graph {
        edges
            .iter()
            .map(|(m, uses)| {
                (
                    (*m).to_owned(),
                    uses.iter().map(|u| (*u).to_owned()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn groups_nested_paths_and_comments() {
        let text = "use crate::a::X;\nuse crate::{b, c::{D, e::F}, self as me};\n\
                    // crate::commented\n/// see crate::doc\nfn f() { crate::g::h(); other_crate::x(); }";
        let got: Vec<String> = used_modules(text).into_iter().collect();
        assert_eq!(got, ["a", "b", "c", "g"]);
    }

    #[test]
    fn finds_cycles_and_only_them() {
        let graph = g(&[
            ("a", &["b"]),
            ("b", &["c"]),
            ("c", &["a", "d"]),
            ("d", &[]),
            ("e", &["f"]),
            ("f", &["e"]),
        ]);
        let found = cycles(&graph);
        let found: Vec<Vec<&str>> = found
            .iter()
            .map(|c| c.iter().map(String::as_str).collect())
            .collect();
        assert_eq!(found, [vec!["a", "b", "c"], vec!["e", "f"]]);
        assert!(cycles(&g(&[("a", &["b"]), ("b", &[])])).is_empty());
    }
}
