//! Navigation and page identity: `navigate`/`go_to_url`, `go_back`, `go_forward`, `reload`,
//! `get_url`, `get_title`.
//!
//! A navigation that replaces the document drops the task's index snapshot: old indices must
//! never address the new page.

use serde_json::{json, Value};

use crate::browser::tab::Tab;
use crate::command::*;
use crate::error::CommandError;
use crate::protocol::{ErrorCode, Params};

const URL_PARAM: &[ParamSpec] = &[string(
    "url",
    "absolute URL to open (http, https, file, data or about)",
)
.req()];

const GO_TO_URL: CommandSpec = Group::Navigation
    .navigating("go_to_url", go_to_url)
    .summary("Open a URL in the current tab and wait for it to load")
    .doc(
        "Navigates the current tab and waits for the load event (30 s at most). Answers the \
              HTTP status of the main response (0 when there is none, as for about:blank). \
              Chrome's own network error page is reported as NETWORK_ERROR with `netError`.",
    )
    .params(URL_PARAM)
    .example("local r = page:go_to_url{ url = \"http://127.0.0.1:8000/\" }\nprint(r.data.status)");

/// The navigation group.
pub const SPECS: &[CommandSpec] = &[
    alias(&GO_TO_URL, "navigate").example("page:navigate{ url = \"http://127.0.0.1:8000/\" }"),
    GO_TO_URL,
    Group::Navigation
        .navigating("go_back", go_back)
        .summary("Go one step back in the tab's history")
        .doc(
            "Fails with 'cannot go back: no usable history' when there is no earlier entry or the \
              URL did not change.",
        )
        .example("page:go_back()"),
    Group::Navigation
        .navigating("go_forward", go_forward)
        .summary("Go one step forward in the tab's history")
        .doc("Fails with 'cannot go forward: no usable history' when there is no later entry.")
        .example("page:go_forward()"),
    Group::Navigation
        .navigating("reload", reload)
        .summary("Reload the current page and wait for it to load")
        .doc("Reloads the main frame and waits for the load event; answers the document's status.")
        .example("page:reload()"),
    Group::Navigation
        .read("get_url", get_url)
        .summary("Read the current tab's URL")
        .doc("The URL of the current tab's main frame.")
        .example("print(page:get_url().data.url)"),
    Group::Navigation
        .read("get_title", get_title)
        .summary("Read the current tab's title")
        .doc("The document title of the current tab ('' when unreadable).")
        .example("print(page:get_title().data.title)"),
];

fn go_to_url(p: &mut Params) -> Prepared<TaskCx> {
    let url = p.url_req("url")?;
    run(move |cx: TaskCx| async move {
        // The door decides which schemes open (a `file:` URL is a read of that file).
        cx.trust.url("url", &url).await?;
        let task = cx.task.clone();
        let mut tab = task.tab()?;
        // Dropped before navigating, so that a navigation cut short leaves no stale indices, and
        // put back when the document stayed (its elements are the same ones).
        let snapshot = task.snapshot();
        task.set_snapshot(None);
        let mut replaced = None;
        let nav = match tab.navigate(&url).await {
            // The page being left holds the navigation with a dialog nobody can answer any
            // more: leave it behind in a fresh tab.
            Err(e) if e.detail("dialogStuck").is_some() => {
                tab = task.replace_tab(&tab).await?;
                // The same field as the executor's revival of a tab that does not answer.
                replaced = Some(json!({
                    "action": "tabReplaced",
                    "reason": "dialogStuck",
                    "url": url,
                    "note": "the page being left kept raising dialogs that the browser no longer let anyone answer, which blocked the navigation; it was closed and the URL opened in a fresh tab (its history and session storage are gone)",
                }));
                tab.navigate(&url).await?
            }
            other => other?,
        };
        if let Some(error) = nav.error_text {
            return Err(network_error(&tab, &url, &error, nav.status, nav.is_download).await);
        }
        if nav.same_document {
            task.set_snapshot(snapshot.map(|s| (*s).clone()));
        }
        let mut data = json!({
            "status": nav.status,
            "url": tab.url().await?,
            "sameDocument": nav.same_document,
        });
        if let Some(replaced) = replaced {
            data["pageRecovery"] = replaced;
        }
        Ok(data)
    })
}

/// The failure of a navigation that Chromium answered with `error` (`net::ERR_…`): the
/// browser's error page, or for `ERR_ABORTED` (a 204, a download, a cancelled navigation) the
/// old page, which stays.
async fn network_error(
    tab: &Tab,
    url: &str,
    error: &str,
    status: i64,
    is_download: bool,
) -> CommandError {
    let Some(code) = error.strip_prefix("net::") else {
        return CommandError::failed(format!("loading `{url}` failed: {error}"));
    };
    let page_url = tab.url().await.unwrap_or_default();
    let error_page = page_url.starts_with("chrome-error://");
    let permanent = permanent_net_error(code);
    let hint = match (code, permanent) {
        ("ERR_ABORTED", _) => "the navigation was replaced or cancelled (no content, a download, a redirect or another navigation); the previous page stays",
        (_, Some(why)) => why,
        _ => "the browser could not reach the site: check the address, the server, a proxy or VPN",
    };
    let mut details = json!({
        "netError": code,
        "networkErrorPage": error_page,
        "urlRequested": url,
        "hint": hint,
    });
    if error_page {
        details["errorPageUrl"] = json!(page_url);
    }
    if status > 0 {
        details["status"] = json!(status);
    }
    if is_download {
        details["isDownload"] = json!(true);
    }
    let why = match (is_download, status) {
        (true, _) => " (the response is a download)".to_string(),
        (false, 204) => " (the server answered 204 No Content)".to_string(),
        _ => String::new(),
    };
    let e = CommandError::new(
        ErrorCode::NetworkError,
        format!("loading `{url}` failed with {error}{why}"),
    )
    .with_details(details);
    if permanent.is_some() {
        // The browser refuses it whatever the network does: no resend can help.
        e.retrying_as(None)
    } else {
        e
    }
}

/// Why a network error of Chromium's is the same on every attempt (the browser's own
/// refusal, not the network's), or `None` when a resend may help.
fn permanent_net_error(code: &str) -> Option<&'static str> {
    Some(match code {
        "ERR_UNSAFE_PORT" => "Chromium refuses this port (it is on its list of unsafe ports, such as 6000, 6665-6669 and 10080): no resend can help; serve the site on another port",
        "ERR_UNKNOWN_URL_SCHEME" | "ERR_DISALLOWED_URL_SCHEME" => "Chromium does not open URLs of this scheme: no resend can help",
        "ERR_INVALID_URL" => "Chromium cannot parse this URL: no resend can help; check the address",
        "ERR_BLOCKED_BY_CLIENT" | "ERR_BLOCKED_BY_ADMINISTRATOR" => "the browser's own rules block this URL: no resend can help",
        "ERR_BLOCKED_BY_RESPONSE" => "the site's headers forbid loading it this way (a frame or cross-origin policy): no resend can help",
        "ERR_INVALID_REDIRECT" | "ERR_UNSAFE_REDIRECT" => "the site redirects to an address the browser refuses: no resend can help",
        _ => return None,
    })
}

async fn history_step(cx: TaskCx, delta: i64, what: &'static str) -> Result<Value, CommandError> {
    let task = cx.task.clone();
    let tab = task.tab()?;
    let (current, entries) = tab.history().await?;
    let target = usize::try_from(current + delta)
        .ok()
        .and_then(|i| entries.get(i));
    let old_url = tab.url().await?;
    let Some(entry) = target else {
        return Err(CommandError::failed(format!(
            "cannot go {what}: no usable history"
        )));
    };
    if entry.url == old_url {
        return Err(CommandError::failed(format!(
            "cannot go {what}: no usable history (the entry has the same URL)"
        )));
    }
    task.set_snapshot(None);
    let status = tab.go_to_history_entry(entry.id, &old_url).await?;
    // The step went through: a URL unreadable mid-redirect is reported as null, never as a
    // failure (a retry would step twice).
    Ok(json!({"status": status, "url": tab.url().await.ok()}))
}

fn go_back(_p: &mut Params) -> Prepared<TaskCx> {
    run(|cx| history_step(cx, -1, "back"))
}

fn go_forward(_p: &mut Params) -> Prepared<TaskCx> {
    run(|cx| history_step(cx, 1, "forward"))
}

fn reload(_p: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move {
        let task = cx.task.clone();
        let tab = task.tab()?;
        task.set_snapshot(None);
        let status = tab.reload().await?;
        Ok(json!({"status": status, "url": tab.url().await.ok()}))
    })
}

fn get_url(_p: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move { Ok(json!({"url": cx.tab()?.url().await?})) })
}

fn get_title(_p: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move { Ok(json!({"title": cx.tab()?.title().await?})) })
}
