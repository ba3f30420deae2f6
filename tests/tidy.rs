//! Tidy checks over the source tree (CONVENTIONS.md "Testing"): file headers, no `unwrap` in
//! shipped code, no blocking sleeps, every probe file referenced and none assembled by `format!`.

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

#[test]
fn no_import_circle_between_registry_commands_and_executor() {
    let read = |p: &str| std::fs::read_to_string(src().join(p)).unwrap();
    let command = read("command.rs");
    for bad in ["crate::registry", "crate::commands", "crate::executor"] {
        assert!(
            !shipped(&command).contains(bad),
            "command.rs must sit below the registry, the commands and the executor ({bad})"
        );
    }
    assert!(
        !shipped(&read("registry.rs")).contains("crate::commands"),
        "registry.rs must not import commands/"
    );
    let mut rs = Vec::new();
    files(&src().join("commands"), "rs", &mut rs);
    for path in rs {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !shipped(&text).contains("crate::executor"),
            "{} imports the executor",
            path.display()
        );
    }
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
