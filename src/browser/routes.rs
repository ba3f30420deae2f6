//! The task's Fetch domain: request routes (`route`, `unroute`: abort, mock or resume the
//! requests whose URL matches an engine glob) and HTTP basic-auth credentials
//! (`set_credentials`), for all of the task's tabs and their out-of-process frames.
//!
//! This is the one owner of `Fetch` in the engine. It works on sessions of the raw connection
//! (the tab's own and its frames'), not on chromiumoxide's page session: chromiumoxide answers
//! every `Fetch.authRequired` and `Fetch.requestPaused` it sees itself, which would race the
//! answers given here. Paused requests arrive through [`RawConnection::fetch_events`], which
//! misses none (a paused request nobody answers hangs the page).
//!
//! The rules and credentials belong to the task ([`Routes`], in its `TabEvents`). Every session
//! the task has is adopted ([`Routes::adopt`]: the tab's when it attaches, a frame's when it
//! appears) and pauses its requests while any rule or credentials exist (`Fetch.enable`, every
//! URL at the request stage, `handleAuthRequests` with credentials). Each paused request is
//! answered by the newest matching rule (none: it goes on untouched); matching is the caller's
//! (the engine glob), not CDP's wildcard. A challenge gets the credentials once per request,
//! then `CancelAuth`, so a wrong password ends at the server's 401 rather than in a loop.
//!
//! Known gap: a frame's session is adopted as the frame appears, without pausing it, so the
//! frame's very first requests may go out before its `Fetch.enable`.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::raw::{RawConnection, SessionEvent};
use super::Browser;
use crate::error::CommandError;

/// How many requests answered with credentials are remembered (a second challenge of one of
/// them is cancelled).
const AUTH_TRIED: usize = 256;

/// What a rule does with a matching request.
#[derive(Debug, Clone, PartialEq)]
pub enum RouteAction {
    /// Fails it (`net::ERR_FAILED` for the page).
    Abort,
    /// Answers it with this response; the network is never reached.
    Mock {
        /// The response body.
        body: String,
        /// The HTTP status.
        status: u16,
        /// The `Content-Type` header.
        content_type: String,
    },
    /// Lets it go on untouched (shadows older rules).
    Resume,
    /// Holds it for a caller, who takes it with [`Routes::next_asked`] and answers it with
    /// [`Routes::decide`] (Splash's `on_request`); one not answered within [`ASK_BOUND`] goes
    /// on as it is.
    Ask,
    /// As `Ask`, for the response's headers (Splash's `on_response_headers`): the request
    /// pauses again once its response's headers are in.
    AskResponse,
}

/// How long a held request waits for its decision before it goes on untouched.
pub const ASK_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// A held request: where to answer it.
struct Asked {
    conn: Arc<RawConnection>,
    session: String,
    request_id: String,
    /// Held at the response stage (`AskResponse`), not the request stage.
    response: bool,
}

/// What a caller decides for a held request ([`Routes::decide`]).
#[derive(Debug, Clone, Default)]
pub struct Decision {
    /// Fail it (`net::ERR_ABORTED` for the page).
    pub abort: bool,
    /// Send it to this URL instead.
    pub url: Option<String>,
    /// Send it with this method.
    pub method: Option<String>,
    /// Send it with this body.
    pub body: Option<Vec<u8>>,
    /// Headers to set (a name given again replaces the request's own).
    pub headers: Vec<(String, String)>,
}

/// A URL matcher (the engine glob).
pub type Matcher = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// One rule.
#[derive(Clone)]
pub struct Rule {
    /// The pattern as given (rules are keyed by it).
    pub pattern: String,
    /// Whether a URL matches the pattern.
    pub matcher: Matcher,
    /// What it does.
    pub action: RouteAction,
    /// Only requests of this CDP resource type (`Image`, `Script` …), when set.
    pub resource_type: Option<String>,
}

#[derive(Default)]
struct RouteState {
    rules: Vec<Rule>,
    /// Requests answered by a rule, per pattern (abort, mock and resume alike).
    hits: Vec<(String, u64)>,
    /// Basic-auth user and password (`set_credentials`).
    credentials: Option<(String, String)>,
    /// The task's proxy's user and password (`start{proxy}` with credentials).
    proxy_credentials: Option<(String, String)>,
    /// The newest requests given the credentials (a proxy's challenge as `proxy:<id>`).
    tried_auth: VecDeque<String>,
    /// The raw-connection sessions whose paused requests are answered here, each marked when
    /// it is a frame's (not a tab's own).
    sessions: Vec<(String, bool)>,
    /// Held requests not yet taken by [`Routes::next_asked`], as the caller sees them.
    asked: Vec<Value>,
    /// Held requests waiting for their decision, by the id the caller was given.
    held: std::collections::HashMap<String, Asked>,
}

/// The rules and credentials of one task.
#[derive(Default)]
pub struct Routes {
    state: Mutex<RouteState>,
    /// Told when a request is held.
    asked_now: tokio::sync::Notify,
}

impl fmt::Debug for Routes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Routes")
            .field("rules", &self.patterns())
            .field("credentials", &self.with(|s| s.credentials.is_some()))
            .finish()
    }
}

impl Routes {
    fn with<R>(&self, f: impl FnOnce(&mut RouteState) -> R) -> R {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut state)
    }

    /// Adds `rule`, or updates the rule of the same pattern; answers whether one was replaced.
    pub fn set(&self, rule: Rule) -> bool {
        self.with(|s| {
            if let Some(r) = s.rules.iter_mut().find(|r| r.pattern == rule.pattern) {
                *r = rule;
                true
            } else {
                s.rules.push(rule);
                false
            }
        })
    }

    /// Removes the rule of `pattern` (all rules when None); answers how many went.
    pub fn remove(&self, pattern: Option<&str>) -> usize {
        self.with(|s| {
            let before = s.rules.len();
            match pattern {
                Some(p) => s.rules.retain(|r| r.pattern != p),
                None => s.rules.clear(),
            }
            before - s.rules.len()
        })
    }

    /// The patterns of the rules, oldest first.
    pub fn patterns(&self) -> Vec<String> {
        self.with(|s| s.rules.iter().map(|r| r.pattern.clone()).collect())
    }

    /// How many requests the rule of `pattern` has answered.
    pub fn hits(&self, pattern: &str) -> u64 {
        self.with(|s| {
            s.hits
                .iter()
                .find(|(p, _)| p == pattern)
                .map_or(0, |(_, n)| *n)
        })
    }

    /// The newest rule matching `url`, counted as a hit.
    #[cfg(test)]
    fn rule_for(&self, url: &str, resource_type: &str) -> Option<RouteAction> {
        self.rule_at(url, resource_type, false)
    }

    /// The newest rule for `url` at the request stage, or at the response stage (only
    /// `AskResponse` rules answer there).
    /// A rule for one resource type (images off) is more specific than any rule for every
    /// type, and answers first.
    fn rule_at(&self, url: &str, resource_type: &str, response: bool) -> Option<RouteAction> {
        self.with(|s| {
            let fits = |r: &&Rule| {
                (r.action == RouteAction::AskResponse) == response
                    && r.resource_type
                        .as_deref()
                        .is_none_or(|t| t == resource_type)
                    && (r.matcher)(url)
            };
            let typed = s
                .rules
                .iter()
                .rev()
                .filter(|r| r.resource_type.is_some())
                .find(fits);
            let rule = typed.or_else(|| s.rules.iter().rev().find(fits))?.clone();
            match s.hits.iter_mut().find(|(p, _)| *p == rule.pattern) {
                Some((_, n)) => *n += 1,
                None => s.hits.push((rule.pattern.clone(), 1)),
            }
            Some(rule.action)
        })
    }

    /// The rules and credentials as they are now (for [`Routes::restore`]).
    pub fn snapshot(&self) -> (Vec<Rule>, Option<(String, String)>) {
        self.with(|s| (s.rules.clone(), s.credentials.clone()))
    }

    /// Puts back what [`Routes::snapshot`] took (hit counts stay).
    pub fn restore(&self, (rules, credentials): (Vec<Rule>, Option<(String, String)>)) {
        self.with(|s| {
            s.rules = rules;
            s.credentials = credentials;
        });
    }

    /// Sets (or with None, drops) the basic-auth credentials.
    pub fn set_credentials(&self, credentials: Option<(String, String)>) {
        self.with(|s| s.credentials = credentials);
    }

    /// Sets the credentials the task's proxy's challenges are answered with (once per request).
    pub fn set_proxy_credentials(&self, credentials: Option<(String, String)>) {
        self.with(|s| s.proxy_credentials = credentials);
    }

    /// What `Fetch.enable` needs now; None when nothing needs the Fetch domain.
    fn fetch_params(&self) -> Option<Value> {
        self.with(|s| {
            let auth = s.credentials.is_some() || s.proxy_credentials.is_some();
            (!s.rules.is_empty() || auth).then(|| {
                let mut patterns = vec![json!({"urlPattern": "*", "requestStage": "Request"})];
                if s.rules.iter().any(|r| r.action == RouteAction::AskResponse) {
                    patterns.push(json!({"urlPattern": "*", "requestStage": "Response"}));
                }
                json!({
                    "patterns": patterns,
                    "handleAuthRequests": auth,
                })
            })
        })
    }

    /// The answer to challenge `request_id`: the credentials the first time (the proxy's for
    /// a proxy's challenge, else `set_credentials`'), then cancel; the browser's default (no
    /// credentials) when none are set for who asks.
    fn auth_answer(&self, request_id: &str, from_proxy: bool) -> Value {
        let key = if from_proxy {
            format!("proxy:{request_id}")
        } else {
            request_id.to_string()
        };
        self.with(|s| {
            let given = if from_proxy {
                &s.proxy_credentials
            } else {
                &s.credentials
            };
            match given.clone() {
                _ if s.tried_auth.contains(&key) => json!({"response": "CancelAuth"}),
                Some((user, pass)) => {
                    if s.tried_auth.len() == AUTH_TRIED {
                        s.tried_auth.pop_front();
                    }
                    s.tried_auth.push_back(key);
                    json!({"response": "ProvideCredentials", "username": user, "password": pass})
                }
                None => json!({"response": "Default"}),
            }
        })
    }

    /// The answer to paused request `ev` (`Fetch.requestPaused` / `Fetch.authRequired`).
    fn answer(&self, ev: &SessionEvent) -> Option<(&'static str, Value)> {
        let id = ev
            .params
            .get("requestId")
            .and_then(Value::as_str)?
            .to_string();
        if ev.method == "Fetch.authRequired" {
            let proxy = ev.params.pointer("/authChallenge/source") == Some(&json!("Proxy"));
            return Some((
                "Fetch.continueWithAuth",
                json!({"requestId": id, "authChallengeResponse": self.auth_answer(&id, proxy)}),
            ));
        }
        if ev.method != "Fetch.requestPaused" {
            return None;
        }
        let url = ev
            .params
            .pointer("/request/url")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let resource_type = ev
            .params
            .get("resourceType")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if ev.params.get("responseErrorReason").is_some()
            && ev.params.get("responseStatusCode").is_none()
        {
            // Paused at the response stage with no response (the request failed): nothing to
            // show a callback; it goes on to its failure.
            return Some(("Fetch.continueRequest", json!({"requestId": id})));
        }
        let response = ev.params.get("responseStatusCode").is_some();
        Some(match self.rule_at(url, resource_type, response) {
            Some(RouteAction::AskResponse) => return Some(("ask", json!({"requestId": id}))),
            Some(RouteAction::Abort) => (
                "Fetch.failRequest",
                json!({"requestId": id, "errorReason": "Failed"}),
            ),
            Some(RouteAction::Mock {
                body,
                status,
                content_type,
            }) => (
                "Fetch.fulfillRequest",
                json!({
                    "requestId": id,
                    "responseCode": status,
                    "responseHeaders": [{"name": "Content-Type", "value": content_type}],
                    "body": crate::encoding::encode_base64(body.as_bytes()),
                }),
            ),
            Some(RouteAction::Ask) => return Some(("ask", json!({"requestId": id}))),
            Some(RouteAction::Resume) | None => ("Fetch.continueRequest", json!({"requestId": id})),
        })
    }

    /// Holds paused request `ev` of `session` for the caller of [`Routes::next_asked`], and
    /// lets it go on by itself after [`ASK_BOUND`].
    fn hold(
        self: &Arc<Routes>,
        browser: &Arc<Browser>,
        conn: &Arc<RawConnection>,
        session: &str,
        ev: &SessionEvent,
    ) {
        let request_id = ev.params["requestId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let response = ev.params.get("responseStatusCode").is_some();
        // One id per hold: a request's two stages are two holds.
        let id = format!(
            "{session}/{request_id}/{}",
            if response { "response" } else { "request" }
        );
        let request = &ev.params["request"];
        let mut seen = json!({
            "id": id,
            "url": request["url"],
            "method": request["method"],
            "headers": request["headers"],
            "postData": request["postData"],
            "resourceType": ev.params["resourceType"],
            "frameId": ev.params["frameId"],
            "stage": "request",
        });
        if let Some(status) = ev.params.get("responseStatusCode") {
            let mut headers = serde_json::Map::new();
            for h in ev.params["responseHeaders"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if let (Some(k), Some(v)) = (h["name"].as_str(), h["value"].as_str()) {
                    headers.insert(k.to_string(), json!(v));
                }
            }
            seen["stage"] = json!("response");
            seen["status"] = status.clone();
            seen["statusText"] = ev.params["responseStatusText"].clone();
            seen["responseHeaders"] = Value::Object(headers);
        }
        self.with(|s| {
            s.asked.push(seen);
            s.held.insert(
                id.clone(),
                Asked {
                    conn: conn.clone(),
                    session: session.to_string(),
                    request_id,
                    response,
                },
            );
        });
        self.asked_now.notify_waiters();
        let me = self.clone();
        browser.spawn(async move {
            tokio::time::sleep(ASK_BOUND).await;
            if me.with(|s| s.held.contains_key(&id)) {
                tracing::debug!("a held request got no decision in time: it goes on");
                let _ = me.decide(&id, Decision::default()).await;
            }
        });
    }

    /// The requests held since the last call, waiting up to `wait` for one.
    pub async fn next_asked(&self, wait: std::time::Duration) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.asked_now.notified();
            let taken = self.with(|s| std::mem::take(&mut s.asked));
            if !taken.is_empty() {
                return taken;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Vec::new();
            }
        }
    }

    /// Answers held request `id` (from [`Routes::next_asked`]) with `decision`; false when it
    /// is not held (answered already, or gone on by itself).
    pub async fn decide(&self, id: &str, decision: Decision) -> Result<bool, CommandError> {
        let Some(asked) = self.with(|s| s.held.remove(id)) else {
            return Ok(false);
        };
        let (method, params) = if decision.abort {
            (
                "Fetch.failRequest",
                json!({"requestId": asked.request_id, "errorReason": "Aborted"}),
            )
        } else {
            let mut p = json!({"requestId": asked.request_id});
            if let Some(u) = decision.url {
                p["url"] = json!(u);
            }
            if let Some(m) = decision.method {
                p["method"] = json!(m);
            }
            if let Some(b) = decision.body {
                p["postData"] = json!(crate::encoding::encode_base64(&b));
            }
            if !decision.headers.is_empty() {
                p["headers"] = json!(decision
                    .headers
                    .iter()
                    .map(|(k, v)| json!({"name": k, "value": v}))
                    .collect::<Vec<_>>());
            }
            ("Fetch.continueRequest", p)
        };
        match asked.conn.call(Some(&asked.session), method, params).await {
            Ok(_) => Ok(true),
            Err(e) => {
                // Gone meanwhile (the page navigated away, the request was cancelled), or the
                // change was refused: never leave it paused, and tell the caller it was not
                // answered as asked.
                tracing::debug!("{method} of a held request failed: {}", e.msg);
                let again = json!({"requestId": asked.request_id});
                let _ = asked
                    .conn
                    .call(Some(&asked.session), "Fetch.continueRequest", again)
                    .await;
                Ok(false)
            }
        }
    }

    /// Lets every held request of one stage go on as it is (its callbacks are gone).
    pub async fn release_held(&self, response: bool) {
        let ids: Vec<String> = self.with(|s| {
            let stage = if response { "response" } else { "request" };
            s.asked.retain(|a| a["stage"] != stage);
            s.held
                .iter()
                .filter(|(_, a)| a.response == response)
                .map(|(id, _)| id.clone())
                .collect()
        });
        for id in ids {
            let _ = self.decide(&id, Decision::default()).await;
        }
    }

    /// Whether anything needs the Fetch domain (rules or credentials).
    pub fn active(&self) -> bool {
        self.fetch_params().is_some()
    }

    /// Answers `session`'s paused requests from now on (once per session; it ends with the
    /// session) and brings it up to the current rules. `frame`: the session is an
    /// out-of-process frame's, applied by [`Routes::apply_frames`] after a change.
    pub(super) async fn adopt(
        self: &Arc<Routes>,
        browser: &Arc<Browser>,
        conn: &Arc<RawConnection>,
        session: &str,
        frame: bool,
    ) -> Result<(), CommandError> {
        let fresh = self.with(|s| {
            let fresh = !s.sessions.iter().any(|(x, _)| x == session);
            if fresh {
                s.sessions.push((session.to_string(), frame));
            }
            fresh
        });
        if fresh {
            let mut events = conn.fetch_events(session);
            let me = self.clone();
            let conn_too = conn.clone();
            let spawner = browser.clone();
            let session_too = session.to_string();
            browser.spawn(async move {
                while let Some(ev) = events.recv().await {
                    let Some((method, params)) = me.answer(&ev) else {
                        continue;
                    };
                    if method == "ask" {
                        me.hold(&spawner, &conn_too, &session_too, &ev);
                        continue;
                    }
                    // Answered off the loop: one slow answer holds no other request.
                    let conn = conn_too.clone();
                    let session = session_too.clone();
                    spawner.spawn(async move {
                        let id = params["requestId"].clone();
                        if let Err(e) = conn.call(Some(&session), method, params).await {
                            tracing::debug!("{method} of a paused request failed: {}", e.msg);
                            // Never leave it paused: let it go on as it is (a request already
                            // gone answers an error here too, which is fine).
                            if method != "Fetch.continueRequest"
                                && method != "Fetch.continueWithAuth"
                            {
                                let again = json!({"requestId": id});
                                let _ = conn
                                    .call(Some(&session), "Fetch.continueRequest", again)
                                    .await;
                            }
                        }
                    });
                }
                me.with(|s| s.sessions.retain(|(x, _)| *x != session_too));
            });
            if !self.active() {
                // Fetch was never enabled on it.
                return Ok(());
            }
        }
        self.apply(conn, session).await
    }

    /// Makes `session` pause requests while any rule or credentials exist and stop when none
    /// is left (`Fetch.enable` / `Fetch.disable`).
    pub(super) async fn apply(
        &self,
        conn: &RawConnection,
        session: &str,
    ) -> Result<(), CommandError> {
        let (method, params) = match self.fetch_params() {
            Some(params) => ("Fetch.enable", params),
            None => ("Fetch.disable", json!({})),
        };
        conn.call(Some(session), method, params).await.map(drop)
    }

    /// Applies the current rules to every adopted frame session (the tabs' own are applied
    /// and checked by their callers); a frame that is going away only logs.
    pub(super) async fn apply_frames(&self, conn: &RawConnection) {
        let sessions = self.with(|s| s.sessions.clone());
        for (session, _) in sessions.iter().filter(|(_, frame)| *frame) {
            if let Err(e) = self.apply(conn, session).await {
                tracing::debug!("a frame missed the task's routes: {}", e.msg);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_matching_rule_answers_and_a_pattern_is_one_rule() {
        let r = Routes::default();
        let any: Matcher = Arc::new(|_| true);
        let api: Matcher = Arc::new(|u| u.contains("/api/"));
        r.set(Rule {
            pattern: "**".into(),
            matcher: any,
            action: RouteAction::Abort,
            resource_type: None,
        });
        let rule = Rule {
            pattern: "**/api/**".into(),
            matcher: api,
            action: RouteAction::Resume,
            resource_type: None,
        };
        assert!(!r.set(rule.clone()));
        assert!(r.set(rule), "same pattern: updated");
        assert_eq!(r.patterns().len(), 2);
        assert_eq!(
            r.rule_for("http://h/api/x", "Fetch"),
            Some(RouteAction::Resume)
        );
        assert_eq!(r.rule_for("http://h/x", "Fetch"), Some(RouteAction::Abort));
        assert_eq!(r.hits("**"), 1);
        assert_eq!(r.remove(Some("**")), 1);
        assert_eq!(r.rule_for("http://h/x", "Fetch"), None);
        assert_eq!(r.remove(None), 1);
        // A rule for one resource type leaves the others alone.
        r.set(Rule {
            pattern: "images".into(),
            matcher: Arc::new(|_| true),
            action: RouteAction::Abort,
            resource_type: Some("Image".into()),
        });
        assert_eq!(
            r.rule_for("http://h/a.png", "Image"),
            Some(RouteAction::Abort)
        );
        assert_eq!(r.rule_for("http://h/a.png", "Document"), None);
    }
}
