//! Downloads: every file a task's pages download goes to `downloads/<task>/` of the state
//! directory, never to Chromium's default `~/Downloads`.
//!
//! The browser saves each download under its guid in `downloads/.incoming/`
//! (`Browser.setDownloadBehavior` `allowAndName`, per browser context, with events on the raw
//! connection); each task follows the events (`task.rs`), takes the downloads that begin in
//! one of its pages (a download that an iframe begins is not claimed), names each one after the file name the site suggested (made safe, and
//! unique in the task's directory: `report.csv`, `report-1.csv`, …), and moves the file there
//! once it is complete. A task's records ([`Download`]) are what a receipt reports
//! (`downloads`, `downloadsStarted`) and what `wait_files` waits for. Directories of tasks
//! older than [`KEEP_FOR`] are removed when a browser starts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

/// Where the browser writes downloads in progress, under the download directory.
pub const INCOMING: &str = ".incoming";
/// How long a task's downloads are kept (its directory is removed after this when a browser
/// starts).
pub const KEEP_FOR: Duration = Duration::from_secs(7 * 24 * 3600);

/// One download of a task.
#[derive(Debug, Clone)]
pub struct Download {
    /// The browser's id for it.
    pub guid: String,
    /// Where it came from.
    pub url: String,
    /// The file name the site suggested.
    pub suggested: String,
    /// Where it is (once complete) in the task's download directory.
    pub path: PathBuf,
    /// `inProgress`, `completed` or `canceled`.
    pub state: String,
    /// Bytes received so far.
    pub received: u64,
    /// Bytes expected (0 when the site did not say).
    pub total: u64,
    /// When it began, epoch ms.
    pub started_at: u64,
    /// When it completed or was canceled, epoch ms.
    pub finished_at: Option<u64>,
    /// Why the file could not be moved to `path`, if it could not.
    pub error: Option<String>,
}

impl Download {
    /// Whether it is still going.
    pub fn in_progress(&self) -> bool {
        self.state == "inProgress"
    }

    /// The receipt's view of it.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "fileName": self.path.file_name().map(|n| n.to_string_lossy().to_string()),
            "suggestedFilename": self.suggested,
            "path": self.path.display().to_string(),
            "url": self.url,
            "state": self.state,
            "receivedBytes": self.received,
            "totalBytes": self.total,
            "startedAt": self.started_at,
        });
        if self.state == "completed" {
            v["size"] = json!(self.received);
        }
        if let Some(t) = self.finished_at {
            v["finishedAt"] = json!(t);
        }
        if let Some(e) = &self.error {
            v["error"] = json!(e);
        }
        v
    }
}

/// A file name from a site made safe for the file system: its base name, without control
/// characters and `< > : " / \ | ? *`, without leading dots, at most 120 characters;
/// `download` when nothing is left.
pub fn safe_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let cleaned: String = base
        .chars()
        .filter(|c| !c.is_control() && !"<>:\"/\\|?*".contains(*c))
        .collect();
    let trimmed = cleaned.trim().trim_start_matches('.').trim().to_string();
    if trimmed.is_empty() {
        return "download".to_string();
    }
    // At most 120 characters and 200 bytes (a file name may take 255 bytes; room is left for
    // a `-N` suffix).
    let mut out = String::new();
    for c in trimmed.chars().take(120) {
        if out.len() + c.len_utf8() > 200 {
            break;
        }
        out.push(c);
    }
    out
}

/// `name`, or `stem-1.ext`, `stem-2.ext`, … : the first not in `taken`.
pub fn unique_name(name: &str, taken: &dyn Fn(&str) -> bool) -> String {
    if !taken(name) {
        return name.to_string();
    }
    let (stem, ext) = match name.rfind('.') {
        Some(i) if i > 0 => (&name[..i], &name[i..]),
        _ => (name, ""),
    };
    (1..)
        .map(|n| format!("{stem}-{n}{ext}"))
        .find(|candidate| !taken(candidate))
        .unwrap_or_else(|| name.to_string())
}

/// Removes task directories of `root` untouched for [`KEEP_FOR`], and files left in
/// [`INCOMING`] by a browser that stopped mid-download. Best effort.
pub async fn sweep(root: &Path) {
    let Ok(mut entries) = tokio::fs::read_dir(root).await else {
        return;
    };
    let now = std::time::SystemTime::now();
    let old = |m: &std::fs::Metadata| {
        m.modified()
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > KEEP_FOR)
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let path = entry.path();
        let Ok(meta) = entry.metadata().await else {
            continue;
        };
        if path.file_name().is_some_and(|n| n == INCOMING) {
            if let Ok(mut left) = tokio::fs::read_dir(&path).await {
                while let Ok(Some(f)) = left.next_entry().await {
                    if f.metadata().await.is_ok_and(|m| old(&m) || m.len() == 0) {
                        let _ = tokio::fs::remove_file(f.path()).await;
                    }
                }
            }
            continue;
        }
        if meta.is_dir() && old(&meta) {
            let _ = tokio::fs::remove_dir_all(&path).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_and_unique() {
        assert_eq!(safe_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_name("..\\evil.exe"), "evil.exe");
        assert_eq!(safe_name(".hidden"), "hidden");
        assert_eq!(safe_name("报告.csv"), "报告.csv");
        assert_eq!(safe_name("a:b*c?.txt"), "abc.txt");
        assert_eq!(safe_name(""), "download");
        assert!(safe_name(&"报".repeat(100)).len() <= 200);
        let taken = |n: &str| n == "report.csv" || n == "report-1.csv";
        assert_eq!(unique_name("report.csv", &taken), "report-2.csv");
        assert_eq!(unique_name("new.csv", &taken), "new.csv");
        assert_eq!(unique_name("README", &|n: &str| n == "README"), "README-1");
    }
}
