//! Each door carries its trust (DESIGN.md): a caller comes in through a door — a local script
//! (`run`, `repl`, `watch`: the user's own code), the seed's HTTP port, MCP (stdio or HTTP),
//! Splash's port — and the door's [`Trust`] travels with every command it sends (on the
//! [`Executor`](crate::Executor) handle, so a Lua plan sent through a door keeps its rule for
//! every command it issues). This module is the one place that answers, for a door:
//! - which Lua libraries a script gets ([`Libraries`]);
//! - which files a parameter may read or write ([`Trust::read`], [`Trust::write`]);
//! - which URL schemes may open ([`Trust::url`]);
//! - which `Host` and `Origin` values an HTTP door answers, and which bodies ([`http`]).
//!
//! Handlers ask it; none keeps a rule of its own. Every rule is an allow-list: a confined door
//! names the directories a path may resolve into (after `..` and symlinks) and the schemes a URL
//! may use; everything else is refused, and a path outside and a path that does not exist get
//! the same answer, so nothing about which files exist leaks.

pub mod http;

use std::path::{Component, Path, PathBuf};

use crate::error::CommandError;

/// The flag that widens a confined door's file rule (MCP and the seed port), named as
/// @playwright/mcp names it.
pub const UNRESTRICTED_FLAG: &str = "--allow-unrestricted-file-access";
/// The flag that widens the Splash port's schemes.
pub const SPLASH_SCHEMES_FLAG: &str = "--splash-allowed-schemes";
/// Splash's default allowed schemes (its `--allowed-schemes`).
pub const SPLASH_SCHEMES: &[&str] = &["http", "https", "data", "ftp", "sftp", "ws", "wss"];
/// What a confined door (MCP, the seed port off loopback) may open besides `file:`.
const WEB_SCHEMES: &[&str] = &["http", "https", "data", "blob"];

/// The ways in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// A local script: `moonpilot run`, `repl`, `watch` of the user's own file.
    Local,
    /// The seed's HTTP protocol (`serve`, `repl --serve`).
    Seed,
    /// MCP, over stdio or HTTP.
    Mcp,
    /// Splash's HTTP API.
    Splash,
}

impl Door {
    /// The door's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Door::Local => "a local script",
            Door::Seed => "the seed port",
            Door::Mcp => "MCP",
            Door::Splash => "the Splash port",
        }
    }
}

/// What a Lua script sent through a door is built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Libraries {
    /// The whole language (the user's own code on the user's own machine).
    Full,
    /// The allow-listed sandbox (`lua/sandbox.rs`): no `io`, no `os` but its clock, no `debug`,
    /// no file searchers, text chunks only.
    Sandbox,
}

/// Where a relative path given to a file parameter resolves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relative {
    /// Against the working directory, as Playwright's `set_input_files` and `screenshot(path=)`
    /// do (local scripts).
    WorkingDir,
    /// Against this directory (MCP: the first workspace root).
    Dir(PathBuf),
    /// As the seed does: an upload's name in the staging directory, an output's plain file
    /// name in the task's data directory.
    Seed,
}

/// The file rule of a door.
#[derive(Debug, Clone)]
enum Files {
    /// Any file the process may read or write.
    Open,
    /// Only inside these directories (after `..` and symlinks are resolved).
    Confined {
        reads: Vec<PathBuf>,
        writes: Vec<PathBuf>,
    },
}

/// What a `file:` URL may do at a door.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileUrls {
    /// Opens, whatever it names.
    Open,
    /// A read: allowed only where a file parameter may read.
    AsRead,
    /// Refused.
    Refused,
}

/// A door's rules: what its scripts get, what its file params may touch, what its URLs may
/// open. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Trust {
    door: Door,
    libraries: Libraries,
    files: Files,
    relative: Relative,
    /// The schemes a URL may use (`about:blank` always may); `None`: any.
    schemes: Option<Vec<String>>,
    file_urls: FileUrls,
}

impl Default for Trust {
    fn default() -> Self {
        Trust::local()
    }
}

impl Trust {
    /// A local script: the whole language, any file, relative paths against the working
    /// directory, any URL.
    pub fn local() -> Trust {
        Trust {
            door: Door::Local,
            libraries: Libraries::Full,
            files: Files::Open,
            relative: Relative::WorkingDir,
            schemes: None,
            file_urls: FileUrls::Open,
        }
    }

    /// The seed port. On loopback (`confined` false) the seed's semantics stand: any path,
    /// relative names in the staging and data directories, any URL. Bound off loopback, reads
    /// are confined to the upload staging directory, writes to the engine's data directory
    /// (`data/` of the state directory), `file:` URLs are refused and only web schemes open,
    /// unless `unrestricted`. Lua recipes run in the sandbox either way.
    pub fn seed(confined: bool, unrestricted: bool, data: &Path, upload: &Path) -> Trust {
        let mut trust = Trust {
            door: Door::Seed,
            libraries: Libraries::Sandbox,
            files: Files::Open,
            relative: Relative::Seed,
            schemes: None,
            file_urls: FileUrls::Open,
        };
        if confined {
            trust.schemes = Some(strings(WEB_SCHEMES));
            if !unrestricted {
                trust.files = Files::Confined {
                    reads: vec![upload.to_path_buf()],
                    writes: vec![data.to_path_buf()],
                };
                trust.file_urls = FileUrls::Refused;
            } else {
                trust.schemes = Some(strings(&["http", "https", "data", "blob", "file"]));
            }
        }
        trust
    }

    /// MCP: reads and writes inside the client's workspace `roots` (the working directory
    /// when the client offers none) and the engine's own places in the state directory
    /// (`engine`: its data and upload directories); a relative path against the first root;
    /// `file:` URLs are reads; web schemes only. `unrestricted` opens files and `file:`.
    pub fn mcp(roots: &[PathBuf], unrestricted: bool, engine: &[PathBuf]) -> Trust {
        let roots: Vec<PathBuf> = if roots.is_empty() {
            std::env::current_dir().map(|d| vec![d]).unwrap_or_default()
        } else {
            roots.to_vec()
        };
        let relative = roots
            .first()
            .map(|r| Relative::Dir(r.clone()))
            .unwrap_or(Relative::WorkingDir);
        let mut places = roots;
        places.extend(engine.iter().cloned());
        let mut schemes = strings(WEB_SCHEMES);
        schemes.push("file".into());
        Trust {
            door: Door::Mcp,
            libraries: Libraries::Sandbox,
            files: if unrestricted {
                Files::Open
            } else {
                Files::Confined {
                    reads: places.clone(),
                    writes: places,
                }
            },
            relative,
            schemes: Some(schemes),
            file_urls: if unrestricted {
                FileUrls::Open
            } else {
                FileUrls::AsRead
            },
        }
    }

    /// The Splash port: the sandbox, no file reads or writes by path, and only `schemes`
    /// (Splash's defaults unless `--splash-allowed-schemes` widened them; `file` among them
    /// opens any local file, as in Splash).
    pub fn splash(schemes: &[String]) -> Trust {
        let schemes: Vec<String> = schemes.iter().map(|s| s.to_ascii_lowercase()).collect();
        let file_urls = if schemes.iter().any(|s| s == "file") {
            FileUrls::Open
        } else {
            FileUrls::Refused
        };
        Trust {
            door: Door::Splash,
            libraries: Libraries::Sandbox,
            files: Files::Confined {
                reads: Vec::new(),
                writes: Vec::new(),
            },
            relative: Relative::Seed,
            schemes: Some(schemes),
            file_urls,
        }
    }

    /// The door.
    pub fn door(&self) -> Door {
        self.door
    }

    /// What a script sent through this door gets.
    pub fn libraries(&self) -> Libraries {
        self.libraries
    }

    /// Where a relative path resolves.
    pub fn relative(&self) -> &Relative {
        &self.relative
    }

    /// `raw` made absolute by this door's rule for relative paths; `None` for the seed's own
    /// semantics (the command resolves it: staging or data directory).
    pub fn absolute(&self, raw: &Path) -> Option<PathBuf> {
        if raw.is_absolute() {
            return Some(normalise(raw));
        }
        match &self.relative {
            Relative::WorkingDir => std::path::absolute(raw).ok().map(|p| normalise(&p)),
            Relative::Dir(dir) => Some(normalise(&dir.join(raw))),
            Relative::Seed => None,
        }
    }

    /// Whether file params are confined here.
    pub fn confined(&self) -> bool {
        matches!(self.files, Files::Confined { .. })
    }

    /// The file a read param (`upload_file`'s `path`, `ocr_image`'s `path`, a `file:` URL)
    /// may read: `path` (absolute) itself where files are open; where they are confined, its
    /// real path (`..` and symlinks resolved) when that lies inside an allowed place, else
    /// `INVALID_ARGUMENT` naming `param`, the places and the flag — the same answer for a
    /// file that does not exist.
    pub async fn read(&self, param: &str, path: &Path) -> Result<PathBuf, CommandError> {
        let Files::Confined { reads, .. } = &self.files else {
            return Ok(path.to_path_buf());
        };
        match tokio::fs::canonicalize(path).await {
            Ok(real) if inside_any(&real, reads).await => Ok(real),
            _ => Err(self.refusal(param, path, "read", reads)),
        }
    }

    /// `execute_js`'s `bodyFile`, already joined to its directory `root` (`scripts/js` of the
    /// working directory, the server's own published scripts): where files are confined, its
    /// real path must lie inside `root`'s, so a symlink there cannot read elsewhere.
    pub async fn script_file(
        &self,
        param: &str,
        path: &Path,
        root: &Path,
    ) -> Result<PathBuf, CommandError> {
        if !self.confined() {
            return Ok(path.to_path_buf());
        }
        let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
        match tokio::fs::canonicalize(path).await {
            Ok(real) if inside_any(&real, std::slice::from_ref(&root)).await => Ok(real),
            _ => Err(self.refusal(param, path, "read", &[root])),
        }
    }

    /// The file a write param (`screenshot`'s, `get_element_screenshot`'s and `pdf`'s `path`)
    /// may write: `path` (absolute) where files are open; where they are confined, the file in
    /// its directory's real path when that lies inside an allowed place (and, when the file is
    /// already there, its own real path too: a symlink out is refused), else `INVALID_ARGUMENT`
    /// as for [`Trust::read`].
    pub async fn write(&self, param: &str, path: &Path) -> Result<PathBuf, CommandError> {
        let Files::Confined { writes, .. } = &self.files else {
            return Ok(path.to_path_buf());
        };
        let refuse = || self.refusal(param, path, "write", writes);
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(refuse());
        };
        let Ok(dir) = tokio::fs::canonicalize(parent).await else {
            return Err(refuse());
        };
        let file = dir.join(name);
        let real = match tokio::fs::symlink_metadata(&file).await {
            Ok(_) => tokio::fs::canonicalize(&file).await.map_err(|_| refuse())?,
            Err(_) => file,
        };
        if inside_any(&real, writes).await {
            Ok(real)
        } else {
            Err(refuse())
        }
    }

    /// Whether `url` may open at this door: its scheme on the door's list (`about:blank` on
    /// every list), and a `file:` URL as the door says (open, a read, or refused).
    pub async fn url(&self, param: &str, url: &str) -> Result<(), CommandError> {
        let scheme = url
            .split_once(':')
            .map(|(s, _)| s.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let blank = scheme == "about" && is_about_blank(url);
        if let Some(list) = &self.schemes {
            if !blank && !list.contains(&scheme) {
                let mut allowed = list.join(", ");
                allowed.push_str(", about:blank");
                return Err(CommandError::invalid(
                    param,
                    format!(
                        "param `{param}`: the `{scheme}:` scheme is not allowed through {} (allowed: {allowed}){}",
                        self.door.name(),
                        self.widen_hint(scheme == "file"),
                    ),
                ));
            }
        }
        if scheme != "file" {
            return Ok(());
        }
        match self.file_urls {
            FileUrls::Open => Ok(()),
            FileUrls::Refused => Err(CommandError::invalid(
                param,
                format!(
                    "param `{param}`: `file:` URLs are not opened through {}{}",
                    self.door.name(),
                    self.widen_hint(true)
                ),
            )),
            FileUrls::AsRead => {
                let path = url::Url::parse(url)
                    .ok()
                    .and_then(|u| u.to_file_path().ok())
                    .unwrap_or_default();
                // A file, not a directory: a directory's listing links to its parent, and
                // Chromium lets a `file:` page open any other `file:` URL.
                let real = self.read(param, &path).await?;
                if tokio::fs::metadata(&real).await.is_ok_and(|m| m.is_file()) {
                    Ok(())
                } else {
                    let places = match &self.files {
                        Files::Confined { reads, .. } => reads.clone(),
                        Files::Open => Vec::new(),
                    };
                    Err(self.refusal(param, &path, "read", &places))
                }
            }
        }
    }

    fn widen_hint(&self, files: bool) -> String {
        match self.door {
            Door::Splash => format!("; start the server with {SPLASH_SCHEMES_FLAG} to widen it"),
            Door::Mcp | Door::Seed if files => {
                format!("; start the server with {UNRESTRICTED_FLAG} to allow local files")
            }
            _ => String::new(),
        }
    }

    fn refusal(&self, param: &str, path: &Path, verb: &str, places: &[PathBuf]) -> CommandError {
        let places = if places.is_empty() {
            "none".to_string()
        } else {
            places
                .iter()
                .map(|p| format!("`{}`", p.display()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        CommandError::invalid(
            param,
            format!(
                "param `{param}`: `{}` is not a file {} may {verb}: it must exist inside the allowed places ({places}){}",
                path.display(),
                self.door.name(),
                match self.door {
                    Door::Splash => String::new(),
                    _ => format!("; start the server with {UNRESTRICTED_FLAG} to lift this"),
                }
            ),
        )
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// `about:blank`, with or without a query or fragment.
fn is_about_blank(url: &str) -> bool {
    let rest = url.get(6..).unwrap_or_default();
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    rest[..end].eq_ignore_ascii_case("blank")
}

/// Whether `real` (a real path) lies inside one of `places` (each taken by its real path when
/// it exists, as given otherwise).
async fn inside_any(real: &Path, places: &[PathBuf]) -> bool {
    for place in places {
        let place = tokio::fs::canonicalize(place)
            .await
            .unwrap_or_else(|_| normalise(place));
        if real.starts_with(&place) {
            return true;
        }
    }
    false
}

/// `path` with `.` and `..` taken out lexically (no file system).
pub fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_confined_door_reads_inside_its_places_only_and_says_the_same_for_missing_files() {
        let base = std::env::temp_dir().join(format!("mp-door-{}", std::process::id()));
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("in.txt"), "in").unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        let _ = std::fs::remove_file(root.join("link"));
        std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("link")).unwrap();
        let trust = Trust::mcp(std::slice::from_ref(&root), false, &[base.join("state")]);
        run(async {
            assert!(trust.read("path", &root.join("in.txt")).await.is_ok());
            let escape = trust
                .read("path", &root.join("../outside/secret.txt"))
                .await
                .unwrap_err();
            let missing = trust
                .read("path", &root.join("../outside/nothing.txt"))
                .await
                .unwrap_err();
            assert_eq!(escape.param.as_deref(), Some("path"));
            assert!(escape.msg.contains(UNRESTRICTED_FLAG), "{}", escape.msg);
            // The same words for a file that is there and one that is not.
            let shape = |m: &str| m.replace("secret.txt", "X").replace("nothing.txt", "X");
            assert_eq!(shape(&escape.msg), shape(&missing.msg));
            assert!(trust.read("path", &root.join("link")).await.is_err());
            assert!(trust.write("path", &root.join("new.png")).await.is_ok());
            assert!(trust.write("path", &root.join("link")).await.is_err());
            assert!(trust.write("path", &outside.join("new.png")).await.is_err());
            assert!(trust
                .write("path", &base.join("nodir/x.png"))
                .await
                .is_err());
            let url = format!("file://{}", root.join("in.txt").display());
            assert!(trust.url("url", &url).await.is_ok());
            let dir = format!("file://{}/", root.display());
            assert!(
                trust.url("url", &dir).await.is_err(),
                "a directory's listing"
            );
            let url = format!("file://{}", outside.join("secret.txt").display());
            assert!(trust.url("url", &url).await.is_err());
            assert!(trust
                .url("url", "view-source:https://a.test/")
                .await
                .is_err());
            assert!(trust.url("url", "chrome://settings").await.is_err());
            assert!(trust.url("url", "about:blank").await.is_ok());
            assert!(trust.url("url", "about:settings").await.is_err());
            let open = Trust::mcp(std::slice::from_ref(&root), true, &[base.join("state")]);
            assert!(open.read("path", &outside.join("secret.txt")).await.is_ok());
        });
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn splash_refuses_what_splash_refuses() {
        let trust = Trust::splash(&strings(SPLASH_SCHEMES));
        run(async {
            assert!(trust.url("url", "https://a.test/").await.is_ok());
            assert!(trust.url("url", "data:text/html,hi").await.is_ok());
            let e = trust.url("url", "file:///etc/passwd").await.unwrap_err();
            assert!(e.msg.contains(SPLASH_SCHEMES_FLAG), "{}", e.msg);
            assert!(trust.url("url", "FILE:///etc/passwd").await.is_err());
            assert!(trust.url("url", "javascript:alert(1)").await.is_err());
        });
        let widened = Trust::splash(&strings(&["http", "file"]));
        run(async {
            assert!(widened.url("url", "file:///etc/hostname").await.is_ok());
        });
    }

    #[test]
    fn local_scripts_and_the_loopback_seed_port_keep_the_whole_machine() {
        run(async {
            for trust in [
                Trust::local(),
                Trust::seed(false, false, Path::new("/s"), Path::new("/s/upload")),
            ] {
                assert!(trust.read("path", Path::new("/etc/hostname")).await.is_ok());
                assert!(trust.url("url", "file:///etc/hostname").await.is_ok());
            }
            let off = Trust::seed(true, false, Path::new("/s"), Path::new("/s/upload"));
            assert!(off.read("path", Path::new("/etc/hostname")).await.is_err());
            assert!(off.url("url", "file:///etc/hostname").await.is_err());
            let wide = Trust::seed(true, true, Path::new("/s"), Path::new("/s/upload"));
            assert!(wide.url("url", "file:///etc/hostname").await.is_ok());
        });
        assert_eq!(Trust::local().libraries(), Libraries::Full);
        assert_eq!(
            Trust::seed(false, false, Path::new("/s"), Path::new("/u")).libraries(),
            Libraries::Sandbox
        );
    }
}
