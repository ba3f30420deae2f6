//! The `moonpilot` command line: argument wiring only.
//!
//! Exit codes (ripgrep style): 0 success, 1 an uncaught script error, 2 usage or start-up errors,
//! 130 interrupted (Ctrl-C).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use moonpilot::browser::LaunchConfig;
use moonpilot::lua::run_host;
use moonpilot::runs::RunStatus;
use moonpilot::EngineConfig;

/// Browser automation on real Chromium, driven by Lua.
#[derive(Parser, Debug)]
#[command(name = "moonpilot", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The longest `--cdp-wait` (and `MOONPILOT_CDP_WAIT`), in seconds.
const CDP_WAIT_MAX: u64 = 3600;

/// Options shared by the hosts that drive a browser.
#[derive(clap::Args, Debug, Clone)]
struct BrowserOpts {
    /// Show the browser window instead of running headless.
    #[arg(long)]
    headful: bool,
    /// Chromium executable (default: $MOONPILOT_CHROMIUM, then chromium on PATH).
    #[arg(long, value_name = "PATH")]
    chromium: Option<PathBuf>,
    /// Attach to a running browser or a fleet endpoint instead of launching one:
    /// ws(s)://HOST:PORT/… as given (browserless: ws://HOST:3000/chromium?token=T) or
    /// http(s)://HOST:PORT[?token=T] (asked for its /json/version) [default:
    /// $MOONPILOT_CDP_URL, unless --chromium is given].
    #[arg(long, value_name = "URL")]
    cdp_url: Option<String>,
    /// Ask a Selenium Grid 4 for the browser: http(s)://HOST:4444[/wd/hub] (a WebDriver
    /// session with the engine's Chromium flags; its `se:cdp` endpoint, on the host given
    /// here; the session is deleted when the engine stops) [default: $MOONPILOT_GRID_URL].
    #[arg(long, value_name = "URL", conflicts_with_all = ["cdp_url", "chromium"])]
    grid: Option<String>,
    /// How long an endpoint may keep the connection waiting before it opens a browser (a
    /// fleet queues connections past its concurrency limit) [default: $MOONPILOT_CDP_WAIT, else
    /// 60].
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=CDP_WAIT_MAX))]
    cdp_wait: Option<u64>,
    /// Keep the browser profile in DIR (default: a fresh temporary profile per browser).
    #[arg(long, value_name = "DIR")]
    profile: Option<PathBuf>,
    /// Keep evidence (data/) and the trace log (logs/) under DIR [default: $MOONPILOT_STATE_DIR,
    /// else $XDG_STATE_HOME/moonpilot, else ~/.local/state/moonpilot].
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Keep the newest N evidence files per task; older ones are deleted [default: 200].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    keep_evidence: Option<u64>,
    /// Keep at most MB megabytes of evidence in all; the oldest files go first [default: 256].
    #[arg(long, value_name = "MB", value_parser = clap::value_parser!(u64).range(1..))]
    evidence_max_mb: Option<u64>,
    /// Write the trace log (one JSON line per command) under DIR [default: <state dir>/logs/trace].
    #[arg(long, value_name = "DIR")]
    trace_dir: Option<PathBuf>,
    /// Do not write the trace log.
    #[arg(long, conflicts_with = "trace_dir")]
    no_trace: bool,
    /// Do not take a screenshot after each page-changing command.
    #[arg(long)]
    no_capture: bool,
    /// Recycle the shared browser after N tasks were started on it: new tasks go to a fresh
    /// one, running ones finish on the old, which then stops (0: never) [default: 500].
    #[arg(long, value_name = "N")]
    recycle_after: Option<u64>,
    /// Recycle the shared browser once its processes hold more than MB MiB (a browser the
    /// engine launched; 0: no bound) [default: 2048].
    #[arg(long, value_name = "MB")]
    max_browser_mb: Option<u64>,
}

/// Options of the HTTP server (`serve`, `repl --serve`).
#[derive(clap::Args, Debug, Clone)]
struct HttpOpts {
    /// Listen on ADDR; anything but loopback needs --token.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// Require `Authorization: Bearer T` on every request.
    #[arg(long, value_name = "T")]
    token: Option<String>,
    /// Also answer requests whose `Host` header names HOST (`name`, `name:port`, or `*` for
    /// any; comma-separated or repeated); loopback names and the bound address always are.
    #[arg(long, value_name = "HOST", value_delimiter = ',')]
    allowed_hosts: Vec<String>,
    /// Also answer requests from web pages of ORIGIN (`http://host:port`, `:*` for any port,
    /// `null`, or `*` for any; comma-separated or repeated); loopback origins always are.
    #[arg(long, value_name = "ORIGIN", value_delimiter = ',')]
    allowed_origins: Vec<String>,
    /// The largest staged upload, in bytes (0 = no cap of its own; a body stays under 256 MiB).
    #[arg(long, value_name = "BYTES", default_value_t = moonpilot::server::MAX_UPLOAD)]
    upload_max_bytes: u64,
    /// Upload of an existing name gets `a-1.jpg`, `a-2.jpg`, … instead of replacing it.
    #[arg(long)]
    no_upload_overwrite: bool,
    /// Stop serving after a successful `shutdown` command (by default, as in the seed, the
    /// server keeps running).
    #[arg(long)]
    exit_on_shutdown: bool,
    /// Let clients' file params (upload, screenshot, pdf, OCR paths) and `file:` URLs reach
    /// any file: on a non-loopback bind (the seed protocol) and at /mcp they are confined
    /// otherwise (see the README's "Security").
    #[arg(long)]
    allow_unrestricted_file_access: bool,
}

impl HttpOpts {
    fn serve_options(self, port: u16) -> moonpilot::server::ServeOptions {
        moonpilot::server::ServeOptions {
            bind: self.bind,
            port,
            token: self.token,
            allowed: moonpilot::door::http::AllowLists {
                hosts: self.allowed_hosts,
                origins: self.allowed_origins,
            },
            upload_max_bytes: self.upload_max_bytes,
            upload_overwrite: !self.no_upload_overwrite,
            exit_on_shutdown: self.exit_on_shutdown,
            unrestricted_files: self.allow_unrestricted_file_access,
            ..moonpilot::server::ServeOptions::default()
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a Lua script to its end.
    Run {
        /// The script.
        file: PathBuf,
        /// A `key=value` pair for `browser.args` (repeatable).
        #[arg(long = "arg", value_name = "K=V")]
        args: Vec<String>,
        /// Write the run's HTML report when it ends (also when the script fails or is
        /// interrupted) [default FILE: report.html in the run's directory, runs/<id>/].
        #[arg(long, value_name = "FILE", num_args = 0..=1, require_equals = true)]
        report: Option<Option<PathBuf>>,
        #[command(flatten)]
        browser: BrowserOpts,
    },
    /// An interactive Lua prompt with `browser` loaded (and `page`, a fresh task).
    Repl {
        /// Do not start a task bound to `page`.
        #[arg(long)]
        no_start: bool,
        /// Also serve the HTTP protocol on PORT [default: 10049], on the REPL's own engine: an
        /// agent over HTTP and the person at the prompt share the browser and its tasks.
        #[arg(long, value_name = "PORT", num_args = 0..=1, default_missing_value = "10049")]
        serve: Option<u16>,
        #[command(flatten)]
        http: HttpOpts,
        #[command(flatten)]
        browser: BrowserOpts,
    },
    /// Serve the seed's HTTP protocol (POST /playwright/command, uploads, /data) until Ctrl-C.
    Serve {
        /// The port (0 = any free one).
        #[arg(long, default_value_t = moonpilot::server::DEFAULT_PORT)]
        port: u16,
        /// The tools of MCP at /mcp, as `moonpilot mcp --tools`.
        #[arg(long, value_name = "LIST", default_value = "default")]
        mcp_tools: String,
        #[command(flatten)]
        identity: IdentityOpts,
        /// Also serve Splash's HTTP API (render.html, render.png, render.json, execute, run) on
        /// PORT [default: 8050, Splash's own].
        #[arg(long, value_name = "PORT", num_args = 0..=1, default_missing_value = "8050")]
        splash_port: Option<u16>,
        /// Splash requests that render at once (Splash's --slots).
        #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=1000))]
        splash_slots: u64,
        /// The largest `timeout` a Splash request may ask, in seconds (Splash's --max-timeout).
        #[arg(long, value_name = "SECS", default_value_t = 90.0, value_parser = positive_secs)]
        splash_max_timeout: f64,
        /// The URL schemes Splash's pages and requests may use, comma-separated (Splash's
        /// --allowed-schemes); `file` among them opens local files.
        #[arg(
            long,
            value_name = "LIST",
            default_value = "http,https,data,ftp,sftp,ws,wss",
            value_delimiter = ','
        )]
        splash_allowed_schemes: Vec<String>,
        #[command(flatten)]
        http: HttpOpts,
        #[command(flatten)]
        browser: BrowserOpts,
    },
    /// Run a Lua script, and again on every save of it or of a module it requires; the browser
    /// and its tasks stay open between runs.
    Watch {
        /// The script.
        file: PathBuf,
        /// A `key=value` pair for `browser.args` (repeatable); for a Splash script, its
        /// `splash.args` (`--arg url=...`).
        #[arg(long = "arg", value_name = "K=V")]
        args: Vec<String>,
        /// A Splash script's binary result goes here [default: result.<ext> in the state
        /// directory].
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Rewrite an HTML report of the latest run after each run [default FILE:
        /// watch-report.html in the state directory].
        #[arg(long, value_name = "FILE", num_args = 0..=1, require_equals = true)]
        report: Option<Option<PathBuf>>,
        #[command(flatten)]
        browser: BrowserOpts,
    },
    /// Speak MCP (the Model Context Protocol) over stdin/stdout: one tool per command, plus
    /// `run_lua`; the session's task opens on the first tool call that needs a page.
    Mcp {
        /// Which commands are tools: `default` (the set an agent needs most), `all`, group names
        /// (navigation, capture, ...) or command names, comma-separated; `engine` adds the
        /// engine-wide commands (start, shutdown, task lists, cleanup).
        #[arg(long, value_name = "LIST", default_value = "default")]
        tools: String,
        /// Do not read the page again after a command that may change it (by default the
        /// result carries the page's observation, so the next step needs no separate read).
        #[arg(long)]
        no_observe: bool,
        /// Let file params (upload, screenshot, pdf, OCR paths) and `file:` URLs reach any
        /// file, not only the client's workspace roots (or the working directory) and the engine's data
        /// and upload directories.
        #[arg(long)]
        allow_unrestricted_file_access: bool,
        #[command(flatten)]
        identity: IdentityOpts,
        #[command(flatten)]
        browser: BrowserOpts,
    },
    /// Run a Splash script (`function main(splash, args)`) as Splash's /execute would, and print
    /// its result (a binary result goes to --out).
    Splash {
        /// The script.
        file: PathBuf,
        /// A `key=value` pair for `splash.args` (repeatable).
        #[arg(long = "arg", value_name = "K=V")]
        args: Vec<String>,
        /// `splash.args.url`.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// Write the result here (needed for a binary one: a PNG, …).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        #[command(flatten)]
        browser: BrowserOpts,
    },
    /// Run browser tests: `*_test.lua` / `*_spec.lua` files with `describe`, `it`, hooks and
    /// waiting assertions (`expect(page):to_have_text{...}`), each test on a fresh page of its
    /// own, several at once.
    Test {
        #[command(flatten)]
        test: moonpilot::testing::Args,
        #[command(flatten)]
        browser: BrowserOpts,
    },
    /// Record what a person does in the browser as a Lua script (or, with --test, a test file)
    /// that does it again; Ctrl-C or closing the browser writes it.
    Record {
        #[command(flatten)]
        record: moonpilot::record::Args,
        #[command(flatten)]
        browser: BrowserOpts,
    },
    /// Write the script that replays a traced task or run (from `run`, the REPL, `serve` or an
    /// MCP session) without the agent: its actions, with robust selectors for snapshot indices.
    Codegen(moonpilot::record::codegen::Args),
    /// Write one HTML page of a recorded run (the newest when no DIR): every command with its
    /// params, outcome, screenshot and timing, the script's output and error, a summary.
    Report(moonpilot::report::cli::Args),
    /// List the registered commands.
    Methods {
        /// Print the full specs as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the LuaLS definition file of the API (`moonpilot stubs > moonpilot.d.lua`).
    Stubs,
}

/// The log filter: `MOONPILOT_LOG`'s directives (default `warn`), quiet about the CDP library
/// unless a directive names it.
fn log_filter(given: Option<&str>) -> tracing_subscriber::EnvFilter {
    let directives = moonpilot::browser::log_directives(given);
    tracing_subscriber::EnvFilter::try_new(&directives).unwrap_or_else(|e| {
        eprintln!("moonpilot: MOONPILOT_LOG `{directives}` is no log filter ({e}); using warn");
        tracing_subscriber::EnvFilter::new(moonpilot::browser::log_directives(None))
    })
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(log_filter(std::env::var("MOONPILOT_LOG").ok().as_deref()))
        .with_writer(std::io::stderr)
        // Colour only for a person: a log file or a pipe gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Methods { json } => methods(json),
        Command::Stubs => {
            print(moonpilot::lua::stubs::generate(moonpilot::commands::registry().all()).trim_end())
        }
        Command::Repl {
            no_start,
            serve,
            http,
            browser,
        } => match engine_config(browser) {
            Ok(config) => {
                moonpilot::repl::run(config, !no_start, serve.map(|p| http.serve_options(p)))
            }
            Err(code) => code,
        },
        Command::Serve {
            port,
            mcp_tools,
            identity,
            splash_port,
            splash_slots,
            splash_max_timeout,
            splash_allowed_schemes,
            http,
            browser,
        } => match (
            engine_config(browser),
            mcp_options(
                &mcp_tools,
                true,
                http.allow_unrestricted_file_access,
                &identity,
            ),
        ) {
            (Ok(config), Ok(mcp)) => {
                let mut opts = http.serve_options(port);
                opts.mcp = Some(mcp);
                opts.splash = splash_port.map(|port| moonpilot::splash::SplashOptions {
                    port,
                    slots: splash_slots as usize,
                    max_timeout: splash_max_timeout,
                    schemes: splash_allowed_schemes
                        .iter()
                        .map(|s| s.trim().to_ascii_lowercase())
                        .filter(|s| !s.is_empty())
                        .collect(),
                    ..moonpilot::splash::SplashOptions::default()
                });
                moonpilot::server::run(config, opts)
            }
            (Err(code), _) | (_, Err(code)) => code,
        },
        Command::Mcp {
            tools,
            no_observe,
            allow_unrestricted_file_access,
            identity,
            browser,
        } => match (
            engine_config(browser),
            mcp_options(
                &tools,
                !no_observe,
                allow_unrestricted_file_access,
                &identity,
            ),
        ) {
            (Ok(config), Ok(mcp)) => moonpilot::mcp::host::run_stdio(config, mcp),
            (Err(code), _) | (_, Err(code)) => code,
        },
        Command::Run {
            file,
            args,
            report,
            browser,
        } => run(file, args, report, browser),
        Command::Watch {
            file,
            args,
            out,
            report,
            browser,
        } => watch(file, args, out, report, browser),
        Command::Report(args) => moonpilot::report::cli::run(args),
        Command::Codegen(args) => moonpilot::record::codegen::run(args),
        Command::Test { test, browser } => {
            let Some(state) = moonpilot::evidence::state_dir(browser.state_dir.clone()) else {
                eprintln!("moonpilot: no state directory: pass --state-dir DIR or set MOONPILOT_STATE_DIR");
                return ExitCode::from(2);
            };
            match engine_config(browser) {
                Ok(config) => moonpilot::testing::run(config, test, state),
                Err(code) => code,
            }
        }
        Command::Record { record, browser } => match engine_config(browser) {
            Ok(config) => moonpilot::record::run(config, record),
            Err(code) => code,
        },
        Command::Splash {
            file,
            args,
            url,
            out,
            browser,
        } => match parse_args(&args) {
            Err(e) => {
                eprintln!("moonpilot: {e}");
                ExitCode::from(2)
            }
            Ok(args) => match engine_config(browser) {
                Ok(config) => moonpilot::splash::local::run_file(config, &file, args, url, out),
                Err(code) => code,
            },
        },
    }
}

/// What each MCP session's task runs as (`start`'s identity params), as @playwright/mcp's
/// flags say it.
#[derive(clap::Args, Debug, Clone, Default)]
struct IdentityOpts {
    /// Each MCP session's task goes through this proxy: http://[user:pass@]host:port,
    /// https://…, socks4:// or socks5://host:port.
    #[arg(long, value_name = "URL")]
    proxy_server: Option<String>,
    /// Hosts that skip the proxy (Chromium's list; `<-loopback>` proxies loopback too).
    #[arg(long, value_name = "LIST")]
    proxy_bypass: Option<String>,
    /// Each MCP session's task's user agent.
    #[arg(long, value_name = "UA")]
    user_agent: Option<String>,
    /// Each MCP session's task's locale (BCP 47: `de-DE`).
    #[arg(long, value_name = "LOCALE")]
    locale: Option<String>,
    /// Each MCP session's task's time zone (IANA: `Europe/Berlin`).
    #[arg(long, value_name = "ZONE")]
    timezone: Option<String>,
}

impl IdentityOpts {
    /// The `start` params they make; a proxy that cannot be is a usage error now, not at the
    /// first session.
    fn start_params(&self) -> Result<serde_json::Map<String, serde_json::Value>, String> {
        let mut out = serde_json::Map::new();
        if let Some(p) = &self.proxy_server {
            moonpilot::browser::settings::Proxy::parse(p, self.proxy_bypass.clone())
                .map_err(|e| format!("--proxy-server: {e}"))?;
        } else if self.proxy_bypass.is_some() {
            return Err("--proxy-bypass without --proxy-server".into());
        }
        for (key, value) in [
            ("proxy", &self.proxy_server),
            ("proxyBypass", &self.proxy_bypass),
            ("userAgent", &self.user_agent),
            ("locale", &self.locale),
            ("timezone", &self.timezone),
        ] {
            if let Some(v) = value {
                out.insert(key.into(), serde_json::Value::from(v.clone()));
            }
        }
        Ok(out)
    }
}

/// The MCP options from `--tools` and the identity flags; a word that names nothing is a
/// usage error.
fn mcp_options(
    tools: &str,
    observe: bool,
    unrestricted_files: bool,
    identity: &IdentityOpts,
) -> Result<moonpilot::mcp::McpOptions, ExitCode> {
    let start = match identity.start_params() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("moonpilot: {e}");
            return Err(ExitCode::from(2));
        }
    };
    match moonpilot::mcp::tools::Selection::parse(tools) {
        Ok(tools) => Ok(moonpilot::mcp::McpOptions {
            tools,
            observe_after_actions: observe,
            unrestricted_files,
            start,
        }),
        Err(e) => {
            eprintln!("moonpilot: {e}");
            Err(ExitCode::from(2))
        }
    }
}

fn methods(json: bool) -> ExitCode {
    let out = if json {
        let specs: Vec<_> = moonpilot::commands::registry()
            .all()
            .iter()
            .map(|s| s.to_json())
            .collect();
        serde_json::to_string_pretty(&specs).unwrap_or_default()
    } else {
        moonpilot::commands::registry()
            .all()
            .iter()
            .map(|s| {
                let task = if s.needs_task() { "task" } else { "    " };
                match s.alias_of {
                    Some(of) => format!("{:<28} {task}  {} (synonym of {of})", s.name, s.summary),
                    None => format!("{:<28} {task}  {}", s.name, s.summary),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    print(&out)
}

/// Prints `text` and a newline; a closed stdout (`moonpilot methods | head`) is not an error.
fn print(text: &str) -> ExitCode {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{text}");
    ExitCode::SUCCESS
}

/// The engine's settings from the options; no state directory to be found is a usage error
/// (exit code 2), never a silent fall-back to the current directory.
fn engine_config(opts: BrowserOpts) -> Result<EngineConfig, ExitCode> {
    let Some(state) = moonpilot::evidence::state_dir(opts.state_dir) else {
        eprintln!(
            "moonpilot: no state directory for data/ and logs/: pass --state-dir DIR or set \
             MOONPILOT_STATE_DIR (neither XDG_STATE_HOME nor HOME is set)"
        );
        return Err(ExitCode::from(2));
    };
    let base = EngineConfig::in_state_dir(&state);
    let mut evidence = base.evidence;
    if let Some(n) = opts.keep_evidence {
        evidence.keep_per_task = usize::try_from(n).unwrap_or(usize::MAX);
    }
    if let Some(mb) = opts.evidence_max_mb {
        evidence.max_bytes = mb.saturating_mul(1024 * 1024);
    }
    // The environment names an endpoint unless the command line names a browser.
    let cdp_url = opts.cdp_url.or_else(|| {
        std::env::var("MOONPILOT_CDP_URL")
            .ok()
            .filter(|u| !u.trim().is_empty() && opts.chromium.is_none())
            .map(|u| u.trim().to_string())
    });
    let grid_url = opts.grid.or_else(|| {
        std::env::var("MOONPILOT_GRID_URL")
            .ok()
            .filter(|u| !u.trim().is_empty() && opts.chromium.is_none() && cdp_url.is_none())
            .map(|u| u.trim().to_string())
    });
    let cdp_wait = match opts.cdp_wait {
        Some(secs) => Some(std::time::Duration::from_secs(secs)),
        None => match std::env::var("MOONPILOT_CDP_WAIT") {
            Ok(v) if !v.trim().is_empty() => match v.trim().parse::<u64>() {
                Ok(secs) if (1..=CDP_WAIT_MAX).contains(&secs) => {
                    Some(std::time::Duration::from_secs(secs))
                }
                _ => {
                    eprintln!("moonpilot: MOONPILOT_CDP_WAIT must be whole seconds from 1 to {CDP_WAIT_MAX}, not `{v}`");
                    return Err(ExitCode::from(2));
                }
            },
            _ => None,
        },
    };
    Ok(EngineConfig {
        launch: LaunchConfig {
            chromium: opts.chromium,
            headful: opts.headful,
            profile: opts.profile,
            cdp_url,
            grid_url,
            cdp_wait,
            ..LaunchConfig::default()
        },
        capture: !opts.no_capture,
        recycle: moonpilot::engine::Recycle {
            after_tasks: opts
                .recycle_after
                .map_or(base.recycle.after_tasks, |n| (n > 0).then_some(n)),
            max_browser_mb: opts
                .max_browser_mb
                .map_or(base.recycle.max_browser_mb, |mb| (mb > 0).then_some(mb)),
        },
        evidence,
        trace_dir: match (opts.no_trace, opts.trace_dir) {
            (true, _) => None,
            (false, Some(dir)) => Some(dir),
            (false, None) => base.trace_dir.clone(),
        },
        ..base
    })
}

fn parse_args(args: &[String]) -> Result<BTreeMap<String, String>, String> {
    args.iter()
        .map(|a| match a.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(format!("--arg expects KEY=VALUE, got `{a}`")),
        })
        .collect()
}

/// The `K=V` args and a check that the script exists (usage errors, exit code 2).
fn script_and_args(
    file: &std::path::Path,
    args: &[String],
) -> Result<BTreeMap<String, String>, ExitCode> {
    let args = parse_args(args).map_err(|e| {
        eprintln!("moonpilot: {e}");
        ExitCode::from(2)
    })?;
    if file.is_dir() {
        eprintln!(
            "moonpilot: {} is a directory, not a Lua script",
            file.display()
        );
        return Err(ExitCode::from(2));
    }
    if !file.is_file() {
        eprintln!("moonpilot: no such script: {}", file.display());
        return Err(ExitCode::from(2));
    }
    Ok(args)
}

/// Where a host records its runs (the state directory) and writes their report: `--report`
/// alone is `default` under the state directory, `--report=FILE` is FILE.
fn recording(
    state_flag: Option<PathBuf>,
    report: Option<Option<PathBuf>>,
    default: impl FnOnce(&std::path::Path) -> PathBuf,
) -> Option<moonpilot::report::Recording> {
    let state = moonpilot::evidence::state_dir(state_flag)?;
    let report = match report {
        Some(Some(file)) => Some(file),
        Some(None) => Some(default(&state)),
        None => None,
    };
    Some(moonpilot::report::Recording { state, report })
}

fn watch(
    file: PathBuf,
    args: Vec<String>,
    out: Option<PathBuf>,
    report: Option<Option<PathBuf>>,
    opts: BrowserOpts,
) -> ExitCode {
    let record = recording(opts.state_dir.clone(), report, |state| {
        state.join("watch-report.html")
    });
    let config = match engine_config(opts) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let args = match script_and_args(&file, &args) {
        Ok(args) => args,
        Err(code) => return code,
    };
    // A Splash script (`function main(splash, args)`) is re-run as `moonpilot splash` runs it.
    let splash = std::fs::read_to_string(&file)
        .is_ok_and(|s| moonpilot::splash::local::is_splash_script(&s));
    if splash {
        moonpilot::splash::local::watch_file(config, &file, args, out)
    } else {
        moonpilot::watch::run(config, file, args, record)
    }
}

fn run(
    file: PathBuf,
    args: Vec<String>,
    report: Option<Option<PathBuf>>,
    opts: BrowserOpts,
) -> ExitCode {
    let args = match script_and_args(&file, &args) {
        Ok(args) => args,
        Err(code) => return code,
    };
    // `--report` alone: report.html in the run's own directory (an empty path: the directory is
    // known once the run begins).
    let record = recording(opts.state_dir.clone(), report, |_| PathBuf::new());
    let config = match engine_config(opts) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let run = record.map(|r| {
        let record = moonpilot::runs::RunRecord::new(&file, &config, 1);
        moonpilot::report::Run::begin(r, record)
    });
    let ended = std::cell::RefCell::new(None);
    let setup = run_script(config, args, &file, run.as_ref(), &ended);
    match (ended.into_inner(), run) {
        (Some((status, error, code)), run) => {
            if let Some(run) = run {
                run.end(status, Some(code), error.as_deref());
            }
            ExitCode::from(code)
        }
        // The runtime or Lua could not be set up (said on stderr, exit 2).
        (None, run) => {
            if let Some(run) = run {
                run.end(
                    RunStatus::Failed,
                    Some(2),
                    Some("moonpilot could not set up"),
                );
            }
            setup
        }
    }
}

/// How a script run ended: its status, its error's text and its exit code.
type Ended = (RunStatus, Option<String>, u8);

/// Runs the script on a fresh engine; how it ended goes to `ended` (left empty when the host
/// could not be set up: then the answer is that failure's exit code).
fn run_script(
    config: moonpilot::EngineConfig,
    args: BTreeMap<String, String>,
    file: &std::path::Path,
    run: Option<&moonpilot::report::Run>,
    ended: &std::cell::RefCell<Option<Ended>>,
) -> ExitCode {
    let exit = |status: RunStatus, error: Option<String>, code: u8| {
        *ended.borrow_mut() = Some((status, error, code));
        ExitCode::from(code)
    };
    run_host(config, args, |host| async move {
        if let Some(run) = run {
            if let Err(e) = run.attach(&host) {
                eprintln!("moonpilot: cannot record the run's output: {e}");
            }
        }
        // Human-input requests are shown on the terminal and answered there.
        if let (true, Some(executor)) = (moonpilot::console::on_terminal(), host.executor()) {
            tokio::task::spawn_local(moonpilot::console::serve(executor));
        }
        // Ctrl-C stops the script but still closes the browser (and removes its temporary
        // profile) on the way out.
        let res = tokio::select! {
            res = host.run_file(file) => Some(res),
            _ = tokio::signal::ctrl_c() => None,
        };
        match res {
            Some(Ok(())) => exit(RunStatus::Ok, None, 0),
            // The script does not parse: a usage error, like a missing file (exit 2).
            Some(Err(e @ mlua::Error::SyntaxError { .. })) => {
                eprintln!("moonpilot: {e}");
                exit(RunStatus::Failed, Some(e.to_string()), 2)
            }
            Some(Err(e)) => match host.start_failure(&e) {
                // A browser that does not start is a start-up error (exit 2), said plainly.
                Some(why) => {
                    // An attach's message says what to fix itself.
                    if why.contains("connecting to `") {
                        eprintln!("moonpilot: the browser did not start: {why}");
                    } else {
                        eprintln!(
                            "moonpilot: the browser did not start: {why}\n\
                             (choose the browser with --chromium PATH or MOONPILOT_CHROMIUM, or attach with --cdp-url)"
                        );
                    }
                    exit(RunStatus::Failed, Some(e.to_string()), 2)
                }
                None => {
                    eprintln!("moonpilot: {e}");
                    exit(RunStatus::Failed, Some(e.to_string()), 1)
                }
            },
            None => {
                eprintln!("moonpilot: interrupted");
                exit(RunStatus::Interrupted, None, 130)
            }
        }
    })
}

/// A number of seconds above zero and at most a day (`--splash-max-timeout`).
fn positive_secs(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86_400.0 => Ok(v),
        Ok(_) => Err(format!("`{s}` is not a number of seconds in (0, 86400]")),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}
