//! The MCP transports: stdio (`moonpilot mcp`) and Streamable HTTP (`/mcp` of `moonpilot
//! serve`), both over one engine and executor.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt;

use super::session::{McpOptions, Session};
use crate::Executor;

/// How long an HTTP session may stay silent before it (and its task) is closed.
pub const HTTP_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// The Streamable HTTP service for `/mcp`: one [`Session`] (and task) per MCP session.
/// `any_host`: the server listens beyond loopback (its token guards it), so the Host header is
/// not limited to loopback names.
pub fn http_service(
    executor: Executor,
    options: McpOptions,
    any_host: bool,
    stop: tokio_util::sync::CancellationToken,
) -> StreamableHttpService<Session, LocalSessionManager> {
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(HTTP_SESSION_IDLE);
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(stop);
    if any_host {
        config = config.disable_allowed_hosts();
    }
    StreamableHttpService::new(
        move || Ok(Session::new(executor.clone(), &options)),
        Arc::new(sessions),
        config,
    )
}

/// `moonpilot mcp`: MCP over stdin/stdout on a multi-threaded runtime until the client closes
/// stdin (or Ctrl-C); then the session's task, every other task and the browser are closed.
/// Logs go to stderr: stdout is the protocol's.
pub fn run_stdio(config: crate::EngineConfig, options: McpOptions) -> std::process::ExitCode {
    use std::process::ExitCode;
    let runtime = match crate::signal::multi_thread_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    runtime.block_on(async move {
        let engine = crate::Engine::new(config);
        let executor = Executor::new(engine.clone(), crate::lua::recipe_host());
        let session = Session::new(executor, &options);
        let code = match session.clone().serve(rmcp::transport::stdio()).await {
            Ok(running) => {
                tokio::select! {
                    _ = running.waiting() => {}
                    _ = crate::signal::stop_signal() => {}
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("moonpilot: the MCP session did not start: {e}");
                ExitCode::from(1)
            }
        };
        session.close().await;
        engine.shutdown().await;
        engine.flush_trace().await;
        code
    })
}
