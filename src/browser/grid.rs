//! Selenium Grid 4 as a fleet (`--grid URL`): a WebDriver session is asked for
//! (`POST /session`, Chromium's flags in `goog:chromeOptions`), the engine attaches to the
//! session's CDP endpoint (`se:cdp`, which the Grid's router proxies), and the session is
//! deleted when the engine stops with it. A Grid reports `se:cdp` with the host its node sees
//! itself as (a container's address behind Docker, a LAN address): the engine talks to the
//! host it was given instead. A Grid that hands out no session (every slot taken until its
//! queue gives up, a refused capability) is an error with the Grid's own message.

use std::time::Duration;

use serde_json::{json, Value};

use super::endpoint;

/// A WebDriver session of a Grid, held by the engine's browser.
#[derive(Debug, Clone)]
pub struct GridSession {
    /// The Grid's URL (its query string kept: a token).
    grid: url::Url,
    /// The session's id.
    pub id: String,
}

impl GridSession {
    /// Asks `grid` for a Chromium session with `args` (within `bound`: a full Grid queues the
    /// request): the session and its CDP WebSocket URL on the Grid's own host.
    pub async fn create(
        grid: &str,
        args: &[String],
        bound: Duration,
    ) -> Result<(GridSession, String), String> {
        let url =
            url::Url::parse(grid).map_err(|e| format!("not a URL ({e}): use http://HOST:4444"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "`{}:` is no Selenium Grid URL: use http://HOST:4444",
                url.scheme()
            ));
        }
        let body = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            // The engine answers dialogs itself (its policy): chromedriver must not.
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": {"args": args},
        }}});
        let path = with_query(&url, &join(&url, "session"));
        let shown = endpoint::shown(grid);
        let (status, answer) =
            endpoint::http_call(&url, "POST", &path, Some(&body.to_string()), bound)
                .await
                .map_err(|e| match e {
                    endpoint::Fetch::Late => format!(
                        "the Grid at {shown} handed out no session within {} s (every slot busy, and its queue still holding the request?)",
                        bound.as_secs()
                    ),
                    other => format!("the Grid at {shown}: {}", other.said()),
                })?
                .ok_or_else(|| format!("{shown} does not answer HTTP"))?;
        let v: Value = serde_json::from_slice(&answer).unwrap_or(Value::Null);
        let value = &v["value"];
        if status != 200 {
            let message = value["message"]
                .as_str()
                .or_else(|| value["error"].as_str())
                .unwrap_or("no reason given");
            let first = message.lines().next().unwrap_or(message);
            return Err(format!(
                "the Grid at {shown} refused a session ({status}): {first}"
            ));
        }
        let id = value["sessionId"]
            .as_str()
            .ok_or_else(|| format!("the Grid at {shown} answered no sessionId"))?
            .to_string();
        let session = GridSession {
            grid: url.clone(),
            id,
        };
        let Some(cdp) = value["capabilities"]["se:cdp"].as_str() else {
            session.delete().await;
            return Err(format!(
                "the Grid at {shown} gave a session without `se:cdp` (a Grid 4 with a Chromium node serves CDP)"
            ));
        };
        let cdp = match on_host(cdp, &url) {
            Ok(c) => c,
            Err(e) => {
                session.delete().await;
                return Err(e);
            }
        };
        Ok((session, cdp))
    }

    /// Deletes the session (its browser goes with it); a Grid that lost it already is fine.
    pub async fn delete(&self) {
        let path = with_query(
            &self.grid,
            &join(&self.grid, &format!("session/{}", self.id)),
        );
        match endpoint::http_call(&self.grid, "DELETE", &path, None, Duration::from_secs(10)).await
        {
            Ok(Some((status, _))) if status < 300 => {}
            Ok(Some((status, body))) => tracing::debug!(
                "Grid session {} delete: {status} {}",
                self.id,
                String::from_utf8_lossy(&body)
            ),
            Ok(None) => tracing::debug!("Grid session {} delete: no HTTP answer", self.id),
            Err(e) => tracing::warn!("Grid session {} was not deleted: {}", self.id, e.said()),
        }
    }
}

/// `rel` below the Grid URL's path (`http://h:4444/wd/hub` + `session`).
fn join(url: &url::Url, rel: &str) -> String {
    format!("{}/{rel}", url.path().trim_end_matches('/'))
}

/// `path` with the Grid URL's query string (a token), when it has one.
fn with_query(url: &url::Url, path: &str) -> String {
    match url.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    }
}

/// `cdp` (the Grid's `se:cdp`) on `grid`'s scheme, host and port: the node reports the address
/// it sees itself at, the router answers where the engine reached the Grid.
fn on_host(cdp: &str, grid: &url::Url) -> Result<String, String> {
    let mut ws = url::Url::parse(cdp).map_err(|e| format!("the Grid's se:cdp `{cdp}`: {e}"))?;
    let scheme = if grid.scheme() == "https" {
        "wss"
    } else {
        "ws"
    };
    ws.set_scheme(scheme)
        .map_err(|()| format!("the Grid's se:cdp `{cdp}` takes no {scheme} scheme"))?;
    ws.set_host(grid.host_str())
        .map_err(|e| format!("the Grid's se:cdp `{cdp}`: {e}"))?;
    ws.set_port(grid.port_or_known_default())
        .map_err(|()| format!("the Grid's se:cdp `{cdp}` takes no port"))?;
    if ws.query().is_none() {
        ws.set_query(grid.query());
    }
    Ok(ws.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn se_cdp_is_rewritten_to_the_grid_the_engine_reached() {
        let grid = url::Url::parse("http://127.0.0.1:4444").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            on_host("ws://192.0.2.2:4444/session/abc/se/cdp", &grid),
            Ok("ws://127.0.0.1:4444/session/abc/se/cdp".to_string())
        );
        let tls = url::Url::parse("https://grid.example/wd/hub?token=T")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            on_host("ws://10.1.2.3:5555/session/abc/se/cdp", &tls),
            Ok("wss://grid.example/session/abc/se/cdp?token=T".to_string())
        );
        assert_eq!(join(&tls, "session"), "/wd/hub/session");
        assert_eq!(
            with_query(&tls, "/wd/hub/session"),
            "/wd/hub/session?token=T"
        );
    }
}
