//! Cookies and local storage: `get_cookies`, `set_cookie`, `clear_cookies`,
//! `get_local_storage`, `set_local_storage`, `clear_local_storage`.
//!
//! Cookies are the browser's, not the task's: every task runs in the one shared profile, so a
//! cookie one task sets is sent by every task's pages, and `clear_cookies` empties the jar for
//! all of them (the catalogue says so too). `get_cookies` without `url` lists the whole jar; with
//! `url`, the cookies a request to that URL would carry. `set_cookie` without `url` sets the
//! cookie for the current page's URL. Each write reads its effect back before answering.
//!
//! Local storage belongs to an origin: the current page's (main frame), read and written in the
//! page by one probe (`js/local_storage.js`).

use serde::Deserialize;
use serde_json::{json, Value};

use crate::command::*;
use crate::error::CommandError;
use crate::js;
use crate::protocol::Params;

/// The storage group.
pub const SPECS: &[CommandSpec] = &[
    Group::Storage
        .read("get_cookies", get_cookies)
        .summary("List cookies: the whole shared jar, or those a request to `url` would carry")
        .doc("Cookies are the browser's (one shared profile): every task sees the same jar. \
              Without `url` every cookie is listed; with it (an absolute URL), only those sent \
              to that URL. Each: name, value, domain, path, expires, httpOnly, secure, sameSite.")
        .params(&[string("url", "only cookies for this URL")])
        .example("for _, c in ipairs(page:get_cookies{ url = \"https://example.com\" }:unwrap().cookies) do print(c.name, c.value) end"),
    Group::Storage
        .action("set_cookie", set_cookie)
        .summary("Set a cookie (name=value) for `url`, or for the current page's URL")
        .doc("The cookie goes into the shared jar (every task's pages send it). Without `url` \
              it belongs to the current page's URL, which must then be http(s). An empty name \
              or value is missing (INVALID_ARGUMENT); a cookie the browser refuses (bad domain) \
              fails and nothing is set. Answers the cookie as read back.")
        .params(&[
            string("name", "cookie name").req(),
            string("value", "cookie value (empty counts as missing)").req().secret(Secrecy::Always),
            string("url", "URL the cookie belongs to (recommended; otherwise domain validity is the caller's problem)"),
        ])
        .example("page:set_cookie{ name = \"session\", value = \"abc\", url = \"https://example.com\" }"),
    Group::Storage
        .action("clear_cookies", clear_cookies)
        .no_capture()
        .summary("Delete every cookie of the shared browser (affects every task)")
        .doc("The jar is the browser's: other tasks lose their cookies too. Answers how many \
              were there (`cleared`) and how many are left (`remaining`, 0).")
        .example("page:clear_cookies()"),
    Group::Storage
        .read("get_local_storage", get_local_storage)
        .summary("Read one localStorage item, or all of them as a JSON string (current origin)")
        .doc("The current page's origin (main frame). With `key`: its value (null when unset); \
              without: every item as a JSON object text. Also `count` and `origin`.")
        .params(&[string("key", "key; absent -> whole storage as a JSON string")])
        .example("local all = page:get_local_storage{}:unwrap().value"),
    Group::Storage
        .action("set_local_storage", set_local_storage)
        .summary("Set one localStorage item of the current page's origin")
        .doc("Current page origin only. The value is stored as text (absent = \"\"); answers \
              the value read back, the previous one, `count` and `origin`.")
        .params(&[
            string("key", "key").req(),
            string("value", "value (stringified)"),
        ])
        .example("page:set_local_storage{ key = \"theme\", value = \"dark\" }"),
    Group::Storage
        .action("clear_local_storage", clear_local_storage)
        .no_capture()
        .summary("Remove every localStorage item of the current page's origin")
        .doc("Current page origin only; other origins' storage is kept. Answers `cleared` (how \
              many items there were) and `origin`.")
        .example("page:clear_local_storage()"),
];

/// An optional absolute URL param.
fn url_opt(p: &mut Params, name: &str) -> Result<Option<String>, CommandError> {
    match p.str_opt(name)? {
        Some(_) => Ok(Some(p.url_req(name)?)),
        None => Ok(None),
    }
}

fn get_cookies(p: &mut Params) -> Prepared<TaskCx> {
    let url = url_opt(p, "url")?;
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        let cookies = match &url {
            Some(url) => tab.cookies_for(url).await?,
            None => tab.all_cookies().await?,
        };
        Ok(json!({
            "count": cookies.len(),
            "cookies": cookies,
            "url": url,
            "scope": if url.is_some() { "url" } else { "browser" },
        }))
    })
}

fn set_cookie(p: &mut Params) -> Prepared<TaskCx> {
    let name = p.str_req("name")?;
    if name
        .chars()
        .any(|c| c == '=' || c == ';' || c.is_whitespace() || c.is_control())
    {
        return Err(CommandError::invalid(
            "name",
            format!("param `name`: `{name}` is not a cookie name (no `=`, `;`, spaces or control characters)"),
        ));
    }
    let value = p.str_req("value")?;
    if value.chars().any(|c| c == ';' || c.is_control()) {
        return Err(CommandError::invalid(
            "value",
            "param `value`: a cookie value holds no `;` or control characters",
        ));
    }
    let url = url_opt(p, "url")?;
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        let url = match url {
            Some(url) => url,
            None => {
                let here = tab.url().await?;
                if !(here.starts_with("http://") || here.starts_with("https://")) {
                    return Err(CommandError::invalid(
                        "url",
                        format!(
                            "param `url` is needed: the current page `{here}` has no cookie domain"
                        ),
                    ));
                }
                here
            }
        };
        if !tab.set_cookie(&name, &value, &url).await? {
            return Err(CommandError::failed(format!(
                "the browser refused cookie `{name}` for {url}"
            )));
        }
        // The jar changed either way: a cookie the browser took but will not send to `url`
        // (a domain or path of its own) is said, not answered as a failure.
        let sent = tab.cookies_for(&url).await?;
        let cookie = sent
            .iter()
            .find(|c| c["name"] == name.as_str() && c["value"] == value.as_str())
            .or_else(|| sent.iter().find(|c| c["name"] == name.as_str()))
            .cloned();
        let mut data =
            json!({"name": name, "url": url, "sent": cookie.is_some(), "cookie": cookie});
        if cookie.is_none() {
            data["warning"] = json!(format!(
                "cookie `{name}` was stored but a request to {url} does not carry it (domain or path mismatch)"
            ));
        }
        Ok(data)
    })
}

fn clear_cookies(_p: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move {
        let tab = cx.tab()?;
        let before = tab.all_cookies().await?.len();
        tab.clear_all_cookies().await?;
        let remaining = tab.all_cookies().await?.len();
        Ok(json!({"cleared": before, "remaining": remaining}))
    })
}

/// What the local-storage probe answers.
#[derive(Deserialize)]
struct Stored {
    #[serde(default)]
    value: Value,
    #[serde(default)]
    previous: Value,
    #[serde(default)]
    cleared: Option<u64>,
    count: u64,
    origin: String,
}

async fn local_storage(cx: &TaskCx, arg: Value) -> Result<Stored, CommandError> {
    let tab = cx.tab()?;
    let main = tab.main_frame().await?;
    tab.call_probe(&main, js::LOCAL_STORAGE_JS, arg).await
}

fn get_local_storage(p: &mut Params) -> Prepared<TaskCx> {
    let key = p.str_keep_empty("key")?;
    run(move |cx: TaskCx| async move {
        let s = local_storage(&cx, json!({"op": "get", "key": key})).await?;
        Ok(json!({"key": key, "value": s.value, "count": s.count, "origin": s.origin}))
    })
}

fn set_local_storage(p: &mut Params) -> Prepared<TaskCx> {
    let key = p.str_req("key")?;
    let value = p.str_keep_empty("value")?.unwrap_or_default();
    run(move |cx: TaskCx| async move {
        let s = local_storage(&cx, json!({"op": "set", "key": key, "value": value})).await?;
        if s.value.as_str() != Some(value.as_str()) {
            return Err(CommandError::failed(format!(
                "localStorage `{key}` reads back {} after the write",
                s.value
            )));
        }
        Ok(json!({
            "key": key, "value": s.value, "previous": s.previous,
            "count": s.count, "origin": s.origin,
        }))
    })
}

fn clear_local_storage(_p: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move {
        let s = local_storage(&cx, json!({"op": "clear"})).await?;
        Ok(json!({"cleared": s.cleared.unwrap_or(0), "count": s.count, "origin": s.origin}))
    })
}
