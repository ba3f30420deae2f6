//! Splash's error kinds and their JSON bodies (`{error, type, description, info}`).

use serde_json::{json, Value};

/// A failed request, in Splash's kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum SplashError {
    /// 400: the arguments (`info`: type, argument, description, …).
    BadOption(Value),
    /// 400: the script failed (`info`: type, line_number, error, message, …).
    Script(Value),
    /// 502: the page of a render endpoint did not load.
    Render(Value),
    /// 504: the request ran past its `timeout` (as the request gave it, or Splash's default).
    Timeout(Value),
    /// 498: `load_args` named arguments this server no longer holds.
    Expired(Vec<String>),
    /// 503: every slot is busy and the queue is full.
    Busy,
    /// 500: the engine could not run it (no browser).
    Internal(String),
}

impl SplashError {
    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            SplashError::BadOption(_) | SplashError::Script(_) => 400,
            SplashError::Render(_) => 502,
            SplashError::Timeout(_) => 504,
            SplashError::Expired(_) => 498,
            SplashError::Busy => 503,
            SplashError::Internal(_) => 500,
        }
    }

    /// The JSON body: `{error, type, description, info}`.
    pub fn body(&self) -> Value {
        let (kind, description, info) = match self {
            SplashError::BadOption(i) => ("BadOption", "Incorrect HTTP API arguments", i.clone()),
            SplashError::Script(i) => (
                "ScriptError",
                "Error happened while executing Lua script",
                i.clone(),
            ),
            SplashError::Render(i) => ("RenderError", "Error rendering page", i.clone()),
            SplashError::Timeout(t) => (
                "GlobalTimeoutError",
                "Timeout exceeded rendering page",
                json!({"timeout": t}),
            ),
            SplashError::Expired(names) => (
                "ExpiredArguments",
                "Arguments stored with ``save_args`` are expired",
                json!({"expired": names}),
            ),
            SplashError::Busy => (
                "ServiceUnavailable",
                "Every slot is busy and the queue of waiting requests is full; retry later",
                json!({}),
            ),
            SplashError::Internal(m) => (
                "InternalError",
                "The engine could not run the request",
                json!({"message": m}),
            ),
        };
        json!({"error": self.status(), "type": kind, "description": description, "info": info})
    }
}
