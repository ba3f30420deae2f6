//! Waiting: `wait` (a fixed pause) and the conditional waits `wait_for_element`,
//! `wait_for_text`, `wait_for_url`, `wait_for_load`, `wait_for_function`, `wait_for_idle`,
//! `wait_for_stable` and `wait_for_count`.
//!
//! A conditional wait looks at the page at its catalogue's interval (and, for loading and URLs,
//! again at each lifecycle or navigation event of the main frame) until its condition holds or its
//! deadline passes: `timeoutSeconds` (30 s), and never past the command's own bound. Every look
//! runs under that deadline too, so a page whose main thread is busy cannot hold a wait past it.
//! A look that fails while the page navigates is only a look that saw nothing; a bad argument
//! (an invalid selector, an expression that does not compile) fails at once.
//!
//! A wait that times out fails with `ACTION_TIMEOUT` and keeps in `data` what it last observed
//! (`waitedMs` and the command's own counts, PROTOCOL.md §18), plus `pageUnresponsive:true` when
//! the page did not answer its last look.

use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};

use super::extract::{run_script, script_form, Ran, ScriptForm};
use super::page_state::find_frame;
use crate::browser::netwatch::InflightNow;
use crate::browser::tab::{exception_line, FrameRef, ScriptGroup};
use crate::browser::Tab;
use crate::command::*;
use crate::error::CommandError;
use crate::js;
use crate::protocol::{ErrorCode, Params};
use crate::url_glob::UrlGlob;

/// The longest sleep `wait` takes, and the longest `timeoutSeconds`: under the long-command
/// bound (PROTOCOL.md §4.2, 900 s), so a wait that is accepted can answer instead of timing out
/// with its outcome unknown.
const MAX_WAIT_S: f64 = 899.0;

/// `timeoutSeconds` when absent.
const DEFAULT_TIMEOUT_S: f64 = 30.0;

/// What a wait leaves of its command's bound, so its own timeout answers first.
const BOUND_MARGIN: Duration = Duration::from_millis(500);

/// How long the one look of `timeoutSeconds = 0` may take.
const ONE_LOOK: Duration = Duration::from_secs(1);

/// Poll intervals of the catalogue: element, text, URL, load and function waits; `wait_for_idle`
/// (100 ms), `wait_for_stable` (150 ms), `wait_for_count` (120 ms).
const POLL: Duration = Duration::from_millis(100);
const STABLE_POLL: Duration = Duration::from_millis(150);
const COUNT_POLL: Duration = Duration::from_millis(120);

/// The quiet period of `networkidle` (Playwright's: no request for 500 ms).
const NETWORK_IDLE: Duration = Duration::from_millis(500);

/// The longest in-page budget of one `wait_for_function` evaluation.
const MAX_EVAL_MS: u64 = 29_000;

const TIMEOUT: ParamSpec = number(
    "timeoutSeconds",
    "wait limit in seconds, fractions allowed, 0..=899 (0 = look once); absent = 30 s",
)
.or("30")
.range(0.0, MAX_WAIT_S);

/// The wait group.
pub const SPECS: &[CommandSpec] = &[
    Group::Wait
        .read("wait", wait)
        .summary("Pause for a whole number of seconds (prefer the wait_for_* conditions)")
        .doc("Sleeps without blocking anything else; `seconds` must be a positive integer.")
        .params(&[int(
            "seconds",
            "fixed sleep in whole seconds, 1..=899 (less than the 15-min long-command bound)",
        )
        .req()
        .range(1.0, MAX_WAIT_S)])
        .example("page:wait{ seconds = 1 }")
        .capture()
        .long(),
    Group::Wait
        .read("wait_for_element", wait_for_element)
        .summary("Wait until an element matching a CSS selector is visible")
        .doc("Polls `querySelectorAll(selector)` in the frame every 100 ms until a match is \
              visible (a non-empty box and visibility:visible). Answers `count`, `visibleCount` \
              and the `element`. A timeout is ACTION_TIMEOUT with the last `count` and \
              `visibleCount` (matches that stayed hidden are counted); an invalid selector or an \
              unknown `frame` fails at once with INVALID_ARGUMENT.")
        .params(&[
            string("selector", "CSS selector to wait for (visible state)").req(),
            TIMEOUT,
            string("frame", "frame to search in: ordinal (0 = main, depth-first as list_frames) or a substring of the frame URL or name; unknown -> failure listing the frames"),
        ])
        .example("page:wait_for_element{ selector = \"#results li\", timeoutSeconds = 10 }:unwrap()")
        .capture()
        .long(),
    Group::Wait
        .read("wait_for_text", wait_for_text)
        .summary("Wait until an element showing a text is visible")
        .doc("Polls the main frame every 100 ms for the innermost elements whose text contains \
              `text` (whitespace-collapsed, case-insensitive, as a text locator) until one of \
              them is visible. Answers `matches`, `visibleMatches` and the `element`. A timeout \
              is ACTION_TIMEOUT with the last `matches` (hidden ones) and `visibleMatches:0`.")
        .params(&[
            string("text", "text to wait for (a visible element containing it)").req(),
            TIMEOUT,
        ])
        .example("page:wait_for_text{ text = \"Order placed\" }:unwrap()")
        .capture()
        .long(),
    Group::Wait
        .read("wait_for_url", wait_for_url)
        .summary("Wait until the tab's URL matches an engine glob")
        .doc("Strict engine glob over the whole committed URL (not the lenient matcher), \
              playwright-core's own: `*` matches a run without `/`, `**` any run (`/` \
              included), `**/` any path prefix, `{a,b}` alternatives, `\\\\` escapes; `?` and \
              `.` are literal. A pattern that does not start with `*` is read as a URL first \
              (`http://h` is `http://h/`). Re-checked at every navigation event and every \
              100 ms; the URL is read from the browser, so a busy page does not hold it. A \
              timeout is ACTION_TIMEOUT with the last `url` (and a `hint` when it merely \
              contains the pattern).")
        .params(&[
            string("url", "engine URL glob (e.g. **/path); strict: * does not cross /").req(),
            TIMEOUT,
        ])
        .example("page:wait_for_url{ url = \"**/checkout/**\" }:unwrap()")
        .capture()
        .long(),
    Group::Wait
        .read("wait_for_load", wait_for_load)
        .summary("Wait for the page's load state: load, domcontentloaded or networkidle")
        .doc("Already reached counts (as Playwright's waitForLoadState). `domcontentloaded` = \
              readyState interactive or complete; `load` = complete; `networkidle` = complete \
              and no request in flight for 500 ms. Re-checked at every lifecycle event of the \
              main frame and every 100 ms. Unknown states wait for `load` (`stateNote`). A \
              timeout is ACTION_TIMEOUT with the last `readyState`, `inflight` and \
              `inflightRequests`.")
        .params(&[
            string("state", "load | domcontentloaded | networkidle (case-insensitive; anything else = load)").or("\"load\""),
            TIMEOUT,
        ])
        .example("page:wait_for_load{ state = \"networkidle\" }:unwrap()")
        .capture()
        .long(),
    Group::Wait
        .read("wait_for_function", wait_for_function)
        .summary("Wait until a JavaScript expression or function is truthy")
        .doc("Evaluates `expression` in the main frame's page world every 100 ms (a function is \
              called and awaited, as execute_js does) until its JSON value is truthy; answers it \
              as `result`. An expression that throws is looked at again (the error is kept as \
              `lastError`); one that does not compile fails at once with INVALID_ARGUMENT. A \
              timeout is ACTION_TIMEOUT with `lastResult`, `lastError` and `polls`.")
        .params(&[
            string("expression", "JS expression/function polled until truthy").req(),
            TIMEOUT,
        ])
        .example("page:wait_for_function{ expression = \"() => window.app && window.app.ready\" }:unwrap()")
        .capture()
        .long(),
    Group::Wait
        .read("wait_for_idle", wait_for_idle)
        .summary("Wait until no DOM mutation and no request in flight for quietMs")
        .doc("Every 100 ms: the main document's mutation counter (overlay excluded) and the \
              tab's requests in flight; idle once neither moved for `quietMs` (500) and the \
              optional `selector` matches and body text contains `text`. Pages that poll or \
              animate may never go idle (use wait_for_stable). A timeout is ACTION_TIMEOUT with \
              `idle:false`, `mutations`, `mutationsDuringWait`, `lastMutation`, `inflight`, \
              `inflightRequests` (the oldest pending ones) and `selectorMatched`/`textMatched`.")
        .params(&[
            int("quietMs", "required continuous quiet period in ms (<0 -> 500)").or("500"),
            TIMEOUT,
            string("selector", "extra condition: selector must match at least once"),
            string("text", "extra condition: body innerText must contain it"),
        ])
        .example("page:wait_for_idle{ quietMs = 500 }:unwrap()")
        .capture()
        .long(),
    Group::Wait
        .read("wait_for_stable", wait_for_stable)
        .summary("Wait until the content stops changing for quietMs; answer the settled text")
        .doc("Every 150 ms a fingerprint of the container (`selector`, else body): its innerText, \
              every form value and checked state and every table row text. Stable once it did \
              not change for `quietMs` (800); answers `text` (collapsed, at most 2000 chars), \
              `changes` (the first read counts as 1), `length`, `fingerprint`. A container that \
              is not there fails at once (ELEMENT_NOT_FOUND, 'cannot read content \
              fingerprint'). A timeout is ACTION_TIMEOUT with `stable:false`, `changes`, \
              `msSinceLastChange` (as of the last look), `msSinceLastLook`, `length`, \
              `fingerprint` and the latest `text`.")
        .params(&[
            string("selector", "container to watch; absent = body"),
            int("quietMs", "required unchanged period in ms (<0 -> 800)").or("800"),
            TIMEOUT,
        ])
        .example("local r = page:wait_for_stable{ selector = \"#results\" }:unwrap()\nprint(r.text)")
        .capture()
        .long(),
    Group::Wait
        .read("wait_for_count", wait_for_count)
        .summary("Wait until the number of selector matches meets min/max/equals")
        .doc("Polls `querySelectorAll(selector)` in the main frame every 120 ms until every given \
              bound holds (`max = 0`: overlays gone; `min = 1`: rows present). At least one of \
              `min`, `max`, `equals` is required; bounds that can never hold together are \
              INVALID_ARGUMENT. A timeout is ACTION_TIMEOUT with `matched:false` and the last \
              `count`.")
        .params(&[
            string("selector", "CSS selector to count (main frame)").req(),
            int("min", "count >= min"),
            int("max", "count <= max"),
            int("equals", "count == equals"),
            TIMEOUT,
        ])
        .example("page:wait_for_count{ selector = \".spinner\", max = 0 }:unwrap()")
        .long(),
];

fn wait(p: &mut Params) -> Prepared<TaskCx> {
    // At least 1: the executor checked the range.
    let seconds = p.int_req("seconds")?;
    run(move |_cx: TaskCx| async move {
        tokio::time::sleep(Duration::from_secs(seconds.unsigned_abs())).await;
        Ok(json!({"waitedMs": seconds * 1000}))
    })
}

/// `timeoutSeconds` (checked 0..=899 by the executor), 30 s when absent.
fn timeout_param(p: &mut Params) -> Result<Duration, CommandError> {
    let s = p.num_opt("timeoutSeconds")?.unwrap_or(DEFAULT_TIMEOUT_S);
    Ok(Duration::from_secs_f64(s.clamp(0.0, MAX_WAIT_S)))
}

/// A wait's clock and poll: its deadline, its looks and what went wrong with them.
struct Poller {
    t0: Instant,
    /// When the wait gives up.
    deadline: tokio::time::Instant,
    /// The command's bound (less its margin): no look runs past it.
    bound: tokio::time::Instant,
    timeout: Duration,
    interval: tokio::time::Interval,
    looks: u32,
    /// The last look got no answer within [`ONE_LOOK`] or more.
    unanswered: bool,
    /// The last look was cut short by the command's bound before [`ONE_LOOK`].
    cut: bool,
    /// The last look that failed, and why.
    last_error: Option<String>,
}

impl Poller {
    fn new(cx: &TaskCx, timeout: Duration, period: Duration) -> Poller {
        let t0 = Instant::now();
        let bound = cx.deadline.checked_sub(BOUND_MARGIN).unwrap_or(t0);
        let deadline = (t0 + timeout).min(bound).max(t0);
        let mut interval = tokio::time::interval(period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Poller {
            t0,
            deadline: deadline.into(),
            bound: bound.max(t0).into(),
            timeout,
            interval,
            looks: 0,
            unanswered: false,
            cut: false,
            last_error: None,
        }
    }

    fn waited_ms(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64
    }

    /// Waits for the next look: at once for the first, then the next tick (or an event of
    /// `wake`); false once the deadline has passed.
    async fn next(&mut self, wake: Option<&mut BoxStream<'static, ()>>) -> bool {
        if self.looks == 0 {
            // The first tick of an interval completes at once.
            self.interval.tick().await;
            return true;
        }
        if self.unanswered || self.cut || tokio::time::Instant::now() >= self.deadline {
            return false;
        }
        let woken = async {
            match wake {
                Some(stream) => {
                    if stream.next().await.is_none() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.interval.tick() => true,
            () = woken => true,
            () = tokio::time::sleep_until(self.deadline) => false,
        }
    }

    /// One look: `Ok(Some)` what it saw, `Ok(None)` nothing this time (the page navigated, or
    /// did not answer), `Err` a failure that ends the wait (a bad argument, the browser or
    /// task gone). A look may run until the wait's deadline and always gets [`ONE_LOOK`]
    /// (within the command's bound): one that starts as the deadline passes (an interval tick
    /// and the deadline fall together when the timeout is a multiple of the poll) still gets
    /// its answer, and only a look that went unanswered for all of [`ONE_LOOK`] says the page
    /// is busy.
    async fn look<T>(
        &mut self,
        probe: impl std::future::Future<Output = Result<T, CommandError>>,
    ) -> Result<Option<T>, CommandError> {
        self.looks += 1;
        let started = tokio::time::Instant::now();
        match tokio::time::timeout_at(self.look_until(), probe).await {
            Err(_) => {
                // Cut short by the command's bound, it proves nothing about the page.
                self.unanswered = started.elapsed() >= ONE_LOOK;
                self.cut = !self.unanswered;
                Ok(None)
            }
            Ok(Ok(v)) => {
                self.last_error = None;
                Ok(Some(v))
            }
            Ok(Err(e)) if ends_the_wait(e.code) => Err(e),
            Ok(Err(e)) => {
                self.last_error = Some(e.msg);
                Ok(None)
            }
        }
    }

    /// Until when a look that starts now may run (see [`Poller::look`]).
    fn look_until(&self) -> tokio::time::Instant {
        let now = tokio::time::Instant::now();
        self.deadline.max(now + ONE_LOOK).min(self.bound)
    }

    /// Whether the wait had its one look (`timeoutSeconds = 0`).
    fn looked_once(&self) -> bool {
        self.timeout.is_zero() && self.looks > 0
    }

    /// The `ACTION_TIMEOUT` failure, with what was last observed (`data`) and `seen`, a short
    /// account of it for the message.
    fn timed_out(&self, seen: &str, mut data: Value) -> CommandError {
        data["waitedMs"] = json!(self.waited_ms());
        data["timeoutSeconds"] = json!(self.timeout.as_secs_f64());
        let mut msg = format!("timed out: condition never satisfied within the wait ({seen})");
        if self.unanswered {
            data["pageUnresponsive"] = json!(true);
            msg.push_str(&format!(
                "; the page did not answer its last look within {} ms (its main thread is busy)",
                ONE_LOOK.as_millis()
            ));
        } else if let Some(e) = &self.last_error {
            data["lastProbeError"] = json!(e);
        }
        CommandError::new(ErrorCode::ActionTimeout, msg).with_details(data)
    }
}

/// Failures after which looking again cannot help.
fn ends_the_wait(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::InvalidArgument
            | ErrorCode::BrowserGone
            | ErrorCode::TaskNotFound
            | ErrorCode::ElementNotFound
    )
}

/// A probe's `INVALID_ARGUMENT` names its param.
fn naming(param: &'static str) -> impl Fn(CommandError) -> CommandError {
    move |mut e| {
        if e.code == ErrorCode::InvalidArgument && e.param.is_none() {
            e.param = Some(param.to_string());
        }
        e
    }
}

/// The reply of `wait_match.js`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Match {
    url: String,
    count: Option<u64>,
    visible_count: Option<u64>,
    element: Option<Value>,
    text_matches: Option<u64>,
    text_visible: Option<u64>,
    text_element: Option<Value>,
    body_has_text: Option<bool>,
}

async fn matches(
    tab: &Tab,
    frame: &FrameRef,
    selector: Option<&str>,
    text: Option<&str>,
    body_text: Option<&str>,
) -> Result<Match, CommandError> {
    tab.call_probe::<Match>(
        frame,
        js::WAIT_MATCH_JS,
        json!({"selector": selector, "text": text, "bodyText": body_text}),
    )
    .await
    .map_err(naming(if selector.is_some() {
        "selector"
    } else {
        "text"
    }))
}

fn plural(n: u64, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

fn wait_for_element(p: &mut Params) -> Prepared<TaskCx> {
    let selector = p.str_req("selector")?;
    let timeout = timeout_param(p)?;
    let frame_spec = p.str_opt("frame")?;
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        let mut poll = Poller::new(&cx, timeout, POLL);
        // An unknown frame is a bad argument; a frame that reloads meanwhile is looked up again.
        let mut frame = match frame_spec {
            Some(_) => None,
            None => Some(tab.main_frame_local()),
        };
        let mut first = true;
        let mut last = Match::default();
        while poll.next(None).await {
            let here = match (&frame, &frame_spec) {
                (Some(f), _) => f.clone(),
                (None, spec) => match poll
                    .look(find_frame(&tab, spec.as_deref().unwrap_or("0")))
                    .await
                {
                    Ok(Some(f)) => f,
                    Ok(None) => continue,
                    Err(e) if first => return Err(e),
                    Err(_) => continue,
                },
            };
            first = false;
            let seen = poll
                .look(matches(&tab, &here, Some(&selector), None, None))
                .await?;
            let Some(m) = seen else {
                if frame_spec.is_some() {
                    frame = None;
                }
                continue;
            };
            frame = Some(here.clone());
            if m.visible_count.unwrap_or(0) > 0 {
                let mut data = json!({
                    "selector": selector,
                    "count": m.count,
                    "visibleCount": m.visible_count,
                    "element": m.element,
                    "waitedMs": poll.waited_ms(),
                    "url": m.url,
                });
                if frame_spec.is_some() {
                    data["frame"] = json!(here.ordinal);
                    data["frameUrl"] = json!(here.url);
                }
                return Ok(data);
            }
            last = m;
            if poll.looked_once() {
                break;
            }
        }
        let count = last.count.unwrap_or(0);
        let seen = if count == 0 {
            format!("`{selector}` matched nothing")
        } else {
            format!(
                "`{selector}` matched {}, none visible",
                plural(count, "element")
            )
        };
        Err(poll.timed_out(
            &seen,
            json!({
                "selector": selector,
                "count": count,
                "visibleCount": last.visible_count.unwrap_or(0),
                "element": last.element,
                "url": last.url,
            }),
        ))
    })
}

fn wait_for_text(p: &mut Params) -> Prepared<TaskCx> {
    let text = p.str_req("text")?;
    let timeout = timeout_param(p)?;
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        let main = tab.main_frame_local();
        let mut poll = Poller::new(&cx, timeout, POLL);
        let mut last = Match::default();
        while poll.next(None).await {
            let Some(m) = poll
                .look(matches(&tab, &main, None, Some(&text), None))
                .await?
            else {
                continue;
            };
            if m.text_visible.unwrap_or(0) > 0 {
                return Ok(json!({
                    "text": text,
                    "matches": m.text_matches,
                    "visibleMatches": m.text_visible,
                    "element": m.text_element,
                    "waitedMs": poll.waited_ms(),
                    "url": m.url,
                }));
            }
            last = m;
            if poll.looked_once() {
                break;
            }
        }
        let found = last.text_matches.unwrap_or(0);
        let seen = if found == 0 {
            "the text is not in the page".to_string()
        } else {
            format!("{} hold the text, none visible", plural(found, "element"))
        };
        Err(poll.timed_out(
            &seen,
            json!({"text": text, "matches": found, "visibleMatches": 0, "url": last.url}),
        ))
    })
}

/// Whether `url` holds the literal parts of `pattern` in order (`*` as any characters, `/`
/// included, anything after): close to the lenient matcher, for the hint of a timeout.
fn loosely_matches(pattern: &str, url: &str) -> bool {
    let mut rest = url;
    for part in pattern.split('*').filter(|p| !p.is_empty()) {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// The committed URL of the tab's current history entry (answered by the browser process).
async fn committed_url(tab: &Tab) -> Result<String, CommandError> {
    let (current, entries) = tab.history().await?;
    usize::try_from(current)
        .ok()
        .and_then(|i| entries.get(i))
        .map(|e| e.url.clone())
        .ok_or_else(|| CommandError::new(ErrorCode::PageNavigating, "no history entry yet"))
}

fn wait_for_url(p: &mut Params) -> Prepared<TaskCx> {
    let pattern = p.str_req("url")?;
    let timeout = timeout_param(p)?;
    let glob = UrlGlob::parse(&pattern)
        .map_err(|e| CommandError::invalid("url", format!("param `url`: `{pattern}`: {e}")))?;
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        let mut poll = Poller::new(&cx, timeout, POLL);
        let mut wake = tab.load_progress().await?;
        let mut last = String::new();
        while poll.next(Some(&mut wake)).await {
            let Some(url) = poll.look(committed_url(&tab)).await? else {
                continue;
            };
            if glob.matches(&url) {
                return Ok(json!({"url": url, "pattern": pattern, "waitedMs": poll.waited_ms()}));
            }
            last = url;
            if poll.looked_once() {
                break;
            }
        }
        let mut data = json!({"url": last, "pattern": pattern});
        if !last.is_empty() && loosely_matches(&pattern, &last) {
            data["hint"] = json!(
                "the lenient matcher would accept this URL, but an engine glob must match the \
                 whole URL and its `*` does not cross `/`: write **/…* or **/…/**"
            );
        }
        Err(poll.timed_out(&format!("the URL is `{last}`"), data))
    })
}

/// The load state a `wait_for_load` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoadState {
    DomContentLoaded,
    Load,
    NetworkIdle,
}

impl LoadState {
    /// The catalogue's reading: case-insensitive, anything else is `load` (`false` then).
    fn parse(raw: &str) -> (LoadState, bool) {
        match raw.trim().to_ascii_lowercase().as_str() {
            "load" => (LoadState::Load, true),
            "domcontentloaded" => (LoadState::DomContentLoaded, true),
            "networkidle" => (LoadState::NetworkIdle, true),
            _ => (LoadState::Load, false),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            LoadState::DomContentLoaded => "domcontentloaded",
            LoadState::Load => "load",
            LoadState::NetworkIdle => "networkidle",
        }
    }

    fn reached(self, ready_state: &str, net: &InflightNow) -> bool {
        match self {
            LoadState::DomContentLoaded => matches!(ready_state, "interactive" | "complete"),
            LoadState::Load => ready_state == "complete",
            LoadState::NetworkIdle => {
                ready_state == "complete" && net.count == 0 && net.quiet_for >= NETWORK_IDLE
            }
        }
    }
}

fn inflight_json(net: &InflightNow) -> Value {
    json!(net.oldest)
}

fn wait_for_load(p: &mut Params) -> Prepared<TaskCx> {
    let raw = p.str_opt("state")?.unwrap_or_else(|| "load".into());
    let timeout = timeout_param(p)?;
    let (state, known) = LoadState::parse(&raw);
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        let mut poll = Poller::new(&cx, timeout, POLL);
        // Subscribed before the first look, so no event after it is missed.
        let mut wake = tab.load_progress().await?;
        let mut ready = String::new();
        let mut url = String::new();
        while poll.next(Some(&mut wake)).await {
            let Some(status) = poll.look(tab.call_page_status()).await? else {
                continue;
            };
            ready = status["readyState"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            url = status["url"].as_str().unwrap_or_default().to_string();
            let net = tab.inflight();
            if state.reached(&ready, &net) {
                let mut data = json!({
                    "state": state.as_str(),
                    "readyState": ready,
                    "url": url,
                    "waitedMs": poll.waited_ms(),
                    "inflight": net.count,
                });
                if !known {
                    data["stateNote"] = json!(format!("unknown state `{raw}`: waited for load"));
                }
                return Ok(data);
            }
            if poll.looked_once() {
                break;
            }
        }
        let net = tab.inflight();
        let seen = format!(
            "readyState `{}`, {} in flight",
            if ready.is_empty() { "unknown" } else { &ready },
            plural(net.count as u64, "request")
        );
        Err(poll.timed_out(
            &seen,
            json!({
                "state": state.as_str(),
                "readyState": ready,
                "url": url,
                "inflight": net.count,
                "inflightRequests": inflight_json(&net),
            }),
        ))
    })
}

/// JavaScript truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn wait_for_function(p: &mut Params) -> Prepared<TaskCx> {
    let expression = p.str_req("expression")?;
    let timeout = timeout_param(p)?;
    let form: ScriptForm = script_form(&expression);
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        let main = tab.main_frame_local();
        let mut poll = Poller::new(&cx, timeout, POLL);
        let mut last = Value::Null;
        let mut last_error: Option<String> = None;
        let mut polls = 0u32;
        // Groups of looks the page did not answer: released with the next answered look.
        let mut owed: Vec<ScriptGroup> = Vec::new();
        while poll.next(None).await {
            let budget = poll
                .look_until()
                .saturating_duration_since(tokio::time::Instant::now())
                .as_millis()
                .clamp(1, u128::from(MAX_EVAL_MS)) as u64;
            let group = ScriptGroup::fresh();
            let ran = poll
                .look(run_script(&tab, &main, &expression, form, budget, &group))
                .await?;
            // What the look left in the page is released in the background; a page that did
            // not answer is not asked again here, but with the next look it answers.
            if poll.unanswered {
                owed.push(group);
            } else {
                for group in owed.drain(..).chain(std::iter::once(group)) {
                    tab.release_script_objects(&main, group);
                }
            }
            let Some(ran) = ran else { continue };
            polls += 1;
            match ran {
                Ran::Threw(ex) => {
                    let line = exception_line(&ex);
                    // A script that does not compile throws without a stack; `JSON.parse('')`
                    // throws a SyntaxError at run time, with one: that is worth waiting through.
                    if ex.pointer("/exception/className").and_then(Value::as_str)
                        == Some("SyntaxError")
                        && ex.get("stackTrace").is_none()
                    {
                        return Err(CommandError::invalid(
                            "expression",
                            format!("param `expression` does not compile: {line}"),
                        ));
                    }
                    last_error = Some(line);
                }
                Ran::Value(out) => {
                    let value = out["value"].clone();
                    if truthy(&value) {
                        return Ok(json!({
                            "result": value,
                            "waitedMs": poll.waited_ms(),
                            "polls": polls,
                        }));
                    }
                    last_error = None;
                    last = value;
                }
            }
            if poll.looked_once() {
                break;
            }
        }
        let seen = match &last_error {
            Some(e) => format!("it last threw: {e}"),
            None => format!("it last answered {last}"),
        };
        Err(poll.timed_out(
            &seen,
            json!({"lastResult": last, "lastError": last_error, "polls": polls}),
        ))
    })
}

/// The reply of `snapshot_watch.js` that `wait_for_idle` reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Watch {
    document_id: String,
    mutations: u64,
    last_mutation: Option<Value>,
    url: String,
}

/// The quiet period param: `default` when absent or negative.
fn quiet_param(p: &mut Params, default: u64) -> Result<Duration, CommandError> {
    let ms = p
        .int_opt("quietMs")?
        .filter(|ms| *ms >= 0)
        .map_or(default, i64::unsigned_abs);
    Ok(Duration::from_millis(ms))
}

fn wait_for_idle(p: &mut Params) -> Prepared<TaskCx> {
    let quiet = quiet_param(p, 500)?;
    let timeout = timeout_param(p)?;
    let selector = p.str_opt("selector")?;
    let text = p.str_opt("text")?;
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        let main = tab.main_frame_local();
        let mut poll = Poller::new(&cx, timeout, POLL);
        let extra = selector.is_some() || text.is_some();
        // (document, counter) last seen, when it last moved, the first count seen.
        let mut seen: Option<(String, u64)> = None;
        let mut moved_at = Instant::now();
        let mut looked_at = moved_at;
        let mut first_count: Option<u64> = None;
        let mut last: Option<Watch> = None;
        let mut conditions: Option<Match> = None;
        let mut held_since: Option<Instant> = None;
        while poll.next(None).await {
            let Some(w) = poll
                .look(tab.call_probe::<Watch>(&main, js::SNAPSHOT_WATCH_JS, json!({})))
                .await?
            else {
                continue;
            };
            let now = Instant::now();
            looked_at = now;
            let key = (w.document_id.clone(), w.mutations);
            if seen.as_ref() != Some(&key) {
                if seen.is_some() {
                    moved_at = now;
                }
                if seen.as_ref().is_none_or(|(doc, _)| *doc != w.document_id) {
                    // A new document (or the first look): its counter starts here.
                    first_count = Some(w.mutations);
                }
                seen = Some(key);
            }
            let holds = if extra {
                let Some(m) = poll
                    .look(matches(
                        &tab,
                        &main,
                        selector.as_deref(),
                        None,
                        text.as_deref(),
                    ))
                    .await?
                else {
                    continue;
                };
                let ok = selector.is_none() || m.count.unwrap_or(0) > 0;
                let ok = ok && (text.is_none() || m.body_has_text == Some(true));
                conditions = Some(m);
                ok
            } else {
                true
            };
            held_since = if holds {
                held_since.or(Some(now))
            } else {
                None
            };
            let net = tab.inflight();
            let quiet_since = [Some(moved_at), now.checked_sub(net.quiet_for), held_since]
                .into_iter()
                .flatten()
                .max()
                .unwrap_or(now);
            last = Some(w);
            if holds && net.count == 0 && now.duration_since(quiet_since) >= quiet {
                let w = last.as_ref();
                return Ok(json!({
                    "idle": true,
                    "waitedMs": poll.waited_ms(),
                    "mutations": w.map(|w| w.mutations),
                    "inflight": 0,
                    "quietMs": quiet.as_millis() as u64,
                    "timeoutSeconds": timeout.as_secs_f64(),
                    "url": w.map(|w| w.url.clone()),
                }));
            }
            if poll.looked_once() {
                break;
            }
        }
        let net = tab.inflight();
        let mutations = last.as_ref().map_or(0, |w| w.mutations);
        let during = mutations.saturating_sub(first_count.unwrap_or(mutations));
        let mut data = json!({
            "idle": false,
            "mutations": mutations,
            "mutationsDuringWait": during,
            "lastMutation": last.as_ref().and_then(|w| w.last_mutation.clone()),
            // As of the last look, as wait_for_stable's msSinceLastChange.
            "msSinceLastMutation": looked_at.duration_since(moved_at).as_millis() as u64,
            "msSinceLastLook": looked_at.elapsed().as_millis() as u64,
            "inflight": net.count,
            "inflightRequests": inflight_json(&net),
            "quietMs": quiet.as_millis() as u64,
            "url": last.as_ref().map(|w| w.url.clone()),
        });
        let mut why = vec![
            format!("{} in flight", plural(net.count as u64, "request")),
            format!("{} during the wait", plural(during, "mutation")),
        ];
        if let Some(m) = &conditions {
            if selector.is_some() {
                let hit = m.count.unwrap_or(0) > 0;
                data["selectorMatched"] = json!(hit);
                if !hit {
                    why.push("the selector matched nothing".into());
                }
            }
            if text.is_some() {
                let hit = m.body_has_text == Some(true);
                data["textMatched"] = json!(hit);
                if !hit {
                    why.push("the text is not in the page".into());
                }
            }
        }
        Err(poll.timed_out(&why.join(", "), data))
    })
}

/// The reply of `content_fingerprint.js`.
#[derive(Debug, Deserialize)]
struct Content {
    found: bool,
    length: Option<u64>,
    fingerprint: Option<String>,
    text: Option<String>,
    url: Option<String>,
}

/// What `wait_for_stable` answers of the last fingerprint, success or timeout.
fn content_json(
    c: Option<&Content>,
    selector: Option<&str>,
    quiet: Duration,
    changes: u32,
) -> Value {
    json!({
        "quietMs": quiet.as_millis() as u64,
        "changes": changes,
        "length": c.and_then(|c| c.length),
        "fingerprint": c.and_then(|c| c.fingerprint.clone()),
        "text": c.and_then(|c| c.text.clone()),
        "selector": selector,
        "url": c.and_then(|c| c.url.clone()),
    })
}

fn wait_for_stable(p: &mut Params) -> Prepared<TaskCx> {
    let selector = p.str_opt("selector")?;
    let quiet = quiet_param(p, 800)?;
    let timeout = timeout_param(p)?;
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        let main = tab.main_frame_local();
        let mut poll = Poller::new(&cx, timeout, STABLE_POLL);
        let mut changes = 0u32;
        let mut changed_at = Instant::now();
        let mut looked_at = changed_at;
        let mut last: Option<Content> = None;
        while poll.next(None).await {
            let probe = tab.call_probe::<Content>(
                &main,
                js::CONTENT_FINGERPRINT_JS,
                json!({ "selector": selector }),
            );
            let probe = async { probe.await.map_err(naming("selector")) };
            let Some(c) = poll.look(probe).await? else {
                continue;
            };
            if !c.found {
                match &selector {
                    Some(s) => {
                        return Err(CommandError::new(
                            ErrorCode::ElementNotFound,
                            format!("cannot read content fingerprint: no element matches `{s}`"),
                        )
                        .with_details(json!({"stable": false, "selector": s, "url": c.url})))
                    }
                    // No body yet: the document is being replaced.
                    None => continue,
                }
            }
            let now = Instant::now();
            looked_at = now;
            if last.as_ref().map(|l| &l.fingerprint) != Some(&c.fingerprint) {
                changes += 1;
                changed_at = now;
            }
            let settled = now.duration_since(changed_at) >= quiet;
            last = Some(c);
            if settled {
                let mut data = content_json(last.as_ref(), selector.as_deref(), quiet, changes);
                data["stable"] = json!(true);
                data["waitedMs"] = json!(poll.waited_ms());
                return Ok(data);
            }
            if poll.looked_once() {
                break;
            }
        }
        // What the looks prove: the content had not changed for `since` when it was last read.
        // The time after the last look (a slow or cut look on a loaded machine) proves nothing,
        // so it is its own field and never counts as quiet.
        let since = looked_at.duration_since(changed_at).as_millis() as u64;
        let mut data = content_json(last.as_ref(), selector.as_deref(), quiet, changes);
        data["stable"] = json!(false);
        data["msSinceLastChange"] = json!(since);
        data["msSinceLastLook"] = json!(looked_at.elapsed().as_millis() as u64);
        let seen = format!(
            "{} seen, the last {since} ms before the last look",
            plural(u64::from(changes), "change")
        );
        Err(poll.timed_out(&seen, data))
    })
}

/// The bounds of `wait_for_count`.
#[derive(Debug, Clone, Copy)]
struct CountBounds {
    min: Option<i64>,
    max: Option<i64>,
    equals: Option<i64>,
}

impl CountBounds {
    fn check(self) -> Result<CountBounds, CommandError> {
        if self.min.is_none() && self.max.is_none() && self.equals.is_none() {
            return Err(CommandError::invalid(
                "min",
                "wait_for_count needs at least one of `min`, `max`, `equals`",
            ));
        }
        let lo = self
            .min
            .unwrap_or(i64::MIN)
            .max(self.equals.unwrap_or(i64::MIN));
        let hi = self
            .max
            .unwrap_or(i64::MAX)
            .min(self.equals.unwrap_or(i64::MAX));
        if lo > hi || hi < 0 {
            return Err(CommandError::invalid(
                "min",
                format!(
                    "the bounds can never hold together (min {:?}, max {:?}, equals {:?})",
                    self.min, self.max, self.equals
                ),
            ));
        }
        Ok(self)
    }

    fn hold(self, count: u64) -> bool {
        let n = i64::try_from(count).unwrap_or(i64::MAX);
        self.min.is_none_or(|m| n >= m)
            && self.max.is_none_or(|m| n <= m)
            && self.equals.is_none_or(|e| n == e)
    }
}

fn wait_for_count(p: &mut Params) -> Prepared<TaskCx> {
    let selector = p.str_req("selector")?;
    let bounds = CountBounds {
        min: p.int_opt("min")?,
        max: p.int_opt("max")?,
        equals: p.int_opt("equals")?,
    };
    let timeout = timeout_param(p)?;
    let bounds = bounds.check()?;
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        let main = tab.main_frame_local();
        let mut poll = Poller::new(&cx, timeout, COUNT_POLL);
        let mut last: Option<Match> = None;
        let echo = |data: &mut Value| {
            for (k, v) in [
                ("min", bounds.min),
                ("max", bounds.max),
                ("equals", bounds.equals),
            ] {
                if let Some(v) = v {
                    data[k] = json!(v);
                }
            }
        };
        while poll.next(None).await {
            let Some(m) = poll
                .look(matches(&tab, &main, Some(&selector), None, None))
                .await?
            else {
                continue;
            };
            let count = m.count.unwrap_or(0);
            if bounds.hold(count) {
                let mut data = json!({
                    "matched": true,
                    "count": count,
                    "waitedMs": poll.waited_ms(),
                    "selector": selector,
                    "url": m.url,
                });
                echo(&mut data);
                return Ok(data);
            }
            last = Some(m);
            if poll.looked_once() {
                break;
            }
        }
        let count = last.as_ref().and_then(|m| m.count);
        let mut data = json!({
            "matched": false,
            "count": count,
            "selector": selector,
            "url": last.as_ref().map(|m| m.url.clone()),
        });
        echo(&mut data);
        let seen = match count {
            Some(n) => format!("`{selector}` matched {}", plural(n, "element")),
            None => "the page was never read".into(),
        };
        Err(poll.timed_out(&seen, data))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_hint_reads_patterns_leniently() {
        assert!(loosely_matches("**/push.html", "http://h/push.html?step=2"));
        assert!(!loosely_matches("**/pull.html", "http://h/push.html"));
    }

    #[test]
    fn truthiness_is_javascript_s() {
        for v in [json!(null), json!(false), json!(0), json!(0.0), json!("")] {
            assert!(!truthy(&v), "{v}");
        }
        for v in [
            json!(true),
            json!(1),
            json!(-0.5),
            json!("0"),
            json!([]),
            json!({}),
        ] {
            assert!(truthy(&v), "{v}");
        }
    }

    #[test]
    fn load_states_and_count_bounds() {
        assert_eq!(
            LoadState::parse("NetworkIdle"),
            (LoadState::NetworkIdle, true)
        );
        assert_eq!(
            LoadState::parse("DOMContentLoaded").0,
            LoadState::DomContentLoaded
        );
        assert_eq!(LoadState::parse("commit"), (LoadState::Load, false));
        let b = |min, max, equals| CountBounds { min, max, equals };
        assert!(b(None, None, None).check().is_err());
        assert!(b(Some(5), Some(2), None).check().is_err());
        assert!(b(None, Some(-1), None).check().is_err());
        assert!(b(Some(1), None, Some(0)).check().is_err());
        let rows = b(Some(1), None, None).check().unwrap();
        assert!(!rows.hold(0) && rows.hold(1) && rows.hold(9));
        let gone = b(None, Some(0), None).check().unwrap();
        assert!(gone.hold(0) && !gone.hold(1));
        assert!(b(None, None, Some(3)).check().unwrap().hold(3));
    }
}
