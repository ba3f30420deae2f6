//! Navigation and page identity: `navigate`/`go_to_url`, `go_back`, `go_forward`, `reload`,
//! `get_url`, `get_title`.
//!
//! A navigation that replaces the document drops the task's index snapshot: old indices must
//! never address the new page. A same-document navigation (a fragment) keeps it: the document
//! and its elements are the same.

use serde_json::{json, Value};

use crate::browser::tab::Tab;
use crate::error::CommandError;
use crate::executor::Cx;
use crate::protocol::{ErrorCode, Params};
use crate::registry::{CommandFuture, CommandSpec, Kind, ParamSpec};

const URL_PARAM: &[ParamSpec] = &[ParamSpec {
    name: "url",
    kind: Kind::String,
    required: true,
    default: None,
    doc: "absolute URL to open (http, https, file, data or about)",
}];

/// The navigation group.
pub const SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "navigate",
        group: "navigation",
        summary: "Open a URL in the current tab (synonym of go_to_url)",
        doc: "Exact synonym of go_to_url: same implementation and receipt.",
        params: URL_PARAM,
        needs_task: true,
        mutates_page: true,
        retry_safe: true,
        long_running: false,
        alias_of: Some("go_to_url"),
        example: "page:navigate{ url = \"http://127.0.0.1:8000/\" }",
        handler: go_to_url,
    },
    CommandSpec {
        name: "go_to_url",
        group: "navigation",
        summary: "Open a URL in the current tab and wait for it to load",
        doc: "Navigates the current tab and waits for the load event (30 s at most). Answers the \
              HTTP status of the main response (0 when there is none, as for about:blank). \
              Chrome's own network error page is reported as NETWORK_ERROR with `netError`.",
        params: URL_PARAM,
        needs_task: true,
        mutates_page: true,
        retry_safe: true,
        long_running: false,
        alias_of: None,
        example:
            "local r = page:go_to_url{ url = \"http://127.0.0.1:8000/\" }\nprint(r.data.status)",
        handler: go_to_url,
    },
    CommandSpec {
        name: "go_back",
        group: "navigation",
        summary: "Go one step back in the tab's history",
        doc:
            "Fails with 'cannot go back: no usable history' when there is no earlier entry or the \
              URL did not change.",
        params: &[],
        needs_task: true,
        mutates_page: true,
        retry_safe: true,
        long_running: false,
        alias_of: None,
        example: "page:go_back()",
        handler: go_back,
    },
    CommandSpec {
        name: "go_forward",
        group: "navigation",
        summary: "Go one step forward in the tab's history",
        doc: "Fails with 'cannot go forward: no usable history' when there is no later entry.",
        params: &[],
        needs_task: true,
        mutates_page: true,
        retry_safe: true,
        long_running: false,
        alias_of: None,
        example: "page:go_forward()",
        handler: go_forward,
    },
    CommandSpec {
        name: "reload",
        group: "navigation",
        summary: "Reload the current page and wait for it to load",
        doc: "Reloads the main frame and waits for the load event; answers the document's status.",
        params: &[],
        needs_task: true,
        mutates_page: true,
        retry_safe: true,
        long_running: false,
        alias_of: None,
        example: "page:reload()",
        handler: reload,
    },
    CommandSpec {
        name: "get_url",
        group: "navigation",
        summary: "Read the current tab's URL",
        doc: "The URL of the current tab's main frame.",
        params: &[],
        needs_task: true,
        mutates_page: false,
        retry_safe: true,
        long_running: false,
        alias_of: None,
        example: "print(page:get_url().data.url)",
        handler: get_url,
    },
    CommandSpec {
        name: "get_title",
        group: "navigation",
        summary: "Read the current tab's title",
        doc: "The document title of the current tab ('' when unreadable).",
        params: &[],
        needs_task: true,
        mutates_page: false,
        retry_safe: true,
        long_running: false,
        alias_of: None,
        example: "print(page:get_title().data.title)",
        handler: get_title,
    },
];

fn go_to_url(cx: Cx, p: &mut Params) -> Result<CommandFuture, CommandError> {
    let url = p.url_req("url")?;
    Ok(Box::pin(async move {
        let task = cx.task()?;
        let tab = task.tab()?;
        // Dropped before navigating, so that a navigation cut short leaves no stale indices, and
        // put back when the document stayed (its elements are the same ones).
        let snapshot = task.snapshot();
        task.set_snapshot(None);
        let nav = tab.navigate(&url).await?;
        if let Some(error) = nav.error_text {
            return Err(network_error(&tab, &url, &error, nav.status, nav.is_download).await);
        }
        if nav.same_document {
            task.set_snapshot(snapshot.map(|s| (*s).clone()));
        }
        Ok(json!({
            "status": nav.status,
            "url": tab.url().await?,
            "sameDocument": nav.same_document,
        }))
    }))
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
    let mut details = json!({
        "netError": code,
        "networkErrorPage": error_page,
        "urlRequested": url,
        "hint": if code == "ERR_ABORTED" {
            "the navigation was replaced or cancelled (no content, a download, a redirect or another navigation); the previous page stays"
        } else {
            "the browser could not reach the site: check the address, the server, a proxy or VPN"
        },
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
    CommandError::new(
        ErrorCode::NetworkError,
        format!("loading `{url}` failed with {error}{why}"),
    )
    .with_details(details)
}

async fn history_step(cx: Cx, delta: i64, what: &str) -> Result<Value, CommandError> {
    let task = cx.task()?;
    let tab = task.tab()?;
    let history = tab.call("Page.getNavigationHistory", json!({})).await?;
    let current = history["currentIndex"].as_i64().unwrap_or(0);
    let entries = history["entries"].as_array().cloned().unwrap_or_default();
    let target = usize::try_from(current + delta)
        .ok()
        .and_then(|i| entries.get(i));
    let old_url = tab.url().await?;
    let Some(entry) = target else {
        return Err(CommandError::failed(format!(
            "cannot go {what}: no usable history"
        )));
    };
    if entry["url"] == old_url.as_str() {
        return Err(CommandError::failed(format!(
            "cannot go {what}: no usable history (the entry has the same URL)"
        )));
    }
    task.set_snapshot(None);
    let status = tab
        .navigate_with(
            "Page.navigateToHistoryEntry",
            json!({"entryId": entry["id"]}),
            Some(&old_url),
        )
        .await?;
    // The step went through: a URL unreadable mid-redirect is reported as null, never as a
    // failure (a retry would step twice).
    Ok(json!({"status": status, "url": tab.url().await.ok()}))
}

fn go_back(cx: Cx, _p: &mut Params) -> Result<CommandFuture, CommandError> {
    Ok(Box::pin(history_step(cx, -1, "back")))
}

fn go_forward(cx: Cx, _p: &mut Params) -> Result<CommandFuture, CommandError> {
    Ok(Box::pin(history_step(cx, 1, "forward")))
}

fn reload(cx: Cx, _p: &mut Params) -> Result<CommandFuture, CommandError> {
    Ok(Box::pin(async move {
        let task = cx.task()?;
        let tab = task.tab()?;
        task.set_snapshot(None);
        let status = tab.navigate_with("Page.reload", json!({}), None).await?;
        Ok(json!({"status": status, "url": tab.url().await.ok()}))
    }))
}

fn get_url(cx: Cx, _p: &mut Params) -> Result<CommandFuture, CommandError> {
    Ok(Box::pin(async move {
        Ok(json!({"url": cx.tab()?.url().await?}))
    }))
}

fn get_title(cx: Cx, _p: &mut Params) -> Result<CommandFuture, CommandError> {
    Ok(Box::pin(async move {
        Ok(json!({"title": cx.tab()?.title().await?}))
    }))
}
