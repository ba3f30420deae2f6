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
/// rmcp's own `Host` and `Origin` checks are off: the seed port's guard in front of `/mcp`
/// (`server.rs` over `door::http`) checks both, and the body's content type, by the one rule of
/// every HTTP door (rmcp's default host list would refuse `--allowed-hosts` and the bound
/// address, and its origin rule is not ours).
pub fn http_service(
    executor: Executor,
    options: McpOptions,
    stop: tokio_util::sync::CancellationToken,
) -> StreamableHttpService<Session, LocalSessionManager> {
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(HTTP_SESSION_IDLE);
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop)
        .disable_allowed_hosts()
        .disable_allowed_origins();
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
