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
            registry.contains(&format!("include_str!(\"{name}\")")),
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
