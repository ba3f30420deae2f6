//! Lifecycle: `start`, `close`, `shutdown`.
//!
//! One shared browser serves every task; a task owns its tabs. The first `start` launches the
//! browser, the last `close` (or `shutdown`) stops it.

use serde_json::{json, Value};

use crate::browser::settings::{Proxy, Setting};
use crate::browser::task::{Task, TaskId};
use crate::command::*;
use crate::error::CommandError;
use crate::protocol::{ErrorCode, Params};

/// The lifecycle group.
pub const SPECS: &[CommandSpec] = &[
    Group::Lifecycle
        .engine("start", start)
        .summary("Create a task with its own tab, launching the shared browser if needed")
        .doc("Creates a task (the seed's browser instance) that owns one fresh tab. The first task \
              launches the shared Chromium; later tasks open a tab in it. With an envelope id that \
              is already live the call fails: close it first or use another id. moonpilot's \
              extensions give the task an identity of its own: proxy (in a browser context of \
              its own; credentials answer the proxy's challenge), userAgent, locale, timezone, \
              geolocation, viewport, for each of its tabs; `identity` says what it runs as.")
        .params(&[
            boolean("headless", "run without a window; absent means headless (unless the host was started with --headful)").or("true"),
            string("browser", "auto | chromium (chrome, edge and firefox are refused: moonpilot drives Chromium)"),
            boolean("networkRecording", "per-task request/response recording on or off; absent = global setting"),
            string("proxy", "the task's proxy: http://[user:pass@]host:port, https://…, socks4:// or socks5://host:port; the task gets a browser context of its own (an extension)"),
            string("proxyBypass", "hosts that skip the proxy, Chromium's list (`*.internal;10.0.0.0/8`); `<-loopback>` sends loopback through it too"),
            string("userAgent", "the task's User-Agent and navigator.userAgent (an extension)"),
            string("locale", "the task's locale, BCP 47 (`de-DE`): navigator.language, Intl and Accept-Language (an extension)"),
            string("timezone", "the task's IANA time zone (`Europe/Berlin`) (an extension)"),
            object("geolocation", "{latitude, longitude}: the task's position, the permission granted (an extension)"),
            object("viewport", "{width, height} in CSS px (an extension; as set_viewport)"),
        ])
        .example("local page = browser.start{ headless = true }")
        .mutates(true)
        .retry_safe(false)
        .opens(Opens::Task),
    Group::Lifecycle
        .action("close", close)
        .summary("Close the task's tabs and forget the task; the last task stops the browser")
        .doc("Closes only this task's tabs. A command still running on the task ends with \
              TASK_NOT_FOUND; close never queues behind it. When no task is left the shared \
              browser exits (a persistent --profile keeps its login state).")
        .example("page:close()")
        .no_capture()
        .lane_free()
        .way_out(),
    Group::Lifecycle
        .engine("shutdown", shutdown)
        .summary("Close every task and the shared browser")
        .doc("Closes every task and stops the shared browser; the host keeps running.")
        .example("browser.call(\"shutdown\")")
        .mutates(true)
        .retry_safe(false)
        .way_out(),
];

const BROWSER_CHOICES: &str = "auto, chromium, chrome, edge, firefox";

/// Normalises the `browser` param; only Chromium is honoured.
fn requested_browser(value: Option<String>) -> Result<String, CommandError> {
    let Some(raw) = value else {
        return Ok("auto".into());
    };
    let norm = match raw.trim().to_ascii_lowercase().as_str() {
        "auto" | "default" => "auto",
        "chromium" | "bundled" | "bundled-chromium" | "playwright-chromium" => "chromium",
        "chrome" | "google-chrome" | "googlechrome" => "chrome",
        "edge" | "msedge" | "ms-edge" | "microsoft-edge" => "edge",
        "firefox" | "ff" | "gecko" => "firefox",
        _ => {
            return Err(CommandError::invalid(
                "browser",
                format!("param `browser`: unknown browser `{raw}`; allowed: {BROWSER_CHOICES}"),
            ))
        }
    };
    if matches!(norm, "chrome" | "edge" | "firefox") {
        return Err(CommandError::new(
            ErrorCode::ActionFailed,
            format!(
                "browser `{norm}` is not available: moonpilot drives Chromium (use `auto` or \
                 `chromium`); it never falls back silently"
            ),
        ));
    }
    Ok(norm.to_string())
}

/// What a task runs as (`start`'s extensions): its proxy, and the settings its tabs get.
#[derive(Debug, Default)]
struct Identity {
    proxy: Option<Proxy>,
    settings: Vec<Setting>,
    shown: serde_json::Map<String, Value>,
}

impl Identity {
    /// Reads and checks the identity params: a bad one is refused before anything starts.
    fn read(p: &mut Params) -> Result<Identity, CommandError> {
        let mut id = Identity::default();
        let bypass = p.str_opt("proxyBypass")?;
        if let Some(raw) = p.str_opt("proxy")? {
            let proxy =
                Proxy::parse(&raw, bypass).map_err(|e| CommandError::invalid("proxy", e))?;
            id.shown.insert("proxy".into(), proxy.to_json());
            id.proxy = Some(proxy);
        } else if bypass.is_some() {
            return Err(CommandError::invalid(
                "proxyBypass",
                "param `proxyBypass` without a `proxy`",
            ));
        }
        let user_agent = p.str_opt("userAgent")?;
        if let Some(ua) = &user_agent {
            if ua.trim().is_empty() || ua.chars().any(char::is_control) {
                return Err(CommandError::invalid(
                    "userAgent",
                    "param `userAgent`: empty, or holds a control character",
                ));
            }
            id.shown.insert("userAgent".into(), json!(ua));
        }
        let locale = p.str_opt("locale")?;
        if let Some(l) = &locale {
            let ok = l.split('-').enumerate().all(|(i, part)| {
                let n = part.len();
                part.chars().all(|c| c.is_ascii_alphanumeric())
                    && if i == 0 {
                        (2..=3).contains(&n)
                    } else {
                        (2..=8).contains(&n)
                    }
            });
            if !ok {
                return Err(CommandError::invalid(
                    "locale",
                    format!(
                        "param `locale`: `{l}` is no BCP 47 locale (write `en-US`, `de-DE`, `ja`)"
                    ),
                ));
            }
            id.shown.insert("locale".into(), json!(l));
        }
        if user_agent.is_some() || locale.is_some() {
            id.settings.push(Setting::Agent { user_agent, locale });
        }
        if let Some(zone) = p.str_opt("timezone")? {
            let ok = !zone.is_empty()
                && zone
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/_+-".contains(c));
            if !ok {
                return Err(CommandError::invalid(
                    "timezone",
                    format!("param `timezone`: `{zone}` is no IANA time zone (write `Europe/Berlin`, `UTC`)"),
                ));
            }
            id.shown.insert("timezone".into(), json!(zone));
            id.settings.push(Setting::Timezone(zone));
        }
        if let Some(g) = p.object_opt("geolocation")? {
            let coord = |k: &str, max: f64| {
                g.get(k)
                    .and_then(Value::as_f64)
                    .filter(|v| v.abs() <= max)
                    .ok_or_else(|| {
                        CommandError::invalid(
                            "geolocation",
                            format!("param `geolocation`: `{k}` must be a number within ±{max}"),
                        )
                    })
            };
            let (lat, lon) = (coord("latitude", 90.0)?, coord("longitude", 180.0)?);
            id.shown.insert(
                "geolocation".into(),
                json!({"latitude": lat, "longitude": lon}),
            );
            id.settings.push(Setting::Geolocation(lat, lon));
        }
        if let Some(v) = p.object_opt("viewport")? {
            let side = |k: &str| {
                v.get(k)
                    .and_then(Value::as_u64)
                    .filter(|n| (1..=16_384).contains(n))
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| {
                        CommandError::invalid(
                            "viewport",
                            format!("param `viewport`: `{k}` must be an integer from 1 to 16384"),
                        )
                    })
            };
            let (w, h) = (side("width")?, side("height")?);
            id.shown
                .insert("viewport".into(), json!({"width": w, "height": h}));
            id.settings.push(Setting::Viewport(w, h));
        }
        Ok(id)
    }

    /// Gives `task` its settings and its proxy's credentials; an error names what the browser
    /// refused.
    async fn apply(&self, task: &Task) -> Result<(), CommandError> {
        for setting in &self.settings {
            if let Setting::Timezone(zone) = setting {
                let tab = task.tab()?;
                let known: bool = tab
                    .call_probe(
                        &tab.main_frame_local(),
                        crate::js::TIME_ZONE_JS,
                        json!({"zone": zone}),
                    )
                    .await?;
                if !known {
                    return Err(CommandError::invalid(
                        "timezone",
                        format!("param `timezone`: the browser refused it: `{zone}` is no time zone it knows (IANA ids: `Europe/Berlin`, `UTC`)"),
                    ));
                }
            }
            task.apply_setting(setting.clone()).await.map_err(|e| {
                let param = match setting {
                    Setting::Timezone(_) => "timezone",
                    Setting::Agent { .. } => "locale",
                    Setting::Geolocation(..) => "geolocation",
                    _ => "viewport",
                };
                CommandError::invalid(
                    param,
                    format!("param `{param}`: the browser refused it: {}", e.msg),
                )
            })?;
        }
        if let Some(creds) = self.proxy.as_ref().and_then(|p| p.credentials.clone()) {
            task.change_routes(|r| r.set_proxy_credentials(Some(creds)))
                .await?;
        }
        Ok(())
    }
}

fn start(p: &mut Params) -> Prepared<Cx> {
    let headless = p.bool_opt("headless")?;
    let requested = requested_browser(p.str_opt("browser")?)?;
    let recording = p.bool_opt("networkRecording")?;
    let identity = Identity::read(p)?;
    run(move |cx: Cx| async move {
        let headless = headless.unwrap_or(!cx.engine.config.launch.headful);
        let id = cx.task_id.unwrap_or_else(TaskId::generate);
        // Taken first: a start that fails from here on leaves no isolation pending.
        let isolated = cx.engine.take_isolated(id);
        if cx.engine.task(id).is_some() {
            // Checked before anything runs: an invalid argument, nothing was started.
            return Err(CommandError::invalid(
                "id",
                format!("task {id} is already running; close it first or use another id"),
            ));
        }
        let _starting = cx.engine.begin_start();
        let browser = cx.engine.browser_for_start(headless).await?;
        // Boxed: a tab's attach is a large future, and `start` runs on its caller's stack.
        let opened = Box::pin(Task::open(
            id,
            browser.clone(),
            isolated,
            identity.proxy.as_ref(),
        ))
        .await;
        let task = match opened {
            Ok(t) => t,
            Err(e) => {
                cx.engine.stop_browser_if_idle().await;
                return Err(e);
            }
        };
        if let Err(e) = identity.apply(&task).await {
            // Not half made: the task goes, and the browser when it was the only one.
            task.close_tabs().await;
            cx.engine.stop_browser_if_idle().await;
            return Err(e);
        }
        if let Err(task) = cx.engine.insert_task(task) {
            // Another `start` with the same id won the race.
            task.close_tabs().await;
            return Err(CommandError::failed(format!(
                "task {id} is already running"
            )));
        }
        let (profile_seen_before, profile_note) = match &browser.mode {
            crate::browser::Mode::Managed {
                profile_seen_before: true,
                ..
            } => (true, "the profile directory had content before launch: earlier logins may still be valid"),
            crate::browser::Mode::Managed { temporary: true, .. } => {
                (false, "fresh temporary profile: no login state; it is removed when the browser stops")
            }
            crate::browser::Mode::Managed { .. } => (false, "new profile directory: no earlier login state"),
            crate::browser::Mode::Attached { .. } => (false, "attached over CDP: the remote browser's profile is used"),
        };
        Ok(json!({
            "id": id.to_string(),
            "networkRecording": match recording {
                Some(true) => Value::from("on"),
                Some(false) => Value::from("off"),
                None => Value::from("on (global setting)"),
            },
            "browser": browser.describe(),
            "requestedBrowser": requested,
            "effectiveBrowser": "chromium",
            "engineHonored": true,
            "profileSeenBefore": profile_seen_before,
            "profileNote": profile_note,
            "identity": identity.shown,
            "isolated": isolated || identity.proxy.is_some(),
        }))
    })
}

fn close(_p: &mut Params) -> Prepared<TaskCx> {
    run(move |cx: TaskCx| async move {
        let task = cx.task.clone();
        let engine = cx.engine.clone();
        // Its own task: marking the task closed ends whatever runs on it — a batch or a
        // recipe this close is a step of included — and that must not cut the close itself off.
        finish(async move {
            task.mark_closed();
            engine.remove_task(task.id);
            task.close_tabs().await;
            engine.stop_browser_if_idle().await;
        })
        .await?;
        Ok(json!({}))
    })
}

fn shutdown(_p: &mut Params) -> Prepared<Cx> {
    run(move |cx: Cx| async move {
        let engine = cx.engine.clone();
        // Its own task, as `close`: a shutdown that is a batch step ends its own batch.
        let closed = finish(async move { engine.shutdown().await }).await?;
        let ids: Vec<String> = closed.iter().map(|id| id.to_string()).collect();
        Ok(json!({"closedTasks": ids, "remainingTasks": cx.engine.tasks().len()}))
    })
}

/// Runs `work` to its end in a task of its own: dropping the caller does not stop it.
async fn finish<T: Send + 'static>(
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, CommandError> {
    tokio::spawn(work)
        .await
        .map_err(|e| CommandError::failed(format!("the work was lost: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_choices() {
        assert_eq!(requested_browser(None).unwrap(), "auto");
        assert_eq!(
            requested_browser(Some("Bundled".into())).unwrap(),
            "chromium"
        );
        assert_eq!(
            requested_browser(Some("ff".into())).unwrap_err().code,
            ErrorCode::ActionFailed
        );
        let e = requested_browser(Some("netscape".into())).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.msg.contains("allowed: auto, chromium"), "{}", e.msg);
    }
}
