//! The click receipt (COMMANDS.md "Click receipt"): the observation after a click compared
//! with the one before it, and the technique that was used. It sits above both the element
//! toolkit (`target/`, which clicks) and the observation (`observe.rs`, which compares).

use serde_json::{json, Value};

use super::observe::compare;
use super::target::{Clicked, Target};
use crate::browser::task::Task;

/// Observes the page after `clicked` and answers the full click receipt: the comparison, the
/// technique used (`mode`, `fallbackReason`, `fallbackFrom`, `note`), `clickPoint` (in the
/// viewport of the element's frame) for real clicks, `coveredBy` when mode js dispatched to a
/// covered element, `probedFrameUrl` for elements in frames and `staleRecovered`.
pub async fn click_receipt(task: &Task, target: &Target, clicked: Clicked) -> Value {
    let t0 = std::time::Instant::now();
    let (after, recovered) = Box::pin(target.observe_after(task, &clicked.before)).await;
    tracing::debug!(target: "moonpilot::click", "observed for {:?}", t0.elapsed());
    let state = &clicked.state;
    let mut receipt = compare(&clicked.before, &after, recovered, state.hit.as_ref());
    if clicked.mode != "js" {
        receipt["clickPoint"] = json!(state.point);
    }
    technique(&mut receipt, &clicked);
    if !target.frame.is_main() {
        receipt["probedFrameUrl"] = json!(target.frame.url);
    }
    if target.stale_recovered {
        receipt["staleRecovered"] = json!(true);
        receipt["staleNote"] = json!("the index's path no longer led to its element; the one element with the same tag and text was clicked");
    }
    if after.downloads() > clicked.before.downloads() {
        // What the click downloaded: each file a moment to finish, so the receipt can say where
        // it is and how big (`wait_files` waits longer).
        let begun = task
            .downloads_settled(clicked.before.downloads(), DOWNLOAD_WAIT)
            .await;
        let listed: Vec<serde_json::Value> = begun
            .iter()
            .map(|d| {
                let mut v = d.to_json();
                if let Some(name) = d.path.file_name() {
                    v["downloadUrl"] =
                        json!(format!("/downloads/{}/{}", task.id, name.to_string_lossy()));
                }
                v
            })
            .collect();
        receipt["downloads"] = json!(listed);
        receipt["downloadsPending"] = json!(begun.iter().any(|d| d.in_progress()));
    } else if state.submits && receipt["urlAfter"] == receipt["urlBefore"] {
        form_blocked(target, &mut receipt).await;
    }
    receipt
}

/// How long a click's receipt waits for the downloads it began to finish.
const DOWNLOAD_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// When the clicked element submits a form that the browser's own validation holds back (the
/// page stayed): `formBlocked`, the fields and their messages, and a hint that says so instead
/// of "the click may have been ignored".
async fn form_blocked(target: &Target, receipt: &mut Value) {
    let Ok(Some(block)) = target.act::<Option<Value>>("form_block", json!({})).await else {
        return;
    };
    let fields: Vec<String> = block["fields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let name = f["label"]
                .as_str()
                .filter(|l| !l.is_empty())
                .or_else(|| f["name"].as_str())
                .unwrap_or("a field");
            format!("`{name}`: {}", f["message"].as_str().unwrap_or("invalid"))
        })
        .collect();
    receipt["formBlocked"] = json!(true);
    receipt["formInvalidFields"] = block["fields"].clone();
    receipt["hint"] = json!(format!(
        "the form did not submit: the browser's validation held it back ({}); fill those fields, then click again",
        fields.join("; ")
    ));
}

/// The technique fields of a click (COMMANDS.md "Click modes"): `mode`, and `fallbackReason`
/// / `fallbackFrom` / `note` when auto mode fell back, `coveredBy` / `coveredHint` when events
/// were dispatched to a covered element.
pub fn technique(receipt: &mut Value, clicked: &Clicked) {
    receipt["mode"] = json!(clicked.mode);
    if let Some(reason) = &clicked.fallback {
        receipt["fallbackReason"] = json!(reason);
        receipt["fallbackFrom"] = json!("native");
        receipt["note"] = json!(if clicked.mode == "js" {
            "fell back to JS dispatch: some frameworks ignore untrusted events; check the page"
        } else {
            "fell back to a real mouse click where the element is now (it never held still)"
        });
    }
    if let Some(cover) = &clicked.state.covered_by {
        receipt["coveredBy"] = json!(cover);
        receipt["coveredHint"] = json!("events were dispatched to the element itself; a real click would have reached the covering element");
    }
}
