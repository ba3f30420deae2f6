//! What the hosts that serve until told to stop share: their runtime and the process's stop
//! signals.

/// A multi-threaded runtime for a serving host; a runtime that cannot start is exit code 2
/// (after saying so).
pub fn multi_thread_runtime() -> Result<tokio::runtime::Runtime, std::process::ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
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
