//! Where the engine's files go and how much of them it keeps (PROTOCOL.md §18 "Where files
//! go"): the state directory, and the bound on evidence (`data/<task>/…`) — the newest N files
//! per task and a size cap over all of `data/`, both in `EngineConfig`; `cleanup` removes the
//! rest on demand.
//!
//! The state directory is `--state-dir DIR`, else `$MOONPILOT_STATE_DIR`, else
//! `$XDG_STATE_HOME/moonpilot`, else `~/.local/state/moonpilot`; never the current directory.
//! Pruning runs on the keeper's own thread from an index it keeps in memory ([`Keeper`]), never
//! on the path of a command, and never fails one.

use std::collections::{BTreeSet, HashMap};
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
/// that finds `path` finds it complete.
async fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let part = path.with_file_name(format!(".{name}.part"));
    let mut done = tokio::fs::write(&part, bytes).await;
    if done.is_ok() {
        done = tokio::fs::rename(&part, path).await;
    }
    if done.is_err() {
        let _ = tokio::fs::remove_file(&part).await;
    }
    done
}

/// The retention key of a file over all of `data/`, oldest first: time written, then the
/// leading number of its name (`12.png`, `12.txt`; files written in the same tick), then the
/// path.
type Key = (SystemTime, u64, PathBuf);

/// The order of a task directory's files, oldest first: the leading number of the name (the
/// receipt's `seq`: a read's state file is written at once and its screenshot later, behind
/// the tab's other captures, so the time written would keep four screenshots and no state
/// file), then the time written, then the path. Task ids never repeat, so neither do a
/// directory's numbers.
type DirKey = (u64, SystemTime, PathBuf);

fn dir_key(key: &Key) -> DirKey {
    (key.1, key.0, key.2.clone())
}

/// The leading number of an evidence file's name; `None` for a name that does not start with
/// one (a human-input request's image `<requestId>.png` lives as long as its request and is not
/// evidence).
fn seq_of(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// What retention needs to know of `data/`, in memory: every numbered file's key and size, per
/// task directory and over all of them. Loaded from disk once (and again now and then, see
/// [`RESCAN_AFTER`]), then kept up to date by the files the engine writes, so that no command
/// ever walks the state directory.
#[derive(Default)]
struct Index {
    all: BTreeSet<Key>,
    per_dir: HashMap<PathBuf, BTreeSet<DirKey>>,
    by_path: HashMap<PathBuf, (Key, u64)>,
    total: u64,
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
                let Some(seq) = seq_of(&path) else { continue };
                let Ok(meta) = file.metadata() else { continue };
                if meta.is_file() {
                    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    index.insert((modified, seq, path), meta.len());
                }
            }
        }
        index
    }

    fn insert(&mut self, key: Key, size: u64) {
        self.remove(&key.2.clone());
        let dir = key.2.parent().map(Path::to_path_buf).unwrap_or_default();
        self.per_dir.entry(dir).or_default().insert(dir_key(&key));
        self.all.insert(key.clone());
        self.total += size;
        self.by_path.insert(key.2.clone(), (key, size));
    }

    fn remove(&mut self, path: &Path) {
        let Some((key, size)) = self.by_path.remove(path) else {
            return;
        };
        self.all.remove(&key);
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if let Some(set) = self.per_dir.get_mut(&dir) {
            set.remove(&dir_key(&key));
            if set.is_empty() {
                self.per_dir.remove(&dir);
            }
        }
        self.total = self.total.saturating_sub(size);
    }

    /// Deletes what `bound` does not keep after `written` was added: in its directory, all but
    /// the `keep_per_task` highest-numbered files (a late screenshot of an old read goes too);
    /// then, over all of `data/`, the oldest files until the total fits `max_bytes` (`written`
    /// stays). Errors are ignored: a file
    /// another process removed is gone either way.
    fn enforce(&mut self, written: &Path, bound: Bound) {
        let keep = bound.keep_per_task.max(1);
        let dir = written.parent().map(Path::to_path_buf).unwrap_or_default();
        let surplus: Vec<PathBuf> = self.per_dir.get(&dir).map_or_else(Vec::new, |set| {
            let extra = set.len().saturating_sub(keep);
            set.iter().map(|k| &k.2).take(extra).cloned().collect()
        });
        for path in surplus {
            self.delete(&path);
        }
        while self.total > bound.max_bytes {
            let Some(oldest) = self
                .all
                .iter()
                .map(|k| &k.2)
                .find(|p| *p != written)
                .cloned()
            else {
                break;
            };
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
                let seq = seq_of(&path).unwrap_or(0);
                idx.insert((SystemTime::now(), seq, path.clone()), size);
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
        for i in 0..5 {
            std::fs::write(other.join(format!("{i}.png")), [0u8; 100]).unwrap();
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
