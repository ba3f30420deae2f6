//! Reading page state: `get_browser_state` (the indexed snapshot), `list_frames`, and the
//! cheaper views that spend no observation: `get_page_snapshot`, `diff_dom_text`,
//! `get_interactive_map`, `get_form_state`.
//!
//! A snapshot reads every included frame with the DOM index probe, one index space across
//! frames (cross-site ones too with `includeFrames`), re-resolves every index, and checks a
//! before/after stamp of the main document (JS-PROBES.md §5). Only a consistent snapshot becomes
//! the task's index snapshot.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::browser::tab::{same_origin, FrameRef};
use crate::browser::task::{SnapElement, SnapFrame, Snapshot, Task};
use crate::browser::Tab;
use crate::command::*;
use crate::dom::{self, FrameDom, FrameHeader};
use crate::error::CommandError;
use crate::js;
use crate::protocol::{ErrorCode, Params};

/// The page-state group.
pub const SPECS: &[CommandSpec] = &[
    Group::PageState
        .read("get_browser_state", get_browser_state)
        .summary("Read the page as indexed text and elements; replaces the index snapshot")
        .doc("Runs the DOM index builder in every included frame (one index space across frames), \
              renders `[index]<tag attr='v'>text/>` lines, lists tabs and elements, writes a \
              screenshot and a state text file, and reports whether the indices are usable. \
              Cross-origin frames are skipped unless `includeFrames` is true. The readers work \
              within the command's time (at most 10 s per read): a page too big for it gets a \
              partial snapshot with `snapshotIssues` `read_budget_exhausted:<frame>` and \
              `indicesUsable:false`. Page text is read up to 100,000 characters \
              (`state_text_max_chars`), attribute values up to 2,000; `textTruncated` (always \
              present) says when something was cut, with `textLimit`, `textLength`, \
              `textDroppedChars` and `textHint`. Each `elements` item says why it was indexed in \
              `indexedBecause`: `native` (a, button, input…), `role` (a widget role; link, \
              menuitem, treeitem or row with a tabindex or a listener), `cursor` (an \
              interactive cursor), `contenteditable`, `handler-attr` (onclick-like attribute or \
              property, data-toggle / aria-haspopup hints), `listener` (a click, dblclick, \
              mouse/pointer down/up or touchstart listener of its own, as the browser reports \
              it), `framework` (a React/Vue click handler on a page with a React/Vue root), \
              `class`, `tabindex`, `label-for-hidden`; null when unknown. Delegation roots \
              (document, html, body, nodes with more than 6 click-like listener types) and \
              lists, tables, regions and other containers of targets are not indexed for their \
              listener; at most 300 listened nodes per frame count. The text's grammar is in the \
              README (\"What an agent reads\"); what it leaves out is also in `data`: \
              `beyondViewport` {above, below} ({px, count, capped}, viewport reads) and \
              `behindOverlay` {count, what}.")
        .params(&[
            boolean("highlight", "draw the numbered highlight overlay in the page (never affects the text; hidden in screenshots)").or("true"),
            int("viewportExpansion", "pixels around the viewport that still get indices, -1..=10000000; -1 = the whole page").or("0").range(-1.0, 10_000_000.0),
            boolean("includeElements", "inline the element list in data.elements").or("true"),
            int("maxElements", "cap for the inlined list, at most 100000 (<= 0 means 200)").or("200").range(f64::NEG_INFINITY, 100_000.0),
            boolean("includeFrames", "also index cross-origin (and cross-site) iframes; same-origin frames are always included").or("false"),
            boolean("strictSnapshot", "any DOM mutation during the read invalidates the indices (default: only structural ones)").or("false"),
        ])
        .example("local s = page:get_browser_state{ includeFrames = true }:unwrap()\nprint(s.text)"),
    Group::PageState
        .read("list_frames", list_frames)
        .summary("List the frames of the current tab (0 = main frame, depth-first)")
        .doc("With `refresh` (default) an all-frames snapshot without highlight is taken first, so \
              element counts and index ranges are current and indices become global across \
              frames.")
        .params(&[
            boolean("refresh", "rebuild an all-frames snapshot (no highlight) first").or("true"),
        ])
        .example("for _, f in ipairs(page:list_frames():unwrap().frames) do print(f.index, f.url) end"),
    Group::PageState
        .read("get_page_snapshot", get_page_snapshot)
        .summary("State summary: page, tabs, last dialog, loading; no DOM text, no files")
        .doc("Replaces several calls: the current page's `url`/`title`, the tab block \
              (`browser_state`) and `tabs`, the last native dialog record (`dialog`, null when \
              none) and `loading` (readyState is not complete). Contains no DOM text and \
              writes no files. `includeConsole` / `includeRequests` add the task's recorded `logs`/`errors` \
              (with the dropped counts) and the newest 50 `requests` matching \
              `requestFilter` (`requestCount` counts them all; get_requests lists more).")
        .params(&[
            boolean("includeConsole", "add logs/errors").or("false"),
            boolean("includeRequests", "add the request log").or("false"),
            string("requestFilter", "URL substring for includeRequests"),
        ])
        .example("local s = page:get_page_snapshot{}:unwrap()\nprint(s.url, s.loading)"),
    Group::PageState
        .read("diff_dom_text", diff_dom_text)
        .summary("Rebuild the snapshot and diff its text against the previous read")
        .doc("Reads the page like get_browser_state (replacing the index snapshot, no screenshot \
              or text file) and compares its indexed text, line by line as multisets, with the \
              previous text of get_browser_state or diff_dom_text in this task. `added` / \
              `removed` hold at most 200 lines each (`addedCount` / `removedCount` are the \
              totals); the first call reports `first:true` and its first 200 lines as added.")
        .params(&[
            boolean("highlight", "draw the overlay while rebuilding").or("true"),
            int("viewportExpansion", "as get_browser_state, -1..=10000000").or("0").range(-1.0, 10_000_000.0),
        ])
        .example("local d = page:diff_dom_text{}:unwrap()\nfor _, l in ipairs(d.added) do print('+', l) end"),
    Group::PageState
        .read("get_interactive_map", get_interactive_map)
        .summary("The indexed elements re-read live (tag, value, rect, listeners)")
        .doc("Re-reads every element of the task's index snapshot by its locator, one call per \
              frame, in the item shape of get_browser_state's `elements`; without a snapshot of \
              the current tab it builds one first (no files, no highlight). `hasListeners` is \
              true when framework or inline listener traces exist, else null (never false: \
              `addEventListener` leaves no trace), `listenerDetection` 'heuristic'. Unresolved \
              items keep the snapshot tag and the text '[element could not be re-read]'. \
              `indexedBecause` is the snapshot's reason for the index (see get_browser_state).")
        .example("for _, e in ipairs(page:get_interactive_map():unwrap().elements) do print(e.index, e.tag) end"),
    Group::PageState
        .read("get_form_state", get_form_state)
        .summary("Read back form controls: labels, values, validity, errors")
        .doc("Every `input, textarea, select` of the scope (first match of `selector`, else the \
              document) in document order, skipping hidden ones unless `includeHidden`: label, \
              value (passwords always '[redacted]'), state flags, `invalid`, `error` and the \
              constraint-validation `validity`. `invalid` is the error-class rule of JS-PROBES \
              §10, or aria-invalid=\"true\", a custom validity message or :user-invalid; such \
              a field's `error` falls back to its aria-errormessage/aria-describedby text, then \
              the browser's validation message. A scope that matches nothing answers \
              `error:'scope-not-found'` with count 0.")
        .params(&[
            string("selector", "scope element (first match); absent = document"),
            boolean("includeHidden", "include hidden and type=hidden controls").or("false"),
            int("max", "max fields, at most 10000 (<= 0 means 200)").or("200").range(f64::NEG_INFINITY, 10_000.0),
        ])
        .example("local f = page:get_form_state{ selector = \"form\" }:unwrap()\nfor _, e in ipairs(f.errors) do print(e.label, e.error) end"),
];

/// Finds a frame by a `frame` param: an ordinal (number or digits) or a substring of the URL,
/// then of the name. Unknown → `INVALID_ARGUMENT` listing the frames.
pub async fn find_frame(tab: &Tab, spec: &str) -> Result<FrameRef, CommandError> {
    let frames = tab.frames(true).await?;
    pick_frame(&frames, spec)
}

/// The frame of `frames` a `frame` param names (see [`find_frame`]).
pub fn pick_frame(frames: &[FrameRef], spec: &str) -> Result<FrameRef, CommandError> {
    let spec = spec.trim();
    let found = if !spec.is_empty() && spec.chars().all(|c| c.is_ascii_digit()) {
        spec.parse::<usize>()
            .ok()
            .and_then(|n| frames.iter().find(|f| f.ordinal == n))
    } else {
        frames.iter().find(|f| f.url.contains(spec)).or_else(|| {
            frames
                .iter()
                .find(|f| !f.name.is_empty() && f.name.contains(spec))
        })
    };
    found.cloned().ok_or_else(|| {
        let list: Vec<String> = frames
            .iter()
            .map(|f| {
                format!(
                    "{}: {}{}",
                    f.ordinal,
                    f.url,
                    if f.name.is_empty() {
                        String::new()
                    } else {
                        format!(" name={}", f.name)
                    }
                )
            })
            .collect();
        CommandError::invalid(
            "frame",
            format!(
                "param `frame`: no frame matches `{spec}`; frames are [{}]",
                list.join("; ")
            ),
        )
        .with_details(json!({"frames": frames.iter().map(FrameRef::to_json).collect::<Vec<_>>()}))
    })
}

/// Options of one snapshot read.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotOptions {
    /// Draw the overlay.
    pub highlight: bool,
    /// Viewport expansion in px, -1 for all.
    pub viewport_expansion: i64,
    /// Include cross-origin frames.
    pub include_frames: bool,
    /// Any mutation invalidates.
    pub strict: bool,
    /// How many elements (across frames, in index order) need the full live description; the
    /// rest are re-resolved for their identity only (tag, id, name).
    pub detail: usize,
    /// When the command's bound ends: the readers in the page get the time left (see
    /// [`read_budget`]), so none of them runs on after the command answered.
    pub deadline: Instant,
    /// Most characters of page text read into the snapshot, across frames (the rendered
    /// `text`, markup included, is cut at twice that).
    pub max_text_chars: usize,
}

/// Longest time one read of the page (every frame) may take, whatever the command's bound: a
/// snapshot that takes longer is not worth waiting for, and the reader reports what it saw.
const READ_CAP: Duration = Duration::from_secs(10);

/// Time kept back from the page readers for the rest of the command (re-resolving indices,
/// stamps, the tab block, rendering).
const READ_RESERVE: Duration = Duration::from_millis(2500);

/// How long before the command's bound the engine stops an in-page reader that is still
/// running past its own budget (`Runtime.terminateExecution`), leaving time to answer: only a
/// single DOM call that alone outlasts the budget (a forced layout of a huge page) gets there.
const READER_STOP_MARGIN: Duration = Duration::from_millis(1000);

/// The least time past its budget a reader is waited for before it is stopped.
const READER_GRACE: Duration = Duration::from_millis(500);

/// The least budget a frame read gets (a reader given nothing would index nothing).
const READER_MIN: Duration = Duration::from_millis(200);

/// The most the listener-target read (`Tab::listener_targets`) of one frame may take (and at
/// most a quarter of the read's time). It takes about 10 ms plus 1 ms per 10 targets on an idle
/// machine, but 100-400 ms under a loaded one (measured at a load average of 13 on 2 cores).
/// Past it the frame is read without listener targets.
const LISTENER_BOUND: Duration = Duration::from_millis(1000);

/// Cap per attribute value in the snapshot, in characters (an input may hold megabytes).
const MAX_ATTR_CHARS: usize = 2000;

/// When a read that starts now must be done: at most [`READ_CAP`], and of the command's time
/// left (less [`READ_RESERVE`]) a share of `1/shares` (the first of two possible reads leaves
/// room for the second).
fn read_budget(deadline: Instant, shares: u32) -> Instant {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .saturating_sub(READ_RESERVE);
    Instant::now() + (left / shares.max(1)).min(READ_CAP)
}

/// One frame's part of a snapshot read.
struct FrameRead {
    frame: FrameRef,
    dom: Option<FrameDom>,
    skipped: Option<String>,
    read_error: Option<String>,
    resolved: Vec<Value>,
}

impl FrameRead {
    /// The indices this frame holds, in order.
    fn indices(&self) -> Vec<u32> {
        self.dom
            .as_ref()
            .map(|d| d.elements.iter().map(|e| e.index).collect())
            .unwrap_or_default()
    }
}

/// The outcome of [`read_snapshot`].
pub struct SnapshotRead {
    frames: Vec<FrameRead>,
    issues: Vec<String>,
    attempts: u32,
    mutations: (i64, i64, i64),
    last_mutation: Value,
    main_mutations_total: u64,
    document_loading: bool,
    /// The main document's identity before the read; empty when the probe failed.
    document_id: String,
}

/// The reply of `snapshot_watch.js`: the main document's identity and mutation counters.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stamp {
    document_id: String,
    mutations: i64,
    structural_mutations: i64,
    content_mutations: i64,
    #[serde(default)]
    last_mutation: Value,
    url: String,
    ready_state: String,
}

/// Stores the listener-only targets of `frame` for the reader (`Tab::listener_targets`),
/// bounded by [`LISTENER_BOUND`] and a quarter of what is left of the read: a failure or a
/// timeout only means the reader does without them (false); the snapshot never fails for it.
async fn listeners_of(tab: &Tab, frame: &FrameRef, read_deadline: Instant, t0: Instant) -> bool {
    let within = LISTENER_BOUND.min(
        read_deadline
            .saturating_duration_since(Instant::now())
            .checked_div(4)
            .unwrap_or_default(),
    );
    if within.is_zero() {
        return false;
    }
    match tab.listener_targets(frame, within).await {
        Ok(found) => {
            tracing::debug!(target: "moonpilot::snapshot", "frame {}: {} listener and {} framework targets after {:?}", frame.ordinal, found.listeners, found.traces, t0.elapsed());
            true
        }
        Err(e) => {
            tracing::debug!(target: "moonpilot::snapshot", "frame {}: listener targets not read: {}", frame.ordinal, e.msg);
            false
        }
    }
}

async fn read_once(
    tab: &Tab,
    opts: SnapshotOptions,
    read_deadline: Instant,
) -> Result<SnapshotRead, CommandError> {
    let t0 = Instant::now();
    let mut text_left = opts.max_text_chars;
    let mut time_up = false;
    // The frame list, the main document's stamp and its listener targets are independent:
    // asked at once, they cost one round of calls instead of three.
    let local_main = tab.main_frame_local();
    let (frames, before, main_listeners) = tokio::join!(
        tab.frames(true),
        tab.call_probe::<Stamp>(&local_main, js::SNAPSHOT_WATCH_JS, json!({})),
        listeners_of(tab, &local_main, read_deadline, t0),
    );
    let frames = frames?;
    let mut main_listeners = Some(main_listeners);
    tracing::debug!(target: "moonpilot::snapshot", "frames listed after {:?}", t0.elapsed());
    let main = frames.first().cloned().ok_or_else(|| {
        CommandError::new(
            ErrorCode::PageNavigating,
            "page_navigating: the page has no main frame",
        )
    })?;
    let mut issues = Vec::new();
    let mut reads = Vec::new();
    let mut cursor: u32 = 0;
    for frame in frames {
        let cross_origin = frame.out_of_process || !same_origin(&main.origin, &frame.origin);
        if !frame.is_main() && cross_origin && !opts.include_frames {
            reads.push(FrameRead {
                skipped: Some(format!(
                    "cross-origin frame ({}); pass includeFrames=true to index it",
                    frame.origin
                )),
                frame,
                dom: None,
                read_error: None,
                resolved: Vec::new(),
            });
            continue;
        }
        if time_up {
            // The budget went to earlier frames: this one is not read at all.
            issues.push(format!("read_budget_exhausted:{}", frame.ordinal));
            reads.push(FrameRead {
                read_error: Some("not read: the snapshot's time budget was spent".into()),
                frame,
                dom: None,
                skipped: None,
                resolved: Vec::new(),
            });
            continue;
        }
        // Listener-only targets first (rule 7b/7d of the index); the main frame's were asked
        // for with the frame list.
        let listeners = match main_listeners.take().filter(|_| frame.is_main()) {
            Some(found) => found,
            None => listeners_of(tab, &frame, read_deadline, t0).await,
        };
        let budget = read_deadline
            .saturating_duration_since(Instant::now())
            .max(READER_MIN);
        let args = json!({
            "listeners": listeners,
            "doHighlightElements": opts.highlight,
            "viewportExpansion": opts.viewport_expansion,
            "highlightIndexStart": cursor,
            "budgetMs": u64::try_from(budget.as_millis()).unwrap_or(u64::MAX),
            // At least one character: 0 would mean "no limit" to the reader.
            "maxTextChars": text_left.max(1),
            "maxAttrChars": MAX_ATTR_CHARS,
        });
        // The reader stops itself at its budget; one DOM call that alone outlasts it is stopped
        // from here, so the reader never runs on after the command answered. A failed call
        // keeps its own code (navigating, browser gone); a probe that answered but could not
        // read the page is ACTION_FAILED.
        let call = tab.call_function(&frame, js::DOM_INDEX_JS, args);
        let stop_at = opts
            .deadline
            .checked_sub(READER_STOP_MARGIN)
            .unwrap_or(opts.deadline)
            .max(Instant::now() + budget + READER_GRACE);
        // The listener step's handles are freed while the reader reads (one round trip less);
        // only the read itself is held to the reader's bound.
        let read = tokio::time::timeout_at(stop_at.into(), call);
        let (answer, ()) = tokio::join!(read, tab.release_listener_targets(&frame));
        let answer = match answer {
            Ok(answer) => answer,
            Err(_) => {
                let _ = tab.terminate_execution(&frame).await;
                Err(CommandError::new(
                    ErrorCode::ActionTimeout,
                    format!(
                        "the page did not let the reader finish within its {} ms budget (one \
                         step of it took longer than the command's time); it was stopped",
                        budget.as_millis()
                    ),
                ))
            }
        };
        let parsed = match answer {
            Ok(v) => probe_value(v)
                .and_then(|v| {
                    dom::parse_frame(v).map_err(|e| format!("unreadable probe output: {e}"))
                })
                .map_err(|msg| (ErrorCode::ActionFailed, msg)),
            Err(e) => Err((e.code, e.msg)),
        };
        match parsed {
            Ok(dom) => {
                if let Some(last) = dom.elements.iter().map(|e| e.index).max() {
                    cursor = last + 1;
                }
                if dom.time_up {
                    time_up = true;
                    issues.push(format!("read_budget_exhausted:{}", frame.ordinal));
                }
                text_left = text_left.saturating_sub(dom.text_chars());
                reads.push(FrameRead {
                    frame,
                    dom: Some(dom),
                    skipped: None,
                    read_error: None,
                    resolved: Vec::new(),
                });
            }
            Err((code, msg)) if frame.is_main() => {
                return Err(CommandError::new(
                    code,
                    format!("building page structure failed: {msg}"),
                ));
            }
            Err((_, msg)) => {
                issues.push(format!("frame_read_failed:{}", frame.ordinal));
                reads.push(FrameRead {
                    frame,
                    dom: None,
                    skipped: None,
                    read_error: Some(msg),
                    resolved: Vec::new(),
                });
            }
        }
    }
    tracing::debug!(target: "moonpilot::snapshot", "frames read after {:?}", t0.elapsed());
    // Re-resolve every index in its frame (JS-PROBES.md §6), one call per frame, while the main
    // document's stamp is taken again (both only read: asked at once, one round trip less).
    let mut changed_identity = Vec::new();
    let mut unresolved = false;
    let mut detail_left = opts.detail;
    let mut failed_frames = Vec::new();
    let resolve_all = async {
        for read in reads.iter_mut() {
            let Some(dom) = &read.dom else { continue };
            if dom.elements.is_empty() {
                continue;
            }
            let paths: Vec<&str> = dom.elements.iter().map(|e| e.xpath.as_str()).collect();
            // What the snapshot saw at each locator; the probe applies the one identity rule
            // that actions apply too (probe_lib.js `sameIdentity`).
            let expect: Vec<(&str, Option<&str>, Option<&str>)> = dom
                .elements
                .iter()
                .map(|e| (e.tag.as_str(), e.id.as_deref(), e.name.as_deref()))
                .collect();
            let detail = detail_left.min(paths.len());
            detail_left -= detail;
            let res = tab
                .call_probe::<Resolved>(
                    &read.frame,
                    js::RESOLVE_JS,
                    json!({"paths": paths, "expect": expect, "detail": detail}),
                )
                .await;
            let resolved = match res {
                Ok(r) => r,
                Err(_) => {
                    failed_frames.push(format!("frame_read_failed:{}", read.frame.ordinal));
                    Resolved::default()
                }
            };
            read.resolved = (0..dom.elements.len())
                .map(|i| resolved.items.get(i).cloned().unwrap_or(Value::Null))
                .collect();
            unresolved |= read.resolved.iter().any(Value::is_null);
            changed_identity.extend(
                resolved
                    .changed
                    .iter()
                    .filter_map(|&i| dom.elements.get(i))
                    .map(|el| el.index.to_string()),
            );
        }
    };
    let stamp_after = tab.call_probe::<Stamp>(&main, js::SNAPSHOT_WATCH_JS, json!({}));
    let ((), after) = tokio::join!(resolve_all, stamp_after);
    issues.extend(failed_frames);
    if unresolved {
        issues.push("elements_unresolved".into());
    }
    if !changed_identity.is_empty() {
        issues.push(format!(
            "element_identity_changed:{}",
            changed_identity.join(",")
        ));
    }
    let mut mutations = (0, 0, 0);
    let mut last_mutation = Value::Null;
    let mut total = 0;
    let mut document_loading = false;
    match (&before, &after) {
        (Ok(b), Ok(a)) => {
            if b.document_id != a.document_id {
                issues.push("documentId_changed".into());
            }
            if b.url != a.url {
                issues.push("url_changed".into());
            }
            mutations = (
                a.mutations - b.mutations,
                a.structural_mutations - b.structural_mutations,
                a.content_mutations - b.content_mutations,
            );
            let counted = if opts.strict {
                mutations.0
            } else {
                mutations.1
            };
            if counted != 0 {
                issues.push("mutations_changed".into());
            }
            if a.ready_state == "loading" {
                document_loading = true;
                issues.push("document_loading".into());
            }
            let u = a.url.as_str();
            if u != main.url && !main.url.is_empty() && !u.starts_with(&main.url) {
                issues.push("frame_url_changed".into());
            }
            last_mutation = a.last_mutation.clone();
            total = u64::try_from(a.mutations).unwrap_or(0);
        }
        _ => issues.push("document_probe_failed".into()),
    }
    let document_id = before.map(|b| b.document_id).unwrap_or_default();
    Ok(SnapshotRead {
        frames: reads,
        issues,
        attempts: 1,
        mutations,
        last_mutation,
        main_mutations_total: total,
        document_loading,
        document_id,
    })
}

/// Unwraps a probe reply `{ok:true, value}` / `{ok:false, code, msg}` (see [`js::reply`]) into
/// its value or its message.
pub fn probe_value(v: Value) -> Result<Value, String> {
    js::reply(v).map_err(|e| e.msg)
}

/// The reply of the re-resolution probe (`resolve.js`): one entry per locator (null when it no
/// longer resolves, else the live item of `get_interactive_map`), and the positions whose
/// element is not the one the snapshot saw.
#[derive(Debug, Default, serde::Deserialize)]
struct Resolved {
    items: Vec<Value>,
    changed: Vec<usize>,
}

/// Reads a snapshot, re-reading once on any issue (never replaying actions), each read within
/// its share of the command's time. A read that ran out of time is not repeated: the page is
/// too big for the time, and a second read would only spend the rest.
pub async fn read_snapshot(tab: &Tab, opts: SnapshotOptions) -> Result<SnapshotRead, CommandError> {
    let first = read_once(tab, opts, read_budget(opts.deadline, 2)).await?;
    if first.issues.is_empty() || first.time_up() {
        return Ok(first);
    }
    let mut second = read_once(tab, opts, read_budget(opts.deadline, 1)).await?;
    second.attempts = 2;
    Ok(second)
}

impl SnapshotRead {
    /// Marks elements that the previous snapshot of the same document did not hold (rendered
    /// `*[i]`): same frame, tag and locator count as seen, where `x[1]` and `x` are the same
    /// step (a positional path gains `[1]` when a same-tag sibling is added after the element).
    /// A different main document (a navigation, a reload) or an unknown identity marks nothing:
    /// everything would be new. A sub-frame is compared only when the previous snapshot read
    /// the same frame (frame id and URL) too; otherwise its elements are not marked.
    pub fn mark_new(&mut self, previous: &Snapshot) {
        if self.document_id.is_empty() || previous.document_id != self.document_id {
            return;
        }
        fn step_key(locator: &str) -> String {
            locator
                .split('/')
                .map(|step| step.strip_suffix("[1]").unwrap_or(step))
                .collect::<Vec<_>>()
                .join("/")
        }
        let seen: std::collections::HashSet<(usize, String, &str)> = previous
            .elements
            .iter()
            .map(|e| (e.frame, step_key(&e.locator), e.tag.as_str()))
            .collect();
        for read in &mut self.frames {
            let ordinal = read.frame.ordinal;
            let compared = read.frame.is_main()
                || previous.frames.iter().any(|f| {
                    f.read && f.frame_id == read.frame.frame_id && f.url == read.frame.url
                });
            if !compared {
                continue;
            }
            if let Some(dom) = &mut read.dom {
                dom.mark_new(|el| seen.contains(&(ordinal, step_key(&el.xpath), el.tag.as_str())));
            }
        }
    }

    /// Whether index commands may use it.
    pub fn usable(&self) -> bool {
        self.issues.is_empty()
    }

    /// Whether a frame's reader ran out of time (the snapshot is incomplete).
    pub fn time_up(&self) -> bool {
        self.issues
            .iter()
            .any(|i| i.starts_with("read_budget_exhausted:"))
    }

    /// Page-text characters the readers left out at the text budget (whitespace included).
    fn text_dropped(&self) -> u64 {
        self.frames
            .iter()
            .filter_map(|r| r.dom.as_ref())
            .map(|d| d.text_dropped)
            .sum()
    }

    /// Whether a reader left text out.
    fn text_cut(&self) -> bool {
        self.frames
            .iter()
            .filter_map(|r| r.dom.as_ref())
            .any(|d| d.text_cut)
    }

    /// The snapshot to store on the task.
    pub fn to_snapshot(&self, tab: &Tab) -> Snapshot {
        let mut elements = Vec::new();
        let mut frames = Vec::new();
        for read in &self.frames {
            frames.push(SnapFrame {
                ordinal: read.frame.ordinal,
                frame_id: read.frame.frame_id.clone(),
                url: read.frame.url.clone(),
                name: read.frame.name.clone(),
                read: read.dom.is_some(),
            });
            if let Some(dom) = &read.dom {
                for el in &dom.elements {
                    elements.push(SnapElement {
                        index: el.index,
                        frame: read.frame.ordinal,
                        locator: el.xpath.clone(),
                        tag: el.tag.clone(),
                        id: el.id.clone(),
                        name: el.name.clone(),
                        text: el.text.clone(),
                        reason: el.reason.clone(),
                        rect: Some(el.rect),
                    });
                }
            }
        }
        Snapshot {
            created: Instant::now(),
            tab_target: tab.target_id().to_string(),
            frames,
            elements,
            mutations: self.main_mutations_total,
            document_id: self.document_id.clone(),
        }
    }

    /// The indexed text, with frame headers when the page has more than one frame; a frame
    /// skipped for `includeFrames` is a header line that says so.
    pub fn text(&self) -> String {
        let sections: Vec<(FrameHeader, String)> = self
            .frames
            .iter()
            .map(|r| {
                (
                    FrameHeader {
                        ordinal: r.frame.ordinal,
                        is_main: r.frame.is_main(),
                        url: r.frame.url.clone(),
                        name: r.frame.name.clone(),
                        cross_site: r.frame.out_of_process,
                        skipped: r.skipped.is_some(),
                        read_failure: r.read_error.clone(),
                    },
                    r.dom.as_ref().map(FrameDom::render).unwrap_or_default(),
                )
            })
            .collect();
        dom::render_frames(&sections)
    }

    /// Every indexed element in the `get_interactive_map` item shape.
    pub fn elements(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for read in &self.frames {
            let Some(dom) = &read.dom else { continue };
            for (i, el) in dom.elements.iter().enumerate() {
                let live = read.resolved.get(i).cloned().unwrap_or(Value::Null);
                out.push(map_item(
                    live,
                    ItemOrigin {
                        index: el.index,
                        xpath: &el.xpath,
                        tag: &el.tag,
                        id: el.id.as_deref(),
                        name: el.name.as_deref(),
                        frame_index: read.frame.ordinal,
                        frame_url: &read.frame.url,
                        reason: el.reason.as_deref(),
                    },
                ));
            }
        }
        out
    }

    /// The per-frame entries of `frames` in the receipt.
    pub fn frame_entries(&self) -> Vec<Value> {
        self.frames
            .iter()
            .map(|r| {
                let indices = r.indices();
                let mut entry = r.frame.to_json();
                entry["elementCount"] = json!(indices.len());
                entry["indexRange"] = match (indices.iter().min(), indices.iter().max()) {
                    (Some(a), Some(b)) => json!(format!("{a}-{b}")),
                    _ => Value::Null,
                };
                entry["readError"] = json!(r.read_error);
                entry["skipped"] = json!(r.skipped.is_some());
                entry["skipReason"] = json!(r.skipped);
                entry
            })
            .collect()
    }

    fn main_dom(&self) -> Option<&FrameDom> {
        self.frames.first().and_then(|r| r.dom.as_ref())
    }
}

/// Where an element item of `get_interactive_map` / `elements` comes from in the snapshot.
struct ItemOrigin<'a> {
    index: u32,
    xpath: &'a str,
    tag: &'a str,
    id: Option<&'a str>,
    name: Option<&'a str>,
    frame_index: usize,
    frame_url: &'a str,
    reason: Option<&'a str>,
}

/// One element item (JS-PROBES.md §6): the live description of `resolve.js` (or, when the
/// locator no longer resolves, the snapshot tag and '[element could not be re-read]') plus
/// what the service adds.
fn map_item(live: Value, o: ItemOrigin<'_>) -> Value {
    let resolved = live.is_object();
    let mut item = if resolved {
        live
    } else {
        json!({"tag": o.tag.to_uppercase(), "text": "[element could not be re-read]"})
    };
    item["index"] = json!(o.index);
    item["resolved"] = json!(resolved);
    item["xpath"] = json!(o.xpath);
    item["snapshotTag"] = json!(o.tag);
    item["snapshotId"] = json!(o.id);
    item["snapshotName"] = json!(o.name);
    item["frameIndex"] = json!(o.frame_index);
    item["frameUrl"] = json!(o.frame_url);
    item["indexedBecause"] = json!(o.reason);
    item
}

/// The tab block (`browser_state`) and the `tabs` list, plus the current tab's URL and title.
/// One `{url, title}` read per tab (`page_status.js`), so the current tab's pair is not read
/// twice; an unreadable tab shows empty strings.
async fn tab_block(task: &Task) -> (String, Vec<Value>, (String, String)) {
    let (tabs, current) = task.tabs();
    let mut lines = Vec::new();
    let mut list = Vec::new();
    let mut current_pair = (String::new(), String::new());
    for (i, tab) in tabs.iter().enumerate() {
        let status = tab.call_page_status().await.unwrap_or_default();
        let text = |key: &str| status[key].as_str().unwrap_or_default().to_string();
        let (url, title) = (text("url"), text("title"));
        // Title and URL are the page's: escaped so they cannot pose as engine lines.
        lines.push(format!(
            "Browser tab: {}, Title: \"{}\", URL: \"{}\".",
            i + 1,
            dom::render::quoted(&title),
            dom::render::quoted(&url)
        ));
        list.push(json!({"index": i, "url": url, "title": title, "current": i == current}));
        if i == current {
            current_pair = (url, title);
        }
    }
    lines.push(format!("current tab is: {}", current + 1));
    (lines.join("\n"), list, current_pair)
}

/// Writes `bytes` to `<data_dir>/<task>/<name>` and answers the absolute path.
pub(crate) async fn write_data_file(
    cx: &TaskCx,
    task: &Task,
    name: &str,
    bytes: &[u8],
) -> Result<String, std::io::Error> {
    let dir = cx.engine.config.data_dir.join(task.id.to_string());
    tokio::fs::create_dir_all(&dir).await?;
    let path = dir.join(name);
    tokio::fs::write(&path, bytes).await?;
    cx.engine.keeper.written(&path, bytes.len() as u64);
    Ok(shown_path(&path))
}

/// The absolute form of a data file's path, as receipts show it (`absolute` only joins the
/// working directory: no file system access).
fn shown_path(path: &std::path::Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// Cuts the rendered text at `max` characters: at the last line break in the last 200
/// characters before the cut when there is one, else mid-line. The readers keep page text
/// within its budget already; this bounds what markup and attributes add (a guard for pages
/// with very many elements). Answers the text and how many characters were cut.
fn cut_text(text: String, max: usize) -> (String, u64) {
    let Some((cut, _)) = text.char_indices().nth(max) else {
        return (text, 0);
    };
    let floor = text[..cut]
        .char_indices()
        .rev()
        .nth(200)
        .map_or(0, |(i, _)| i);
    let at = text[floor..cut].rfind('\n').map_or(cut, |i| floor + i);
    let dropped = text[at..].chars().count() as u64;
    (text[..at].to_string(), dropped)
}

fn get_browser_state(p: &mut Params) -> Prepared<TaskCx> {
    let highlight = p.bool_or("highlight", true)?;
    let viewport_expansion = p.int_opt("viewportExpansion")?.unwrap_or(0).max(-1);
    let include_elements = p.bool_or("includeElements", true)?;
    let max_elements = match p.int_opt("maxElements")? {
        Some(n) if n > 0 => usize::try_from(n).unwrap_or(200),
        _ => 200,
    };
    let opts = SnapshotOptions {
        highlight,
        viewport_expansion,
        include_frames: p.bool_or("includeFrames", false)?,
        strict: p.bool_or("strictSnapshot", false)?,
        detail: if include_elements { max_elements } else { 0 },
        // Both set from the context below.
        deadline: Instant::now(),
        max_text_chars: 0,
    };
    run(move |cx: TaskCx| async move {
        let opts = SnapshotOptions {
            deadline: cx.deadline,
            max_text_chars: cx.engine.config.state_text_max_chars,
            ..opts
        };
        let task = cx.task.clone();
        let tab = task.tab()?;
        let t0 = Instant::now();
        let mut read = read_snapshot(&tab, opts).await?;
        tracing::debug!(target: "moonpilot::snapshot", "snapshot read in {:?}", t0.elapsed());
        if let Some(previous) = task.snapshot().filter(|s| s.tab_target == tab.target_id()) {
            read.mark_new(&previous);
        }
        let usable = read.usable();
        task.set_snapshot(usable.then(|| read.to_snapshot(&tab)));
        // Page text is bounded by the readers; markup may add as much again.
        let (text, text_over) = cut_text(read.text(), opts.max_text_chars.saturating_mul(2));
        task.set_state_text(text.clone());
        let (block, tabs, (url, title)) = tab_block(&task).await;
        let seq = task.next_capture_seq();
        let mut data = json!({
            "url": url,
            "title": title,
            "browser_state": block,
            "text": text,
            "tabs": tabs,
        });
        if let Some(main) = read.main_dom() {
            data["pixels_above"] = json!(main.pixels_above);
            data["pixels_below"] = json!(main.pixels_below);
            data["viewport_height"] = json!(main.viewport_height);
            data["page_height"] = json!(main.page_height);
            // What the text's `… px above/below` lines say, for a client that reads `data`.
            if let (Some(above), Some(below)) = (main.above, main.below) {
                data["beyondViewport"] = json!({"above": above, "below": below});
            }
            if let Some(behind) = &main.behind {
                data["behindOverlay"] = json!(behind);
            }
            if let Some(media) = &main.media {
                data["mediaCount"] = json!(media.media_count);
                data["imageCount"] = json!(media.image_count);
                data["mediaSamples"] = json!(media.samples);
                data["mediaHint"] = json!("the page shows large images: download_image + ocr_image can read text inside them");
            }
        }
        if opts.include_frames {
            let entries = read.frame_entries();
            data["frameCount"] = json!(entries.len());
            data["frames"] = json!(entries);
            data["includeFrames"] = json!(true);
        } else {
            let skipped = read.frames.iter().filter(|r| r.skipped.is_some()).count();
            if skipped > 0 {
                let no_elements = read.main_dom().is_none_or(|d| d.elements.is_empty());
                data["frameHint"] = json!(if no_elements {
                    format!("the top document has no interactive element but {skipped} cross-origin frame(s) were skipped: the content is probably inside them; call again with includeFrames=true")
                } else {
                    format!("{skipped} cross-origin frame(s) were skipped; pass includeFrames=true to index them")
                });
            }
        }
        let elements = read.elements();
        data["elementCount"] = json!(elements.len());
        data["elementsTruncated"] = json!(include_elements && elements.len() > max_elements);
        if include_elements {
            if elements.len() > max_elements {
                data["elementsHint"] = json!(format!(
                    "{} elements, {max_elements} inlined; raise maxElements to see more",
                    elements.len()
                ));
            }
            data["elements"] = json!(elements.into_iter().take(max_elements).collect::<Vec<_>>());
        }
        data["snapshotConsistent"] = json!(usable);
        data["snapshotAttempts"] = json!(read.attempts);
        data["indicesUsable"] = json!(usable);
        data["snapshotMutations"] = json!(read.mutations.0);
        data["snapshotStructuralMutations"] = json!(read.mutations.1);
        data["snapshotContentMutations"] = json!(read.mutations.2);
        data["snapshotStrict"] = json!(opts.strict);
        if !usable {
            data["snapshotIssues"] = json!(read.issues);
            data["snapshotLastMutation"] = read.last_mutation.clone();
            data["snapshotHint"] = json!(if read.document_loading {
                "the document was still loading: wait for it, then read again"
            } else {
                "the page changed while it was read: indices are not usable; read again (or use *_by_selector)"
            });
        } else if read.mutations.0 != 0 {
            data["snapshotNote"] = json!("content changed during the read (text, attributes), but no element was added or removed: indices stay usable");
        }
        if read.time_up() {
            data["snapshotHint"] = json!(
                "the page is too big to read within the command's time: the snapshot stopped \
                 early (read_budget_exhausted), so elements after the last index are missing \
                 and indices are not usable; use *_by_selector or execute_js, or read a \
                 smaller part (viewportExpansion=0, scroll first)"
            );
        }
        let text_truncated = read.text_cut() || text_over > 0;
        data["textTruncated"] = json!(text_truncated);
        if text_truncated {
            data["textLimit"] = json!(opts.max_text_chars);
            data["textLength"] = json!(text.chars().count());
            data["textDroppedChars"] = json!(read.text_dropped() + text_over);
            data["textHint"] = json!(format!(
                "the page text was cut at {} characters of page text (engine setting \
                 state_text_max_chars; the rendered text at twice that): \
                 scroll and read again (pixels_below), or read the part you need with \
                 execute_js",
                opts.max_text_chars
            ));
        }
        data["pageAppearsBlank"] = json!(text.trim().is_empty());
        tracing::debug!(target: "moonpilot::snapshot", "receipt built after {:?}", t0.elapsed());
        // Screenshot + state file (PROTOCOL.md §8, §15); a failure never fails the read. The
        // receipt names both files at once; they are written in the background
        // (Task::defer_evidence; see executor/capture.rs for who waits for them), so the caller
        // does not wait for the PNG encoder.
        data["seq"] = json!(seq);
        let dir = cx.engine.config.data_dir.join(task.id.to_string());
        let png_path = dir.join(format!("{seq}.png"));
        let txt_path = dir.join(format!("{seq}.txt"));
        data["screenshot"] = json!(format!("/data/{}/{seq}.png", task.id));
        data["screenshot_path"] = json!(shown_path(&png_path));
        data["state_file"] = json!(shown_path(&txt_path));
        // Written in the background: `r:wait_files()` (Lua) or a GET of `screenshot` (HTTP)
        // waits for them (issue 22 §5).
        data["files_pending"] = json!(true);
        // Redacted like everything the engine writes (the page's text may show a card number
        // typed into a field; the tab block, a URL with a token).
        let state_text = crate::redact::text(&format!(
            "{}\n\n{}",
            data["browser_state"].as_str().unwrap_or_default(),
            text
        ))
        .into_owned();
        let shot_tab = tab.clone();
        let keeper = cx.engine.keeper.clone();
        let owner = task.clone();
        task.defer_evidence(seq, async move {
            tokio::fs::create_dir_all(&dir)
                .await
                .map_err(|e| e.to_string())?;
            // The state file first: it needs no browser, so it exists even when the page fails
            // to produce a frame.
            keeper
                .save(&txt_path, state_text.as_bytes())
                .await
                .map_err(|e| format!("state file: {e}"))?;
            let (png, reused) = shot_tab.state_screenshot().await.map_err(|e| e.msg)?;
            if reused {
                owner.count_shot_reused();
            }
            keeper
                .save(&png_path, &png)
                .await
                .map_err(|e| e.to_string())
        });
        Ok(data)
    })
}

fn list_frames(p: &mut Params) -> Prepared<TaskCx> {
    let refresh = p.bool_or("refresh", true)?;
    run(move |cx: TaskCx| async move {
        let task = cx.task.clone();
        let tab = task.tab()?;
        let frames = if refresh {
            let opts = SnapshotOptions {
                highlight: false,
                viewport_expansion: 0,
                include_frames: true,
                strict: false,
                detail: 0,
                deadline: cx.deadline,
                max_text_chars: cx.engine.config.state_text_max_chars,
            };
            let read = read_snapshot(&tab, opts).await?;
            task.set_snapshot(read.usable().then(|| read.to_snapshot(&tab)));
            read.frame_entries()
        } else {
            tab.frames(true)
                .await?
                .iter()
                .map(FrameRef::to_json)
                .collect()
        };
        Ok(json!({
            "count": frames.len(),
            "frames": frames,
            "note": "index 0 is the main frame; the rest follow depth-first",
        }))
    })
}

fn get_page_snapshot(p: &mut Params) -> Prepared<TaskCx> {
    let include_console = p.bool_or("includeConsole", false)?;
    let include_requests = p.bool_or("includeRequests", false)?;
    let request_filter = p.str_opt("requestFilter")?;
    run(move |cx: TaskCx| async move {
        let task = cx.task.clone();
        let tab = task.tab()?;
        let status = tab.call_page_status().await?;
        let (block, tabs, (url, title)) = tab_block(&task).await;
        let mut data = json!({
            "url": url,
            "title": title,
            "browser_state": block,
            "tabs": tabs,
            "dialog": task.events.last_dialog().map(|d| d.to_json()),
            "loading": status["readyState"].as_str() != Some("complete"),
        });
        // From the task's recorder (browser/netlog.rs), as get_console_logs and get_requests
        // answer them.
        if include_console {
            let c = task.events.log.console();
            data["logs"] = json!(c.logs);
            data["errors"] = json!(c.errors);
            data["logsDropped"] = json!(c.logs_dropped);
            data["errorsDropped"] = json!(c.errors_dropped);
        }
        if include_requests {
            let now = task.events.log.requests();
            let matched: Vec<Value> = now
                .requests
                .iter()
                .filter(|r| request_filter.as_deref().is_none_or(|f| r.url.contains(f)))
                .map(|r| r.to_json())
                .collect();
            let skip = matched.len().saturating_sub(SNAPSHOT_REQUESTS);
            data["requestCount"] = json!(matched.len());
            data["requests"] = json!(matched[skip..]);
            data["requestFilter"] = json!(request_filter);
            data["recordedSince"] = json!(now.recorded_since);
        }
        Ok(data)
    })
}

/// The most (newest) requests `get_page_snapshot{includeRequests}` lists; get_requests has more.
const SNAPSHOT_REQUESTS: usize = 50;

/// The most lines `diff_dom_text` lists per side.
const DIFF_MAX_LINES: usize = 200;

/// Multiset line difference: lines of `new` not matched by a line of `old` (in `new`'s order),
/// and lines of `old` left unmatched (in `old`'s order).
fn line_diff<'a>(old: &'a str, new: &'a str) -> (Vec<&'a str>, Vec<&'a str>) {
    let mut left: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for line in old.lines() {
        *left.entry(line).or_default() += 1;
    }
    let mut added = Vec::new();
    for line in new.lines() {
        match left.get_mut(line) {
            Some(n) if *n > 0 => *n -= 1,
            _ => added.push(line),
        }
    }
    let mut removed = Vec::new();
    for line in old.lines() {
        if let Some(n) = left.get_mut(line) {
            if *n > 0 {
                *n -= 1;
                removed.push(line);
            }
        }
    }
    (added, removed)
}

fn diff_dom_text(p: &mut Params) -> Prepared<TaskCx> {
    let highlight = p.bool_or("highlight", true)?;
    let viewport_expansion = p.int_opt("viewportExpansion")?.unwrap_or(0).max(-1);
    run(move |cx: TaskCx| async move {
        let task = cx.task.clone();
        let tab = task.tab()?;
        let opts = SnapshotOptions {
            highlight,
            viewport_expansion,
            include_frames: false,
            strict: false,
            detail: 0,
            deadline: cx.deadline,
            max_text_chars: cx.engine.config.state_text_max_chars,
        };
        let mut read = read_snapshot(&tab, opts).await?;
        if let Some(previous) = task.snapshot().filter(|s| s.tab_target == tab.target_id()) {
            read.mark_new(&previous);
        }
        task.set_snapshot(read.usable().then(|| read.to_snapshot(&tab)));
        let (text, _) = cut_text(read.text(), opts.max_text_chars.saturating_mul(2));
        let previous = task.state_text();
        task.set_state_text(text.clone());
        // New-element marks (`*[i]`) are not a change of the page's text.
        let plain = |s: &str| -> String {
            s.lines()
                .map(|l| l.strip_prefix('*').unwrap_or(l))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let new = plain(&text);
        let old = previous.as_deref().map(|s| plain(s));
        let (added, removed) = match &old {
            Some(old) => line_diff(old, &new),
            None => (new.lines().collect(), Vec::new()),
        };
        let (_, tabs, (url, title)) = tab_block(&task).await;
        Ok(json!({
            "url": url,
            "title": title,
            "tabs": tabs,
            "first": old.is_none(),
            "changed": !added.is_empty() || !removed.is_empty(),
            "addedCount": added.len(),
            "removedCount": removed.len(),
            "truncated": added.len() > DIFF_MAX_LINES || removed.len() > DIFF_MAX_LINES,
            "added": added.iter().take(DIFF_MAX_LINES).collect::<Vec<_>>(),
            "removed": removed.iter().take(DIFF_MAX_LINES).collect::<Vec<_>>(),
            "indicesUsable": read.usable(),
        }))
    })
}

fn get_interactive_map(_: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move {
        let task = cx.task.clone();
        let tab = task.tab()?;
        let source = "indices are those of the task's index snapshot, shared with every index \
                      command (click_element_by_index, ...)";
        let Some(snapshot) = task.snapshot().filter(|s| s.tab_target == tab.target_id()) else {
            // No snapshot of this tab: build one (no files, no highlight).
            let opts = SnapshotOptions {
                highlight: false,
                viewport_expansion: 0,
                include_frames: false,
                strict: false,
                detail: usize::MAX,
                deadline: cx.deadline,
                max_text_chars: cx.engine.config.state_text_max_chars,
            };
            let read = read_snapshot(&tab, opts).await?;
            task.set_snapshot(read.usable().then(|| read.to_snapshot(&tab)));
            let elements = read.elements();
            return Ok(json!({
                "count": elements.len(),
                "elements": elements,
                "source": source,
                "snapshotBuilt": true,
                "indicesUsable": read.usable(),
            }));
        };
        // Re-read the stored snapshot's elements, one call per frame.
        let frames = tab.frames(true).await?;
        let mut items: Vec<Option<Value>> = vec![None; snapshot.elements.len()];
        for frame in &snapshot.frames {
            let positions: Vec<usize> = snapshot
                .elements
                .iter()
                .enumerate()
                .filter(|(_, e)| e.frame == frame.ordinal)
                .map(|(i, _)| i)
                .collect();
            if positions.is_empty() {
                continue;
            }
            let Some(live_frame) = frames.iter().find(|f| f.frame_id == frame.frame_id) else {
                continue;
            };
            let els: Vec<&SnapElement> = positions.iter().map(|&i| &snapshot.elements[i]).collect();
            let paths: Vec<&str> = els.iter().map(|e| e.locator.as_str()).collect();
            let expect: Vec<(&str, Option<&str>, Option<&str>)> = els
                .iter()
                .map(|e| (e.tag.as_str(), e.id.as_deref(), e.name.as_deref()))
                .collect();
            let res = tab
                .call_probe::<Resolved>(
                    live_frame,
                    js::RESOLVE_JS,
                    json!({"paths": paths, "expect": expect, "detail": paths.len()}),
                )
                .await
                .unwrap_or_default();
            for (k, &i) in positions.iter().enumerate() {
                // An element whose identity changed is not the one the index means.
                let live = res.items.get(k).cloned().unwrap_or(Value::Null);
                items[i] = Some(if res.changed.contains(&k) {
                    Value::Null
                } else {
                    live
                });
            }
        }
        let elements: Vec<Value> = snapshot
            .elements
            .iter()
            .zip(items)
            .map(|(el, live)| {
                let frame_url = snapshot
                    .frames
                    .iter()
                    .find(|f| f.ordinal == el.frame)
                    .map_or("", |f| f.url.as_str());
                map_item(
                    live.unwrap_or(Value::Null),
                    ItemOrigin {
                        index: el.index,
                        xpath: &el.locator,
                        tag: &el.tag,
                        id: el.id.as_deref(),
                        name: el.name.as_deref(),
                        frame_index: el.frame,
                        frame_url,
                        reason: el.reason.as_deref(),
                    },
                )
            })
            .collect();
        Ok(json!({
            "count": elements.len(),
            "elements": elements,
            "source": source,
            "snapshotBuilt": false,
        }))
    })
}

fn get_form_state(p: &mut Params) -> Prepared<TaskCx> {
    let selector = p.str_opt("selector")?;
    let include_hidden = p.bool_or("includeHidden", false)?;
    let max = match p.int_opt("max")? {
        Some(n) if n > 0 => n,
        _ => 200,
    };
    run(move |cx: TaskCx| async move {
        let tab = cx.task.tab()?;
        let frame = tab.main_frame_local();
        let mut data = tab
            .call_probe::<Value>(
                &frame,
                js::FORM_STATE_JS,
                json!({"selector": selector, "includeHidden": include_hidden, "max": max}),
            )
            .await
            .map_err(|mut e| {
                if e.code == ErrorCode::InvalidArgument {
                    e.param = Some("selector".into());
                }
                e
            })?;
        let status = tab.call_page_status().await.unwrap_or_default();
        data["url"] = status["url"].clone();
        data["scope"] = json!(selector.as_deref().unwrap_or("document"));
        Ok(data)
    })
}
