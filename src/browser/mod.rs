//! Everything that touches chromiumoxide: launching or attaching to Chromium, the CDP pump,
//! tabs, frames and event pumps.
//!
//! One shared [`Browser`] serves every task. Exactly one tokio task polls chromiumoxide's
//! `Handler` (see [`Browser::launch`]); it logs undecodable messages and carries on, and when the
//! stream ends it publishes "browser gone" on a `watch` channel so that every pending and later
//! command fails fast with `BROWSER_GONE`. Commands never see chromiumoxide types: they go through
//! [`Tab`] and [`task::Task`].

pub mod breaker;
pub mod cdp_error;
pub mod downloads;
pub mod endpoint;
pub mod events;
pub mod grid;
pub mod mux;
pub mod netlog;
pub mod netwatch;
pub mod raw;
pub mod routes;
pub mod settings;
pub mod tab;
pub mod task;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chromiumoxide::browser::{Browser as CdpBrowser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::target::CreateTargetParams;
use chromiumoxide::handler::viewport::Viewport;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::{watch, OnceCell, RwLock};

use crate::error::{CommandError, StartError};

pub use tab::{FrameRef, Tab};

/// How to get a browser: launch Debian's Chromium or attach to a running one.
#[derive(Debug, Clone, Default)]
pub struct LaunchConfig {
    /// Explicit executable (`--chromium`); else `MOONPILOT_CHROMIUM`, else PATH.
    pub chromium: Option<PathBuf>,
    /// Show a window (`--headful`) instead of running headless.
    pub headful: bool,
    /// A persistent profile directory (`--profile`); else a fresh one per browser, removed on exit.
    pub profile: Option<PathBuf>,
    /// Attach to this browser (`ws://…` or `http://…`) instead of launching.
    pub cdp_url: Option<String>,
    /// Ask this Selenium Grid 4 (`http://HOST:4444`) for a browser instead (`--grid`).
    pub grid_url: Option<String>,
    /// How long an endpoint may keep the connection waiting before it opens a browser
    /// (`--cdp-wait`; a fleet queues connections past its limit). `None`: [`CDP_WAIT`].
    pub cdp_wait: Option<Duration>,
    /// How long a tab's page may take to answer one CDP command before the command counts as
    /// unanswered (`None`: chromiumoxide's own 30 s). Tests shorten it.
    pub page_answer_timeout: Option<Duration>,
    /// Where a launched browser's downloads go (`downloads/` of the state directory); `None`:
    /// the browser's own default.
    pub download_dir: Option<PathBuf>,
}

/// How long an endpoint may keep a connection waiting for a browser by default.
pub const CDP_WAIT: Duration = Duration::from_secs(60);

impl LaunchConfig {
    /// How long an endpoint may keep the connection waiting for a browser.
    pub fn cdp_wait(&self) -> Duration {
        self.cdp_wait.unwrap_or(CDP_WAIT)
    }

    /// How long a page may take to answer one CDP command.
    pub fn page_answer_timeout(&self) -> Duration {
        self.page_answer_timeout
            .unwrap_or(cdp_error::CDP_REQUEST_TIMEOUT)
    }
}

/// The viewport every tab gets, in CSS pixels.
pub const VIEWPORT: (u32, u32) = (1280, 800);

/// How the shared browser came to be.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Launched by us.
    Managed {
        /// The executable.
        executable: PathBuf,
        /// Chromium's process id.
        pid: Option<u32>,
        /// The profile directory.
        profile_dir: PathBuf,
        /// Whether we remove the profile on stop.
        temporary: bool,
        /// Whether the profile had content before launch.
        profile_seen_before: bool,
        /// Chromium's temporary directory (`TMPDIR`) and the launcher's pid file.
        run_dir: PathBuf,
    },
    /// Attached over `--cdp-url`.
    Attached {
        /// The URL given, as shown (a token masked).
        url: String,
    },
}

/// The shared browser.
pub struct Browser {
    cdp: RwLock<Option<CdpBrowser>>,
    alive: watch::Receiver<bool>,
    runtime: tokio::runtime::Handle,
    ws_url: String,
    raw: OnceCell<Arc<raw::RawConnection>>,
    /// The one socket to a browser we attached to, shared with chromiumoxide.
    mux: Option<mux::Mux>,
    /// Why the connection ended, when something said so (a remote endpoint's session timeout).
    gone_reason: Arc<std::sync::Mutex<Option<String>>>,
    /// CDP messages chromiumoxide could not decode (protocol drift), skipped.
    undecoded: Arc<AtomicU64>,
    /// The task polling chromiumoxide's handler; aborting it drops the handler's socket.
    pump: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    watchdog: std::sync::Mutex<Option<tokio::process::Child>>,
    /// The Selenium Grid session this browser is (`--grid`), deleted when it stops.
    grid: std::sync::Mutex<Option<grid::GridSession>>,
    /// Tasks started on it (the engine recycles it after `--recycle-after`).
    tasks_started: AtomicU64,
    /// Its last memory reading (MiB) and when, read at most every [`MEMORY_EVERY`].
    memory: std::sync::Mutex<Option<(Instant, u64)>>,
    /// How it was obtained.
    pub mode: Mode,
    /// Whether it runs headless.
    pub headless: bool,
    /// `Browser.getVersion` product string.
    pub product: String,
    /// How long a page may take to answer one CDP command ([`LaunchConfig::page_answer_timeout`]).
    pub answer_bound: Duration,
    /// `Browser.getVersion` protocol version.
    pub protocol_version: String,
    /// Where its pages' downloads go (a browser we launched: the engine's download
    /// directory; an attached one keeps its own, on its machine).
    download_dir: std::sync::OnceLock<PathBuf>,
    /// Set once the default browser context sends its downloads there.
    downloads_on: OnceCell<()>,
}

/// How long a popup is held for the task that owns its opener before the browser lets it run
/// anyway (its adoption failed, or no task owns it).
const POPUP_HOLD: Duration = Duration::from_secs(5);

/// Has `conn` hold every new page before its first request ([`raw::RawConnection::pause_new_pages`])
/// and resumes what no task will: at once a page that no page of this engine opened (its own
/// new tabs, another engine's pages on a shared browser), a popup of one of its pages after
/// [`POPUP_HOLD`] (its task resumes it as soon as its settings are on). Without
/// the hold (an endpoint that refuses it), popups are adopted as they load.
async fn hold_new_pages(conn: &Arc<raw::RawConnection>, runtime: &tokio::runtime::Handle) {
    use tokio::sync::broadcast::error::RecvError;
    // Subscribed before the hold starts: no held page goes unseen.
    let mut targets = conn.targets();
    let weak = Arc::downgrade(conn);
    let spawner = runtime.clone();
    runtime.spawn(async move {
        loop {
            let (target, opener, session) = match targets.recv().await {
                Ok(raw::TargetEvent::Paused {
                    target,
                    opener,
                    session,
                }) => (target, opener, session),
                Ok(raw::TargetEvent::Gone { target }) => {
                    if let Some(conn) = weak.upgrade() {
                        conn.forget_page(&target);
                    }
                    continue;
                }
                Ok(_) => continue,
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!("{n} target events were missed; held pages among them wait");
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            let Some(conn) = weak.upgrade() else { return };
            // A popup of one of our pages waits for its task; it is ours too (its own popups).
            let ours = opener.as_deref().is_some_and(|o| conn.owns_page(o));
            if ours {
                conn.note_page(&target);
            }
            spawner.spawn(async move {
                let bound = Duration::from_secs(5);
                if ours {
                    // Its task lets it go; this only makes sure it runs.
                    tokio::time::sleep(POPUP_HOLD).await;
                    let _ = tokio::time::timeout(bound, conn.resume(&session)).await;
                } else {
                    let _ = tokio::time::timeout(bound, conn.let_go(&session)).await;
                }
            });
        }
    });
    match tokio::time::timeout(Duration::from_secs(5), conn.pause_new_pages()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("popups load before their task's settings apply: {}", e.msg),
        Err(_) => tracing::warn!("popups load before their task's settings apply: no answer"),
    }
}

/// Launch args measured to work on this machine (CDP-NOTES.md), without the leading `--`.
///
/// Not among them, measured (issue 22, `cargo bench --bench step`): Playwright's
/// `enable-features=CDPScreenshotNewSurface` makes a viewport capture 28 ms instead of 43, but a
/// state read while a click's capture is in flight then costs 35 ms instead of 20, and the
/// agent step 76 ms instead of 61.
pub const LAUNCH_ARGS: &[&str] = &[
    "disable-gpu",
    "disable-quic",
    "no-first-run",
    "disable-background-networking",
    "disable-component-update",
    "disable-sync",
    "disable-dev-shm-usage",
    "hide-scrollbars",
    "mute-audio",
    // `navigator.webdriver` is false from the first document on (each tab's init script does
    // the same on browsers we attach to).
    "disable-blink-features=AutomationControlled",
];

/// Chromium features switched off (merged into chromiumoxide's own `--disable-features`): the
/// background services of a desktop browser that a headless automation browser never uses, as
/// Playwright switches them off. `AimEnabled` matters most: Chromium 156 builds an omnibox
/// popup WebUI (`omnibox_popup_aim.html`) for every window, kept in a renderer of its own that
/// grew to 890 MB and half a core over the test suite (11 windows' worth), slowing everything
/// else on a two-core machine.
const DISABLED_FEATURES: &[&str] = &[
    "AimEnabled",
    "LensOverlay",
    "MediaRouter",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "PreconnectToSearch",
    "SpareRendererForSitePerProcess",
];

static PROFILE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How often a browser's memory is read again ([`Browser::memory_mb`]).
const MEMORY_EVERY: Duration = Duration::from_secs(5);

/// The memory (MiB, proportional set size; resident where that is not readable) of the
/// processes in process group `pgid` (Chromium and its helpers), from `/proc` (`None` where
/// there is no `/proc`).
fn group_rss_mb(pgid: u32) -> Option<u64> {
    let page = 4096u64;
    let mut pages = 0u64;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`: the command may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let group = after
            .split_whitespace()
            .nth(2)
            .and_then(|g| g.parse::<u32>().ok());
        if group != Some(pgid) {
            continue;
        }
        // Proportional (shared pages split among their users): resident sizes summed would
        // count Chromium's shared memory once per process.
        let pss_kb = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("Pss:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            });
        match pss_kb {
            Some(kb) => pages += kb * 1024 / page,
            None => {
                let rss = std::fs::read_to_string(format!("/proc/{pid}/statm"))
                    .ok()
                    .and_then(|m| {
                        m.split_whitespace()
                            .nth(1)
                            .and_then(|r| r.parse::<u64>().ok())
                    });
                pages += rss.unwrap_or(0);
            }
        }
    }
    Some(pages * page / (1024 * 1024))
}

/// Finds the Chromium executable: explicit path, `MOONPILOT_CHROMIUM`, then PATH.
pub fn find_chromium(explicit: Option<&Path>) -> Result<PathBuf, StartError> {
    let mut tried = Vec::new();
    if let Some(p) = explicit {
        if p.is_file() {
            return Ok(p.to_path_buf());
        }
        tried.push(p.to_path_buf());
        return Err(StartError::NotFound { tried });
    }
    if let Some(p) = std::env::var_os("MOONPILOT_CHROMIUM") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        tried.push(p);
        return Err(StartError::NotFound { tried });
    }
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ];
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in names {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
        tried.push(PathBuf::from(format!("{name} (on PATH)")));
    }
    Err(StartError::NotFound { tried })
}

/// The log directive that silences chromiumoxide's own lines by default: a reset socket when the
/// browser dies, events of a newer Chromium it cannot decode. They say nothing a receipt does not
/// say better; `MOONPILOT_LOG=warn,chromiumoxide=debug` shows them.
pub const QUIET_CDP_LOG: &str = "chromiumoxide=off";

/// The WebSocket library's own lines: its trace lines quote the handshake request, the token
/// in its query string with it.
const QUIET_WS_LOG: &str = "tungstenite=off,async_tungstenite=off";

/// The log directives for `given` (`MOONPILOT_LOG`; `warn` when unset): [`QUIET_CDP_LOG`] is
/// added unless a directive names chromiumoxide, so `MOONPILOT_LOG=info` stays quiet about it too.
pub fn log_directives(given: Option<&str>) -> String {
    let given = given.map(str::trim).filter(|g| !g.is_empty());
    let mut directives = given.unwrap_or("warn").to_string();
    if !directives.contains("chromiumoxide") {
        directives = format!("{directives},{QUIET_CDP_LOG}");
    }
    if !directives.contains("tungstenite") {
        directives = format!("{directives},{QUIET_WS_LOG}");
    }
    // The MCP SDK logs every tool error it answers (an unknown tool) as a warning: the client
    // already has it.
    if !directives.contains("rmcp") {
        directives = format!("{directives},rmcp::service=error");
    }
    directives
}

/// How long Chromium may take to open its DevTools endpoint (about 0.6 s here; a loaded CI
/// machine takes a few seconds).
const LAUNCH_WAIT: Duration = Duration::from_secs(10);

/// The pid the session launcher wrote, if it ran.
async fn read_pid(file: &Path) -> Option<u32> {
    tokio::fs::read_to_string(file)
        .await
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Kills the process group led by `pid` (Chromium launched in its own session: the browser, its
/// renderers and zygotes). While any member lives the group id cannot be reused.
async fn kill_group(pid: u32) {
    let _ = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(r#"kill -9 -- "-$1" 2>/dev/null; true"#)
        .arg("moonpilot-kill")
        .arg(pid.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await;
}

/// Removes `dir`, trying again for a moment while processes that are going away still write
/// into it.
async fn remove_patiently(dir: &Path) {
    for _ in 0..10 {
        match tokio::fs::remove_dir_all(dir).await {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    tracing::warn!("could not remove `{}`", dir.display());
}

/// Whether util-linux's `setsid` is on PATH.
fn has_setsid() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join("setsid").is_file()))
}

/// Writes a one-shot launcher that runs Chromium in its own session (`setsid`), so a Ctrl-C typed
/// in the terminal reaches moonpilot only: the REPL cancels the running command and the browser
/// stays. The script deletes itself before it execs, and the exec chain keeps Chromium's pid
/// (`setsid` only forks when its caller leads a process group; a spawned child does not).
/// `None` (launch Chromium directly) where `setsid` is missing.
async fn session_launcher() -> Option<PathBuf> {
    // `$$` is Chromium's pid after the exec, and the id of its process group (setsid).
    const SCRIPT: &str = "#!/bin/sh\nrm -f \"$0\"\necho $$ > \"$MOONPILOT_PIDFILE\"\nexec setsid \"$MOONPILOT_CHROMIUM_EXEC\" \"$@\"\n";
    if !has_setsid() {
        return None;
    }
    let n = PROFILE_COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("moonpilot-launch-{}-{n}", std::process::id()));
    let written = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .open(&path)
        .await;
    let mut file = written
        .map_err(|e| tracing::debug!("no session launcher: {e}"))
        .ok()?;
    use tokio::io::AsyncWriteExt;
    if file.write_all(SCRIPT.as_bytes()).await.is_err() || file.flush().await.is_err() {
        let _ = tokio::fs::remove_file(&path).await;
        return None;
    }
    Some(path)
}

/// Starts a small `sh` process that kills Chromium (and removes its temporary profile) if this
/// process dies without stopping it — a test binary's statics are never dropped, and `kill -9`
/// skips every destructor. It exits by itself once Chromium is gone.
fn spawn_watchdog(
    chromium_pid: u32,
    temporary_profile: Option<&Path>,
    run_dir: &Path,
) -> Option<tokio::process::Child> {
    // When moonpilot is gone: kill Chromium's process group (renderers and zygotes too), then
    // remove what it wrote. When Chromium went first, moonpilot cleans up itself.
    const SCRIPT: &str = r#"while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done
if ! kill -0 "$1" 2>/dev/null; then kill -9 -- "-$2" 2>/dev/null; kill -9 "$2" 2>/dev/null; sleep 1; [ -n "$3" ] && rm -rf "$3"; rm -rf "$4"; fi"#;
    let profile = temporary_profile
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    // In its own session (as Chromium), so a hangup of the terminal that kills moonpilot
    // does not take the watchdog with it.
    let mut command = if has_setsid() {
        let mut c = tokio::process::Command::new("setsid");
        c.arg("sh");
        c
    } else {
        tokio::process::Command::new("sh")
    };
    command
        .arg("-c")
        .arg(SCRIPT)
        .arg("moonpilot-watchdog")
        .arg(std::process::id().to_string())
        .arg(chromium_pid.to_string())
        .arg(profile)
        .arg(run_dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| tracing::warn!("no watchdog for the browser: {e}"))
        .ok()
}

impl Browser {
    /// Launches Chromium (or attaches, with `cdp_url`) and starts the CDP pump on the current
    /// tokio runtime.
    pub async fn start(config: &LaunchConfig) -> Result<Arc<Browser>, StartError> {
        if let Some(grid) = &config.grid_url {
            return Browser::from_grid(grid, config).await;
        }
        match &config.cdp_url {
            Some(url) => Browser::connect(url, config).await,
            None => {
                let browser = Browser::launch(config).await?;
                if let Some(dir) = &config.download_dir {
                    let _ = browser.download_dir.set(dir.clone());
                }
                Ok(browser)
            }
        }
    }

    /// Where its pages' downloads go, when it sends them somewhere of the engine's.
    pub fn download_dir(&self) -> Option<&Path> {
        self.download_dir.get().map(PathBuf::as_path)
    }

    /// Sends the downloads of browser context `context` (the default one when `None`, once)
    /// to the download directory, each under its guid until its task moves it, with events on
    /// the raw connection (`downloads.rs`). Nothing for a browser without one.
    pub async fn allow_downloads(&self, context: Option<&str>) -> Result<(), CommandError> {
        let Some(root) = self.download_dir() else {
            return Ok(());
        };
        let apply = |context: Option<String>| async move {
            let incoming = root.join(downloads::INCOMING);
            if context.is_none() {
                downloads::sweep(root).await;
            }
            tokio::fs::create_dir_all(&incoming).await.map_err(|e| {
                CommandError::failed(format!("cannot create `{}`: {e}", incoming.display()))
            })?;
            let mut params = json!({
                "behavior": "allowAndName",
                "downloadPath": incoming.display().to_string(),
                "eventsEnabled": true,
            });
            if let Some(c) = context {
                params["browserContextId"] = json!(c);
            }
            let raw = self.raw().await?;
            raw.call(None, "Browser.setDownloadBehavior", params)
                .await
                .map(drop)
        };
        match context {
            None => self
                .downloads_on
                .get_or_try_init(|| apply(None))
                .await
                .map(drop),
            Some(c) => apply(Some(c.to_string())).await,
        }
    }

    async fn launch(config: &LaunchConfig) -> Result<Arc<Browser>, StartError> {
        let t0 = Instant::now();
        let executable = find_chromium(config.chromium.as_deref())?;
        let (profile_dir, temporary) = match &config.profile {
            Some(dir) => (dir.clone(), false),
            None => {
                let n = PROFILE_COUNTER.fetch_add(1, Ordering::Relaxed);
                let dir = std::env::temp_dir()
                    .join(format!("moonpilot-profile-{}-{n}", std::process::id()));
                (dir, true)
            }
        };
        let profile_seen_before = match tokio::fs::read_dir(&profile_dir).await {
            Ok(mut entries) => entries.next_entry().await.ok().flatten().is_some(),
            Err(_) => false,
        };
        tokio::fs::create_dir_all(&profile_dir)
            .await
            .map_err(|source| StartError::Profile {
                path: profile_dir.clone(),
                source,
            })?;
        // Chromium's own temporary files (`org.chromium.Chromium.*`, which a killed browser
        // leaves behind) and the launcher's pid file go to a directory of ours, removed with
        // the browser.
        let n = PROFILE_COUNTER.fetch_add(1, Ordering::Relaxed);
        let run_dir =
            std::env::temp_dir().join(format!("moonpilot-run-{}-{n}", std::process::id()));
        tokio::fs::create_dir_all(&run_dir)
            .await
            .map_err(|source| StartError::Profile {
                path: run_dir.clone(),
                source,
            })?;
        let pid_file = run_dir.join("chromium.pid");
        let (w, h) = VIEWPORT;
        let config_for = |program: &Path| {
            let mut builder = BrowserConfig::builder()
                .chrome_executable(program)
                .env("MOONPILOT_CHROMIUM_EXEC", executable.display().to_string())
                .env("MOONPILOT_PIDFILE", pid_file.display().to_string())
                .env("TMPDIR", run_dir.display().to_string())
                .user_data_dir(&profile_dir)
                .no_sandbox()
                .surface_invalid_messages()
                .window_size(w, h)
                .viewport(Viewport {
                    width: w,
                    height: h,
                    ..Viewport::default()
                })
                // Our own deadlines bound every command; this is only chromiumoxide's fallback.
                .request_timeout(Duration::from_secs(60))
                .launch_timeout(LAUNCH_WAIT)
                .args(LAUNCH_ARGS.iter().copied())
                // No first window: every task opens its own, and chromiumoxide would attach
                // to an unused one while the first task's page starts (as Playwright does).
                .arg("no-startup-window")
                .arg(("disable-features", DISABLED_FEATURES));
            builder = if config.headful {
                builder.with_head()
            } else {
                builder.new_headless_mode()
            };
            builder.build().map_err(|reason| StartError::Launch {
                path: executable.clone(),
                reason,
            })
        };
        // Through the session launcher first; straight when that fails (say, a temp dir
        // mounted noexec), at the price of sharing the terminal's Ctrl-C.
        let mut launched = Err(String::from("not launched"));
        if let Some(launcher) = session_launcher().await {
            launched = match config_for(&launcher) {
                Ok(c) => CdpBrowser::launch(c).await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            // The launcher deletes itself once it runs; this covers the runs that never began.
            let _ = tokio::fs::remove_file(&launcher).await;
            if let Err(e) = &launched {
                tracing::info!("launch through setsid failed ({e}); launching Chromium directly");
            }
        }
        // Straight only when the launcher could not run; a program that ran and never opened
        // its endpoint would not do better the second time.
        let ran = read_pid(&pid_file).await.is_some();
        if launched.is_err() && !ran {
            launched = match config_for(&executable) {
                Ok(c) => CdpBrowser::launch(c).await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
        }
        let (cdp, handler) = match launched {
            Ok(pair) => pair,
            Err(reason) => {
                // Whatever the launcher started (a program that never became a browser, or a
                // Chromium that hung) goes, and so do its files.
                if let Some(pid) = read_pid(&pid_file).await {
                    kill_group(pid).await;
                }
                if temporary {
                    remove_patiently(&profile_dir).await;
                }
                remove_patiently(&run_dir).await;
                let reason = if reason.to_ascii_lowercase().contains("timeout")
                    || reason.to_ascii_lowercase().contains("timed out")
                {
                    format!(
                        "no DevTools endpoint within {} s ({reason}): is it Chromium? Try `{} --headless --dump-dom about:blank`",
                        LAUNCH_WAIT.as_secs(),
                        executable.display()
                    )
                } else {
                    reason
                };
                return Err(StartError::Launch {
                    path: executable.clone(),
                    reason,
                });
            }
        };
        tracing::debug!(target: "moonpilot::start", "DevTools endpoint up after {:?}", t0.elapsed());
        let mut cdp = cdp;
        let pid = cdp
            .get_mut_child()
            .and_then(|child| child.as_mut_inner().id());
        let watchdog = pid.and_then(|pid| {
            spawn_watchdog(pid, temporary.then_some(profile_dir.as_path()), &run_dir)
        });
        let mode = Mode::Managed {
            executable,
            pid,
            profile_dir,
            temporary,
            profile_seen_before,
            run_dir,
        };
        let browser = Browser::finish(
            cdp,
            handler,
            mode,
            !config.headful,
            config.page_answer_timeout(),
            None,
            Arc::default(),
        )
        .await;
        if let (Some(w), Ok(mut slot)) = (watchdog, browser.watchdog.lock()) {
            *slot = Some(w);
        }
        tracing::debug!(target: "moonpilot::start", "browser ready after {:?}", t0.elapsed());
        Ok(browser)
    }

    /// Asks Selenium Grid `grid` for a Chromium session with the engine's flags and attaches to
    /// it (`grid.rs`); the session is the browser's, deleted when it stops (or when the attach
    /// fails).
    async fn from_grid(grid: &str, config: &LaunchConfig) -> Result<Arc<Browser>, StartError> {
        let shown = endpoint::shown(grid);
        // The flags the engine launches its own Chromium with (no sandbox included, as there).
        let mut args: Vec<String> = LAUNCH_ARGS.iter().map(|a| format!("--{a}")).collect();
        args.push("--no-sandbox".into());
        args.push(format!(
            "--disable-features={}",
            DISABLED_FEATURES.join(",")
        ));
        args.push(format!("--window-size={},{}", VIEWPORT.0, VIEWPORT.1));
        if !config.headful {
            args.push("--headless=new".into());
        }
        let (session, ws) = grid::GridSession::create(grid, &args, config.cdp_wait())
            .await
            .map_err(|reason| StartError::Connect {
                url: shown.clone(),
                reason,
            })?;
        match Browser::connect(&ws, config).await {
            Ok(browser) => {
                tracing::info!("Selenium Grid {shown}: session {}", session.id);
                if let Ok(mut slot) = browser.grid.lock() {
                    *slot = Some(session);
                }
                Ok(browser)
            }
            Err(e) => {
                session.delete().await;
                Err(e)
            }
        }
    }

    /// Counts a task started on it.
    pub fn count_task(&self) {
        self.tasks_started.fetch_add(1, Ordering::Relaxed);
    }

    /// How many tasks were started on it.
    pub fn tasks_started(&self) -> u64 {
        self.tasks_started.load(Ordering::Relaxed)
    }

    /// The memory its processes hold (proportional set size, MiB): Chromium's process group, for a browser
    /// the engine launched (`None` for an attached one). Read off `/proc` on a blocking thread,
    /// at most every [`MEMORY_EVERY`] (the last reading otherwise).
    pub async fn memory_mb(&self) -> Option<u64> {
        let Mode::Managed { pid: Some(pid), .. } = &self.mode else {
            return None;
        };
        if let Some((at, mb)) = self.memory.lock().ok().and_then(|m| *m) {
            if at.elapsed() < MEMORY_EVERY {
                return Some(mb);
            }
        }
        let pid = *pid;
        let mb = tokio::task::spawn_blocking(move || group_rss_mb(pid))
            .await
            .ok()
            .flatten()?;
        if let Ok(mut m) = self.memory.lock() {
            *m = Some((Instant::now(), mb));
        }
        Some(mb)
    }

    /// The Selenium Grid session this browser is, if it is one.
    pub fn grid_session(&self) -> Option<String> {
        self.grid
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(|s| s.id.clone()))
    }

    /// Attaches over one WebSocket to `url`, which chromiumoxide and the raw client share
    /// ([`mux::Mux`]): a fleet endpoint starts one browser per socket.
    async fn connect(url: &str, config: &LaunchConfig) -> Result<Arc<Browser>, StartError> {
        let shown = endpoint::shown(url);
        let failed = |reason: String| StartError::Connect {
            url: shown.clone(),
            reason,
        };
        let ws = endpoint::websocket_url(url).await.map_err(failed)?;
        let gone: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
        let mux = mux::Mux::connect(&ws, &endpoint::shown(&ws), config.cdp_wait(), gone.clone())
            .await
            .map_err(failed)?;
        // Undecodable messages come to the pump (counted there) instead of chromiumoxide's own
        // warning on every run.
        let handler_config = chromiumoxide::handler::HandlerConfig {
            ignore_invalid_messages: false,
            ..Default::default()
        };
        let (cdp, handler) = match CdpBrowser::connect_with_config(
            mux.local_url().to_string(),
            handler_config,
        )
        .await
        {
            Ok(pair) => pair,
            Err(e) => {
                mux.shutdown().await;
                return Err(failed(format!(
                    "the CDP client did not come up on the connection: {e}"
                )));
            }
        };
        let mode = Mode::Attached { url: shown };
        Ok(Browser::finish(
            cdp,
            handler,
            mode,
            true,
            config.page_answer_timeout(),
            Some(mux),
            gone,
        )
        .await)
    }

    async fn finish(
        cdp: CdpBrowser,
        mut handler: chromiumoxide::handler::Handler,
        mode: Mode,
        headless: bool,
        answer_bound: Duration,
        mux: Option<mux::Mux>,
        gone_reason: Arc<std::sync::Mutex<Option<String>>>,
    ) -> Arc<Browser> {
        let t0 = Instant::now();
        let (alive_tx, alive_rx) = watch::channel(true);
        let alive_tx = Arc::new(alive_tx);
        // Background tasks of this browser (pump, dialog answerers, raw connection) run on the
        // runtime that launched it, so they outlive whichever caller happens to use a tab.
        let runtime = tokio::runtime::Handle::current();
        // The one CDP pump: it only polls the handler. Undecodable messages (protocol drift, see
        // CDP-NOTES.md) are counted and skipped, each method logged once at debug; a lost
        // connection ends it.
        let pump_alive = alive_tx.clone();
        let undecoded = Arc::new(AtomicU64::new(0));
        let pump_undecoded = undecoded.clone();
        let pump = tokio::spawn(async move {
            let mut methods = std::collections::HashSet::new();
            while let Some(event) = handler.next().await {
                match event {
                    Ok(()) => {}
                    Err(e) if cdp_error::is_connection_lost(&e) => {
                        tracing::info!(target: "moonpilot::cdp", "browser connection lost: {e}");
                        break;
                    }
                    Err(chromiumoxide::error::CdpError::InvalidMessage(text, e)) => {
                        pump_undecoded.fetch_add(1, Ordering::Relaxed);
                        let method = serde_json::from_str::<Value>(&text)
                            .ok()
                            .and_then(|v| v.get("method")?.as_str().map(str::to_string))
                            .unwrap_or_else(|| "(an answer)".to_string());
                        if methods.len() < 100 && methods.insert(method.clone()) {
                            tracing::debug!(target: "moonpilot::cdp", "skipped undecodable {method}: {e}");
                        }
                    }
                    Err(e) => tracing::debug!(target: "moonpilot::cdp", "skipped CDP message: {e}"),
                }
            }
            tracing::info!(target: "moonpilot::cdp", "browser connection closed");
            pump_alive.send_replace(false);
        });
        let ws_url = cdp.websocket_address().clone();
        // chromiumoxide's handler does not end when the socket dies silently (it returns
        // Pending forever), so our own connection doubles as the death detector: its reader
        // ends exactly when Chromium goes away.
        let raw = OnceCell::new();
        let opened = match &mux {
            Some(m) => m
                .take_raw()
                .map(|ends| {
                    raw::RawConnection::over(
                        ends.outgoing,
                        ends.incoming,
                        &runtime,
                        Some(alive_tx.clone()),
                        m.browser_session().map(str::to_string),
                        mux::RAW_IDS + 1,
                    )
                })
                .ok_or_else(|| {
                    CommandError::failed(
                        "the endpoint granted no browser session: no renderer-crash events, and \
                         no commands in cross-site frames",
                    )
                }),
            None => raw::RawConnection::connect(&ws_url, &runtime, Some(alive_tx.clone())).await,
        };
        if let Some(m) = &mux {
            // The shared socket's end is the browser's: the pump's handler would wait forever
            // on a closed socket, and the raw client may be missing.
            let mut ended = m.ended_watch();
            let alive = alive_tx.clone();
            let pump = pump.abort_handle();
            runtime.spawn(async move {
                let _ = ended.wait_for(|e| *e).await;
                alive.send_replace(false);
                pump.abort();
            });
        }
        match opened {
            Ok(conn) => {
                // Renderer crashes are announced to connections that discover targets.
                match tokio::time::timeout(Duration::from_secs(5), conn.discover_targets()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!("no renderer-crash events: {}", e.msg),
                    Err(_) => {
                        tracing::warn!("no renderer-crash events: target discovery went unanswered")
                    }
                }
                let conn = Arc::new(conn);
                hold_new_pages(&conn, &runtime).await;
                let _ = raw.set(conn);
            }
            Err(e) => tracing::warn!("opening the second CDP connection failed: {e}"),
        }
        tracing::debug!(target: "moonpilot::start", "second connection set up after {:?}", t0.elapsed());
        let (product, protocol_version) =
            match tokio::time::timeout(Duration::from_secs(5), cdp.version()).await {
                Ok(Ok(v)) => (v.product, v.protocol_version),
                _ => (String::new(), String::new()),
            };
        Arc::new(Browser {
            cdp: RwLock::new(Some(cdp)),
            alive: alive_rx,
            runtime,
            ws_url,
            raw,
            mux,
            gone_reason,
            undecoded,
            pump: std::sync::Mutex::new(Some(pump)),
            watchdog: std::sync::Mutex::new(None),
            grid: std::sync::Mutex::new(None),
            tasks_started: AtomicU64::new(0),
            memory: std::sync::Mutex::new(None),
            mode,
            headless,
            product,
            protocol_version,
            answer_bound,
            download_dir: std::sync::OnceLock::new(),
            downloads_on: OnceCell::new(),
        })
    }

    /// Spawns a background task of this browser on the runtime that launched it.
    pub fn spawn<F>(&self, fut: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.runtime.spawn(fut);
    }

    /// Whether the connection is still up.
    pub fn is_alive(&self) -> bool {
        *self.alive.borrow()
    }

    /// Resolves when the browser is gone (immediately if it already is).
    pub async fn gone(&self) {
        let mut rx = self.alive.clone();
        let _ = rx.wait_for(|alive| !*alive).await;
    }

    /// Runs `fut` unless the browser goes away first.
    pub async fn guard<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, CommandError>>,
    ) -> Result<T, CommandError> {
        tokio::select! {
            res = fut => res,
            _ = self.gone() => Err(self.gone_error()),
        }
    }

    /// `BROWSER_GONE` with what is known of why: a remote endpoint that ended the session says
    /// so, and the next `start` connects again.
    pub fn gone_error(&self) -> CommandError {
        let Mode::Attached { url } = &self.mode else {
            return CommandError::browser_gone();
        };
        let reason = self.gone_reason.lock().ok().and_then(|g| g.clone());
        let why = reason.unwrap_or_else(|| "the connection closed".to_string());
        CommandError::new(
            crate::protocol::ErrorCode::BrowserGone,
            format!("the browser at `{url}` is gone: {why}; the next `start` connects again"),
        )
        .with_details(json!({"reason": why}))
    }

    /// Sends a browser-level CDP command (no session).
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, CommandError> {
        self.guard(async {
            let guard = self.cdp.read().await;
            let cdp = guard.as_ref().ok_or_else(CommandError::browser_gone)?;
            let res = cdp
                .execute(raw::Raw::new(method, params))
                .await
                .map_err(|e| cdp_error::from_cdp(method, e))?;
            Ok(res.result)
        })
        .await
    }

    /// Opens a browser context of its own (its own cookie jar, storage and cache, as an
    /// incognito window), its requests through `proxy` when given: its id.
    pub async fn create_context(
        &self,
        proxy: Option<&settings::Proxy>,
    ) -> Result<String, CommandError> {
        let mut params = json!({"disposeOnDetach": true});
        if let Some(p) = proxy {
            params["proxyServer"] = json!(p.server);
            if let Some(b) = &p.bypass {
                params["proxyBypassList"] = json!(b);
            }
        }
        let res = self.call("Target.createBrowserContext", params).await?;
        res["browserContextId"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| CommandError::failed("Target.createBrowserContext gave no id"))
    }

    /// Closes browser context `id` with its pages and everything it stored.
    pub async fn dispose_context(&self, id: &str) {
        if let Err(e) = self
            .call(
                "Target.disposeBrowserContext",
                json!({"browserContextId": id}),
            )
            .await
        {
            tracing::warn!("browser context {id} was not disposed: {}", e.msg);
        }
    }

    /// Opens a new tab on `about:blank` in `context` (the default one when `None`) and starts
    /// its event pumps.
    pub async fn new_tab(
        self: &Arc<Browser>,
        events: events::TabEvents,
        context: Option<&str>,
    ) -> Result<Tab, CommandError> {
        let page = self
            .guard(async {
                let guard = self.cdp.read().await;
                let cdp = guard.as_ref().ok_or_else(CommandError::browser_gone)?;
                // Each tab in a window of its own: every task's current tab is then a visible
                // page. A background tab of a shared window gets no frames, and Chromium holds
                // a synthetic mouse move to it for about 5 s.
                let mut params = CreateTargetParams::new("about:blank");
                params.new_window = Some(true);
                params.browser_context_id = context.map(|c| c.to_string().into());
                cdp.new_page(params)
                    .await
                    .map_err(|e| cdp_error::from_cdp("Target.createTarget", e))
            })
            .await?;
        tracing::debug!(target: "moonpilot::start", "target created and set up by chromiumoxide");
        Tab::attach(self.clone(), page, events, context.map(str::to_string)).await
    }

    /// Takes over the page target `target_id` that a page of ours opened (a popup) and starts
    /// its event pumps. chromiumoxide attaches to new pages by itself; this waits for that, up
    /// to two seconds.
    pub async fn adopt_tab(
        self: &Arc<Browser>,
        target_id: &str,
        events: events::TabEvents,
        context: Option<&str>,
    ) -> Result<Tab, CommandError> {
        let mut last = None;
        for _ in 0..40 {
            let page = {
                let guard = self.cdp.read().await;
                let cdp = guard.as_ref().ok_or_else(CommandError::browser_gone)?;
                cdp.get_page(target_id.to_string().into()).await
            };
            match page {
                Ok(page) => {
                    return Tab::attach(self.clone(), page, events, context.map(str::to_string))
                        .await
                }
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(CommandError::failed(format!(
            "the page `{target_id}` opened by a tab could not be attached: {}",
            last.map(|e| e.to_string()).unwrap_or_default()
        )))
    }

    /// The second CDP client, used for out-of-process iframe sessions, Fetch and crash events:
    /// a socket of its own to a browser we launched (opened again on first use if it failed),
    /// a share of the one socket to a browser we attached to.
    pub async fn raw(&self) -> Result<Arc<raw::RawConnection>, CommandError> {
        if self.mux.is_some() {
            // Another socket would reach another browser on a fleet endpoint.
            return self.raw.get().cloned().ok_or_else(|| {
                CommandError::failed(
                    "this endpoint gave no second CDP client: no commands in cross-site frames",
                )
            });
        }
        self.raw
            .get_or_try_init(|| async {
                let conn = raw::RawConnection::connect(&self.ws_url, &self.runtime, None).await?;
                if let Err(e) = conn.discover_targets().await {
                    tracing::warn!("no renderer-crash events: {}", e.msg);
                }
                let conn = Arc::new(conn);
                hold_new_pages(&conn, &self.runtime).await;
                Ok::<_, CommandError>(conn)
            })
            .await
            .cloned()
    }

    /// A descriptor for `start`, `list_tasks` and `get_config`.
    pub fn describe(&self) -> Value {
        let (mode, profile_dir, executable, pid) = match &self.mode {
            Mode::Managed {
                executable,
                profile_dir,
                pid,
                ..
            } => (
                "managed",
                Value::from(profile_dir.display().to_string()),
                Value::from(executable.display().to_string()),
                pid.map_or(Value::Null, Value::from),
            ),
            Mode::Attached { .. } => ("cdp", Value::Null, Value::Null, Value::Null),
        };
        json!({
            "type": "chromium",
            "engine": "chromium",
            "mode": mode,
            "headless": self.headless,
            "profileDir": profile_dir,
            "executable": executable,
            "pid": pid,
            "cdp": {
                "product": self.product,
                "protocolVersion": self.protocol_version,
                "url": match &self.mode { Mode::Attached { url } => Value::from(url.as_str()), _ => Value::Null },
                // Sockets to the browser: a launched one gets two, an attached one shares one.
                "connections": if self.mux.is_some() { 1 } else { 2 },
                "browserSession": self.mux.as_ref().map_or(Value::Null, |m| Value::from(m.browser_session().is_some())),
                "undecodedMessages": self.undecoded.load(Ordering::Relaxed),
            },
            "viewport": {"mode": "fixed", "size": format!("{}x{}", VIEWPORT.0, VIEWPORT.1)},
        })
    }

    /// Closes the browser (or detaches from an attached one) and removes a temporary profile.
    pub async fn stop(&self) {
        let t0 = Instant::now();
        let taken = self.cdp.write().await.take();
        if let Some(mux) = &self.mux {
            // Detach: the pump holds chromiumoxide's handler (and its end of the socket), and
            // the endpoint keeps a fleet slot for as long as the socket is open.
            self.end_pump();
            drop(taken);
            mux.shutdown().await;
            // A Grid's browser goes with its session.
            let grid = self.grid.lock().ok().and_then(|mut g| g.take());
            if let Some(session) = grid {
                session.delete().await;
            }
            return;
        }
        if let Some(mut cdp) = taken {
            if let Mode::Managed { temporary, .. } = self.mode {
                // `Browser.close` asks Chromium to exit, writing a kept profile to disk; a
                // temporary profile is about to be removed, so nothing is lost when the group
                // goes at once (Chromium's orderly exit takes ~150 ms). The kill is also the
                // fallback when the close hangs.
                let closed = if self.is_alive() && !temporary {
                    tokio::time::timeout(Duration::from_secs(3), cdp.close())
                        .await
                        .is_ok_and(|r| r.is_ok())
                } else {
                    false
                };
                if !closed {
                    // Helpers of a browser killed, dead or hung (renderers, zygotes) outlive it
                    // and keep writing into its profile: the whole group goes. Before the
                    // browser is reaped, so the group id cannot belong to anyone else yet.
                    if let Mode::Managed { pid: Some(pid), .. } = &self.mode {
                        kill_group(*pid).await;
                    }
                    let _ = cdp.kill().await;
                }
                let _ = tokio::time::timeout(Duration::from_secs(5), cdp.wait()).await;
                tracing::debug!(target: "moonpilot::stop", "chromium exited after {:?}", t0.elapsed());
            }
        }
        self.end_pump();
        if let Mode::Managed {
            profile_dir,
            temporary,
            run_dir,
            ..
        } = &self.mode
        {
            if *temporary {
                remove_patiently(profile_dir).await;
            }
            remove_patiently(run_dir).await;
            tracing::debug!(target: "moonpilot::stop", "profile removed after {:?}", t0.elapsed());
        }
        let watchdog = self.watchdog.lock().ok().and_then(|mut w| w.take());
        if let Some(mut watchdog) = watchdog {
            let _ = watchdog.start_kill();
        }
    }

    /// Ends the CDP pump. chromiumoxide's handler may never notice the socket it lost (it
    /// stays pending), and the pump holds it, and with it every event stream of every tab: the
    /// loops reading those streams hold the browser. Ending the pump ends them (a `serve` that
    /// launched and stopped a browser per task grew about 360 KB and a socket per browser).
    fn end_pump(&self) {
        let pump = self.pump.lock().ok().and_then(|mut p| p.take());
        if let Some(pump) = pump {
            pump.abort();
        }
    }

    /// Kills the browser process without ceremony (tests of `BROWSER_GONE` use this).
    pub async fn kill(&self) {
        if let Some(cdp) = self.cdp.write().await.as_mut() {
            let _ = cdp.kill().await;
        }
    }
}
