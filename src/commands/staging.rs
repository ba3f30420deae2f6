//! The upload staging directory of `upload_file` (PROTOCOL.md §13): where relative `path`s
//! are resolved, and where inline (`contentBase64`) and downloaded (`url`) content is saved
//! before the page gets it.
//!
//! Pure helpers (path confinement, file-name sanitising, base64 and SHA-256), unit-tested
//! here, plus [`stage`], which writes one file.

use std::path::{Component, Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::error::CommandError;

/// Resolves `path` for upload: absolute paths as they are, relative ones inside `dir`
/// (`..`, a root or a prefix is `INVALID_ARGUMENT` "illegal path").
pub fn resolve(dir: &Path, path: &str) -> Result<PathBuf, CommandError> {
    let p = Path::new(path);
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    if p.components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(CommandError::invalid(
            "path",
            format!("param `path`: illegal path `{path}` (a relative path must stay inside the upload directory)"),
        ));
    }
    Ok(dir.join(p))
}

/// A file name made safe (PROTOCOL.md §13): the base name only, without control characters and
/// `< > : " / \ | ? *`, without leading dots, at most 120 characters keeping an extension of at
/// most 12; `None` when nothing usable is left.
pub fn sanitize(name: &str) -> Option<String> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let cleaned: String = base
        .chars()
        .filter(|c| !c.is_control() && !"<>:\"/\\|?*".contains(*c))
        .collect();
    let trimmed = cleaned.trim().trim_start_matches('.').to_string();
    if trimmed.is_empty() || trimmed.chars().all(|c| c == '.') {
        return None;
    }
    if trimmed.chars().count() <= 120 {
        return Some(trimmed);
    }
    let (stem, ext) = match trimmed.rfind('.') {
        Some(i) if trimmed.len() - i <= 13 && i > 0 => (&trimmed[..i], &trimmed[i..]),
        _ => (trimmed.as_str(), ""),
    };
    let keep = 120 - ext.chars().count();
    Some(format!(
        "{}{ext}",
        stem.chars().take(keep).collect::<String>()
    ))
}

/// The extension a generated name gets from a content type.
fn extension(content_type: Option<&str>) -> &'static str {
    let t = content_type.unwrap_or_default().to_ascii_lowercase();
    let t = t.split(';').next().unwrap_or_default().trim().to_string();
    match t.as_str() {
        "image/jpeg" | "image/jpg" => ".jpg",
        "image/png" => ".png",
        "image/webp" => ".webp",
        "image/gif" => ".gif",
        "application/pdf" => ".pdf",
        "text/plain" => ".txt",
        "application/json" => ".json",
        "application/zip" => ".zip",
        _ => "",
    }
}

/// `upload-<snowflake><ext>`: a time-ordered unique-enough name.
fn generated(content_type: Option<&str>) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("upload-{nanos}{}", extension(content_type))
}

/// Decodes inline content: a `data:…;base64,` prefix is dropped, whitespace ignored.
pub fn decode_inline(raw: &str) -> Result<Vec<u8>, CommandError> {
    let body = match raw.trim_start().strip_prefix("data:") {
        Some(rest) => rest.split_once(',').map(|(_, b)| b).unwrap_or(""),
        None => raw,
    };
    let compact: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    crate::browser::tab::decode_base64(&compact).ok_or_else(|| {
        CommandError::invalid("contentBase64", "param `contentBase64`: not valid base64")
    })
}

/// SHA-256 of `data`, lower-case hex.
pub fn sha256(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Saves `bytes` in `dir` under `filename` (sanitised) or a generated name, overwriting a file
/// of the same name (`existed`). Answers the absolute path and the staged-file fields of the
/// receipt (`filename`, `relativePath`, `size`, `sha256`, `existed`, `dir`, `contentType`).
pub async fn stage(
    dir: &Path,
    bytes: &[u8],
    filename: Option<&str>,
    content_type: Option<&str>,
) -> Result<(PathBuf, Value), CommandError> {
    let name = filename
        .and_then(sanitize)
        .unwrap_or_else(|| generated(content_type));
    tokio::fs::create_dir_all(dir).await.map_err(|e| {
        CommandError::failed(format!(
            "cannot create the upload directory {}: {e}",
            dir.display()
        ))
    })?;
    let path = dir.join(&name);
    let existed = tokio::fs::metadata(&path).await.is_ok();
    tokio::fs::write(&path, bytes)
        .await
        .map_err(|e| CommandError::failed(format!("cannot stage {}: {e}", path.display())))?;
    let abs = std::path::absolute(&path).unwrap_or(path);
    let info = json!({
        "filename": name,
        "relativePath": name,
        "size": bytes.len(),
        "sha256": sha256(bytes),
        "existed": existed,
        "dir": dir.display().to_string(),
        "contentType": content_type,
    });
    Ok((abs, info))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_matches_known_digests() {
        assert_eq!(
            sha256(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            sha256(&[b'a'; 1000]),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"
        );
    }

    #[test]
    fn names_are_sanitised() {
        assert_eq!(sanitize("../../etc/passwd").as_deref(), Some("passwd"));
        assert_eq!(sanitize("C:\\x\\a<b>.txt").as_deref(), Some("ab.txt"));
        assert_eq!(sanitize("..."), None);
        assert_eq!(sanitize(".hidden").as_deref(), Some("hidden"));
        assert_eq!(sanitize("报告.pdf").as_deref(), Some("报告.pdf"));
        let long = format!("{}.jpeg", "x".repeat(200));
        let s = sanitize(&long).unwrap();
        assert_eq!(s.chars().count(), 120);
        assert!(s.ends_with(".jpeg"));
    }

    #[test]
    fn relative_paths_stay_inside() {
        let dir = Path::new("/stage");
        assert_eq!(
            resolve(dir, "a/b.txt").unwrap(),
            Path::new("/stage/a/b.txt")
        );
        assert_eq!(resolve(dir, "/tmp/x").unwrap(), Path::new("/tmp/x"));
        let e = resolve(dir, "../x").unwrap_err();
        assert!(e.msg.contains("illegal path"), "{}", e.msg);
    }

    #[test]
    fn inline_content_takes_data_uris_and_whitespace() {
        assert_eq!(decode_inline("aGVs\n bG8=").unwrap(), b"hello");
        assert_eq!(
            decode_inline("data:text/plain;base64,aGVsbG8=").unwrap(),
            b"hello"
        );
        assert!(decode_inline("!!").is_err());
        assert_eq!(extension(Some("image/png; q=1")), ".png");
    }
}
