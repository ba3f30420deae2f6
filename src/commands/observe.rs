//! What an action changed: the before/after observation (JS-PROBES.md §7) and the click
//! receipt (COMMANDS.md "Click receipt").
//!
//! An [`Observation`] is the page URL, the task's tab count, the URL of the target's frame and
//! the page mark of that frame (`fingerprint.js`: body text length and a fingerprint of text,
//! controls and structure). The "before" comes from the last read of the element before the
//! action (the element probe takes the mark in the same call); the "after" is polled by
//! [`observe_after`]. `changed` is never proof of success, nor `changed:false` of failure.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::browser::tab::FrameRef;
use crate::browser::task::Task;
use crate::browser::Tab;
use crate::error::CommandError;
use crate::js;

/// How long after an action a change still counts, and the poll step (JS-PROBES.md §7).
pub const WINDOW: Duration = Duration::from_millis(500);
const STEP: Duration = Duration::from_millis(50);
/// How long an unreadable page (navigating, blank) is waited for, and the poll step.
const RECOVERY: Duration = Duration::from_millis(2500);
const RECOVERY_STEP: Duration = Duration::from_millis(100);

/// The page part of an observation as a probe reports it (`probe_lib.js` `pageMark`): the
/// frame's URL and its fingerprint, or why there is none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageMark {
    /// `location.href` of the frame.
    #[serde(default)]
    pub url: String,
    /// Length of the body's inner text.
    #[serde(default)]
    pub text_length: Option<i64>,
    /// FNV-1a of text, controls and structure, as a decimal string.
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// Why the document could not be read.
    #[serde(default)]
    pub probe_error: Option<String>,
}

/// An element as the probes describe it (JS-PROBES.md §8).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Upper-case tag name.
    pub tag: String,
    /// The `id` attribute.
    pub id: Option<String>,
    /// The class name, at most 120 characters.
    pub class_name: Option<String>,
    /// Collapsed inner text, at most 60 characters.
    pub text: String,
    /// Outer HTML, at most 300 characters (only the start tag for elements with many children).
    pub outer_html: String,
}

/// What the click receipt compares.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    url: String,
    tab_count: usize,
    frame_url: Option<String>,
    text_length: Option<i64>,
    fingerprint: Option<String>,
    probe_error: Option<String>,
    /// How many downloads the task's pages had begun.
    downloads: usize,
}

impl Observation {
    /// How many downloads the task's pages had begun when it was taken.
    pub fn downloads(&self) -> usize {
        self.downloads
    }
}

/// The observation of a page mark taken in `frame` of `tab` (a failed mark is an
/// untrustworthy observation). The page URL comes from the mark in the main frame and from the
/// tab for a child frame.
pub async fn observation_in(
    task: &Task,
    tab: &Tab,
    frame: &FrameRef,
    mark: Result<PageMark, CommandError>,
) -> Observation {
    let tab_count = task.tabs().0.len();
    let downloads = task.downloads_begun();
    let main = frame.is_main();
    let mark = mark.unwrap_or_else(|e| PageMark {
        probe_error: Some(e.msg),
        ..PageMark::default()
    });
    let url = if main && !mark.url.is_empty() {
        mark.url.clone()
    } else {
        tab.url().await.unwrap_or_default()
    };
    let frame_url = (!main && !mark.url.is_empty()).then(|| mark.url.clone());
    let (text_length, fingerprint, probe_error) = match (mark.probe_error, mark.fingerprint) {
        (None, Some(fp)) => (mark.text_length, Some(fp), None),
        (error, _) => (
            None,
            None,
            Some(error.unwrap_or_else(|| "no fingerprint".into())),
        ),
    };
    Observation {
        url,
        tab_count,
        frame_url,
        text_length,
        fingerprint,
        probe_error,
        downloads,
    }
}

/// Observes `frame` of `tab` now (one probe call in it, plus the tab's URL for a child frame).
pub async fn observe_in(task: &Task, tab: &Tab, frame: &FrameRef) -> Observation {
    let mark = tab
        .call_probe::<PageMark>(frame, js::FINGERPRINT_JS, json!({}))
        .await;
    observation_in(task, tab, frame, mark).await
}

fn differs(before: &Observation, after: &Observation) -> bool {
    before.url != after.url
        || before.tab_count != after.tab_count
        || before.frame_url != after.frame_url
        || before.downloads != after.downloads
        || matches!((&before.fingerprint, &after.fingerprint), (Some(a), Some(b)) if a != b)
}

fn usable(before: &Observation, after: &Observation) -> bool {
    after.probe_error.is_none()
        && !(before.text_length.unwrap_or(0) > 0 && after.text_length == Some(0))
}

/// The observation window after an action (JS-PROBES.md §7): polls every 50 ms for up to
/// 500 ms until something changes; if the page is unreadable, waits up to 2.5 s for it to come
/// back. Answers the last observation and whether the page came back (`probeRecovered`).
pub async fn observe_after_in(
    task: &Task,
    tab: &Tab,
    frame: &FrameRef,
    before: &Observation,
) -> (Observation, bool) {
    let start = Instant::now();
    let mut after = observe_in(task, tab, frame).await;
    while !differs(before, &after) && after.probe_error.is_none() && start.elapsed() < WINDOW {
        tokio::time::sleep(STEP).await;
        after = observe_in(task, tab, frame).await;
    }
    let mut recovered = false;
    if !usable(before, &after) {
        let wait_start = Instant::now();
        while !usable(before, &after) && wait_start.elapsed() < RECOVERY {
            tokio::time::sleep(RECOVERY_STEP).await;
            let url_before = after.url.clone();
            after = observe_in(task, tab, frame).await;
            if after.url.is_empty() {
                after.url = url_before;
            }
        }
        recovered = usable(before, &after);
    }
    (after, recovered)
}

/// The comparison part of a receipt: URLs, tab counts, text lengths, `changed`, and whether
/// the observation can be believed. `hit` is what the action targeted.
pub fn compare(
    before: &Observation,
    after: &Observation,
    recovered: bool,
    hit: Option<&Summary>,
) -> Value {
    let trustworthy = usable(before, after);
    let changed = differs(before, after);
    let mut r = json!({
        "urlBefore": before.url,
        "urlAfter": after.url,
        "tabCountBefore": before.tab_count,
        "tabCountAfter": after.tab_count,
        "textLengthBefore": before.text_length,
        "textLengthAfter": after.text_length,
        "changed": changed,
        "changeStatus": if !trustworthy && !changed { "unknown" } else if changed { "observed" } else { "not_observed" },
        "observationComplete": trustworthy,
        "probeTrustworthy": trustworthy,
        "observationWindowMs": WINDOW.as_millis(),
        "actionStatus": "completed",
        "retrySafe": false,
        "effective": if trustworthy || changed { json!(changed) } else { Value::Null },
        "hit": hit,
    });
    if recovered {
        r["probeRecovered"] = json!(true);
    }
    if after.downloads > before.downloads {
        r["downloadsStarted"] = json!(after.downloads - before.downloads);
    }
    if !trustworthy {
        r["probeNote"] = json!("the page was unreadable after the action (navigating or blank); `changed` may be incomplete");
        if let Some(e) = &after.probe_error {
            r["probeError"] = json!(e);
        }
        if after.text_length == Some(0) {
            r["page_appears_blank"] = json!(true);
        }
    }
    if !changed && trustworthy {
        r["hint"] = json!("nothing observable changed within 500 ms; the page may react later, or the click may have been ignored: read the page before acting again");
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(url: &str, text_length: i64, fingerprint: &str) -> Observation {
        Observation {
            url: url.into(),
            tab_count: 1,
            frame_url: None,
            text_length: Some(text_length),
            fingerprint: Some(fingerprint.into()),
            probe_error: None,
            downloads: 0,
        }
    }

    #[test]
    fn a_new_fingerprint_url_or_tab_is_a_change() {
        let before = seen("http://a/", 10, "1");
        let r = compare(&before, &seen("http://a/", 10, "1"), false, None);
        assert_eq!(
            (r["changed"].clone(), r["changeStatus"].clone()),
            (json!(false), json!("not_observed"))
        );
        assert_eq!(r["effective"], false);
        assert!(r["hint"].is_string());
        assert_eq!(
            compare(&before, &seen("http://a/", 12, "2"), false, None)["changed"],
            true
        );
        assert_eq!(
            compare(&before, &seen("http://b/", 10, "1"), false, None)["changed"],
            true
        );
        let mut tabs = seen("http://a/", 10, "1");
        tabs.tab_count = 2;
        assert_eq!(
            compare(&before, &tabs, false, None)["changeStatus"],
            "observed"
        );
    }

    #[test]
    fn an_unreadable_or_blank_page_is_not_trusted() {
        let before = seen("http://a/", 10, "1");
        let blank = seen("http://a/", 0, "2");
        let r = compare(&before, &blank, false, None);
        assert_eq!(r["probeTrustworthy"], false);
        assert_eq!(r["page_appears_blank"], true);
        assert_eq!(r["effective"], true, "a change is still a change");
        let failed = Observation {
            text_length: None,
            fingerprint: None,
            probe_error: Some("navigating".into()),
            ..before.clone()
        };
        let r = compare(&before, &failed, false, None);
        assert_eq!(
            (r["changeStatus"].clone(), r["effective"].clone()),
            (json!("unknown"), Value::Null)
        );
        assert_eq!(r["probeError"], "navigating");
    }
}
