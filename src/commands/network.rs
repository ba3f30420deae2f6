//! The network group: `route`, `unroute`, `get_requests`, `get_response_body`,
//! `wait_for_response`.
//!
//! Routes belong to the task (`browser/routes.rs`): every tab of it, tabs opened later
//! included, answers the requests whose URL matches a rule's engine glob by the newest such
//! rule (abort, mock or resume).
//!
//! Everything reads the task's recorder (`browser/netlog.rs`), fed by each tab's page session
//! from its attach on: a ring of 200 request records (metadata, postData ≤ 4000 chars) and the
//! last 100 xhr/fetch bodies, copied the moment their request finished so that they survive the
//! page navigating away. Other bodies are read lazily from the current tab and may be gone.
//! Requests of out-of-process iframes are recorded too (through their own sessions on the raw
//! connection); routes do not reach them yet.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::tabs::lenient_url_match;
use crate::browser::netlog::{cut, RequestRecord, BODIES_CAP, BODY_CHARS, REQUESTS_CAP};
use crate::browser::routes::{RouteAction, Rule};
use crate::clock::epoch_ms;
use crate::command::*;
use crate::error::CommandError;
use crate::protocol::{ErrorCode, Params};
use crate::url_glob::UrlGlob;

/// The default body truncation.
const MAX_CHARS: i64 = 20_000;
/// The default look-back window of `wait_for_response`, in seconds.
const LOOK_BACK_S: i64 = 10;
/// The default wait of `wait_for_response`, in seconds.
const WAIT_S: f64 = 30.0;
/// How long a matched xhr/fetch response may take to finish and have its body copied.
const BODY_BOUND: Duration = Duration::from_secs(10);
/// How long after its response an unfinished xhr/fetch waits before its held bytes are read
/// (and between reads).
const UNREAD_GRACE: Duration = Duration::from_millis(200);
/// How long after its response an unfinished xhr/fetch without a body length is answered with
/// the bytes that arrived.
const UNREAD_UNKNOWN: Duration = Duration::from_secs(1);

/// The bytes Chromium held of a response body the page had not read, when they are not known
/// to be the whole body.
struct HeldBody {
    body: String,
    base64: bool,
    /// `Some(false)`: the `Content-Length` says more is due; `None`: no length says.
    whole: Option<bool>,
}

impl HeldBody {
    /// Puts the held bytes into a `wait_for_response` answer whose body was not available.
    fn describe(self, data: &mut Value, max: usize) {
        put_body(data, &self.body, self.base64, max, None);
        data["bodyWhole"] = json!(self.whole);
        data["bodySource"] = json!("held");
        data["bodyNote"] = json!(if self.whole == Some(false) {
            "the response has not finished arriving (its Content-Length says more is due): \
             the body is what had arrived"
        } else {
            "Chromium has not reported the response finished (the page has not read its body, \
             or it is still arriving) and no Content-Length gives its size: the body is what \
             had arrived"
        });
        if let Some(map) = data.as_object_mut() {
            map.remove("bodyError");
            map.remove("bodyHint");
        }
    }
}

/// The network group.
pub const SPECS: &[CommandSpec] = &[
    Group::Network
        .action("route", route)
        .summary("Abort, mock or resume the requests of this task's tabs matching a URL glob")
        .doc(
            "Engine glob over the whole URL ('*' does not cross '/'; use **/example.com/** for a \
              site). Applies to every tab of the task, tabs opened later included; the newest \
              matching rule answers a request; re-routing a pattern updates its rule. mock \
              answers with body, status and contentType without reaching the network. \
              Out-of-process iframes are not routed.",
        )
        .params(&[
            string("urlPattern", "engine-native URL glob ('*' does not cross '/')").req(),
            string("action", "abort | mock | resume").or("\"abort\""),
            string("body", "mock response body ('' when absent)"),
            int("status", "mock status").or("200").range(100.0, 599.0),
            string("contentType", "mock content type").or("\"application/json\""),
        ])
        .example(
            "page:route{ urlPattern = \"**/api/items*\", action = \"mock\", body = '{\"items\":[]}' }:unwrap()",
        )
        .no_capture(),
    Group::Network
        .action("unroute", unroute)
        .summary("Remove a route of this task (all routes when no pattern is given)")
        .doc("Answers how many rules went and the patterns left; requests flow untouched again.")
        .params(&[string(
            "urlPattern",
            "pattern to remove; absent = remove all",
        )])
        .example("page:unroute{ urlPattern = \"**/api/items*\" }:unwrap()")
        .no_capture(),
    Group::Network
        .read("get_requests", get_requests)
        .summary("The task's recorded requests (metadata only, no bodies)")
        .doc(
            "All the task's tabs, from each tab's attach on, in a ring of 200 (oldest first). \
              resourceType is Chromium's (xhr, fetch, document, script, image…; any case); \
              limit keeps the newest N; since is epoch ms. postData is cut at 4000 chars \
              (postDataLength is the full length). inflight counts requests without response; \
              an empty list comes with a note saying why it may be empty.",
        )
        .params(&[
            string("filter", "URL substring"),
            string(
                "resourceType",
                "xhr, fetch, document, script, image... (case-insensitive)",
            ),
            int("limit", "keep only the newest N").range(0.0, f64::INFINITY),
            int("since", "epoch ms; only requests issued at/after it"),
        ])
        .example("local r = page:get_requests{ resourceType = \"fetch\", limit = 5 }:unwrap()"),
    Group::Network
        .read("get_response_body", get_response_body)
        .summary("The body of a recorded response (xhr/fetch bodies survive navigation)")
        .doc(
            "Among the last 100 recorded responses: by requestId (from get_requests), else the \
              filter's matches, the newest unless index says (0 = oldest). xhr/fetch bodies \
              were copied when they arrived (≤ 100000 chars, bodyFromCache); other types are \
              read now from the current tab and may be gone. body is cut at maxChars.",
        )
        .params(&[
            string("filter", "URL substring; absent = any"),
            int("index", "position among matches (default last = newest)"),
            int("maxChars", "truncation").or("20000"),
            string("requestId", "exact request id from get_requests"),
        ])
        .example("local b = page:get_response_body{ filter = \"/api/\" }:unwrap().body"),
    Group::Network
        .read("wait_for_response", wait_for_response)
        .summary("The newest matching response of the look-back window, else the next one")
        .doc(
            "Lenient pattern (substring, or glob where * crosses /). First the newest matching \
              response received within lookBackSeconds (fromLookBack, ageMs its age), so \
              'click; wait_for_response' still catches a fast one; else waits for a new one \
              (ageMs 0). xhr/fetch bodies come from the capture cache; a fetch whose body the \
              page never reads (Chromium never reports it finished) is answered with the bytes \
              the browser holds once its Content-Length says they are whole (after 1 s without \
              a length: what arrived, bodySource 'held', bodyWhole, bodyNote). Times out with \
              ACTION_TIMEOUT.",
        )
        .params(&[
            string(
                "urlPattern",
                "lenient pattern: substring, or glob where '*'/'**' match anything incl '/'",
            )
            .req(),
            number(
                "timeoutSeconds",
                "wait limit in seconds (fractions allowed); absent = 30 s",
            )
            .or("30")
            .range(0.0, 899.0),
            int("maxChars", "body truncation (<=0 -> 20000)").or("20000"),
            int(
                "lookBackSeconds",
                "first return the newest matching response received within this many seconds; \
                 0 = only wait for a new one",
            )
            .or("10")
            .range(0.0, f64::INFINITY),
        ])
        .example(
            "page:click{ selector = \"#load\" }\nlocal r = page:wait_for_response{ urlPattern = \"**/api/items*\" }:unwrap()",
        )
        .long(),
];

fn get_requests(p: &mut Params) -> Prepared<TaskCx> {
    let filter = p.str_opt("filter")?;
    let kind = p.str_opt("resourceType")?.map(|k| k.to_ascii_lowercase());
    let limit = p.int_opt("limit")?;
    let since = p.int_opt("since")?;
    run(move |cx: TaskCx| async move {
        let now = cx.task.events.log.requests();
        let total = now.requests.len();
        let inflight = now
            .requests
            .iter()
            .filter(|r| r.status.is_none() && r.failure.is_none())
            .count();
        let mut matched: Vec<&RequestRecord> = now
            .requests
            .iter()
            .filter(|r| filter.as_deref().is_none_or(|f| r.url.contains(f)))
            .filter(|r| kind.as_deref().is_none_or(|k| r.resource_type == k))
            .filter(|r| since.is_none_or(|s| r.requested_at as i64 >= s))
            .collect();
        if let Some(n) = limit {
            let n = usize::try_from(n).unwrap_or(0);
            let skip = matched.len().saturating_sub(n);
            matched.drain(..skip);
        }
        let mut data = json!({
            "requests": matched.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
            "count": matched.len(),
            "total": total,
            "dropped": now.dropped,
            "cap": REQUESTS_CAP,
            "recordedSince": now.recorded_since,
            "inflight": inflight,
            "filter": filter,
            "resourceType": kind,
        });
        if matched.is_empty() {
            data["note"] = json!(if total == 0 {
                "no requests recorded yet: recording starts when the task's tab is attached; \
                 earlier requests and other tasks' tabs are absent"
            } else {
                "no recorded request matches; recording starts when the task's tab is attached \
                 (earlier requests and other tasks' tabs are absent)"
            });
        }
        Ok(data)
    })
}

/// How long a read waits for a body whose copy is under way.
const BODY_COPY_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// `maxChars`, with `<= 0` meaning the default.
fn max_chars(p: &mut Params) -> Result<usize, CommandError> {
    let n = p.int_opt("maxChars")?.unwrap_or(MAX_CHARS);
    Ok(usize::try_from(if n <= 0 { MAX_CHARS } else { n }).unwrap_or(usize::MAX))
}

/// The records that have a response, the newest [`BODIES_CAP`] of them, oldest first.
fn recent_responses(all: &[RequestRecord]) -> Vec<&RequestRecord> {
    let with: Vec<&RequestRecord> = all.iter().filter(|r| r.responded_at.is_some()).collect();
    let skip = with.len().saturating_sub(BODIES_CAP);
    with.into_iter().skip(skip).collect()
}

/// The receipt of a response: its record and its body (from the capture cache, else read now
/// from the current tab), cut to `max`.
/// Puts a response body into an answer: `body` cut to `max` characters, its length, whether
/// it was cut (here, or when it was cached: `cached_len` is the length the cache saw), and
/// `base64Encoded` for a binary one.
fn put_body(data: &mut Value, body: &str, base64: bool, max: usize, cached_len: Option<usize>) {
    let cache_cut = cached_len.is_some_and(|n| n > BODY_CHARS);
    let (mut text, len, cut_here) = cut(body, max);
    if cut_here {
        text.push_str("…[truncated]");
    }
    data["body"] = json!(text);
    data["bodyLength"] = json!(if cache_cut { body.chars().count() } else { len });
    data["truncated"] = json!(cut_here || cache_cut);
    data["bodyAvailable"] = json!(true);
    if cache_cut {
        data["bodyCachedChars"] = json!(BODY_CHARS);
    }
    if base64 {
        data["base64Encoded"] = json!(true);
    }
}

async fn response_json(cx: &TaskCx, r: &RequestRecord, max: usize) -> Value {
    let log = &cx.task.events.log;
    let (mut cached, mut pending) = log.body(&r.request_id);
    // A body being copied right now (a read just after its fetch) is waited for, a bounded
    // time, rather than answered as missing.
    let until = std::time::Instant::now() + BODY_COPY_WAIT;
    while pending && cached.is_none() && std::time::Instant::now() < until {
        tokio::time::sleep(std::time::Duration::from_millis(15)).await;
        (cached, pending) = log.body(&r.request_id);
    }
    let now = epoch_ms();
    let mut data = json!({
        "url": r.url,
        "status": r.status,
        "requestId": r.request_id,
        "request": r.to_json(),
        "correlationMissed": false,
        "correlatedBy": "requestId",
        "respondedAt": r.responded_at,
        "ageMs": r.responded_at.map(|t| now.saturating_sub(t)),
        "bodyFromCache": cached.is_some(),
        "bodyCapturePending": pending,
    });
    let (body, base64, error, cached_len) = match &cached {
        Some(b) => {
            data["bodyCapturedAt"] = json!(b.captured_at);
            (b.body.clone(), b.base64, b.error.clone(), Some(b.length))
        }
        None if pending => (
            None,
            false,
            Some("the body is still being copied".to_string()),
            None,
        ),
        None => match cx.tab() {
            Ok(tab) => match tab.response_body(&r.request_id).await {
                Ok((body, base64)) => (Some(body), base64, None, None),
                Err(e) => (None, false, Some(e.msg), None),
            },
            Err(e) => (None, false, Some(e.msg), None),
        },
    };
    match body {
        Some(body) => put_body(&mut data, &body, base64, max, cached_len),
        None => {
            data["bodyAvailable"] = json!(false);
            data["bodyError"] = json!(error.unwrap_or_else(|| "no body".into()));
            data["bodyHint"] = json!(
                "only xhr/fetch bodies are copied when they arrive; other bodies can be read only \
                 while their document is still loaded (read it before navigating away)"
            );
        }
    }
    data
}

fn get_response_body(p: &mut Params) -> Prepared<TaskCx> {
    let filter = p.str_opt("filter")?;
    let index = p.int_opt("index")?;
    let max = max_chars(p)?;
    let id = p.str_opt("requestId")?;
    run(move |cx: TaskCx| async move {
        let now = cx.task.events.log.requests();
        let recent = recent_responses(&now.requests);
        let record = if let Some(id) = &id {
            match recent.iter().find(|r| &r.request_id == id) {
                Some(r) => (*r).clone(),
                None => {
                    let why = match now.requests.iter().find(|r| &r.request_id == id) {
                        None => "it is not in the request log (get_requests lists the ids)",
                        Some(r) if r.responded_at.is_none() => "the request has no response yet",
                        Some(_) => "its response was pushed out of the last 100 responses",
                    };
                    return Err(CommandError::failed(format!(
                        "no response for requestId {id}: {why}"
                    ))
                    .with_details(json!({"requestId": id})));
                }
            }
        } else {
            let matches: Vec<&&RequestRecord> = recent
                .iter()
                .filter(|r| filter.as_deref().is_none_or(|f| r.url.contains(f)))
                .collect();
            if matches.is_empty() {
                return Err(CommandError::failed(format!(
                    "no recorded response matches{} among the last {} responses ({} recorded)",
                    filter
                        .as_deref()
                        .map(|f| format!(" filter '{f}'"))
                        .unwrap_or_default(),
                    BODIES_CAP,
                    recent.len()
                ))
                .with_details(json!({"filter": filter, "matchCount": 0})));
            }
            let at = match index {
                None => matches.len() - 1,
                Some(i) => match usize::try_from(i).ok().filter(|i| *i < matches.len()) {
                    Some(i) => i,
                    None => {
                        return Err(CommandError::failed(format!(
                            "index {i} is out of range: {} responses match",
                            matches.len()
                        ))
                        .with_details(json!({"index": i, "matchCount": matches.len()})))
                    }
                },
            };
            (*matches[at]).clone()
        };
        Ok(response_json(&cx, &record, max).await)
    })
}

fn wait_for_response(p: &mut Params) -> Prepared<TaskCx> {
    let pattern = p.str_req("urlPattern")?;
    let timeout = Duration::from_secs_f64(p.num_opt("timeoutSeconds")?.unwrap_or(WAIT_S).max(0.0));
    let max = max_chars(p)?;
    let look_back = p.int_opt("lookBackSeconds")?.unwrap_or(LOOK_BACK_S).max(0) as u64;
    run(move |cx: TaskCx| async move {
        let log = cx.task.events.log.clone();
        let deadline = tokio::time::Instant::now() + timeout;
        // Subscribed before the look back: a response after it wakes the wait.
        let mut changes = log.changes();
        let start = epoch_ms();
        let seen: HashSet<String> = log
            .requests()
            .requests
            .iter()
            .filter(|r| r.responded_at.is_some())
            .map(|r| r.request_id.clone())
            .collect();
        let matching =
            |r: &&RequestRecord| r.responded_at.is_some() && lenient_url_match(&pattern, &r.url);
        let mut from_look_back = false;
        let mut found: Option<RequestRecord> = None;
        if look_back > 0 {
            let window = start.saturating_sub(look_back.saturating_mul(1000));
            found = log
                .requests()
                .requests
                .iter()
                .rev()
                .filter(matching)
                .find(|r| r.responded_at.is_some_and(|t| t >= window))
                .cloned();
            from_look_back = found.is_some();
        }
        while found.is_none() {
            found = log
                .requests()
                .requests
                .iter()
                .filter(matching)
                .find(|r| !seen.contains(&r.request_id))
                .cloned();
            if found.is_some() {
                break;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    return Err(CommandError::new(
                        ErrorCode::ActionTimeout,
                        format!(
                            "wait_for_response timed out: no response matching '{pattern}' \
                             within {:.1} s (look-back {look_back} s)",
                            timeout.as_secs_f64()
                        ),
                    )
                    .with_details(json!({
                        "urlPattern": pattern,
                        "timeoutSeconds": timeout.as_secs_f64(),
                        "lookBackSeconds": look_back,
                        "waitedMs": epoch_ms().saturating_sub(start),
                    })))
                }
            }
        }
        let Some(mut record) = found else {
            return Err(CommandError::failed("no response"));
        };
        // An xhr/fetch body is copied when its request finishes: give it that long. Chromium
        // reports a fetch finished only once the page read its body, so a body the page leaves
        // unread is taken from what the browser holds, once it is known to be whole.
        let mut held: Option<HeldBody> = None;
        if matches!(record.resource_type.as_str(), "xhr" | "fetch") {
            // Within the caller's timeout too: a late response is answered without its body.
            let body_deadline = deadline.min(tokio::time::Instant::now() + BODY_BOUND);
            let responded = tokio::time::Instant::now();
            loop {
                let (cached, pending) = log.body(&record.request_id);
                let current = log
                    .requests()
                    .requests
                    .into_iter()
                    .rev()
                    .find(|r| r.request_id == record.request_id);
                let done = current
                    .as_ref()
                    .is_none_or(|r| r.failure.is_some() || (r.finished_at.is_some() && !pending));
                if let Some(c) = current {
                    record = c;
                }
                if cached.is_some() || done {
                    break;
                }
                let waited = responded.elapsed();
                if record.finished_at.is_none() && waited >= UNREAD_GRACE {
                    if let Ok(tab) = cx.tab() {
                        if let Ok((body, base64, bytes)) =
                            tab.buffered_body(&record.request_id).await
                        {
                            let whole = record.body_length.map(|n| n == bytes as u64);
                            if whole == Some(true) {
                                log.keep_body(&record.request_id, body, base64);
                                continue;
                            }
                            held = Some(HeldBody {
                                body,
                                base64,
                                whole,
                            });
                            // Without a length, what arrived in a second is the answer.
                            if whole.is_none() && waited >= UNREAD_UNKNOWN {
                                break;
                            }
                        }
                    }
                }
                let tick = tokio::time::Instant::now() + UNREAD_GRACE;
                if tokio::time::timeout_at(body_deadline.min(tick), changes.changed())
                    .await
                    .is_err()
                    && tokio::time::Instant::now() >= body_deadline
                {
                    break;
                }
            }
        }
        let mut data = response_json(&cx, &record, max).await;
        if let Some(h) = held.filter(|_| data["bodyAvailable"] == false) {
            h.describe(&mut data, max);
        }
        data["fromLookBack"] = json!(from_look_back);
        if !from_look_back {
            data["ageMs"] = json!(0);
        }
        data["urlPattern"] = json!(pattern);
        Ok(data)
    })
}

fn route(p: &mut Params) -> Prepared<TaskCx> {
    let pattern = p.str_req("urlPattern")?;
    let glob = UrlGlob::parse(&pattern).map_err(|e| {
        CommandError::invalid(
            "urlPattern",
            format!("param `urlPattern`: `{pattern}` is not an engine glob: {e}"),
        )
    })?;
    let action_name = p.str_opt("action")?.unwrap_or_else(|| "abort".into());
    let body = p.str_keep_empty("body")?.unwrap_or_default();
    let status = p.int_opt("status")?.unwrap_or(200);
    let content_type = p
        .str_opt("contentType")?
        .unwrap_or_else(|| "application/json".into());
    let action = match action_name.as_str() {
        "abort" => RouteAction::Abort,
        "resume" => RouteAction::Resume,
        "mock" => RouteAction::Mock {
            body,
            status: u16::try_from(status).unwrap_or(200),
            content_type,
        },
        other => {
            return Err(CommandError::invalid(
                "action",
                format!("param `action`: `{other}` is not one of abort, mock, resume"),
            ))
        }
    };
    run(move |cx: TaskCx| async move {
        let glob = Arc::new(glob);
        let rule = Rule {
            pattern: pattern.clone(),
            matcher: Arc::new(move |url: &str| glob.matches(url)),
            action: action.clone(),
            resource_type: None,
        };
        let (updated, applied) = cx.task.change_routes(|r| r.set(rule)).await?;
        let routes = cx.task.events.routes.clone();
        let mut data = json!({
            "urlPattern": pattern,
            "action": action_name,
            "updated": updated,
            "tabs": applied,
            "routes": routes.patterns(),
        });
        if let RouteAction::Mock {
            status,
            content_type,
            body,
        } = &action
        {
            data["status"] = json!(status);
            data["contentType"] = json!(content_type);
            data["bodyLength"] = json!(body.chars().count());
        }
        Ok(data)
    })
}

fn unroute(p: &mut Params) -> Prepared<TaskCx> {
    let pattern = p.str_opt("urlPattern")?;
    run(move |cx: TaskCx| async move {
        let routes = cx.task.events.routes.clone();
        let hits = pattern.as_deref().map(|p| routes.hits(p));
        let (removed, _) = cx
            .task
            .change_routes(|r| r.remove(pattern.as_deref()))
            .await?;
        Ok(json!({
            "urlPattern": pattern,
            "removed": removed,
            "hits": hits,
            "routes": routes.patterns(),
        }))
    })
}
