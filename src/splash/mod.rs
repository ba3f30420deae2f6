//! Splash's HTTP API (`/render.html`, `/render.png`, `/render.json`, `/execute`, `/run`,
//! `/_ping`) on moonpilot's engine, served by `moonpilot serve --splash-port` on a port of its
//! own, so `scrapy-splash` projects and Splash scripts switch by changing one URL.
//!
//! One request is one task: its arguments are checked as Splash checks them ([`args`]), its
//! script (the request's `lua_source`, or the endpoint's own script for `render.*`) runs in the
//! recipe host in Splash's dialect (`lua/splash.lua`: the `splash` object over moonpilot's
//! commands), every command it sends goes through the one executor, and the task is closed
//! when the answer is ready. Requests beyond the slots wait in a bounded queue; past it, 503.
//! Errors have Splash's shape: HTTP 400 with `{error, type, description, info}` (`BadOption`,
//! `ScriptError`), 502 `RenderError` for a page that did not load in a render endpoint, 504
//! `GlobalTimeoutError`.

pub mod args;
pub mod error;
pub mod http;
pub mod local;
pub mod ops;
pub mod run;

/// The render endpoints' own script.
pub const RENDER_LUA: &str = include_str!("render.lua");

/// How the Splash endpoints run.
#[derive(Debug, Clone)]
pub struct SplashOptions {
    /// The port (0 = any free one).
    pub port: u16,
    /// Requests that render at once (Splash's `--slots`).
    pub slots: usize,
    /// Requests that may wait for a slot; past them, 503.
    pub queue: usize,
    /// The largest `timeout` a request may ask (Splash's `--max-timeout`), in seconds.
    pub max_timeout: f64,
    /// The server's `--token`: then a request needs `Authorization: Bearer T` or HTTP basic
    /// auth with T as its password (scrapy-splash's `SPLASH_PASS`).
    pub token: Option<String>,
    /// The URL schemes its pages and requests may use (Splash's `--allowed-schemes`; default
    /// [`crate::door::SPLASH_SCHEMES`]).
    pub schemes: Vec<String>,
    /// The server's `--allowed-hosts` and `--allowed-origins`: the `Host` and `Origin` values
    /// answered beyond loopback and the bound address (`door::http`).
    pub allowed: crate::door::http::AllowLists,
}

impl Default for SplashOptions {
    fn default() -> Self {
        SplashOptions {
            port: 8050,
            slots: 20,
            queue: 200,
            max_timeout: 90.0,
            token: None,
            schemes: crate::door::SPLASH_SCHEMES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            allowed: crate::door::http::AllowLists::default(),
        }
    }
}
