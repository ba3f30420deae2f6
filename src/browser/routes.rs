//! The task's request routes (`route`, `unroute`): abort, mock or resume the requests of all
//! its tabs whose URL matches an engine glob, through CDP's Fetch domain.
//!
//! The rules belong to the task ([`Routes`], in its `TabEvents`), so every tab (tabs opened
//! later included: [`Routes::attach`] runs in `Tab::attach`) pauses its requests while any rule
//! exists and answers each paused request by the newest matching rule (no match: it goes on
//! untouched). Matching is done here, by the caller's matcher (the engine glob), not by CDP's
//! own wildcard patterns, so the pattern given to `Fetch.enable` is `*` at the request stage.
//!
//! Entry points: [`Routes::attach`] (per tab, once) and [`Routes::sync`] (per tab, after the
//! rules changed: `Fetch.enable` while any rule exists, `Fetch.disable` when none is left).
//! Basic auth (`set_credentials`) also needs the Fetch domain; when both land they must share
//! one `Fetch.enable` per session (this pattern plus `handleAuthRequests:true`) and one
//! `Fetch.disable` only when neither needs it — see `sync`.
//!
//! Requests of out-of-process iframes go to their own sessions and are not routed.

use std::fmt;
use std::sync::{Arc, Mutex};

use chromiumoxide::cdp::browser_protocol::fetch::EventRequestPaused;
use chromiumoxide::Page;
use futures::StreamExt;
use serde_json::json;

use super::cdp_error::from_cdp;
use super::raw::Raw;
use super::Browser;
use crate::error::CommandError;

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
}

#[derive(Default)]
struct RouteState {
    rules: Vec<Rule>,
    /// Requests answered by a rule, per pattern (abort, mock and resume alike).
    hits: Vec<(String, u64)>,
}

/// The rules of one task.
#[derive(Default)]
pub struct Routes {
    state: Mutex<RouteState>,
}

impl fmt::Debug for Routes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Routes")
            .field("rules", &self.patterns())
            .finish()
    }
}

/// Standard base64 (what CDP's `Fetch.fulfillRequest` body wants).
fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(char::from(T[((n >> (18 - 6 * k)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
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
    fn rule_for(&self, url: &str) -> Option<RouteAction> {
        self.with(|s| {
            let rule = s.rules.iter().rev().find(|r| (r.matcher)(url))?.clone();
            match s.hits.iter_mut().find(|(p, _)| *p == rule.pattern) {
                Some((_, n)) => *n += 1,
                None => s.hits.push((rule.pattern.clone(), 1)),
            }
            Some(rule.action)
        })
    }

    /// Starts answering `page`'s paused requests by the rules (once per tab), and applies the
    /// rules the task already has.
    pub(super) async fn attach(
        self: &Arc<Routes>,
        browser: &Arc<Browser>,
        page: &Page,
    ) -> Result<(), CommandError> {
        let mut paused = page
            .event_listener::<EventRequestPaused>()
            .await
            .map_err(|e| from_cdp("Fetch.requestPaused", e))?;
        let me = self.clone();
        let page_too = page.clone();
        let spawner = browser.clone();
        browser.spawn(async move {
            while let Some(ev) = paused.next().await {
                let id = ev.request_id.as_ref().to_string();
                let (method, params) = match me.rule_for(&ev.request.url) {
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
                            "responseHeaders": [
                                {"name": "Content-Type", "value": content_type},
                            ],
                            "body": base64(body.as_bytes()),
                        }),
                    ),
                    Some(RouteAction::Resume) | None => {
                        ("Fetch.continueRequest", json!({"requestId": id}))
                    }
                };
                // Answered off the loop: one slow answer holds no other request.
                let page = page_too.clone();
                spawner.spawn(async move {
                    if let Err(e) = page.execute(Raw::new(method, params)).await {
                        tracing::debug!("{method} of a paused request failed: {e}");
                    }
                });
            }
        });
        if !self.patterns().is_empty() {
            Routes::sync(self, page).await?;
        }
        Ok(())
    }

    /// Makes `page`'s session pause requests while any rule exists (`Fetch.enable`, every URL
    /// at the request stage) and stop when none is left (`Fetch.disable`).
    pub(super) async fn sync(self: &Arc<Routes>, page: &Page) -> Result<(), CommandError> {
        let (method, params) = if self.patterns().is_empty() {
            ("Fetch.disable", json!({}))
        } else {
            (
                "Fetch.enable",
                json!({"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}),
            )
        };
        page.execute(Raw::new(method, params))
            .await
            .map(|_| ())
            .map_err(|e| from_cdp(method, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"h"), "aA==");
        assert_eq!(base64(b"hi"), "aGk=");
        assert_eq!(base64(b"hi=1"), "aGk9MQ==");
    }

    #[test]
    fn the_newest_matching_rule_answers_and_a_pattern_is_one_rule() {
        let r = Routes::default();
        let any: Matcher = Arc::new(|_| true);
        let api: Matcher = Arc::new(|u| u.contains("/api/"));
        r.set(Rule {
            pattern: "**".into(),
            matcher: any,
            action: RouteAction::Abort,
        });
        let rule = Rule {
            pattern: "**/api/**".into(),
            matcher: api,
            action: RouteAction::Resume,
        };
        assert!(!r.set(rule.clone()));
        assert!(r.set(rule), "same pattern: updated");
        assert_eq!(r.patterns().len(), 2);
        assert_eq!(r.rule_for("http://h/api/x"), Some(RouteAction::Resume));
        assert_eq!(r.rule_for("http://h/x"), Some(RouteAction::Abort));
        assert_eq!(r.hits("**"), 1);
        assert_eq!(r.remove(Some("**")), 1);
        assert_eq!(r.rule_for("http://h/x"), None);
        assert_eq!(r.remove(None), 1);
    }
}
