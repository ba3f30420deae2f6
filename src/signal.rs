//! What the hosts that serve until told to stop share: their runtime and the process's stop
//! signals.

/// The stack of a serving runtime's threads. Some of the browser layer's futures are large
/// (the raw connection's first connect, a route change's adoption of sessions); a request's
/// handler that awaits them deep in axum's stack of services outgrew tokio's 2 MiB default in
/// a debug build. The memory is only reserved: pages are touched as they are used.
pub const WORKER_STACK: usize = 8 * 1024 * 1024;

/// A multi-threaded runtime for a serving host; a runtime that cannot start is exit code 2
/// (after saying so).
pub fn multi_thread_runtime() -> Result<tokio::runtime::Runtime, std::process::ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(WORKER_STACK)
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("moonpilot: cannot start the runtime: {e}");
            std::process::ExitCode::from(2)
        })
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn stop_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}
