//! DOM modals: `get_modals`, `close_modal` (JS-PROBES.md §12).
//!
//! A DOM modal is an ordinary page node (framework modal, agreement layer, drawer, custom
//! overlay) found by the modal probe (`js/modals.js`) in every frame, cross-site iframes
//! included; iframe coordinates are shifted into the main viewport so every point can be
//! clicked as it is. Closing is always a trusted mouse click followed by a re-probe: success
//! means the count went down, never "the click happened". Native `alert`/`confirm` dialogs are
//! another thing entirely (`commands/dialogs.rs`); the probe never sees them.

use std::time::Duration;

use serde_json::{json, Value};

use crate::browser::tab::{FrameRef, FrameSession};
use crate::browser::Tab;
use crate::command::*;
use crate::commands::page_state::probe_value;
use crate::error::CommandError;
use crate::js;
use crate::protocol::{ErrorCode, Params};

/// The modals group.
pub const SPECS: &[CommandSpec] = &[
    Group::Modals
        .read("get_modals", get_modals)
        .summary("List the DOM modals (overlays, drawers, agreement layers) of every frame")
        .doc("Three scan rounds in every frame: framework selectors (confidence strict), \
              class-name hints and fixed-overlay geometry (heuristic). Each modal has its title, \
              text, button labels with click points, the close (x) point and whether it blocks \
              the page; iframe points are already in main-viewport coordinates, ready for a \
              mouse click. count 0 does not prove that nothing covers the page. Native dialogs \
              (alert/confirm) are not DOM modals: see get_dialog.")
        .example("local m = page:get_modals():unwrap()\nif m.count > 0 then print(m.top.title, m.top.closePoint) end"),
    Group::Modals
        .action("close_modal", close_modal)
        .summary("Close a DOM modal with a real mouse click and check that the count went down")
        .doc("Picks the target (title, else which; class:/title pick the last match), clicks the \
              requested button, else the close (x) point, else the first of 取消, 关闭, 知道了, \
              我接受, 确定 (confirm-like labels last) with a trusted mouse click, waits 400 ms \
              and re-probes. closed = countAfter < countBefore. all closes the top modal again \
              after each successful close and stops at 0 or at the first modal that stays; a \
              modal that refused is never clicked twice. When closed is false, read the hint \
              instead of calling again (a second click may stack more confirm layers).")
        .params(&[
            string("which", "top (last in list) | first | all | class:<substring of className>; lower-cased").or("\"top\""),
            string("title", "substring (whitespace ignored) of title+text; overrides which"),
            string("button", "button label to click (whitespace ignored); absent or not found -> default choice"),
        ])
        .example("local r = page:close_modal{ which = \"top\" }:unwrap()\nif not r.closed then print(r.hint) end"),
];

/// The label reported for a click on a modal's close (x) element ("close button (x)").
const CLOSE_LABEL: &str = "关闭按钮(×)";

/// Default buttons when there is no close point, in order of preference: cancel, close, got
/// it, I accept, and confirm last (a confirm may submit something).
const DEFAULT_LABELS: &[&str] = &["取消", "关闭", "知道了", "我接受", "确定"];

/// Pause after a close click before re-probing (JS-PROBES.md §12.7): long enough for the
/// usual close animations of the frameworks the probe knows (ant, element, layui ~300 ms).
const CLOSE_PAUSE: Duration = Duration::from_millis(400);

/// Button labels are cut to this many characters by the probe (§12.2).
const LABEL_CHARS: usize = 12;

/// Where the clicks on one frame's modals go.
struct Placement {
    /// The frame.
    frame: FrameRef,
    /// The origin of the frame's session viewport in the main viewport: `(0, 0)` for the page
    /// session, the root iframe's content box for an out-of-process iframe's session.
    session_origin: (f64, f64),
}

/// The merged probe result of every frame (JS-PROBES.md §12.6).
struct Scan {
    /// Every admitted modal, frame by frame (depth-first), each frame in admission order.
    modals: Vec<Value>,
    /// `frame[<i>]: <message>` for frames that could not be probed or placed.
    frame_errors: Vec<String>,
    /// From the main frame (or the first frame that answered).
    scanned_by: Value,
    /// From the main frame (or the first frame that answered).
    note: Value,
    /// One entry per frame that contributed modals.
    placements: Vec<Placement>,
}

impl Scan {
    fn count(&self) -> usize {
        self.modals.len()
    }

    /// The placement of the frame `modal` was found in.
    fn placement(&self, modal: &Value) -> Option<&Placement> {
        let ordinal = modal["frameIndex"].as_u64()?;
        self.placements
            .iter()
            .find(|p| u64::try_from(p.frame.ordinal).ok() == Some(ordinal))
    }

    /// The `get_modals` receipt: counts, `top` and `topIsBlocking` over the merged list.
    fn to_json(&self) -> Value {
        let strict = self
            .modals
            .iter()
            .filter(|m| m["confidence"] == "strict")
            .count();
        let blocking = self.modals.iter().filter(|m| m["blocking"] == true).count();
        let top = self
            .modals
            .iter()
            .rev()
            .find(|m| m["blocking"] == true)
            .or_else(|| self.modals.last())
            .cloned()
            .unwrap_or(Value::Null);
        json!({
            "count": self.count(),
            "countStrict": strict,
            "countHeuristic": self.count() - strict,
            "countBlocking": blocking,
            "modals": self.modals,
            "topIsBlocking": top["blocking"] == true,
            "top": top,
            "scannedBy": self.scanned_by,
            "note": self.note,
            "frameErrors": self.frame_errors,
        })
    }
}

/// A CSS pixel value as a whole number. Probe values are rounded integers and offsets are
/// finite; the cast saturates on anything absurd instead of failing.
fn px(v: f64) -> i64 {
    v.round() as i64
}

/// Adds `(dx, dy)` to the first two numbers of an `[x, y, ...]` array, in place.
fn shift_pair(v: &mut Value, dx: f64, dy: f64) {
    if let Some(a) = v.as_array_mut() {
        for (i, d) in [dx, dy].into_iter().enumerate() {
            if let Some(n) = a.get_mut(i) {
                *n = json!(px(n.as_f64().unwrap_or(0.0) + d));
            }
        }
    }
}

/// Moves a modal found in an iframe into main-viewport coordinates: rect x/y, the close point
/// and every button point.
fn shift_modal(modal: &mut Value, dx: f64, dy: f64) {
    if let Some(rect) = modal.get_mut("rect") {
        shift_pair(rect, dx, dy);
    }
    if let Some(point) = modal.get_mut("closePoint") {
        shift_pair(point, dx, dy);
    }
    if let Some(buttons) = modal.get_mut("buttonPoints").and_then(Value::as_array_mut) {
        for b in buttons {
            if let Some(point) = b.get_mut("point") {
                shift_pair(point, dx, dy);
            }
        }
    }
}

/// Probes every frame (main, same-site and cross-site, depth-first as `list_frames`) and
/// merges the results. Fails only when no frame could be probed, with the main frame's code
/// (a navigating page stays `PAGE_NAVIGATING`).
async fn scan(tab: &Tab) -> Result<Scan, CommandError> {
    let frames = tab.frames(true).await?;
    let mut merged = Scan {
        modals: Vec::new(),
        frame_errors: Vec::new(),
        scanned_by: Value::Null,
        note: Value::Null,
        placements: Vec::new(),
    };
    let mut probed = 0;
    let mut first_failure: Option<(ErrorCode, String)> = None;
    for frame in &frames {
        let answer = match tab.call_function(frame, js::MODALS_JS, json!({})).await {
            Ok(v) => probe_value(v).map_err(|msg| (ErrorCode::ActionFailed, msg)),
            Err(e) => Err((e.code, e.msg)),
        };
        let value = match answer {
            Ok(v) => v,
            Err((code, msg)) => {
                merged
                    .frame_errors
                    .push(format!("frame[{}]: {msg}", frame.ordinal));
                first_failure.get_or_insert((code, msg));
                continue;
            }
        };
        probed += 1;
        if merged.scanned_by.is_null() {
            merged.scanned_by = value["scannedBy"].clone();
            merged.note = value["note"].clone();
        }
        let Some(items) = value["modals"].as_array().filter(|l| !l.is_empty()) else {
            continue;
        };
        let placed = if frame.is_main() {
            Ok(((0.0, 0.0), (0.0, 0.0)))
        } else {
            place(tab, &frames, frame).await
        };
        let ((dx, dy), session_origin) = match placed {
            Ok(placed) => placed,
            Err(e) => {
                // Unplaceable points would send clicks to the wrong place: leave them out.
                let n = items.len();
                merged.frame_errors.push(format!(
                    "frame[{}]: iframe position unknown ({}); its {n} modal(s) are left out",
                    frame.ordinal, e.msg
                ));
                continue;
            }
        };
        merged.placements.push(Placement {
            frame: frame.clone(),
            session_origin,
        });
        for item in items {
            let mut item = item.clone();
            if !frame.is_main() {
                shift_modal(&mut item, dx, dy);
            }
            item["frameIndex"] = json!(frame.ordinal);
            item["frameUrl"] = json!(frame.url);
            merged.modals.push(item);
        }
    }
    if probed == 0 {
        let (code, msg) = first_failure.unwrap_or((ErrorCode::ActionFailed, "no frame".into()));
        return Err(
            CommandError::new(code, format!("reading page modals failed: {msg}"))
                .with_details(json!({"frameErrors": merged.frame_errors})),
        );
    }
    Ok(merged)
}

/// The offset of `frame` in the main viewport, and the origin of its session's viewport there.
async fn place(
    tab: &Tab,
    frames: &[FrameRef],
    frame: &FrameRef,
) -> Result<((f64, f64), (f64, f64)), CommandError> {
    let offset = tab.frame_offset(frames, frame).await?;
    let session_origin = match &frame.session {
        FrameSession::Page => (0.0, 0.0),
        FrameSession::Remote { root_frame_id, .. } if *root_frame_id == frame.frame_id => offset,
        FrameSession::Remote { root_frame_id, .. } => {
            let root = frames
                .iter()
                .find(|f| f.frame_id == *root_frame_id)
                .ok_or_else(|| CommandError::failed("the frame's session root is not listed"))?;
            tab.frame_offset(frames, root).await?
        }
    };
    Ok((offset, session_origin))
}

/// A trusted click at main-viewport point (`x`, `y`) on a modal of `scan`. Points inside an
/// out-of-process iframe are sent to that frame's session in its own coordinates: routed from
/// the page session they would be lost whenever the tab is in the background.
async fn click_at(
    tab: &Tab,
    scan: &Scan,
    modal: &Value,
    x: f64,
    y: f64,
) -> Result<(), CommandError> {
    match scan.placement(modal) {
        Some(p) if matches!(p.frame.session, FrameSession::Remote { .. }) => {
            let (ox, oy) = p.session_origin;
            tab.mouse_click_in(&p.frame, x - ox, y - oy).await
        }
        _ => tab.mouse_click(x, y).await,
    }
}

fn get_modals(_p: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        Ok(scan(&tab).await?.to_json())
    })
}

/// Which modal `close_modal` goes for (`title` is handled apart: it overrides this).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Which {
    /// The last modal of the merged list.
    Top,
    /// The first modal of the merged list.
    First,
    /// The top modal, again after each close, until none is left or one stays.
    All,
    /// The last modal whose className contains this (lower-case) text.
    Class(String),
}

/// Reads `which`: a string, trimmed and lower-cased; absent or empty = `top`. Anything but
/// `top`, `first`, `all` or `class:<substring>` is refused rather than silently read as `top`.
fn read_which(p: &mut Params) -> Result<(Which, String), CommandError> {
    if let Some(raw) = p
        .raw()
        .get("which")
        .filter(|v| !v.is_string() && !v.is_null())
    {
        return Err(CommandError::invalid(
            "which",
            format!("param `which`: expected a string (top, first, all or class:<substring>), got `{raw}`"),
        ));
    }
    let mode = p
        .str_opt("which")?
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "top".to_string());
    let which = match mode.as_str() {
        "top" => Which::Top,
        "first" => Which::First,
        "all" => Which::All,
        m => match m.strip_prefix("class:") {
            Some(sub) => Which::Class(sub.trim().to_string()),
            None => {
                return Err(CommandError::invalid(
                    "which",
                    format!("param `which`: unknown value `{m}`; expected top, first, all or class:<substring of className>"),
                ))
            }
        },
    };
    Ok((which, mode))
}

/// `s` without any whitespace.
fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

fn str_field<'a>(modal: &'a Value, key: &str) -> &'a str {
    modal.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The target among `modals`: by `title` (case-insensitive, whitespace ignored, over title +
/// text) when given, else by `which`. Several matches → the last one, nearest the top.
fn pick_target<'a>(modals: &'a [Value], which: &Which, title: Option<&str>) -> Option<&'a Value> {
    if let Some(needle) = title {
        let needle = needle.to_lowercase();
        return modals.iter().rev().find(|m| {
            let hay = squeeze(&format!(
                "{}{}",
                str_field(m, "title"),
                str_field(m, "text")
            ));
            hay.to_lowercase().contains(&needle)
        });
    }
    match which {
        Which::Top | Which::All => modals.last(),
        Which::First => modals.first(),
        Which::Class(sub) if sub.is_empty() => None,
        Which::Class(sub) => modals.iter().rev().find(|m| {
            str_field(m, "className")
                .to_lowercase()
                .contains(sub.as_str())
        }),
    }
}

/// What to click on `modal`: the requested label (whitespace-free exact match), else the close
/// point, else the first default label present. `None` when there is nothing to click.
fn choose_button(modal: &Value, wanted: Option<&str>) -> Option<(String, Value)> {
    let buttons = modal
        .get("buttonPoints")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let labelled = |label: &str| {
        buttons
            .iter()
            .find(|b| b["label"] == label && b["point"].is_array())
            .map(|b| (label.to_string(), b["point"].clone()))
    };
    if let Some(hit) =
        wanted.and_then(|w| labelled(&w.chars().take(LABEL_CHARS).collect::<String>()))
    {
        return Some(hit);
    }
    if let Some(point) = modal.get("closePoint").filter(|p| p.is_array()) {
        return Some((CLOSE_LABEL.to_string(), point.clone()));
    }
    DEFAULT_LABELS.iter().find_map(|l| labelled(l))
}

fn point_xy(point: &Value) -> Option<(f64, f64)> {
    Some((point.get(0)?.as_f64()?, point.get(1)?.as_f64()?))
}

/// A short description of a modal for receipts and failures.
fn summary(modal: &Value) -> Value {
    json!({
        "kind": modal["kind"],
        "className": modal["className"],
        "id": modal["id"],
        "title": modal["title"],
        "frameIndex": modal["frameIndex"],
    })
}

/// Whether two scans' entries are the same modal (same frame, kind, class, id and title).
fn same_modal(a: &Value, b: &Value) -> bool {
    ["frameIndex", "kind", "className", "id", "title"]
        .iter()
        .all(|k| a[*k] == b[*k])
}

/// The points of `modal` a caller could click next: the close point, then every button.
fn click_points(modal: &Value) -> Vec<Value> {
    let mut points = Vec::new();
    if let Some(p) = modal.get("closePoint").filter(|p| p.is_array()) {
        points.push(json!({"label": CLOSE_LABEL, "point": p}));
    }
    for b in modal["buttonPoints"].as_array().into_iter().flatten() {
        points.push(json!({"label": b["label"], "point": b["point"]}));
    }
    points
}

/// The failure for a `class:`/`title` filter that matched no open modal.
fn no_match(which: &Which, title: Option<&str>, scan: &Scan) -> CommandError {
    let what = match (title, which) {
        (Some(t), _) => format!("title `{t}` (title or text, whitespace ignored)"),
        (None, Which::Class(sub)) => format!("class `{sub}` (className contains it)"),
        (None, _) => "the request".to_string(),
    };
    CommandError::new(
        ErrorCode::ElementNotFound,
        format!(
            "no modal matches {what}; {} modal(s) are open: read get_modals for their className and matchedBy",
            scan.count()
        ),
    )
    .with_details(json!({
        "countBefore": scan.count(),
        "modals": scan.modals.iter().map(summary).collect::<Vec<_>>(),
    }))
}

fn close_modal(p: &mut Params) -> Prepared<TaskCx> {
    let (which, mode) = read_which(p)?;
    let title_echo = p.str_opt("title")?;
    let title = title_echo.as_deref().map(squeeze).filter(|t| !t.is_empty());
    let button = p
        .str_opt("button")?
        .map(|b| squeeze(&b))
        .filter(|b| !b.is_empty());
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        let before = scan(&tab).await?;
        let count_before = before.count();
        let mut data = json!({"which": mode});
        if let Some(t) = &title_echo {
            data["title"] = json!(t);
        }
        if count_before == 0 {
            data["closed"] = json!(false);
            data["countBefore"] = json!(0);
            data["countAfter"] = json!(0);
            data["clicked"] = json!([]);
            data["closedAll"] = json!(true);
            data["note"] = json!("no DOM modal is open; nothing to close");
            return Ok(data);
        }
        let mut target = pick_target(&before.modals, &which, title.as_deref())
            .cloned()
            .ok_or_else(|| no_match(&which, title.as_deref(), &before))?;
        // `all` re-targets the top modal after every close; it clicks at most once per modal
        // that was open at the start and stops at the first click that closed nothing.
        let max_clicks = if which == Which::All && title.is_none() {
            count_before
        } else {
            1
        };
        let mut clicked = Vec::new();
        let mut targets = Vec::new();
        let mut latest = before;
        let mut after_error: Option<String> = None;
        let mut button_missed = false;
        for _ in 0..max_clicks {
            targets.push(summary(&target));
            let choice = choose_button(&target, button.as_deref());
            if let (Some(wanted), Some((label, _))) = (&button, &choice) {
                button_missed |= label != wanted;
            }
            let Some((label, point)) = choice else {
                clicked.push(json!({
                    "label": Value::Null,
                    "point": Value::Null,
                    "error": "the modal has no visible close (x) element and none of the known button labels",
                }));
                break;
            };
            let Some((x, y)) = point_xy(&point) else {
                clicked.push(
                    json!({"label": label, "point": point, "error": "the point is not [x, y]"}),
                );
                break;
            };
            if let Err(e) = click_at(&tab, &latest, &target, x, y).await {
                clicked.push(json!({"label": label, "point": point, "error": e.msg}));
                break;
            }
            clicked.push(json!({"label": label, "point": point, "via": "mouse"}));
            tokio::time::sleep(CLOSE_PAUSE).await;
            let count_prev = latest.count();
            match scan(&tab).await {
                Ok(now) => latest = now,
                Err(e) => {
                    after_error = Some(e.msg);
                    break;
                }
            }
            let count_now = latest.count();
            if count_now == 0 || count_now >= count_prev {
                break;
            }
            match latest.modals.last() {
                Some(next) => target = next.clone(),
                None => break,
            }
        }
        let count_after = latest.count();
        let closed = count_after < count_before;
        data["closed"] = json!(closed);
        data["countBefore"] = json!(count_before);
        data["countAfter"] = json!(count_after);
        data["clicked"] = json!(clicked);
        data["closedAll"] = json!(count_after == 0);
        data["targets"] = json!(targets);
        if button_missed {
            data["buttonNote"] = json!(format!(
                "no button labelled `{}` on the modal; the default choice was clicked",
                button.as_deref().unwrap_or_default()
            ));
        }
        if let Some(e) = &after_error {
            data["afterProbeError"] = json!(e);
            data["hint"] = json!("the page could not be re-read after the click (it may be navigating): read it again before acting; countAfter is the last count seen");
        } else if !closed || (which == Which::All && count_after > 0) {
            // Points of the modal as it is now (it may have moved), else as it was clicked.
            let current = latest
                .modals
                .iter()
                .find(|m| same_modal(m, &target))
                .unwrap_or(&target);
            let points = click_points(current);
            let listed: Vec<String> = points
                .iter()
                .map(|p| format!("{} at {}", p["label"].as_str().unwrap_or("?"), p["point"]))
                .collect();
            let why = if closed {
                "`all` stopped at a modal that stayed open"
            } else {
                "the modal count did not go down"
            };
            data["hint"] = json!(if listed.is_empty() {
                format!(
                    "{why} and the modal offers no close point or button label: read the page \
                     (get_browser_state) to find its control; do not repeat close_modal"
                )
            } else {
                format!(
                    "{why}: the modal may want another button, a trusted click elsewhere, or it \
                     opened a new confirmation layer; do not repeat close_modal blindly. Read \
                     get_modals and click one of these points with mouse_click: {}",
                    listed.join("; ")
                )
            });
            data["points"] = json!(points);
        }
        Ok(data)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modal(
        class: &str,
        title: &str,
        close: Option<[i64; 2]>,
        buttons: &[(&str, [i64; 2])],
    ) -> Value {
        json!({
            "kind": "dialog",
            "className": class,
            "title": title,
            "text": format!("{title} body text"),
            "closePoint": close,
            "buttonPoints": buttons.iter().map(|(l, p)| json!({"label": l, "point": p})).collect::<Vec<_>>(),
        })
    }

    fn params(v: Value) -> Params {
        Params::new(v).unwrap()
    }

    #[test]
    fn which_is_read_lower_cased_and_checked() {
        let read = |v: Value| read_which(&mut params(json!({ "which": v }))).map(|(w, _)| w);
        assert_eq!(read(json!("TOP ")).unwrap(), Which::Top);
        assert_eq!(read(json!("All")).unwrap(), Which::All);
        assert_eq!(read(json!("")).unwrap(), Which::Top);
        assert_eq!(read(Value::Null).unwrap(), Which::Top);
        assert_eq!(
            read(json!("class:Ant-Modal")).unwrap(),
            Which::Class("ant-modal".into())
        );
        assert_eq!(read(json!(5)).unwrap_err().code, ErrorCode::InvalidArgument);
        assert_eq!(
            read(json!("second")).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
        assert_eq!(read_which(&mut params(json!({}))).unwrap().1, "top");
    }

    #[test]
    fn targets_follow_title_then_which() {
        let list = vec![
            modal("ant-modal-wrap", "用户协议", None, &[]),
            modal("my-popup", "Newsletter", None, &[]),
            modal("my-popup second", "Survey", None, &[]),
        ];
        let title_of = |m: Option<&Value>| m.map(|m| m["title"].as_str().unwrap().to_string());
        assert_eq!(
            title_of(pick_target(&list, &Which::Top, None)),
            Some("Survey".into())
        );
        assert_eq!(
            title_of(pick_target(&list, &Which::First, None)),
            Some("用户协议".into())
        );
        assert_eq!(
            title_of(pick_target(&list, &Which::Class("my-popup".into()), None)),
            Some("Survey".into()),
            "the last match, nearest the top"
        );
        assert_eq!(pick_target(&list, &Which::Class(String::new()), None), None);
        assert_eq!(pick_target(&list, &Which::Class("nope".into()), None), None);
        assert_eq!(
            title_of(pick_target(&list, &Which::First, Some("newsletterbody"))),
            Some("Newsletter".into()),
            "title overrides which; whitespace and case are ignored"
        );
        assert_eq!(pick_target(&list, &Which::Top, Some("absent")), None);
    }

    #[test]
    fn buttons_prefer_request_then_close_then_defaults() {
        let m = modal(
            "x",
            "t",
            Some([10, 10]),
            &[("确定", [1, 1]), ("取消", [2, 2])],
        );
        assert_eq!(choose_button(&m, Some("确定")).unwrap().0, "确定");
        assert_eq!(choose_button(&m, Some("Nope")).unwrap().0, CLOSE_LABEL);
        assert_eq!(choose_button(&m, None).unwrap().1, json!([10, 10]));
        let no_close = modal("x", "t", None, &[("确定", [1, 1]), ("取消", [2, 2])]);
        assert_eq!(
            choose_button(&no_close, None).unwrap().0,
            "取消",
            "confirm-like labels last"
        );
        let unknown = modal("x", "t", None, &[("Subscribe", [1, 1])]);
        assert!(choose_button(&unknown, None).is_none());
        let long = modal("x", "t", None, &[("Iacceptallth", [3, 3])]);
        assert_eq!(
            choose_button(&long, Some("Iacceptalltheterms")).unwrap().1,
            json!([3, 3])
        );
    }

    #[test]
    fn iframe_modals_are_shifted_into_the_main_viewport() {
        let mut m = json!({
            "rect": [10, 20, 300, 200],
            "closePoint": [290, 30],
            "buttonPoints": [{"label": "确定", "point": [100, 180]}],
        });
        shift_modal(&mut m, 35.4, 160.6);
        assert_eq!(m["rect"], json!([45, 181, 300, 200]));
        assert_eq!(m["closePoint"], json!([325, 191]));
        assert_eq!(m["buttonPoints"][0]["point"], json!([135, 341]));
        let mut no_close = json!({"rect": [0, 0, 1, 1], "closePoint": null, "buttonPoints": []});
        shift_modal(&mut no_close, 5.0, 5.0);
        assert_eq!(no_close["closePoint"], Value::Null);
    }

    #[test]
    fn merged_counts_and_top_prefer_the_last_blocking_modal() {
        let scan = Scan {
            modals: vec![
                json!({"confidence": "strict", "blocking": true, "title": "a"}),
                json!({"confidence": "heuristic", "blocking": false, "title": "b"}),
            ],
            frame_errors: vec!["frame[2]: gone".into()],
            scanned_by: json!(["selector"]),
            note: json!("n"),
            placements: Vec::new(),
        };
        let j = scan.to_json();
        assert_eq!(j["count"], 2);
        assert_eq!(j["countStrict"], 1);
        assert_eq!(j["countHeuristic"], 1);
        assert_eq!(j["countBlocking"], 1);
        assert_eq!(j["top"]["title"], "a");
        assert_eq!(j["topIsBlocking"], true);
        assert_eq!(j["frameErrors"][0], "frame[2]: gone");
    }
}
