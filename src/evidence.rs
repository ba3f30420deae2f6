//! Where the engine's files go and how much of them it keeps (PROTOCOL.md §18 "Where files
//! go"): the state directory, and the bound on evidence (`data/<task>/…`) — the newest N files
//! per task and a size cap over all of `data/`, both in `EngineConfig`; `cleanup` removes the
//! rest on demand.
//!
//! The state directory is `--state-dir DIR`, else `$MOONPILOT_STATE_DIR`, else
//! `$XDG_STATE_HOME/moonpilot`, else `~/.local/state/moonpilot`; never the current directory.
//! Pruning runs on the keeper's own thread from an index it keeps in memory ([`Keeper`]), never
//! on the path of a command, and never fails one.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

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

/// The download directory under a state directory (a directory per task).
pub fn download_dir(state: &Path) -> PathBuf {
    state.join("downloads")
}

/// The trace directory under a state directory.
pub fn trace_dir(state: &Path) -> PathBuf {
    state.join("logs").join("trace")
}

/// How much evidence is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// The highest-numbered files kept per task directory (the numbers are receipts' `seq`; at
    /// least 1).
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

/// Writes `bytes` to `path` whole or not at all: to a hidden file beside it first (its name
/// does not start with a number, so it is never counted as evidence), then renamed. A reader
/// that finds `path` finds it complete. Blocking: the runtime's callers go through
/// [`write_whole`].
pub fn write_whole_blocking(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let part = path.with_file_name(format!(".{name}.part"));
    let done = std::fs::write(&part, bytes).and_then(|()| std::fs::rename(&part, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    done
}

/// [`write_whole_blocking`] on the blocking pool.
async fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (path, bytes) = (path.to_path_buf(), bytes.to_vec());
    tokio::task::spawn_blocking(move || write_whole_blocking(&path, &bytes))
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)))
}

/// A file of a task directory, in the directory's order: the leading number of its name (the
/// receipt's `seq`: a read's state file is written at once and its screenshot later, behind
/// the tab's other captures, so the time written would keep four screenshots and no state
/// file), then the time written, then the name. Task ids never repeat, so neither do a
/// directory's numbers.
type FileKey = (u64, SystemTime, Box<str>);

/// The leading number of an evidence file's name; `None` for a name that does not start with
/// one (a human-input request's image `<requestId>.png` lives as long as its request and is not
/// evidence).
fn seq_of(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// One task directory's numbered files and their sizes, in its order.
#[derive(Default)]
struct Dir {
    files: BTreeMap<FileKey, u64>,
}

impl Dir {
    /// When the first file in the directory's order was written: the directory's age.
    fn age(&self) -> Option<SystemTime> {
        self.files.keys().next().map(|k| k.1)
    }

    fn key_of(&self, name: &str) -> Option<FileKey> {
        let seq = seq_of(Path::new(name))?;
        self.files
            .range((seq, SystemTime::UNIX_EPOCH, Box::from(""))..)
            .take_while(|(k, _)| k.0 == seq)
            .find(|(k, _)| &*k.2 == name)
            .map(|(k, _)| k.clone())
    }
}

/// What retention needs to know of `data/`, in memory: per task directory, every numbered
/// file's number, time written, name and size (one small entry a file: the directory's path is
/// held once, in [`Index::dirs`] and [`Index::by_age`]), and the directories oldest first.
/// Loaded from disk once (and again now and then, see [`RESCAN_AFTER`]), then kept up to date
/// by the files the engine writes, so that no command ever walks the state directory.
///
/// Over all of `data/`, the oldest directory (by the time its first file was written) gives up
/// its first files first: a task's files are written in the order of their numbers, so this is
/// the oldest files first, without an entry per file in a second order.
#[derive(Default)]
struct Index {
    dirs: HashMap<PathBuf, Dir>,
    by_age: BTreeSet<(SystemTime, PathBuf)>,
    total: u64,
}

fn split(path: &Path) -> Option<(PathBuf, Box<str>)> {
    let name = path.file_name()?.to_str()?;
    Some((path.parent()?.to_path_buf(), Box::from(name)))
}

impl Index {
    /// Reads every task directory of `data_dir` (blocking: on the keeper's thread).
    fn scan(data_dir: &Path) -> Index {
        let mut index = Index::default();
        let Ok(dirs) = std::fs::read_dir(data_dir) else {
            return index;
        };
        for dir in dirs.flatten() {
            if !dir.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Ok(files) = std::fs::read_dir(dir.path()) else {
                continue;
            };
            for file in files.flatten() {
                let path = file.path();
                let Ok(meta) = file.metadata() else { continue };
                if meta.is_file() {
                    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    index.insert(&path, modified, meta.len());
                }
            }
        }
        index
    }

    /// Runs `change` on `dir`'s files and keeps its place in [`Index::by_age`] right (an
    /// emptied directory is forgotten).
    fn with_dir<T>(&mut self, dir: &Path, change: impl FnOnce(&mut Dir) -> T) -> T {
        let entry = self.dirs.entry(dir.to_path_buf()).or_default();
        let before = entry.age();
        let out = change(entry);
        let after = entry.age();
        if before != after {
            if let Some(t) = before {
                self.by_age.remove(&(t, dir.to_path_buf()));
            }
            if let Some(t) = after {
                self.by_age.insert((t, dir.to_path_buf()));
            }
        }
        if after.is_none() {
            self.dirs.remove(dir);
        }
        out
    }

    /// Counts `path` (a numbered file, written at `when`, `size` bytes); a file counted before
    /// under the same path is replaced. A time before 1970 counts as 1970 (so that
    /// [`Dir::key_of`] finds every file of a number from there).
    fn insert(&mut self, path: &Path, when: SystemTime, size: u64) {
        let (Some(seq), Some((dir, name))) = (seq_of(path), split(path)) else {
            return;
        };
        self.remove_in(&dir, &name);
        self.total += size;
        let when = when.max(SystemTime::UNIX_EPOCH);
        self.with_dir(&dir, |d| d.files.insert((seq, when, name), size));
    }

    fn remove(&mut self, path: &Path) {
        if let Some((dir, name)) = split(path) {
            self.remove_in(&dir, &name);
        }
    }

    fn remove_in(&mut self, dir: &Path, name: &str) {
        if !self.dirs.contains_key(dir) {
            return;
        }
        let size = self.with_dir(dir, |d| {
            let key = d.key_of(name)?;
            d.files.remove(&key)
        });
        self.total = self.total.saturating_sub(size.unwrap_or(0));
    }

    /// Deletes what `bound` does not keep after `written` was added: in its directory, all but
    /// the `keep_per_task` highest-numbered files (a late screenshot of an old read goes too);
    /// then, over all of `data/`, the oldest directories' first files until the total fits
    /// `max_bytes` (`written` stays). Errors are ignored: a file another process removed is
    /// gone either way.
    fn enforce(&mut self, written: &Path, bound: Bound) {
        let keep = bound.keep_per_task.max(1);
        let dir = written.parent().map(Path::to_path_buf).unwrap_or_default();
        let surplus: Vec<PathBuf> = self.dirs.get(&dir).map_or_else(Vec::new, |d| {
            let extra = d.files.len().saturating_sub(keep);
            d.files
                .keys()
                .take(extra)
                .map(|k| dir.join(&*k.2))
                .collect()
        });
        for path in surplus {
            self.delete(&path);
        }
        while self.total > bound.max_bytes {
            let oldest = self.by_age.iter().find_map(|(_, d)| {
                let files = &self.dirs.get(d)?.files;
                files.keys().map(|k| d.join(&*k.2)).find(|p| p != written)
            });
            let Some(oldest) = oldest else { break };
            self.delete(&oldest);
        }
    }

    fn delete(&mut self, path: &Path) {
        let _ = std::fs::remove_file(path);
        self.remove(path);
    }
}

/// How old the index may get before the keeper reads `data/` again: other processes (another
/// engine on the same state directory, a person) add and remove files too. The read runs on
/// the keeper's thread, never on a command's path.
const RESCAN_AFTER: Duration = Duration::from_secs(60);

enum Msg {
    /// A file the engine wrote, and its size.
    Written(PathBuf, u64),
    /// Files were removed behind the index's back (`cleanup`): read `data/` again.
    Rescan,
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Keeps `data/` within its [`Bound`] (PROTOCOL.md §18 "Where files go") on a thread of its
/// own: the engine tells it of every evidence file it wrote ([`Keeper::written`], which never
/// waits) and it deletes what the bound does not keep. Its first message reads `data/` once;
/// after that it works from memory, so the cost of a capture does not grow with the history on
/// disk. Cheap to clone; the thread ends with the last clone.
#[derive(Clone)]
pub struct Keeper {
    tx: Option<std::sync::mpsc::Sender<Msg>>,
}

impl Keeper {
    /// Starts the keeper's thread for `data_dir`. Without a thread (the system refused one)
    /// nothing is pruned, which the log says.
    pub fn start(data_dir: PathBuf, bound: Bound) -> Keeper {
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("moonpilot-evidence".into())
            .spawn(move || keep_loop(&data_dir, bound, &rx));
        if let Err(e) = spawned {
            tracing::warn!("evidence is not pruned: cannot start its thread: {e}");
            return Keeper { tx: None };
        }
        Keeper { tx: Some(tx) }
    }

    fn send(&self, msg: Msg) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(msg).is_ok())
    }

    /// The engine wrote `path` (`size` bytes): counted, and what the bound no longer keeps is
    /// deleted, in the background. A file whose name does not start with a number is not
    /// evidence and is not counted.
    pub fn written(&self, path: &Path, size: u64) {
        if seq_of(path).is_some() {
            self.send(Msg::Written(
                std::path::absolute(path).unwrap_or_else(|_| path.into()),
                size,
            ));
        }
    }

    /// Writes an evidence file whole ([`write_whole`]) and, once it is on disk, counts it
    /// ([`Keeper::written`]).
    pub async fn save(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        write_whole(path, bytes).await?;
        self.written(path, bytes.len() as u64);
        Ok(())
    }

    /// Files were removed behind the keeper's back: it reads `data/` again before its next
    /// decision.
    pub fn rescan(&self) {
        self.send(Msg::Rescan);
    }

    /// Resolves once everything the keeper was told so far is done (bounded by `limit`).
    pub async fn flush(&self, limit: Duration) {
        let (done, finished) = tokio::sync::oneshot::channel();
        if self.send(Msg::Flush(done)) {
            let _ = tokio::time::timeout(limit, finished).await;
        }
    }
}

fn keep_loop(data_dir: &Path, bound: Bound, rx: &std::sync::mpsc::Receiver<Msg>) {
    let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.into());
    let mut index: Option<(Index, Instant)> = None;
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Written(path, size) => {
                let stale = index
                    .as_ref()
                    .is_none_or(|(_, read)| read.elapsed() > RESCAN_AFTER);
                if stale {
                    index = Some((Index::scan(&data_dir), Instant::now()));
                }
                let Some((idx, _)) = index.as_mut() else {
                    continue;
                };
                idx.insert(&path, SystemTime::now(), size);
                idx.enforce(&path, bound);
            }
            Msg::Rescan => index = None,
            Msg::Flush(done) => {
                let _ = done.send(());
            }
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
    async fn the_keeper_keeps_the_newest_per_task_and_fits_the_cap() {
        let root = std::env::temp_dir().join(format!("moonpilot-prune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let task = root.join("1");
        let other = root.join("2");
        std::fs::create_dir_all(&task).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        // Another task's files, an hour older (a file system's clock may be too coarse to
        // order files written in one test).
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        for i in 0..5 {
            let path = other.join(format!("{i}.png"));
            std::fs::write(&path, [0u8; 100]).unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(hour_ago).unwrap();
        }
        // Written before the keeper started: found by its first read of data/.
        for i in 0..5 {
            std::fs::write(task.join(format!("{i}.png")), [0u8; 100]).unwrap();
        }
        std::fs::write(task.join("req-1.png"), [0u8; 100]).unwrap();
        let count = |d: &Path| std::fs::read_dir(d).unwrap().count();
        let limit = Duration::from_secs(5);
        let keeper = Keeper::start(
            root.clone(),
            Bound {
                keep_per_task: 4,
                max_bytes: u64::MAX,
            },
        );
        std::fs::write(task.join("5.png"), [0u8; 100]).unwrap();
        keeper.written(&task.join("5.png"), 100);
        keeper.flush(limit).await;
        assert_eq!(count(&task), 5, "four numbered files and the request image");
        assert!(task.join("5.png").exists() && !task.join("0.png").exists());
        assert!(task.join("req-1.png").exists(), "not evidence");
        assert_eq!(
            count(&other),
            5,
            "another task's files are not its business"
        );
        // Files known to the index only: the second write reads nothing from disk.
        std::fs::write(task.join("6.png"), [0u8; 100]).unwrap();
        keeper.written(&task.join("6.png"), 100);
        keeper.flush(limit).await;
        assert!(!task.join("2.png").exists() && task.join("6.png").exists());

        let keeper = Keeper::start(
            root.clone(),
            Bound {
                keep_per_task: 4,
                max_bytes: 500,
            },
        );
        std::fs::write(task.join("7.png"), [0u8; 100]).unwrap();
        keeper.written(&task.join("7.png"), 100);
        keeper.flush(limit).await;
        let total = count(&task) - 1 + count(&other);
        assert_eq!(total, 5, "500 bytes hold five files");
        assert!(task.join("7.png").exists(), "the newest stays");
        assert_eq!(
            count(&other),
            1,
            "the oldest go first, whichever task they are of"
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn the_index_forgets_emptied_directories_and_replaces_a_rewritten_file() {
        let root = std::env::temp_dir().join(format!("moonpilot-index-{}", std::process::id()));
        let t = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_000 + s);
        let mut idx = Index::default();
        for task in 1..=3u64 {
            for seq in 1..=2u64 {
                let path = root.join(task.to_string()).join(format!("{seq}.png"));
                idx.insert(&path, t(task * 10 + seq), 10);
            }
        }
        // A file written again under the same path counts once, with its new size.
        idx.insert(&root.join("3").join("2.png"), t(40), 30);
        assert_eq!((idx.total, idx.dirs.len(), idx.by_age.len()), (80, 3, 3));
        // Files that are not on disk: deleting them only updates the index.
        let written = root.join("3").join("2.png");
        idx.enforce(
            &written,
            Bound {
                keep_per_task: 10,
                max_bytes: 45,
            },
        );
        assert_eq!(idx.total, 40, "the two oldest directories went, whole");
        assert_eq!(
            (idx.dirs.len(), idx.by_age.len()),
            (1, 1),
            "and are forgotten"
        );
        assert!(idx.dirs.contains_key(&root.join("3")));
    }

    #[tokio::test]
    async fn a_task_keeps_its_highest_numbers_whatever_order_they_were_written_in() {
        let root = std::env::temp_dir().join(format!("moonpilot-order-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let task = root.join("1");
        std::fs::create_dir_all(&task).unwrap();
        let keeper = Keeper::start(
            root.clone(),
            Bound {
                keep_per_task: 4,
                max_bytes: u64::MAX,
            },
        );
        // Back-to-back reads: each state file is written at once, each screenshot later.
        let names: Vec<String> = (1..=4)
            .map(|s| format!("{s}.txt"))
            .chain((1..=4).map(|s| format!("{s}.png")))
            .collect();
        for name in &names {
            keeper.save(&task.join(name), &[0u8; 10]).await.unwrap();
        }
        keeper.flush(Duration::from_secs(5)).await;
        let mut left: Vec<String> = std::fs::read_dir(&task)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["3.png", "3.txt", "4.png", "4.txt"]);
        let _ = std::fs::remove_dir_all(&root);
    }
}
