//! Tabs: `get_tabs`, `new_tab`, `switch_tab`, `switch_tab_by_url`, `close_tab`,
//! `close_other_tabs`, `bring_to_front`.
//!
//! A task sees and closes only its own tabs (`Task::tabs`; popups its pages open are adopted
//! by the task). Every tab command picks its tab from one copy of the list and then works on
//! that tab's identity, never on an index read again later: a popup adopted or a tab closed by
//! its page meanwhile (event noise) does not shift what it acts on. Each command checks its own
//! effect before answering (the tab is current, the target is gone, the list holds what it
//! should), and a switch to another tab drops the index snapshot (indices belong to one page).
//! A tab made current is also brought to the front: Chromium holds input and frames of a
//! background tab, so later clicks and screenshots would stall.
//!
//! Also here: the catalogue's lenient URL matcher ([`lenient_url_match`]), pure and
//! unit-tested.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::browser::task::Task;
use crate::browser::Tab;
use crate::command::*;
use crate::error::CommandError;
use crate::protocol::{ErrorCode, Params};

/// How long a tab's page may take to say its URL and title before the browser's own record of
/// them (`Target.getTargetInfo`) is used instead.
const STATUS_BOUND: Duration = Duration::from_secs(1);

/// How long a closed tab's target may take to go away (`Target.closeTarget` answers first; it
/// goes within milliseconds in practice, a page with an unload handler a little later).
const CLOSE_BOUND: Duration = Duration::from_secs(3);

const PAGE_INDEX_REQ: ParamSpec = int(
    "pageIndex",
    "0-based tab index, as get_tabs lists it (NOT 'index')",
)
.req()
.range(0.0, f64::INFINITY);

/// The tabs group.
pub const SPECS: &[CommandSpec] = &[
    Group::Tabs
        .read("get_tabs", get_tabs)
        .summary("List this task's tabs: index, url, title, current")
        .doc("Only the task's own tabs (popups its pages opened included), 0-based in opening \
              order. The URL and title come from each page; a page that does not answer within \
              1 s is described by the browser's own record.")
        .example("for _, t in ipairs(page:get_tabs():unwrap().tabs) do print(t.index, t.url, t.current) end"),
    Group::Tabs
        .action("new_tab", new_tab)
        .summary("Open a tab (optionally at a URL), make it current and bring it to front")
        .doc("The tab belongs to the task. With `url` it is navigated there (an absolute URL); \
              a failed load leaves the new tab open and current, and the failure says so \
              (`tabOpened`, `pageIndex`): do not resend. Answers the new tab's index and URL \
              and the tab counts before and after.")
        .params(&[string("url", "optional absolute URL to open (http, https, file, data or about)")])
        .example("local t = page:new_tab{ url = \"https://example.com\" }:unwrap()\nprint(t.pageIndex)"),
    Group::Tabs
        .action("switch_tab", switch_tab)
        .summary("Make the tab with this pageIndex current and bring it to front")
        .doc("pageIndex is 0-based as get_tabs lists it; out of range is INVALID_ARGUMENT, and \
              so is `index` sent instead of `pageIndex`. Switching to another tab drops the \
              index snapshot: call get_browser_state again.")
        .params(&[PAGE_INDEX_REQ])
        .example("page:switch_tab{ pageIndex = 1 }"),
    Group::Tabs
        .action("switch_tab_by_url", switch_tab_by_url)
        .summary("Make the first tab whose URL matches current (substring, then glob)")
        .doc("Lenient matcher: a substring of the URL first; else a glob where `*` and `**` \
              match anything including `/`, anchored at the start, trailing content allowed. The \
              first matching tab in get_tabs order wins; no match fails with NOT_FOUND and the \
              list of the task's tabs.")
        .params(&[string("url", "substring or glob ('*'/'**' match anything including '/')").req()])
        .example("page:switch_tab_by_url{ url = \"**/checkout*\" }"),
    Group::Tabs
        .action("close_tab", close_tab)
        .summary("Close the tab with this pageIndex (the first remaining one becomes current)")
        .doc("Closing the current tab makes the first remaining tab current; closing the last \
              one opens a fresh blank tab first, so the task always has one. Closing another tab \
              keeps the current one current. The answer comes once the tab is really gone.")
        .params(&[PAGE_INDEX_REQ])
        .example("page:close_tab{ pageIndex = 1 }"),
    Group::Tabs
        .action("close_other_tabs", close_other_tabs)
        .summary("Close every tab of this task except one (default: the current one)")
        .doc("Keeps the tab with `pageIndex` (absent: the current tab), makes it current and \
              brings it to front. Other tasks' tabs are never touched. `index` sent instead of \
              `pageIndex` is INVALID_ARGUMENT (nothing is closed). Answers closed, remaining, \
              and the kept tab's pageIndex and url.")
        .params(&[int("pageIndex", "tab to keep; absent = current tab").range(0.0, f64::INFINITY)])
        .example("page:close_other_tabs{}"),
    Group::Tabs
        .navigating("bring_to_front", bring_to_front)
        .summary("Raise a tab to the front without making it current")
        .doc("Raises the tab with `pageIndex` (absent: the current tab). The \
              task's current tab does not change. `index` sent instead of `pageIndex` is \
              INVALID_ARGUMENT.")
        .params(&[int("pageIndex", "tab to show; absent = current").range(0.0, f64::INFINITY)])
        .example("page:bring_to_front{ pageIndex = 0 }"),
];

/// Whether `url` matches `pattern` by the catalogue's lenient rule (COMMANDS.md "URL matching
/// rules"): an empty pattern matches everything; then a plain substring; then a glob where
/// each run of `*` matches any characters (`/` included) and every other character is literal,
/// matched from the start of the URL with any trailing content allowed.
pub(crate) fn lenient_url_match(pattern: &str, url: &str) -> bool {
    if pattern.is_empty() || url.contains(pattern) {
        return true;
    }
    if !pattern.contains('*') {
        return false;
    }
    // Anchored at the start; the implicit trailing `*` allows trailing content. Greedy-free
    // matching of literal pieces in order: the first piece must start the URL, each later one
    // is found after the previous (leftmost is always safe when the end is open).
    let mut pieces = pattern.split('*');
    let first = pieces.next().unwrap_or_default();
    let Some(mut rest) = url.strip_prefix(first) else {
        return false;
    };
    for piece in pieces.filter(|p| !p.is_empty()) {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// An optional `pageIndex`; `index` sent without it is refused (PROTOCOL.md §7): the caller
/// meant a tab, and acting on the current one instead (or closing the one they meant to keep)
/// cannot be undone.
fn page_index_opt(p: &mut Params) -> Result<Option<usize>, CommandError> {
    if let Some(hint) = p.confused_for("pageIndex") {
        return Err(CommandError::invalid(
            "pageIndex",
            format!("param `pageIndex`: {hint}; nothing was done"),
        ));
    }
    Ok(p.int_opt("pageIndex")?
        .map(|i| i.max(0).unsigned_abs() as usize))
}

fn page_index_req(p: &mut Params) -> Result<usize, CommandError> {
    // At least 0: the executor checked the range.
    Ok(p.int_req("pageIndex")?.max(0).unsigned_abs() as usize)
}

/// The page's own URL and title, or the browser's record of them when the page does not answer
/// within [`STATUS_BOUND`].
async fn status(tab: &Tab) -> (String, String) {
    if let Ok(Ok(s)) = tokio::time::timeout(STATUS_BOUND, tab.call_page_status()).await {
        let text = |key: &str| s[key].as_str().unwrap_or_default().to_string();
        return (text("url"), text("title"));
    }
    tab.target_info().await.unwrap_or_default()
}

/// The task's tabs as get_tabs lists them.
async fn listing(tabs: &[Arc<Tab>], current: usize) -> Vec<Value> {
    let mut list = Vec::with_capacity(tabs.len());
    for (i, tab) in tabs.iter().enumerate() {
        let (url, title) = status(tab).await;
        list.push(json!({"index": i, "url": url, "title": title, "current": i == current}));
    }
    list
}

/// One tab picked from one copy of the task's list.
struct Picked {
    /// The tab.
    tab: Arc<Tab>,
    /// The copy of the list it was picked from.
    tabs: Vec<Arc<Tab>>,
    /// The current index in that copy.
    current: usize,
}

/// The task's tab at `index` from one copy of the list; out of range is `INVALID_ARGUMENT`
/// naming `pageIndex` (nothing was done).
fn pick(task: &Task, index: usize) -> Result<Picked, CommandError> {
    let (tabs, current) = task.tabs();
    match tabs.get(index) {
        Some(tab) => Ok(Picked {
            tab: tab.clone(),
            tabs: tabs.clone(),
            current,
        }),
        None => Err(CommandError::invalid(
            "pageIndex",
            format!(
                "param `pageIndex`: no tab {index}: this task has {} tab(s), legal range 0..={} (get_tabs lists them)",
                tabs.len(),
                tabs.len().saturating_sub(1)
            ),
        )
        .with_details(json!({"tabCount": tabs.len()}))),
    }
}

/// Brings `tab` to the front and makes it current, then checks that it is: a tab that left the
/// list meanwhile (closed by its page) is `ACTION_FAILED`. Answers its index after.
async fn make_current(task: &Task, tab: &Arc<Tab>) -> Result<usize, CommandError> {
    tab.bring_to_front().await?;
    let at = task.select_tab(tab);
    let current = task.tab().ok();
    match (at, current) {
        (Some(at), Some(now)) if Arc::ptr_eq(&now, tab) => Ok(at),
        _ => Err(CommandError::failed(
            "the tab closed while it was being made current; get_tabs lists what is left",
        )),
    }
}

fn get_tabs(_p: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move {
        let (tabs, current) = cx.task.tabs();
        Ok(json!({"tabs": listing(&tabs, current).await, "currentIndex": current}))
    })
}

fn new_tab(p: &mut Params) -> Prepared<TaskCx> {
    let url = match p.str_opt("url")? {
        Some(_) => Some(p.url_req("url")?),
        None => None,
    };
    run(move |cx: TaskCx| async move {
        if let Some(url) = &url {
            // Before a tab opens: the door decides which schemes open.
            cx.trust.url("url", url).await?;
        }
        let task = cx.task;
        let before = task.tabs().0.len();
        let tab = Arc::new(task.new_tab().await?);
        // Listed at once (no await in between): a command dropped from here on leaves no tab
        // behind that the task does not own.
        task.add_tab(tab.clone());
        task.join_tab(&tab).await;
        if task.is_closed() {
            // Closed while the tab was being opened: the tab closing took did not see it.
            let _ = tokio::time::timeout(CLOSE_BOUND, tab.close()).await;
            return Err(CommandError::new(
                ErrorCode::TaskNotFound,
                "the task was closed while the tab was being opened",
            ));
        }
        let index = make_current(&task, &tab).await?;
        let opened = |e: CommandError| {
            e.with_details(json!({
                "tabOpened": true,
                "pageIndex": index,
                "tabCountBefore": before,
                "tabCountAfter": task.tabs().0.len(),
                "hint": "the new tab is open and current; do not resend new_tab (navigate it instead)",
            }))
        };
        if let Some(url) = &url {
            let nav = tab.navigate(url).await.map_err(opened)?;
            if let Some(error) = nav.error_text {
                return Err(opened(CommandError::new(
                    if error.starts_with("net::") {
                        ErrorCode::NetworkError
                    } else {
                        ErrorCode::ActionFailed
                    },
                    format!("the new tab is open, but loading `{url}` failed: {error}"),
                )));
            }
        }
        let (tabs, current) = task.tabs();
        let at = tabs.iter().position(|t| Arc::ptr_eq(t, &tab));
        if at != Some(current) {
            return Err(opened(CommandError::failed(
                "the new tab is no longer the current one (it was closed, or its page closed it)",
            )));
        }
        Ok(json!({
            "pageIndex": current,
            "url": status(&tab).await.0,
            "tabCountBefore": before,
            "tabCountAfter": tabs.len(),
            "switchedToNewTab": true,
        }))
    })
}

fn switch_tab(p: &mut Params) -> Prepared<TaskCx> {
    let index = page_index_req(p)?;
    run(move |cx: TaskCx| async move {
        let task = cx.task;
        let Picked {
            tab,
            current: previous,
            ..
        } = pick(&task, index)?;
        let at = make_current(&task, &tab).await?;
        let (url, title) = status(&tab).await;
        Ok(json!({"pageIndex": at, "previousIndex": previous, "url": url, "title": title}))
    })
}

fn switch_tab_by_url(p: &mut Params) -> Prepared<TaskCx> {
    let pattern = p.str_req("url")?;
    run(move |cx: TaskCx| async move {
        let task = cx.task;
        let (tabs, current) = task.tabs();
        let list = listing(&tabs, current).await;
        let found = list
            .iter()
            .position(|t| lenient_url_match(&pattern, t["url"].as_str().unwrap_or_default()));
        let Some(i) = found else {
            let urls: Vec<&str> = list.iter().filter_map(|t| t["url"].as_str()).collect();
            return Err(CommandError::new(
                ErrorCode::NotFound,
                format!(
                    "no tab of this task has a URL matching `{pattern}` (substring or glob); its tabs: {}",
                    urls.join(", ")
                ),
            )
            .with_details(json!({"tabs": list})));
        };
        let tab = tabs[i].clone();
        let at = make_current(&task, &tab).await?;
        Ok(json!({
            "pageIndex": at,
            "previousIndex": current,
            "url": list[i]["url"],
            "title": list[i]["title"],
        }))
    })
}

/// Closes `tab` and waits until its target is gone; a target still there after
/// [`CLOSE_BOUND`] is `ACTION_FAILED` (the tab stays listed).
async fn close_one(tab: &Tab) -> Result<(), CommandError> {
    tab.close().await?;
    if tab.wait_gone(CLOSE_BOUND).await {
        return Ok(());
    }
    Err(CommandError::failed(format!(
        "the tab was asked to close but was still open after {} ms (an unload handler may hold it)",
        CLOSE_BOUND.as_millis()
    )))
}

fn close_tab(p: &mut Params) -> Prepared<TaskCx> {
    let index = page_index_req(p)?;
    run(move |cx: TaskCx| async move {
        let task = cx.task;
        let Picked { tab, tabs, current } = pick(&task, index)?;
        let was_current = index == current;
        // The task always keeps a tab: the last one is replaced by a fresh blank one first.
        let fresh = if tabs.len() == 1 {
            let fresh = Arc::new(task.new_tab().await?);
            task.add_tab(fresh.clone());
            task.join_tab(&fresh).await;
            Some(fresh)
        } else {
            None
        };
        let closed_url = status(&tab).await.0;
        close_one(&tab).await?;
        let keep = if was_current {
            fresh.clone()
        } else {
            tabs.get(current).cloned()
        };
        task.forget_tab(&tab, keep.as_ref());
        // Chromium raises a tab of its own choice (maybe another task's) when the front one
        // closes: raise ours.
        let now = task.tab()?;
        let at = make_current(&task, &now).await?;
        let (tabs_after, _) = task.tabs();
        if tabs_after.iter().any(|t| Arc::ptr_eq(t, &tab)) {
            return Err(CommandError::failed("the closed tab is still listed"));
        }
        Ok(json!({
            "closedIndex": index,
            "closedUrl": closed_url,
            "pageIndex": at,
            "url": status(&now).await.0,
            "tabCount": tabs_after.len(),
            "openedFresh": fresh.is_some(),
        }))
    })
}

fn close_other_tabs(p: &mut Params) -> Prepared<TaskCx> {
    let index = page_index_opt(p)?;
    run(move |cx: TaskCx| async move {
        let task = cx.task;
        let current = task.tabs().1;
        let Picked {
            tab: keep, tabs, ..
        } = pick(&task, index.unwrap_or(current))?;
        let mut closed = 0;
        let mut failures = Vec::new();
        for tab in tabs.iter().filter(|t| !Arc::ptr_eq(t, &keep)) {
            match close_one(tab).await {
                Ok(()) => {
                    task.forget_tab(tab, Some(&keep));
                    closed += 1;
                }
                Err(e) => failures.push(e.msg),
            }
        }
        let at = make_current(&task, &keep).await?;
        let remaining = task.tabs().0.len();
        if !failures.is_empty() {
            return Err(CommandError::failed(format!(
                "{closed} tab(s) closed, {} still open: {}",
                failures.len(),
                failures.join("; ")
            ))
            .with_details(json!({"closed": closed, "remaining": remaining, "pageIndex": at})));
        }
        Ok(json!({
            "closed": closed,
            "remaining": remaining,
            "pageIndex": at,
            "url": status(&keep).await.0,
        }))
    })
}

fn bring_to_front(p: &mut Params) -> Prepared<TaskCx> {
    let index = page_index_opt(p)?;
    run(move |cx: TaskCx| async move {
        let task = cx.task;
        let current = task.tabs().1;
        let tab = pick(&task, index.unwrap_or(current))?.tab;
        tab.bring_to_front().await?;
        let at = task.tabs().0.iter().position(|t| Arc::ptr_eq(t, &tab));
        let Some(at) = at else {
            return Err(CommandError::failed(
                "the tab closed while it was being brought to front",
            ));
        };
        Ok(json!({
            "pageIndex": at,
            "url": status(&tab).await.0,
            "currentIndex": task.tabs().1,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_matching_is_substring_then_open_ended_glob() {
        let url = "http://127.0.0.1:4000/shop/checkout.html?step=2";
        assert!(lenient_url_match("", url));
        assert!(lenient_url_match("checkout", url));
        assert!(
            lenient_url_match("**/checkout.html", url),
            "trailing content allowed"
        );
        assert!(
            lenient_url_match("http://*/checkout*", url),
            "`*` crosses `/`"
        );
        assert!(lenient_url_match("*shop*step=2", url));
        assert!(
            !lenient_url_match("shop/*.png", url),
            "anchored at the start"
        );
        assert!(!lenient_url_match("**/cart.html", url));
        assert!(!lenient_url_match("http://*/checkout.htm?x", url));
        // Other metacharacters are literal.
        assert!(!lenient_url_match("checkout.html?step=.", url));
        assert!(lenient_url_match("**/example.com*", "https://example.com/"));
        assert!(lenient_url_match("**/smoke.html", "http://h/smoke.html#"));
    }

    #[test]
    fn index_for_page_index_is_refused_with_the_hint() {
        let mut p = Params::new(json!({"index": 1})).unwrap();
        let e = page_index_opt(&mut p).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.msg.contains("this parameter is `pageIndex`"), "{}", e.msg);
        let mut both = Params::new(json!({"index": 1, "pageIndex": 0})).unwrap();
        assert_eq!(page_index_opt(&mut both).unwrap(), Some(0));
    }
}
