//! MCP, the Model Context Protocol (`moonpilot mcp` over stdio, `/mcp` of `moonpilot serve` over
//! Streamable HTTP), on the official Rust SDK, `rmcp`.
//!
//! An adapter like the HTTP host: a tool call → `Executor::execute` → `Receipt` → a tool result.
//! One MCP session is one [`Session`]: it opens its own task on the first tool call that needs a
//! page and closes it when the session ends, so two sessions never see each other's tabs.
//! - [`tools`]: the tool list, generated from the registry's `CommandSpec`s, and `run_lua`;
//! - [`result`]: a receipt as a tool result (text, structured content, images);
//! - [`session`]: the `ServerHandler` (tool calls, `run_lua`, progress, cancellation,
//!   elicitation for human input, evidence as resources);
//! - [`host`]: the transports.

pub mod host;
pub mod result;
pub mod session;
pub mod tools;

pub use session::{McpOptions, Session};
