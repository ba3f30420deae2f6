//! Requests in flight per tab, from the page session's Network events (`wait_for_idle`,
//! `wait_for_load{state="networkidle"}`).
//!
//! Each tab counts from the moment it is attached, so a request a click started before the wait
//! began is still in flight for the wait. A request counts from `Network.requestWillBeSent` until
//! its `loadingFinished` or `loadingFailed`; a redirect keeps its id. When the main frame commits
//! a new document, what its previous document still had pending is dropped (those requests are
//! cancelled with it, and Chromium does not always report it). Requests of out-of-process iframes
//! go to their own sessions and are not counted here.
//!
//! The same listeners feed the task's recorder (`netlog`): one Network listener set per tab
//! (the recorder follows out-of-process iframes on its own, through the raw connection).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, EventResponseReceived,
};
use chromiumoxide::cdp::browser_protocol::page::EventFrameNavigated;
use chromiumoxide::Page;
use futures::StreamExt;

use super::cdp_error::from_cdp;
use super::netlog::TaskLog;
use super::Browser;
use crate::error::CommandError;

/// How many pending requests a reading lists (the oldest first).
const LISTED: usize = 5;

/// One pending request.
struct Pending {
    url: String,
    kind: String,
    loader_id: String,
    since: Instant,
}

struct State {
    pending: HashMap<String, Pending>,
    /// When a request last started or ended.
    last_activity: Instant,
}

/// The in-flight requests of one tab.
pub struct Inflight {
    state: Mutex<State>,
}

/// One pending request as a reading shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PendingRequest {
    /// The request URL.
    pub url: String,
    /// Chromium's resource type (`Fetch`, `XHR`, `Image`, `Document`…).
    #[serde(rename = "type")]
    pub kind: String,
    /// How long it has been pending, in ms.
    #[serde(rename = "ageMs")]
    pub age_ms: u64,
}

/// A reading of the in-flight counter.
#[derive(Debug, Clone)]
pub struct InflightNow {
    /// Requests in flight.
    pub count: usize,
    /// How long ago a request last started or ended.
    pub quiet_for: Duration,
    /// Up to five of the pending requests, the oldest first.
    pub oldest: Vec<PendingRequest>,
}

impl Inflight {
    /// Starts counting the requests of `page`'s session (the main frame id is `main_frame`),
    /// and recording them into `log`.
    pub(super) async fn watch(
        browser: &Arc<Browser>,
        page: &Page,
        main_frame: String,
        log: Arc<TaskLog>,
    ) -> Result<Arc<Inflight>, CommandError> {
        let mut sent = page
            .event_listener::<EventRequestWillBeSent>()
            .await
            .map_err(|e| from_cdp("Network.requestWillBeSent", e))?;
        let mut finished = page
            .event_listener::<EventLoadingFinished>()
            .await
            .map_err(|e| from_cdp("Network.loadingFinished", e))?;
        let mut failed = page
            .event_listener::<EventLoadingFailed>()
            .await
            .map_err(|e| from_cdp("Network.loadingFailed", e))?;
        let mut responded = page
            .event_listener::<EventResponseReceived>()
            .await
            .map_err(|e| from_cdp("Network.responseReceived", e))?;
        let mut navigated = page
            .event_listener::<EventFrameNavigated>()
            .await
            .map_err(|e| from_cdp("Page.frameNavigated", e))?;
        let me = Arc::new(Inflight {
            state: Mutex::new(State {
                pending: HashMap::new(),
                last_activity: Instant::now(),
            }),
        });
        // The task ends with the tab's event streams.
        let me_too = me.clone();
        let (browser_too, page_too) = (browser.clone(), page.clone());
        browser.spawn(async move {
            let me = me_too;
            loop {
                // Biased, in the order Chromium sends a request's events: chromiumoxide hands
                // each event to its listener's channel as it arrives, so a request's
                // `requestWillBeSent` is in its channel before its `loadingFailed` is in the
                // other. Polled at random, a failure (or a response, an end) could be handled
                // before its request was recorded and be lost, and the in-flight count keep a
                // request that had ended.
                tokio::select! {
                    biased;
                    ev = sent.next() => match ev {
                        Some(ev) => {
                            me.started(&ev);
                            log.request_sent(&ev);
                        }
                        None => break,
                    },
                    ev = responded.next() => match ev {
                        Some(ev) => log.response_received(&ev),
                        None => break,
                    },
                    ev = finished.next() => match ev {
                        Some(ev) => {
                            let id = ev.request_id.as_ref();
                            me.ended(id);
                            if log.finished(id) {
                                log.capture_body(&browser_too, &page_too, id.to_string());
                            }
                        }
                        None => break,
                    },
                    ev = failed.next() => match ev {
                        Some(ev) => {
                            me.ended(ev.request_id.as_ref());
                            log.failed(
                                ev.request_id.as_ref(),
                                &ev.error_text,
                                ev.canceled == Some(true),
                            );
                        }
                        None => break,
                    },
                    ev = navigated.next() => match ev {
                        Some(ev) if ev.frame.parent_id.is_none()
                            && ev.frame.id.as_ref() == main_frame =>
                        {
                            me.committed(ev.frame.loader_id.as_ref());
                        }
                        Some(_) => {}
                        None => break,
                    },
                }
            }
        });
        Ok(me)
    }

    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut state)
    }

    fn started(&self, ev: &EventRequestWillBeSent) {
        let pending = Pending {
            url: ev.request.url.clone(),
            kind: ev
                .r#type
                .as_ref()
                .map(|t| t.as_ref().to_string())
                .unwrap_or_default(),
            loader_id: ev.loader_id.as_ref().to_string(),
            since: Instant::now(),
        };
        self.with(|s| {
            // A redirect reuses the id: it stays one request, since its first hop.
            let since = s
                .pending
                .get(ev.request_id.as_ref())
                .map(|p| p.since)
                .unwrap_or(pending.since);
            s.pending.insert(
                ev.request_id.as_ref().to_string(),
                Pending { since, ..pending },
            );
            s.last_activity = Instant::now();
        });
    }

    fn ended(&self, id: &str) {
        self.with(|s| {
            if s.pending.remove(id).is_some() {
                s.last_activity = Instant::now();
            }
        });
    }

    /// The main frame committed the document of `loader`: its previous document's requests go.
    fn committed(&self, loader: &str) {
        self.with(|s| {
            let before = s.pending.len();
            // Everything pending at a main-frame commit belongs to the old document tree
            // (its child frames included, which Chromium does not always report as failed),
            // except the new document's own request.
            s.pending.retain(|_, p| p.loader_id == loader);
            if s.pending.len() != before {
                s.last_activity = Instant::now();
            }
        });
    }

    /// The counter now.
    pub fn now(&self) -> InflightNow {
        self.with(|s| {
            let mut oldest: Vec<&Pending> = s.pending.values().collect();
            oldest.sort_by_key(|p| p.since);
            InflightNow {
                count: s.pending.len(),
                quiet_for: s.last_activity.elapsed(),
                oldest: oldest
                    .into_iter()
                    .take(LISTED)
                    .map(|p| PendingRequest {
                        url: p.url.clone(),
                        kind: p.kind.clone(),
                        age_ms: p.since.elapsed().as_millis() as u64,
                    })
                    .collect(),
            }
        })
    }
}
