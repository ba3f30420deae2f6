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
/// How much longer than the window the click watch waits for a timer the action set to run
/// inside it, when the page is late to run it (a busy page or machine).
const GRACE: Duration = Duration::from_millis(250);
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
    /// Before an action: whether the click watch was armed in the frame (`js/click_watch.js`), so
    /// the window may close as soon as the action's work is done.
    armed: bool,
    /// After an action: how the observation window ended.
    end: Option<End>,
}

/// How an observation window ended (the receipt's `observationEnd`).
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// Something changed; the window closed on it.
    Change,
    /// The action's own work was done (no timer due inside the window, animation frame or
    /// request it started was left) and nothing mutated for two frames. `later` timers it set
    /// are due after the window.
    Quiet {
        /// Timers the action set that are due after the window.
        later: u64,
        /// What may have opened a tab (`window.open` called, a link or form with a target
        /// clicked): the browser may still be making it.
        opens: u64,
    },
    /// The page could not be read (navigating, blank): what changed is not known.
    Unreadable,
    /// The window ran its length; what the action had started was still pending then.
    Window {
        /// The action's timers due inside the window that had not run.
        timers: u64,
        /// The action's animation frames that had not run.
        frames: u64,
        /// The action's requests that had not answered.
        requests: u64,
    },
}

/// What the click watch's `settle` answers.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Settled {
    end: String,
    #[serde(default)]
    timers: u64,
    #[serde(default)]
    frames: u64,
    #[serde(default)]
    requests: u64,
    #[serde(default)]
    later_timers: u64,
    #[serde(default)]
    opens: u64,
}

/// Arms the click watch in `frame` right before an action (`js/click_watch.js`): answers whether
/// it is armed (not in frames whose main world this connection cannot reach, nor when the
/// call failed; the window then runs its full length).
pub async fn arm(tab: &Tab, frame: &FrameRef) -> bool {
    let arg = json!({"op": "arm", "key": js::click_watch_key()});
    matches!(
        tab.call_probe_in_main_world::<Value>(frame, js::CLICK_WATCH_JS, arg)
            .await,
        Ok(Some(_))
    )
}

impl Observation {
    /// This "before" observation, with the click watch armed in `frame` (see [`arm`]).
    pub async fn armed(mut self, tab: &Tab, frame: &FrameRef) -> Observation {
        self.armed = arm(tab, frame).await;
        self
    }

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
        armed: false,
        end: None,
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

/// The observation window after an action (JS-PROBES.md §7): up to 500 ms until something
/// changes. With the click watch armed before the action the window also closes as soon
/// as the action's own work is done and the page held still for two frames; without it, the
/// page is polled every 50 ms. If the page is unreadable, waits up to 2.5 s for it to come
/// back. Answers the last observation (its `end` says how the window ended) and whether the page
/// came back (`probeRecovered`).
pub async fn observe_after_in(
    task: &Task,
    tab: &Tab,
    frame: &FrameRef,
    before: &Observation,
) -> (Observation, bool) {
    let start = Instant::now();
    let mut after = observe_in(task, tab, frame).await;
    let mut end = End::Change;
    if !differs(before, &after) && after.probe_error.is_none() {
        let settled = if before.armed {
            // Boxed, as every large step of an action: actions nest (a click in a recipe in a
            // batch in a script) and run on their caller's stack.
            Box::pin(settle(task, tab, frame, before, &mut after)).await
        } else {
            None
        };
        end = match settled {
            Some(end) => end,
            None => {
                // Polled: no watch in this frame, or it went away (the page navigated).
                while !differs(before, &after)
                    && after.probe_error.is_none()
                    && start.elapsed() < WINDOW
                {
                    tokio::time::sleep(STEP).await;
                    after = observe_in(task, tab, frame).await;
                }
                if differs(before, &after) {
                    End::Change
                } else {
                    End::Window {
                        timers: 0,
                        frames: 0,
                        requests: 0,
                    }
                }
            }
        };
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
    // After the wait for an unreadable page: a change it shows, or still no page.
    if differs(before, &after) {
        end = End::Change;
    } else if after.probe_error.is_some() {
        end = End::Unreadable;
    }
    after.end = Some(end);
    (after, recovered)
}

/// The shortest time between two page marks while mutations come one after another.
const MARK_SPACING: Duration = Duration::from_millis(20);

/// The armed part of the window: waits on the click watch's `settle` and takes a page mark
/// whenever the page mutated, until a mark differs, the action's work is done and the page held
/// still, or the window ends. `None` when the watch could not be asked (the document went away
/// with its state): the caller polls instead.
async fn settle(
    task: &Task,
    tab: &Tab,
    frame: &FrameRef,
    before: &Observation,
    after: &mut Observation,
) -> Option<End> {
    let arg = json!({
        "op": "settle",
        "key": js::click_watch_key(),
        "untilMs": WINDOW.as_millis() as u64,
        "graceMs": GRACE.as_millis() as u64,
        "frames": 2,
    });
    let mut last_mark = Instant::now();
    loop {
        // The page answers by the window's end (and its grace); a page too busy to answer is
        // polled instead.
        let asked = tokio::time::timeout(
            WINDOW + GRACE + STEP,
            tab.call_probe_in_main_world::<Settled>(frame, js::CLICK_WATCH_JS, arg.clone()),
        )
        .await;
        let settled = match asked {
            Ok(Ok(Some(s))) => s,
            _ => return None,
        };
        let since = last_mark.elapsed();
        if since < MARK_SPACING {
            tokio::time::sleep(MARK_SPACING - since).await;
        }
        *after = observe_in(task, tab, frame).await;
        last_mark = Instant::now();
        if differs(before, after) || after.probe_error.is_some() {
            return Some(End::Change);
        }
        match settled.end.as_str() {
            "mutated" => continue,
            "quiet" => {
                return Some(End::Quiet {
                    later: settled.later_timers,
                    opens: settled.opens,
                })
            }
            _ => {
                return Some(End::Window {
                    timers: settled.timers,
                    frames: settled.frames,
                    requests: settled.requests,
                })
            }
        }
    }
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
    match &after.end {
        Some(End::Change) => r["observationEnd"] = json!("change"),
        Some(End::Unreadable) => r["observationEnd"] = json!("unreadable"),
        Some(End::Quiet { later, opens }) => {
            r["observationEnd"] = json!("quiet");
            if *later > 0 {
                r["laterTimers"] = json!(later);
            }
            if *opens > 0 {
                r["mayOpenTab"] = json!(true);
            }
        }
        Some(End::Window {
            timers,
            frames,
            requests,
        }) => {
            r["observationEnd"] = json!("window");
            if timers + frames + requests > 0 {
                r["pendingAtWindowEnd"] =
                    json!({"timers": timers, "animationFrames": frames, "requests": requests});
            }
        }
        None => {}
    }
    if !changed && trustworthy {
        r["hint"] = json!(match &after.end {
            Some(End::Quiet { later: 0, .. }) => "nothing observable changed, and the action left nothing running that could still change the page (no timer, animation frame or request it started): it may have been ignored; read the page before acting again",
            Some(End::Quiet { .. }) => "nothing observable changed, and the action's work was done, except timers it set for later than 500 ms (laterTimers): the page may react then; read the page before acting again",
            _ => "nothing observable changed within 500 ms; the page may react later, or the click may have been ignored: read the page before acting again",
        });
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
            armed: false,
            end: None,
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
    fn the_receipt_says_how_the_window_ended() {
        let before = seen("http://a/", 10, "1");
        let ended = |end: End| {
            let mut after = seen("http://a/", 10, "1");
            after.end = Some(end);
            compare(&before, &after, false, None)
        };
        let quiet = ended(End::Quiet { later: 0, opens: 0 });
        assert_eq!(quiet["observationEnd"], "quiet");
        assert!(quiet["hint"]
            .as_str()
            .unwrap_or("")
            .contains("left nothing running"));
        assert!(quiet.get("laterTimers").is_none() && quiet.get("mayOpenTab").is_none());
        let later = ended(End::Quiet { later: 2, opens: 1 });
        assert_eq!(
            (later["laterTimers"].clone(), later["mayOpenTab"].clone()),
            (json!(2), json!(true))
        );
        assert!(later["hint"].as_str().unwrap_or("").contains("laterTimers"));
        let window = ended(End::Window {
            timers: 1,
            frames: 0,
            requests: 2,
        });
        assert_eq!(window["observationEnd"], "window");
        assert_eq!(
            window["pendingAtWindowEnd"],
            json!({"timers": 1, "animationFrames": 0, "requests": 2})
        );
        assert!(ended(End::Window {
            timers: 0,
            frames: 0,
            requests: 0
        })
        .get("pendingAtWindowEnd")
        .is_none());
        assert_eq!(ended(End::Unreadable)["observationEnd"], "unreadable");
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
