//! Tidy checks over the source tree (CONVENTIONS.md "Testing"): file headers, no `unwrap` in
//! shipped code, no blocking sleeps, every probe file referenced and none assembled by `format!`,
//! and no import circle between the files of `src/` (`Graph`).

use std::path::{Path, PathBuf};

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.extension().and_then(|e| e.to_str()) == Some(ext) {
            out.push(path);
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The part of a file before its `#[cfg(test)]` module.
fn shipped(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |i| &text[..i])
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let mut rs = Vec::new();
    files(&src(), "rs", &mut rs);
    for path in rs {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("//!"),
            "{} must start with a `//!` doc",
            path.display()
        );
    }
}

#[test]
fn no_unwrap_or_blocking_sleep_in_shipped_code() {
    let mut rs = Vec::new();
    files(&src(), "rs", &mut rs);
    for path in rs {
        let text = std::fs::read_to_string(&path).unwrap();
        let code = shipped(&text);
        assert!(
            !code.contains(".unwrap()"),
            "{} calls unwrap() outside tests",
            path.display()
        );
        assert!(
            !code.contains("thread::sleep"),
            "{} blocks a thread with sleep",
            path.display()
        );
    }
}

#[test]
fn probe_files_are_referenced_and_never_assembled() {
    let js_dir = src().join("js");
    let registry = std::fs::read_to_string(js_dir.join("mod.rs")).unwrap();
    let mut js = Vec::new();
    files(&js_dir, "js", &mut js);
    assert!(!js.is_empty());
    for path in js {
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(
            ["include_str", "probe", "lib_probe"]
                .iter()
                .any(|m| registry.contains(&format!("{m}!(\"{name}\")"))),
            "{name} is not referenced in js/mod.rs"
        );
        let constant = format!("{}_JS", name.trim_end_matches(".js").to_uppercase());
        assert!(
            registry.contains(&constant),
            "{name} should be exposed as {constant}"
        );
    }
    let mut rs = Vec::new();
    files(&src(), "rs", &mut rs);
    for path in rs {
        let text = std::fs::read_to_string(&path).unwrap();
        for bad in [
            "format!(\"(function",
            "format!(\"function",
            "format!(\"() =>",
            "format!(\"document.",
        ] {
            assert!(
                !shipped(&text).contains(bad),
                "{} assembles page JS with format!",
                path.display()
            );
        }
    }
}

/// The shipped lines of a file that are code, not comments.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    shipped(text)
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l))
}

/// CDP method names as string literals: `"Page.navigate"`, `"Runtime.evaluate"`…
fn names_cdp_method(line: &str) -> bool {
    const DOMAINS: &[&str] = &[
        "Accessibility",
        "Browser",
        "CSS",
        "DOM",
        "DOMDebugger",
        "DOMSnapshot",
        "Emulation",
        "Fetch",
        "Input",
        "Log",
        "Network",
        "Overlay",
        "Page",
        "Runtime",
        "Security",
        "Storage",
        "Target",
    ];
    DOMAINS.iter().any(|d| {
        line.match_indices(&format!("\"{d}.")).any(|(i, m)| {
            line[i + m.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_lowercase())
        })
    })
}

#[test]
fn only_browser_imports_chromiumoxide_or_names_cdp_methods() {
    assert!(names_cdp_method(
        r#"tab.call("Page.getNavigationHistory", json!({}))"#
    ));
    assert!(!names_cdp_method(r#"format!("Page {n}")"#));
    let mut rs = Vec::new();
    files(&src(), "rs", &mut rs);
    let browser = src().join("browser");
    for path in rs.iter().filter(|p| !p.starts_with(&browser)) {
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in code_lines(&text) {
            assert!(
                !line.contains("chromiumoxide"),
                "{}:{n} uses chromiumoxide outside src/browser/",
                path.display()
            );
            assert!(
                !names_cdp_method(line),
                "{}:{n} names a CDP method outside src/browser/: {line}",
                path.display()
            );
        }
    }
}

#[test]
fn the_human_state_machine_is_pure() {
    let text = std::fs::read_to_string(src().join("human.rs")).unwrap();
    for (n, line) in code_lines(&text) {
        for bad in [
            "tokio",
            "chromiumoxide",
            "crate::browser",
            "std::fs",
            "std::io",
            "std::net",
            "Instant::now",
            "SystemTime::now",
        ] {
            assert!(!line.contains(bad), "human.rs:{n} uses {bad}: {line}");
        }
    }
}

/// Where a raw string (`r"…"`, `r#"…"#`, `br"…"`) starting at `i` opens: its quote's
/// position and its number of hashes.
fn raw_string_at(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let starts_word = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let mut j = i + usize::from(b.get(i) == Some(&b'b'));
    if !starts_word || b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|c| **c == b'#').count();
    (b.get(j + hashes) == Some(&b'"')).then_some((j + hashes, hashes))
}

/// The shipped code of a Rust file with its comments removed and its string and character
/// literals emptied, so that only code is searched for paths (`"crate::x"` in a message or
/// `crate::x` in a doc comment names nothing).
fn code_only(text: &str) -> String {
    let b = shipped(text).as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            let end = (i + 2..b.len().saturating_sub(1)).find(|&j| &b[j..j + 2] == b"*/");
            i = end.map_or(b.len(), |j| j + 2);
            out.push(b' ');
        } else if let Some((open, hashes)) = raw_string_at(b, i) {
            // A raw string ends at a quote followed by as many hashes as it opened with.
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let end = (open + 1..b.len()).find(|&k| b[k..].starts_with(&close));
            i = end.map_or(b.len(), |k| k + close.len());
            out.extend_from_slice(b"\"\"");
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.extend_from_slice(b"\"\"");
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            // An escaped character literal (`'\''`, `'\n'`, `'\u{1F600}'`).
            i += 2;
            while i < b.len() && b[i] != b'\'' {
                i += 1;
            }
            i += 1;
            out.extend_from_slice(b"' '");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A plain character literal (`'"'`); anything else after `'` is a lifetime.
            i += 3;
            out.extend_from_slice(b"' '");
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The module path of a file under `src/` (`lib.rs` is the root, `a/mod.rs` is `a`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The paths a use tree names (`a::{b, c::{d as e}}` → `a::b`, `a::c::d`), each with the name
/// it binds (`e`); a trailing `self` names the module itself.
fn use_paths(tree: &str, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.trim();
    let segs = |s: &str| -> Vec<String> {
        s.split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let Some(open) = tree.find('{') else {
        let (path, alias) = match tree.split_once(" as ") {
            Some((p, a)) => (p, Some(a.trim())),
            None => (tree, None),
        };
        let mut path: Vec<String> = prefix.iter().cloned().chain(segs(path)).collect();
        if path.last().is_some_and(|s| s == "self") {
            path.pop();
        }
        if let Some(last) = path.last().cloned() {
            out.push((path, alias.map_or(last, str::to_string)));
        }
        return;
    };
    let head: Vec<String> = prefix.iter().cloned().chain(segs(&tree[..open])).collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                use_paths(&inner[start..i], &head, out);
                start = i + 1;
            }
            _ => {}
        }
    }
    use_paths(&inner[start..], &head, out);
}

/// What one file of `src/` names of the crate.
struct Names {
    module: Vec<String>,
    /// `pub use` items by the name they are re-exported under: the path they come from.
    exports: std::collections::HashMap<String, Vec<String>>,
    /// Absolute paths it names, with whether each is a `pub use`, as written.
    uses: Vec<(Vec<String>, bool, String)>,
}

/// The crate paths a file names: its `use` items and the `crate::`, `super::`, `self::` and
/// child-module paths in its code, made absolute.
fn names_of(module: Vec<String>, text: &str) -> Names {
    let code = code_only(text);
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let words: Vec<(usize, &str)> = code
        .match_indices(|c: char| !ident(c))
        .scan(0, |start, (i, sep)| {
            let word = (*start, &code[*start..i]);
            *start = i + sep.len();
            Some(word)
        })
        .filter(|(_, w)| !w.is_empty())
        .collect();
    let children: Vec<String> = words
        .windows(2)
        .filter(|w| w[0].1 == "mod" && code[w[1].0 + w[1].1.len()..].trim_start().starts_with(';'))
        .map(|w| w[1].1.to_string())
        .collect();
    let absolute = |path: &[String]| -> Option<Vec<String>> {
        let first = path.first()?;
        if first == "crate" {
            return Some(path[1..].to_vec());
        }
        if first == "super" || first == "self" {
            let mut base = module.clone();
            let mut rest = path;
            while let Some(s) = rest.first().filter(|s| *s == "super" || *s == "self") {
                if s == "super" {
                    base.pop();
                }
                rest = &rest[1..];
            }
            return Some(base.into_iter().chain(rest.iter().cloned()).collect());
        }
        children
            .contains(first)
            .then(|| module.iter().chain(path).cloned().collect())
    };
    let mut names = Names {
        module: module.clone(),
        exports: Default::default(),
        uses: Vec::new(),
    };
    // `use` items, then the paths written in the code without them.
    let mut rest = String::with_capacity(code.len());
    let mut at = 0;
    for &(i, w) in &words {
        if w != "use" || i < at {
            continue;
        }
        let Some(end) = code[i..].find(';').map(|e| i + e) else {
            continue;
        };
        let before = code[..i].trim_end();
        // `pub use`, `pub(crate) use`, `pub(super) use`.
        let public = before.ends_with("pub")
            || before
                .strip_suffix(')')
                .and_then(|b| b.rsplit_once('('))
                .is_some_and(|(b, _)| b.trim_end().ends_with("pub"));
        let mut paths = Vec::new();
        use_paths(&code[i + 3..end], &[], &mut paths);
        for (path, name) in paths {
            if let Some(abs) = absolute(&path) {
                if public {
                    names.exports.insert(name, abs.clone());
                }
                names.uses.push((abs, public, path.join("::")));
            }
        }
        rest.push_str(&code[at..i]);
        at = end + 1;
    }
    rest.push_str(&code[at.min(code.len())..]);
    let chars: Vec<char> = rest.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts = ident(chars[i])
            && (i == 0 || !(ident(chars[i - 1]) || matches!(chars[i - 1], ':' | '$')));
        if !starts {
            i += 1;
            continue;
        }
        // One path: identifiers joined by `::`.
        let mut path = Vec::new();
        let mut j = i;
        loop {
            let s = j;
            while j < chars.len() && ident(chars[j]) {
                j += 1;
            }
            path.push(chars[s..j].iter().collect::<String>());
            let mut k = j;
            while k < chars.len() && chars[k].is_whitespace() {
                k += 1;
            }
            if chars.get(k) == Some(&':') && chars.get(k + 1) == Some(&':') {
                k += 2;
                while k < chars.len() && chars[k].is_whitespace() {
                    k += 1;
                }
                if k < chars.len() && ident(chars[k]) {
                    j = k;
                    continue;
                }
            }
            break;
        }
        if path.len() > 1 {
            if let Some(abs) = absolute(&path) {
                names.uses.push((abs, false, path.join("::")));
            }
        }
        i = j.max(i + 1);
    }
    names
}

/// The file-level import graph of `src/` (the binary's `main.rs`, a crate of its own, aside):
/// for each file, the files it depends on, each with the path that made the edge.
///
/// A file depends on the file that defines what a path of its shipped code (before
/// `#[cfg(test)]`, comments and string literals left out) names, in a `use` item or in an
/// expression, through `crate::`, `super::`, `self::` or one of its own child modules:
/// `crate::a::b::C` names the file of its longest prefix that is a module (`src/a/b.rs` or
/// `src/a/b/mod.rs`, else `src/a.rs` or `src/a/mod.rs`). Three rules follow how Rust modules
/// nest, so that an edge is real coupling:
/// - `mod child;` is the module tree's wiring, not a use; so is a `pub use` of the file's own
///   descendants (`pub use tab::{FrameRef, Tab}` in `browser/mod.rs`).
/// - A re-exported name is followed to the file that defines it: a user of
///   `crate::browser::Tab` depends on `browser/tab.rs`, not on `browser/mod.rs` and all it
///   declares.
/// - A child's use of its own enclosing modules (`super::Browser` in `browser/tab.rs`,
///   `crate::commands::registry` in `commands/meta.rs`) is one module split into files reaching
///   its own items (a child sees its parent's private items too): such an upward edge is kept
///   apart (`upward`), and makes a circle only when the enclosing module reaches the child back
///   through a file outside itself.
///
/// Method calls name no path, so a parent calling the `impl Tab` methods a child file defines
/// is no edge either way.
struct Graph {
    /// Every edge but the upward ones: file → (file it depends on → the path that says so).
    edges: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
    /// A child's edges to its enclosing modules' files, in the same shape.
    upward: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
    /// The file of each module path (`[browser, tab]` → `browser/tab.rs`).
    modules: std::collections::HashMap<Vec<String>, String>,
}

impl Graph {
    fn of_src() -> Graph {
        Graph::build(true)
    }

    /// The graph as a reader sees it: a path names the file of the module it is written
    /// through (`crate::command::ParamSpec` is `command.rs`, whatever that file re-exports),
    /// except a folder's own `mod.rs` / module file re-exporting one of its files to a user
    /// inside that folder, which is the module's wiring.
    fn as_written() -> Graph {
        Graph::build(false)
    }

    fn build(follow_exports: bool) -> Graph {
        let mut rs = Vec::new();
        files(&src(), "rs", &mut rs);
        let all: Vec<(String, Names)> = rs
            .iter()
            .filter(|p| **p != src().join("main.rs"))
            .map(|p| {
                let rel = p.strip_prefix(src()).unwrap();
                let text = std::fs::read_to_string(p).unwrap();
                let name = rel.to_string_lossy().into_owned();
                (name, names_of(module_of(rel), &text))
            })
            .collect();
        let modules: std::collections::HashMap<Vec<String>, String> = all
            .iter()
            .map(|(f, n)| (n.module.clone(), f.clone()))
            .collect();
        let by_file: std::collections::HashMap<&str, &Names> =
            all.iter().map(|(f, n)| (f.as_str(), n)).collect();
        // The file that defines what `path` names, through re-exports.
        let resolve = |path: &[String]| -> Option<String> {
            let mut path = path.to_vec();
            for _ in 0..8 {
                let k = (0..=path.len())
                    .rev()
                    .find(|k| modules.contains_key(&path[..*k]))?;
                let file = &modules[&path[..k]];
                match path
                    .get(k)
                    .and_then(|n| by_file[file.as_str()].exports.get(n))
                    .filter(|_| follow_exports)
                {
                    Some(target) if *target != path[..=k] => {
                        path = target.iter().chain(&path[k + 1..]).cloned().collect();
                    }
                    _ => return Some(file.clone()),
                }
            }
            None
        };
        let mut graph = Graph {
            edges: Default::default(),
            upward: Default::default(),
            modules: modules.clone(),
        };
        for (file, names) in &all {
            graph.edges.entry(file.clone()).or_default();
            for (path, public, written) in &names.uses {
                let Some(target) = resolve(path) else {
                    continue;
                };
                let inner = |outer: &[String], of: &[String]| {
                    of.len() > outer.len() && of.starts_with(outer)
                };
                let target_module = &by_file[target.as_str()].module;
                if target == *file || (*public && inner(&names.module, target_module)) {
                    continue;
                }
                let into = if inner(target_module, &names.module) {
                    &mut graph.upward
                } else {
                    &mut graph.edges
                };
                into.entry(file.clone())
                    .or_default()
                    .entry(target)
                    .or_insert_with(|| written.clone());
            }
        }
        graph
    }

    /// Whether `file` is `module`'s own file or inside it.
    fn inside(&self, file: &str, module: &str) -> bool {
        let of = |f: &str| {
            self.modules
                .iter()
                .find(|(_, v)| *v == f)
                .map(|(k, _)| k.clone())
        };
        match (of(file), of(module)) {
            (Some(f), Some(m)) => f.starts_with(&m),
            _ => false,
        }
    }

    /// The strongly connected components of more than one file (Tarjan), sorted.
    fn circles(&self) -> Vec<Vec<String>> {
        struct State<'a> {
            graph: &'a Graph,
            index: std::collections::HashMap<&'a str, (usize, usize)>,
            stack: Vec<&'a str>,
            out: Vec<Vec<String>>,
        }
        fn visit<'a>(s: &mut State<'a>, v: &'a str) {
            let n = s.index.len();
            s.index.insert(v, (n, n));
            s.stack.push(v);
            for w in s.graph.edges[v].keys() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.index[v].1.min(s.index[w].1);
                    s.index.get_mut(v).unwrap().1 = low;
                } else if s.stack.contains(&w) {
                    let low = s.index[v].1.min(s.index[w].0);
                    s.index.get_mut(v).unwrap().1 = low;
                }
            }
            if s.index[v].0 == s.index[v].1 {
                let at = s.stack.iter().rposition(|x| *x == v).unwrap();
                let mut comp: Vec<String> = s.stack.drain(at..).map(str::to_string).collect();
                if comp.len() > 1 {
                    comp.sort();
                    s.out.push(comp);
                }
            }
        }
        let mut s = State {
            graph: self,
            index: Default::default(),
            stack: Vec::new(),
            out: Vec::new(),
        };
        for v in self.edges.keys() {
            if !s.index.contains_key(v.as_str()) {
                visit(&mut s, v);
            }
        }
        s.out.sort();
        s.out
    }

    /// The circles through an upward edge: `child` uses its enclosing module `outer`, and
    /// `outer` reaches `child` back through a file outside itself. Each as its files in order.
    fn circles_through_upward_edges(&self) -> Vec<Vec<String>> {
        let mut found = Vec::new();
        for (child, outers) in &self.upward {
            for outer in outers.keys() {
                // Breadth-first over (file, whether the path has left `outer`).
                let mut seen = std::collections::HashSet::new();
                let mut queue = std::collections::VecDeque::from([(outer.clone(), false, vec![])]);
                while let Some((v, left, path)) = queue.pop_front() {
                    // Back through `outer` itself is a circle of the graph's own.
                    for w in self.edges[&v].keys().filter(|w| *w != outer) {
                        let left = left || !self.inside(w, outer);
                        let mut path = path.clone();
                        path.push(w.clone());
                        if w == child && left {
                            found.push([vec![child.clone(), outer.clone()], path].concat());
                            queue.clear();
                            break;
                        }
                        if seen.insert((w.clone(), left)) {
                            queue.push_back((w.clone(), left, path));
                        }
                    }
                }
            }
        }
        found
    }

    /// Every file `file` depends on, directly or not, upward edges included.
    fn reach(&self, file: &str) -> std::collections::BTreeSet<String> {
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = vec![file.to_string()];
        while let Some(v) = todo.pop() {
            let next = self.edges[&v]
                .keys()
                .chain(self.upward.get(&v).into_iter().flat_map(|u| u.keys()));
            for w in next {
                if seen.insert(w.clone()) {
                    todo.push(w.clone());
                }
            }
        }
        seen
    }

    /// The edges among `files`, as `a -> b (the path)` lines.
    fn explain(&self, files: &[String]) -> String {
        let files: std::collections::BTreeSet<&String> = files.iter().collect();
        let mut lines = String::new();
        for a in files.iter().copied() {
            let all = self.edges[a]
                .iter()
                .chain(self.upward.get(a).into_iter().flatten());
            for (b, why) in all.filter(|(b, _)| files.contains(b)) {
                lines.push_str(&format!("\n    {a} -> {b} ({why})"));
            }
        }
        lines
    }
}

#[test]
fn the_import_graph_of_src_has_no_circle() {
    let graph = Graph::of_src();
    // The rules hold on the tree itself: a re-export is followed to its file, a child's use of
    // its parent is an upward edge, a declaration is no edge.
    assert!(
        graph.edges["command.rs"].contains_key("browser/tab.rs"),
        "crate::browser::Tab is tab.rs"
    );
    assert!(
        graph.upward["browser/tab.rs"].contains_key("browser/mod.rs"),
        "super::Browser"
    );
    assert!(
        !graph.edges["lib.rs"].contains_key("engine.rs"),
        "pub use engine::Engine is wiring"
    );
    let mut circles: Vec<String> = graph
        .circles()
        .iter()
        .map(|files| format!("{}:{}", files.join(", "), graph.explain(files)))
        .collect();
    for path in graph.circles_through_upward_edges() {
        circles.push(format!("{}:{}", path.join(" -> "), graph.explain(&path)));
    }
    assert!(
        circles.is_empty(),
        "import circles between files of src/ (move what both sides need to a file below both):\n{}",
        circles.join("\n")
    );
    // The layers the code map names (ARCHITECTURE.md), over every path, not only direct ones.
    let reach = graph.reach("command.rs");
    assert!(
        !reach.iter().any(|f| f == "registry.rs" || f.starts_with("commands/") || f.starts_with("executor/")),
        "command.rs must sit below the registry, the commands and the executor: it reaches {reach:?}"
    );
    let reach = graph.reach("registry.rs");
    assert!(
        !reach.iter().any(|f| f.starts_with("commands/")),
        "registry.rs must not import commands/: it reaches {reach:?}"
    );
    for file in graph.edges.keys().filter(|f| f.starts_with("commands/")) {
        let reach = graph.reach(file);
        assert!(
            !reach
                .iter()
                .any(|f| f.starts_with("executor/") || f.starts_with("lua/")),
            "{file} reaches the executor or the Lua bridge: {reach:?}"
        );
    }
}

#[test]
fn the_import_graph_as_written_has_no_circle() {
    // Issue 36 §10: a reader follows the path as written to the file it names; a re-export
    // does not hide a circle from them.
    let graph = Graph::as_written();
    let circles: Vec<String> = graph
        .circles()
        .iter()
        .map(|files| format!("{}:{}", files.join(", "), graph.explain(files)))
        .collect();
    assert!(
        circles.is_empty(),
        "import circles between files of src/ as their paths are written (name the file that defines an item, or move it below both):\n{}",
        circles.join("\n")
    );
    assert!(
        graph.edges["trace.rs"].contains_key("command/param.rs"),
        "trace.rs names command::param"
    );
}

#[test]
fn page_javascript_is_never_assembled_at_run_time() {
    let mut rs = Vec::new();
    files(&src(), "rs", &mut rs);
    // `execute_js` wraps the caller's own script: the one exception.
    let execute_js = src().join("commands").join("extract.rs");
    for path in rs.iter().filter(|p| **p != execute_js) {
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in code_lines(&text) {
            let Some(at) = line.find("format!(\"") else {
                continue;
            };
            let literal = &line[at..];
            for js in ["=>", "function", "document.", "window.", "querySelector"] {
                assert!(
                    !literal.contains(js),
                    "{}:{n} assembles page JavaScript at run time: {line}",
                    path.display()
                );
            }
        }
    }
}

/// Generated files are tests (CONVENTIONS.md): the checked-in LuaLS stubs equal what
/// `moonpilot stubs` prints; a difference rewrites the file and fails, so the diff shows it.
#[test]
fn lua_stubs_are_generated_from_the_registry() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("lua/moonpilot.d.lua");
    let want = moonpilot::lua::stubs::generate(moonpilot::commands::registry().all());
    let want = format!("{}\n", want.trim_end());
    let got = std::fs::read_to_string(&path).unwrap_or_default();
    if got != want {
        std::fs::write(&path, &want).unwrap();
        panic!(
            "{} was out of date and has been regenerated: review and commit it",
            path.display()
        );
    }
    for spec in moonpilot::commands::registry().all() {
        let method = format!("function Task:{}(params) end", spec.name);
        assert_eq!(
            want.contains(&method),
            spec.needs_task(),
            "{}: a Task method exactly when it needs a task",
            spec.name
        );
    }
}

/// `luacheck` (Debian's `lua-check`; `tools/test` installs it) finds nothing in `examples/`,
/// `lua/` and the shipped Lua recipes of `scripts/`, with the globals the stubs declare (`.luacheckrc`).
#[test]
fn luacheck_is_clean_on_examples_and_lua() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("luacheck")
        .args(["--no-color", "--codes", "examples", "lua", "scripts"])
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| {
            panic!("luacheck did not run ({e}): install Debian's `lua-check` (tools/test does)")
        });
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "luacheck found problems:\n{text}");
    assert!(text.contains("0 warnings / 0 errors"), "{text}");
}

/// The report's page comes from maud templates, which escape every value (issue 25): no HTML
/// is assembled by `format!` or pushed as text in `src/report/`.
#[test]
fn report_html_is_never_assembled_by_hand() {
    let mut rs = Vec::new();
    files(&src().join("report"), "rs", &mut rs);
    assert!(!rs.is_empty());
    for path in rs {
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in code_lines(&text) {
            for bad in [
                "format!(\"<",
                "push_str(\"<",
                "PreEscaped(format",
                "PreEscaped(&",
            ] {
                assert!(
                    !line.contains(bad),
                    "{}:{n} assembles HTML by hand: {line}",
                    path.display()
                );
            }
        }
    }
}
