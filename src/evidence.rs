//! Where the engine's files go and how much of them it keeps (PROTOCOL.md §18 "Where files
//! go"): the state directory, and the bound on evidence (`data/<task>/…`) — the newest N files
//! per task and a size cap over all of `data/`, both in `EngineConfig`; `cleanup` removes the
//! rest on demand.
//!
//! The state directory is `--state-dir DIR`, else `$MOONPILOT_STATE_DIR`, else
//! `$XDG_STATE_HOME/moonpilot`, else `~/.local/state/moonpilot`; never the current directory.
//! Pruning runs on the background evidence job after a file is written, never on the path of
//! a command, and never fails one.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The state directory: `flag`, else `$MOONPILOT_STATE_DIR`, else `$XDG_STATE_HOME/moonpilot`
/// (an absolute `XDG_STATE_HOME` only, as the XDG spec says), else `$HOME/.local/state/moonpilot`.
/// `None` when none of them is set.
pub fn state_dir(flag: Option<PathBuf>) -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    flag.or_else(|| var("MOONPILOT_STATE_DIR"))
        .or_else(|| {
            var("XDG_STATE_HOME")
                .filter(|p| p.is_absolute())
                .map(|p| p.join("moonpilot"))
        })
        .or_else(|| var("HOME").map(|h| h.join(".local/state/moonpilot")))
        .map(|p| std::path::absolute(&p).unwrap_or(p))
}

/// The evidence directory under a state directory.
pub fn data_dir(state: &Path) -> PathBuf {
    state.join("data")
}

/// The upload staging directory under a state directory.
pub fn upload_dir(state: &Path) -> PathBuf {
    state.join("upload")
}

/// The trace directory under a state directory.
pub fn trace_dir(state: &Path) -> PathBuf {
    state.join("logs").join("trace")
}

/// How much evidence is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// The newest files kept per task directory (at least 1: the file just written stays).
    pub keep_per_task: usize,
    /// The most bytes all of `data/` may hold; the oldest files go first.
    pub max_bytes: u64,
}

impl Default for Bound {
    /// 200 files per task (100 screenshot + state pairs) and 256 MiB in all: measured, 3,000
    /// commands wrote 313 MB unbounded.
    fn default() -> Self {
        Bound {
            keep_per_task: 200,
            max_bytes: 256 * 1024 * 1024,
        }
    }
}

/// One file of evidence: where, when written, how big.
struct Entry {
    path: PathBuf,
    modified: SystemTime,
    size: u64,
}

async fn entries(dir: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    let Ok(mut read) = tokio::fs::read_dir(dir).await else {
        return out;
    };
    while let Ok(Some(entry)) = read.next_entry().await {
        let Ok(meta) = entry.metadata().await else {
            continue;
        };
        // Only numbered evidence (`<seq>.png|txt`) is pruned: a human-input request's image
        // (`<requestId>.png`) lives as long as its request.
        let numbered = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()));
        if meta.is_file() && numbered {
            out.push(Entry {
                path: entry.path(),
                modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                size: meta.len(),
            });
        }
    }
    // Newest first; the sequence number in the name breaks ties (files written in the same
    // tick).
    out.sort_by_key(|e| std::cmp::Reverse(e.key()));
    out
}

impl Entry {
    /// Oldest to newest: time written, then the leading number of the name (`12.png`,
    /// `12.txt`), then the name.
    fn key(&self) -> (SystemTime, u64, PathBuf) {
        let seq = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .map(|n| {
                n.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .and_then(|d| d.parse().ok())
            .unwrap_or(0);
        (self.modified, seq, self.path.clone())
    }
}

/// Deletes what `bound` does not keep: in `task_dir`, the files after the newest
/// `keep_per_task`; then, over every task directory of `data_dir`, the oldest files until the
/// total fits `max_bytes` (the newest file of `task_dir` always stays). Errors are ignored:
/// a file another process removed is gone either way.
pub async fn prune(data_dir: &Path, task_dir: &Path, bound: Bound) {
    let keep = bound.keep_per_task.max(1);
    let mine = entries(task_dir).await;
    let newest = mine.first().map(|e| e.path.clone());
    for old in mine.iter().skip(keep) {
        let _ = tokio::fs::remove_file(&old.path).await;
    }
    let mut all = Vec::new();
    if let Ok(mut read) = tokio::fs::read_dir(data_dir).await {
        while let Ok(Some(entry)) = read.next_entry().await {
            if entry.file_type().await.is_ok_and(|t| t.is_dir()) {
                all.extend(entries(&entry.path()).await);
            }
        }
    }
    all.retain(|e| e.path.exists());
    let mut total: u64 = all.iter().map(|e| e.size).sum();
    if total <= bound.max_bytes {
        return;
    }
    all.sort_by_key(Entry::key);
    for old in all {
        if total <= bound.max_bytes {
            break;
        }
        if Some(&old.path) == newest.as_ref() {
            continue;
        }
        if tokio::fs::remove_file(&old.path).await.is_ok() {
            total = total.saturating_sub(old.size);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_dir_flag_wins_and_is_absolute() {
        let d = state_dir(Some(PathBuf::from("rel/dir"))).unwrap();
        assert!(d.is_absolute() && d.ends_with("rel/dir"), "{}", d.display());
        assert_eq!(data_dir(Path::new("/s")), Path::new("/s/data"));
        assert_eq!(trace_dir(Path::new("/s")), Path::new("/s/logs/trace"));
    }

    #[tokio::test]
    async fn prune_keeps_the_newest_per_task_and_fits_the_cap() {
        let root = std::env::temp_dir().join(format!("moonpilot-prune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let task = root.join("1");
        let other = root.join("2");
        std::fs::create_dir_all(&task).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        for i in 0..5 {
            std::fs::write(other.join(format!("{i}.png")), [0u8; 100]).unwrap();
        }
        for i in 0..6 {
            std::fs::write(task.join(format!("{i}.png")), [0u8; 100]).unwrap();
        }
        let count = |d: &Path| std::fs::read_dir(d).unwrap().count();
        prune(
            &root,
            &task,
            Bound {
                keep_per_task: 4,
                max_bytes: u64::MAX,
            },
        )
        .await;
        assert_eq!(count(&task), 4);
        assert!(task.join("5.png").exists() && !task.join("0.png").exists());
        assert_eq!(
            count(&other),
            5,
            "another task's files are not its business"
        );
        prune(
            &root,
            &task,
            Bound {
                keep_per_task: 4,
                max_bytes: 500,
            },
        )
        .await;
        let total = count(&task) + count(&other);
        assert_eq!(total, 5, "500 bytes hold five files");
        assert!(task.join("5.png").exists(), "the newest stays");
        let _ = std::fs::remove_dir_all(&root);
    }
}
