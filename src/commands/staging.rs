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
    // The extension (its dot included) is kept when it has at most 12 characters.
    let (stem, ext) = match trimmed.rfind('.') {
        Some(i) if i > 0 && trimmed[i..].chars().count() <= 13 => (&trimmed[..i], &trimmed[i..]),
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
    crate::encoding::decode_base64(&compact).ok_or_else(|| {
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
    stage_as(dir, bytes, filename, content_type, true).await
}

/// `a.jpg`, `a-1.jpg`, `a-2.jpg`, …: the `n`th name tried when names are not overwritten.
fn numbered(name: &str, n: u32) -> String {
    if n == 0 {
        return name.to_string();
    }
    match name.rfind('.') {
        Some(i) if i > 0 => format!("{}-{n}{}", &name[..i], &name[i..]),
        _ => format!("{name}-{n}"),
    }
}

/// [`stage`] with the overwrite rule of the upload endpoint (§13, `browser.upload.overwrite`):
/// `overwrite` keeps the name (`existed:true` when it was there), else the first free name of
/// `a.jpg`, `a-1.jpg`, … is taken (created exclusively, so two uploads never share one). The
/// file lands directly in `dir`: a sanitised name has no separators.
pub async fn stage_as(
    dir: &Path,
    bytes: &[u8],
    filename: Option<&str>,
    content_type: Option<&str>,
    overwrite: bool,
) -> Result<(PathBuf, Value), CommandError> {
    let base = filename
        .and_then(sanitize)
        .unwrap_or_else(|| generated(content_type));
    tokio::fs::create_dir_all(dir).await.map_err(|e| {
        CommandError::failed(format!(
            "cannot create the upload directory {}: {e}",
            dir.display()
        ))
    })?;
    let cannot = |path: &Path, e: std::io::Error| {
        CommandError::failed(format!("cannot stage {}: {e}", path.display()))
    };
    let (name, path, existed) = if overwrite {
        let path = dir.join(&base);
        let existed = tokio::fs::metadata(&path).await.is_ok();
        tokio::fs::write(&path, bytes)
            .await
            .map_err(|e| cannot(&path, e))?;
        (base, path, existed)
    } else {
        use tokio::io::AsyncWriteExt;
        let mut n = 0u32;
        loop {
            let name = numbered(&base, n);
            let path = dir.join(&name);
            match tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .await
            {
                Ok(mut file) => {
                    file.write_all(bytes).await.map_err(|e| cannot(&path, e))?;
                    file.flush().await.map_err(|e| cannot(&path, e))?;
                    break (name, path, false);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 10_000 => n += 1,
                Err(e) => return Err(cannot(&path, e)),
            }
        }
    };
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

/// The staged files directly in `dir`, newest first (at most 500), for `GET /playwright/upload`:
/// `{dir, count, files:[{name, size, modifiedAt (epoch ms), path}]}`.
pub async fn list(dir: &Path) -> Value {
    let mut files = Vec::new();
    if let Ok(mut read) = tokio::fs::read_dir(dir).await {
        while let Ok(Some(entry)) = read.next_entry().await {
            let Ok(meta) = entry.metadata().await else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as u64);
            let path = entry.path();
            files.push((
                modified,
                entry.file_name().to_string_lossy().to_string(),
                meta.len(),
                path,
            ));
        }
    }
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = files.len();
    let files: Vec<Value> = files
        .into_iter()
        .take(500)
        .map(|(modified, name, size, path)| {
            json!({"name": name, "size": size, "modifiedAt": modified,
                "path": std::path::absolute(&path).unwrap_or(path).display().to_string()})
        })
        .collect();
    json!({"dir": dir.display().to_string(), "count": total, "files": files})
}

/// Deletes the staged file `name` (relative to `dir`; absolute or escaping names, and names of
/// no file, are refused): `{name, deleted:true, dir}`.
pub async fn delete(dir: &Path, name: &str) -> Result<Value, CommandError> {
    if name.trim().is_empty() {
        return Err(CommandError::invalid(
            "name",
            "missing parameter name (the staged file)",
        ));
    }
    if Path::new(name).is_absolute() {
        return Err(CommandError::invalid(
            "name",
            format!("illegal name `{name}`: give the staged file's name, not an absolute path"),
        ));
    }
    let path = resolve(dir, name)?;
    match tokio::fs::metadata(&path).await {
        Ok(meta) if meta.is_file() => {}
        _ => {
            return Err(CommandError::invalid(
                "name",
                format!("no staged file `{name}` in {}", dir.display()),
            ))
        }
    }
    tokio::fs::remove_file(&path)
        .await
        .map_err(|e| CommandError::failed(format!("cannot delete {}: {e}", path.display())))?;
    Ok(json!({"name": name, "deleted": true, "dir": dir.display().to_string()}))
}

/// Appends one metadata line for a staged upload to `<trace dir>/<yyyymmdd>/uploads.log`
/// (`{ts, filename, relativePath, path, size, existed, sha256, contentType}`); never fails.
pub async fn log_upload(trace_dir: Option<&Path>, info: &Value) {
    use tokio::io::AsyncWriteExt;
    let Some(root) = trace_dir else {
        return;
    };
    let day = root.join(crate::trace::today());
    let mut line = json!({"ts": crate::clock::epoch_ms()});
    for key in [
        "filename",
        "relativePath",
        "path",
        "size",
        "existed",
        "sha256",
        "contentType",
    ] {
        line[key] = info.get(key).cloned().unwrap_or(Value::Null);
    }
    let text = format!("{line}\n");
    let write = async {
        tokio::fs::create_dir_all(&day).await?;
        let mut f = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(day.join("uploads.log"))
            .await?;
        f.write_all(text.as_bytes()).await?;
        f.flush().await
    };
    if let Err(e) = write.await {
        tracing::warn!("uploads.log: {e}");
    }
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
    fn upload_names_follow_the_endpoint_rules() {
        // Control characters and the reserved set go; the base name alone is kept.
        assert_eq!(sanitize("a\u{0}b\nc\t.txt").as_deref(), Some("abc.txt"));
        assert_eq!(sanitize("dir/sub\\..\\x.png").as_deref(), Some("x.png"));
        assert_eq!(sanitize("..").as_deref(), None);
        assert_eq!(sanitize("../..").as_deref(), None);
        assert_eq!(sanitize("..a..b").as_deref(), Some("a..b"));
        assert_eq!(sanitize("\u{7}\u{1b}").as_deref(), None);
        assert_eq!(
            sanitize("发票 2024*?.jpg").as_deref(),
            Some("发票 2024.jpg")
        );
        // CJK names are capped by characters, not bytes, and keep their extension.
        let cjk = format!("{}.pdf", "报".repeat(300));
        let s = sanitize(&cjk).unwrap();
        assert_eq!(s.chars().count(), 120);
        assert!(s.ends_with("报.pdf"));
        // An extension longer than 12 characters is not an extension worth keeping.
        let odd = format!("{}.{}", "y".repeat(130), "e".repeat(13));
        let s = sanitize(&odd).unwrap();
        assert_eq!(s.chars().count(), 120);
        assert!(s.chars().all(|c| c == 'y'));
        assert!(generated(Some("image/jpeg")).starts_with("upload-"));
        assert!(generated(Some("image/jpeg")).ends_with(".jpg"));
        assert_eq!(numbered("a.jpg", 0), "a.jpg");
        assert_eq!(numbered("a.jpg", 2), "a-2.jpg");
        assert_eq!(numbered("noext", 1), "noext-1");
    }

    #[test]
    fn uploads_rename_or_overwrite_and_list_and_delete() {
        let dir = std::env::temp_dir().join(format!("moonpilot-staging-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (p1, i1) = stage_as(&dir, b"one", Some("a.jpg"), None, false)
                .await
                .unwrap();
            let (p2, i2) = stage_as(&dir, b"two", Some("a.jpg"), None, false)
                .await
                .unwrap();
            assert_eq!(i1["filename"], "a.jpg");
            assert_eq!(i2["filename"], "a-1.jpg");
            assert_eq!(i2["existed"], false);
            assert_ne!(p1, p2);
            let (p3, i3) = stage_as(&dir, b"three", Some("a.jpg"), None, true)
                .await
                .unwrap();
            assert_eq!((p3, i3["existed"].clone()), (p1.clone(), json!(true)));
            assert_eq!(std::fs::read(&p1).unwrap(), b"three");
            let listed = list(&dir).await;
            assert_eq!(listed["count"], 2);
            assert!(listed["files"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["name"] == "a-1.jpg"));
            assert!(delete(&dir, "../a.jpg").await.is_err());
            assert!(delete(&dir, "/etc/passwd").await.is_err());
            assert!(delete(&dir, "missing.jpg").await.is_err());
            assert_eq!(delete(&dir, "a-1.jpg").await.unwrap()["deleted"], true);
            assert!(!p2.exists());
        });
        let _ = std::fs::remove_dir_all(&dir);
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
