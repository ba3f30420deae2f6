//! moonpilot: a browser-automation engine in Rust, driven by Lua, on real Chromium.
//!
//! Crate map (see ARCHITECTURE.md):
//! - [`protocol`]: receipts, error codes, the params reader — the wire vocabulary.
//! - [`command`]: what a command is (spec, params, contexts); [`registry`]: the table;
//!   [`commands`] holds one file per group.
//! - [`executor`]: the one path every command takes.
//! - [`engine`]: the shared browser slot and the live tasks; [`human`]: the human-input
//!   state machine.
//! - [`browser`]: everything that touches chromiumoxide (launch, pump, tabs, frames, events).
//! - [`dom`]: the snapshot model and its text rendering; [`js`]: the page-side probes.
//! - [`door`]: each door's trust (Lua libraries, file params, URL schemes), carried by the
//!   executor handle.
//! - [`clock`] and [`encoding`]: leaves every layer may use (epoch milliseconds, base64).
//! - [`lua`]: the Lua bridge used by `moonpilot run`, [`repl`] and [`watch`].
//! - [`runs`]: recorded runs on disk; [`report`]: a run or a task as one HTML page.
//! - [`server`], [`mcp`] and [`splash`]: the HTTP doors; [`door::http`]: which origins, hosts
//!   and bodies they answer.

#![warn(missing_docs)]

pub mod browser;
pub mod clock;
pub mod command;
pub mod commands;
pub mod console;
pub mod dom;
pub mod door;
pub mod encoding;
pub mod engine;
pub mod error;
pub mod evidence;
pub mod executor;
pub mod human;
pub mod jobs;
pub mod js;
pub mod lua;
pub mod mcp;
pub mod protocol;
pub mod record;
pub mod redact;
pub mod registry;
pub mod repl;
pub mod report;
pub mod runs;
pub mod server;
pub mod signal;
pub mod splash;
pub mod testing;
pub mod trace;
pub mod url_glob;
pub mod watch;

pub use engine::{Engine, EngineConfig};
pub use error::{CommandError, StartError};
pub use executor::Executor;
pub use protocol::{ErrorCode, Receipt};
