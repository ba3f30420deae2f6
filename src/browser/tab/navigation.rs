//! Navigation and history: `Page.navigate` over the raw connection and the wait for its own
//! document's `load`, history steps and reload, the main document's status, URL and title, and
//! the stream of load progress that waits re-check on.
//!
//! A child of `tab.rs`. Its one CDP quirk is documented on [`Tab::navigate`]: chromiumoxide
//! holds back a `Page.navigate` sent on its own session until a new document loads.

use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::network::{EventLoadingFailed, EventResponseReceived};
use chromiumoxide::cdp::browser_protocol::page::{
    EventLifecycleEvent, EventLoadEventFired, EventNavigatedWithinDocument,
};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use serde_json::{json, Value};

use super::Tab;
use crate::browser::cdp_error::from_cdp;
use crate::error::CommandError;
use crate::js;
use crate::protocol::ErrorCode;

/// What a navigation produced.
#[derive(Debug, Clone)]
pub struct NavOutcome {
    /// HTTP status of the main response, 0 when there was none (a same-document navigation);
    /// also set for a failed navigation that got a response (204 No Content).
    pub status: i64,
    /// Chrome's error text (`net::ERR_…`) when the navigation failed.
    pub error_text: Option<String>,
    /// Whether the navigation stayed in the current document (a fragment change, also of a
    /// URL reached by `history.pushState`): no request, same document, same elements.
    pub same_document: bool,
    /// Whether the response was a download instead of a document.
    pub is_download: bool,
}

/// How long a navigation may take to reach `load`.
pub const NAVIGATION_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a failed navigation may take to report its request's failure after `Page.navigate`
/// answered with an error (it follows at once in practice; it only makes the status known).
const FAILURE_REPORT_BOUND: Duration = Duration::from_secs(1);

/// How long a navigation event may trail another one the engine has already seen: chromiumoxide
/// hands each listener its events separately (see `response_status`). Microseconds in
/// practice, more on a loaded machine.
const RESPONSE_TRAIL: Duration = Duration::from_millis(200);

/// How long a same-document navigation may take to report its new URL after `Page.navigate`
/// answered (a few ms in practice; the event only confirms what already happened).
const SAME_DOCUMENT_BOUND: Duration = Duration::from_secs(2);

/// The failure of a navigation to `url` that a dialog of the page being left blocks for good.
fn dialog_stuck(url: &str) -> CommandError {
    CommandError::new(
        ErrorCode::ActionFailed,
        format!(
            "navigation to `{url}` is blocked: the page being left raised a dialog the browser \
             no longer lets anyone answer"
        ),
    )
    .with_details(json!({"dialogStuck": true}))
    .sent()
}

/// Follows the main frame's lifecycle during a navigation to `loader`: records documents that
/// commit (`init`: ours, then any that replace it) in `documents`, and answers true at the `load`
/// of the newest one.
fn lifecycle_step(
    ev: &EventLifecycleEvent,
    frame_id: &str,
    loader: &str,
    documents: &mut Vec<String>,
) -> bool {
    if ev.frame_id.as_ref() != frame_id {
        return false;
    }
    let ev_loader = ev.loader_id.as_ref();
    match ev.name.as_str() {
        "init" if ev_loader == loader || !documents.is_empty() => {
            documents.push(ev_loader.to_string());
            false
        }
        "load" => match documents.last() {
            Some(last) => last == ev_loader,
            // A `load` before the `init` was seen can only be ours if it names our loader.
            None => ev_loader == loader,
        },
        _ => false,
    }
}

/// The HTTP status of the last main-document response of one of `loaders`, 0 when there was
/// none (`about:blank`, a refused connection, a same-document navigation).
async fn document_status(
    responses: &mut chromiumoxide::listeners::EventStream<EventResponseReceived>,
    loaders: &[&str],
) -> i64 {
    if loaders.is_empty() {
        return 0;
    }
    let is_ours = |ev: &EventResponseReceived| {
        ev.r#type.as_ref() == "Document" && loaders.contains(&ev.loader_id.as_ref())
    };
    response_status(responses, is_ours).await
}

/// The HTTP status of the last response in `responses` that `is_ours`, 0 when there is none.
///
/// chromiumoxide hands each listener its events separately, from the thread that runs its
/// handler: the response may trail the event that ended a navigation's wait by a moment, so a
/// missing one is awaited for [`RESPONSE_TRAIL`] at most.
async fn response_status(
    responses: &mut chromiumoxide::listeners::EventStream<EventResponseReceived>,
    is_ours: impl Fn(&EventResponseReceived) -> bool,
) -> i64 {
    let mut status = None;
    while let Some(Some(ev)) = responses.next().now_or_never() {
        if is_ours(&ev) {
            status = Some(ev.response.status);
        }
    }
    if status.is_none() {
        let trailing = async {
            while let Some(ev) = responses.next().await {
                if is_ours(&ev) {
                    return Some(ev.response.status);
                }
            }
            None
        };
        status = tokio::time::timeout(RESPONSE_TRAIL, trailing)
            .await
            .ok()
            .flatten();
    }
    status.unwrap_or(0)
}

/// One entry of a tab's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryEntry {
    /// Its id (stable while it is in the history).
    pub id: i64,
    /// Its URL.
    pub url: String,
    /// How it was reached (`typed`, `link`, `reload`, `form_submit`, …).
    pub transition: String,
}

impl Tab {
    /// A stream that yields each time the main document's loading or URL moves on (a lifecycle
    /// event, a commit, a same-document navigation), for waits that re-check on each. It is
    /// registered when this answers: a re-check made after it sees every later change.
    pub async fn load_progress(&self) -> Result<BoxStream<'static, ()>, CommandError> {
        let lifecycle = self
            .page
            .event_listener::<EventLifecycleEvent>()
            .await
            .map_err(|e| from_cdp("Page.lifecycleEvent", e))?;
        let committed = self.main_frame_commits().await?;
        let within = self
            .page
            .event_listener::<EventNavigatedWithinDocument>()
            .await
            .map_err(|e| from_cdp("Page.navigatedWithinDocument", e))?;
        let main = self.target_id.clone();
        let main_too = main.clone();
        let lifecycle = lifecycle
            .filter(move |ev| std::future::ready(ev.frame_id.as_ref() == main))
            .map(drop);
        let within = within
            .filter(move |ev| std::future::ready(ev.frame_id.as_ref() == main_too))
            .map(drop);
        Ok(futures::stream::select(lifecycle, futures::stream::select(committed, within)).boxed())
    }

    /// The current URL (`location.href` of the main frame).
    pub async fn url(&self) -> Result<String, CommandError> {
        Ok(self
            .eval_expression(js::LOCATION_HREF_JS)
            .await?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// The current title (`''` when unreadable).
    pub async fn title(&self) -> Result<String, CommandError> {
        Ok(self
            .eval_expression(js::DOCUMENT_TITLE_JS)
            .await?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// Navigates the main frame to `url` and waits for its `load` (bounded by
    /// [`NAVIGATION_TIMEOUT`]).
    ///
    /// `Page.navigate` answers once the navigation is ready to commit, or has failed
    /// (`errorText`), or stayed in the document (no `loaderId`); Chromium 156 answers a 204, a
    /// download and a cancelled navigation with `net::ERR_ABORTED`. It goes over the raw
    /// connection because chromiumoxide holds back the answer of a `Page.navigate` sent on its own
    /// session until its frame tracker sees a new document's `load`: same-document navigations
    /// and navigations that never commit then hang until its 30 s request timeout.
    pub async fn navigate(&self, url: &str) -> Result<NavOutcome, CommandError> {
        // One deadline for the answer and the load together.
        let deadline = tokio::time::Instant::now() + NAVIGATION_TIMEOUT;
        let mut responses = self
            .page
            .event_listener::<EventResponseReceived>()
            .await
            .map_err(|e| from_cdp("Network.responseReceived", e))?;
        let mut lifecycle = self
            .page
            .event_listener::<EventLifecycleEvent>()
            .await
            .map_err(|e| from_cdp("Page.lifecycleEvent", e))?;
        let mut failures = self
            .page
            .event_listener::<EventLoadingFailed>()
            .await
            .map_err(|e| from_cdp("Network.loadingFailed", e))?;
        let mut within = self
            .page
            .event_listener::<EventNavigatedWithinDocument>()
            .await
            .map_err(|e| from_cdp("Page.navigatedWithinDocument", e))?;
        // Listeners are registered by messages on the page's command channel, and the navigation
        // goes over another connection: one round trip on that channel (answered by the browser
        // process, so an open dialog cannot hold it) puts them in place first.
        self.call("Page.getNavigationHistory", json!({})).await?;
        let (conn, session) = self.raw_session().await?;
        // A dialog that the page being left raises and the browser then refuses to let us
        // answer blocks that page's unload, and this navigation, for good: fail at once with
        // `dialogStuck` (the navigate command replaces the tab) instead of at the deadline.
        let mut stuck = self.events.stuck_dialogs();
        stuck.mark_unchanged();
        let stuck_dialog = async {
            // Another tab of the task may be the one that is stuck.
            while stuck.changed().await.is_ok() {
                if stuck.borrow_and_update().1 == self.target_id {
                    return Err::<(), _>(dialog_stuck(url));
                }
            }
            std::future::pending().await
        };
        tokio::pin!(stuck_dialog);
        let nav = tokio::time::timeout_at(
            deadline,
            async {
                tokio::select! {
                    res = self.browser.guard(conn.call(Some(&session), "Page.navigate", json!({"url": url}))) => res,
                    Err(e) = &mut stuck_dialog => Err(e),
                }
            },
        )
        .await
        .map_err(|_| {
            CommandError::new(
                ErrorCode::ActionTimeout,
                format!(
                    "navigation to `{url}` did not commit within {} s (no response from the server)",
                    NAVIGATION_TIMEOUT.as_secs()
                ),
            )
            .sent()
        })??;
        let frame_id = nav["frameId"].as_str().unwrap_or(&self.target_id);
        let loader = nav.get("loaderId").and_then(Value::as_str);
        let is_download = nav["isDownload"] == true;
        let mut error_text = nav
            .get("errorText")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        if is_download && error_text.is_none() {
            // Older Chromium answered downloads without an error; the document never changes.
            error_text = Some("net::ERR_ABORTED".to_string());
        }
        let Some(loader) = loader.filter(|_| error_text.is_none()) else {
            if error_text.is_none() {
                // Same document: the URL changed in place. Wait for the event that reports it
                // so that reads right after see the new URL; it is not worth a failure.
                let reported = async {
                    while let Some(ev) = within.next().await {
                        if ev.frame_id.as_ref() == frame_id {
                            break;
                        }
                    }
                };
                let _ = tokio::time::timeout(SAME_DOCUMENT_BOUND, reported).await;
            }
            if let (Some(loader), Some(_)) = (loader, &error_text) {
                // The answer comes over another connection than the events: wait until the
                // request's failure has come in on the page's session, after the document's
                // response (a 204's status) if there was one.
                let reported = async {
                    while let Some(ev) = failures.next().await {
                        if ev.request_id.as_ref() == loader {
                            break;
                        }
                    }
                };
                let _ = tokio::time::timeout(FAILURE_REPORT_BOUND, reported).await;
            }
            let same_document = error_text.is_none();
            let loaders: Vec<&str> = loader.into_iter().collect();
            return Ok(NavOutcome {
                status: document_status(&mut responses, &loaders).await,
                error_text,
                same_document,
                is_download,
            });
        };
        // Committing documents: ours, then any that replaced it (a script redirect while it
        // loaded). The `load` of the last one ends the wait.
        let mut documents = Vec::new();
        // A document request that fails before it commits leaves the old page in place and no
        // `load` ever comes: that failure ends the wait, unless the commit turns up within
        // RESPONSE_TRAIL (each listener gets its events separately, see `response_status`).
        let mut failure: Option<String> = None;
        let settle = tokio::time::sleep(NAVIGATION_TIMEOUT);
        tokio::pin!(settle);
        let wait = async {
            loop {
                tokio::select! {
                    Err(e) = &mut stuck_dialog => return Err(e),
                    ev = lifecycle.next() => {
                        let Some(ev) = ev else {
                            return Err(CommandError::new(
                                ErrorCode::PageNavigating,
                                "the tab went away while the page was loading",
                            ));
                        };
                        if lifecycle_step(&ev, frame_id, loader, &mut documents) {
                            return Ok(None);
                        }
                    }
                    Some(ev) = failures.next(), if failure.is_none() => {
                        if ev.request_id.as_ref() == loader && documents.is_empty() {
                            failure = Some(ev.error_text.clone());
                            settle
                                .as_mut()
                                .reset(tokio::time::Instant::now() + RESPONSE_TRAIL);
                        }
                    }
                    () = &mut settle, if failure.is_some() => {
                        if documents.is_empty() {
                            return Ok(failure.take());
                        }
                        // It committed after all (the body failed later): wait for its load.
                        failure = None;
                    }
                }
            }
        };
        let failed = tokio::time::timeout_at(deadline, wait)
            .await
            .map_err(|_| {
                CommandError::new(
                    ErrorCode::ActionTimeout,
                    format!(
                        "navigation to `{url}` did not finish loading within {} s",
                        NAVIGATION_TIMEOUT.as_secs()
                    ),
                )
                .sent()
            })??;
        let mut loaders = vec![loader];
        loaders.extend(documents.iter().map(String::as_str));
        Ok(NavOutcome {
            status: document_status(&mut responses, &loaders).await,
            error_text: failed,
            same_document: false,
            is_download,
        })
    }

    /// Runs a history or reload step (`method`) and waits until the page has loaded again;
    /// returns the HTTP status of the main document response seen meanwhile (0 when none, as
    /// for pages restored from the back-forward cache).
    ///
    /// `expect_url_change` waits for the URL to move away from its old value (history steps may
    /// be served from the back-forward cache without a `load` event); otherwise a `load` event is
    /// awaited (reload).
    pub async fn navigate_with(
        &self,
        method: &str,
        params: Value,
        expect_url_change: Option<&str>,
    ) -> Result<i64, CommandError> {
        let mut responses = self
            .page
            .event_listener::<EventResponseReceived>()
            .await
            .map_err(|e| from_cdp("Network.responseReceived", e))?;
        let mut loads = self
            .page
            .event_listener::<EventLoadEventFired>()
            .await
            .map_err(|e| from_cdp("Page.loadEventFired", e))?;
        self.call(method, params).await?;
        let wait = async {
            match expect_url_change {
                None => {
                    loads.next().await;
                }
                Some(old) => loop {
                    // Mid-navigation the context is gone; those reads fail and are retried.
                    if let Ok(status) = self.call_page_status().await {
                        if status["url"] != old && status["readyState"] == "complete" {
                            break;
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                },
            }
        };
        tokio::time::timeout(NAVIGATION_TIMEOUT, wait)
            .await
            .map_err(|_| {
                CommandError::new(
                    ErrorCode::ActionTimeout,
                    format!(
                        "`{method}` did not finish loading within {} s",
                        NAVIGATION_TIMEOUT.as_secs()
                    ),
                )
                .sent()
            })?;
        let is_main = |ev: &EventResponseReceived| {
            ev.r#type.as_ref() == "Document"
                && ev.frame_id.as_ref().map(|f| f.as_ref()) == Some(self.target_id.as_str())
        };
        Ok(response_status(&mut responses, is_main).await)
    }

    /// `{url, readyState, title}` of the main frame.
    pub async fn call_page_status(&self) -> Result<Value, CommandError> {
        self.call_probe(&self.main_frame_local(), js::PAGE_STATUS_JS, Value::Null)
            .await
    }

    /// The tab's history: the current entry's position and every entry, with how it was
    /// reached (`Page.getNavigationHistory`).
    pub async fn history(&self) -> Result<(i64, Vec<HistoryEntry>), CommandError> {
        let history = self.call("Page.getNavigationHistory", json!({})).await?;
        let current = history["currentIndex"].as_i64().unwrap_or(0);
        let entries = history["entries"]
            .as_array()
            .map(|all| {
                all.iter()
                    .map(|e| HistoryEntry {
                        id: e["id"].as_i64().unwrap_or(-1),
                        url: e["url"].as_str().unwrap_or_default().to_string(),
                        transition: e["transitionType"].as_str().unwrap_or_default().to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok((current, entries))
    }

    /// Steps to history entry `entry_id` (from `old_url`) and answers the document's status.
    pub async fn go_to_history_entry(
        &self,
        entry_id: i64,
        old_url: &str,
    ) -> Result<i64, CommandError> {
        self.navigate_with(
            "Page.navigateToHistoryEntry",
            json!({ "entryId": entry_id }),
            Some(old_url),
        )
        .await
    }

    /// Reloads the main frame and answers the document's status.
    pub async fn reload(&self) -> Result<i64, CommandError> {
        self.navigate_with("Page.reload", json!({}), None).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lifecycle(frame: &str, loader: &str, name: &str) -> EventLifecycleEvent {
        serde_json::from_value(json!({
            "frameId": frame, "loaderId": loader, "name": name, "timestamp": 1.0
        }))
        .unwrap()
    }

    #[test]
    fn navigation_waits_for_the_load_of_its_own_document() {
        let mut docs = Vec::new();
        // The old document's late events and other frames' events do not count.
        assert!(!lifecycle_step(
            &lifecycle("F", "OLD", "load"),
            "F",
            "L",
            &mut docs
        ));
        assert!(!lifecycle_step(
            &lifecycle("C", "L", "load"),
            "F",
            "L",
            &mut docs
        ));
        assert!(!lifecycle_step(
            &lifecycle("F", "L", "init"),
            "F",
            "L",
            &mut docs
        ));
        assert!(!lifecycle_step(
            &lifecycle("F", "L", "DOMContentLoaded"),
            "F",
            "L",
            &mut docs
        ));
        assert!(lifecycle_step(
            &lifecycle("F", "L", "load"),
            "F",
            "L",
            &mut docs
        ));
        assert_eq!(docs, ["L"]);
    }

    #[test]
    fn navigation_follows_a_document_that_replaced_its_own() {
        let mut docs = Vec::new();
        // A document before ours committed is not ours, nor one that replaces it.
        assert!(!lifecycle_step(
            &lifecycle("F", "X", "init"),
            "F",
            "L",
            &mut docs
        ));
        assert!(docs.is_empty());
        assert!(!lifecycle_step(
            &lifecycle("F", "L", "init"),
            "F",
            "L",
            &mut docs
        ));
        // A script redirect while ours loaded: its load ends the wait, ours would not.
        assert!(!lifecycle_step(
            &lifecycle("F", "M", "init"),
            "F",
            "L",
            &mut docs
        ));
        assert!(!lifecycle_step(
            &lifecycle("F", "L", "load"),
            "F",
            "L",
            &mut docs
        ));
        assert!(lifecycle_step(
            &lifecycle("F", "M", "load"),
            "F",
            "L",
            &mut docs
        ));
        assert_eq!(docs, ["L", "M"]);
    }
}

/// A resource the browser's network stack loaded for the page ([`Tab::load_resource`]).
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Whether it loaded (any HTTP status).
    pub loaded: bool,
    /// Its HTTP status (0 when it did not load).
    pub status: u64,
    /// Its response headers.
    pub headers: Value,
    /// Its body (at most [`FETCH_MAX`] bytes).
    pub body: Vec<u8>,
    /// Chromium's error name when it did not load (`net::ERR_NAME_NOT_RESOLVED` …).
    pub error: Option<String>,
}

/// The largest body [`Tab::load_resource`] reads.
pub const FETCH_MAX: usize = 32 * 1024 * 1024;

impl Tab {
    /// Adds `source` to run in every new document of the page before its own scripts: its id.
    pub async fn add_init_script(&self, source: &str) -> Result<Value, CommandError> {
        let res = self
            .call(
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": source}),
            )
            .await?;
        Ok(res["identifier"].clone())
    }

    /// Removes the init script `id` ([`Tab::add_init_script`]).
    pub async fn remove_init_script(&self, id: &Value) -> Result<(), CommandError> {
        self.call(
            "Page.removeScriptToEvaluateOnNewDocument",
            json!({"identifier": id}),
        )
        .await?;
        Ok(())
    }

    /// A GET of `url` through the main frame's network stack (`Network.loadNetworkResource`:
    /// the context's cookies, the cache, no CORS), its body read whole up to [`FETCH_MAX`].
    pub async fn load_resource(&self, url: &str) -> Result<Fetched, CommandError> {
        let tree = self.call("Page.getFrameTree", json!({})).await?;
        let frame = tree["frameTree"]["frame"]["id"].clone();
        let res = self
            .call(
                "Network.loadNetworkResource",
                json!({"frameId": frame, "url": url,
                       "options": {"disableCache": false, "includeCredentials": true}}),
            )
            .await?;
        let r = &res["resource"];
        let status = r["httpStatusCode"].as_u64().unwrap_or(0);
        let mut body = Vec::new();
        if let Some(stream) = r["stream"].as_str() {
            loop {
                let chunk = self
                    .call("IO.read", json!({"handle": stream, "size": 1 << 20}))
                    .await?;
                let data = chunk["data"].as_str().unwrap_or("");
                if chunk["base64Encoded"].as_bool().unwrap_or(false) {
                    body.extend(crate::encoding::decode_base64(data).unwrap_or_default());
                } else {
                    body.extend_from_slice(data.as_bytes());
                }
                if chunk["eof"].as_bool().unwrap_or(true) || body.len() > FETCH_MAX {
                    break;
                }
            }
            let _ = self.call("IO.close", json!({"handle": stream})).await;
        }
        Ok(Fetched {
            loaded: r["success"].as_bool().unwrap_or(false) || status > 0,
            status,
            headers: r["headers"].clone(),
            body,
            error: r["netErrorName"].as_str().map(str::to_string),
        })
    }
}
