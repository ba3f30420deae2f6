//! Browser settings of a task: `set_viewport`, `set_geolocation`, `set_offline`, `set_headers`,
//! `set_media`, `set_credentials`.
//!
//! Every setting is the task's: it applies to each of the task's tabs, and to each tab that joins
//! the task later (`new_tab`, a popup its pages open, a replacement tab), through
//! `Task::apply_setting` and `Task::join_tab`. Other tasks' tabs are never touched, with two
//! exceptions the browser imposes: the geolocation permission is granted browser-wide, and
//! cookies (the `storage` group) are one shared jar. HTTP credentials are answered through the
//! task's tabs' Fetch domain: no browser relaunch (`restarted:false`), and other tasks'
//! challenges are never answered with them. Once a server accepted them, though, Chromium keeps
//! them in its HTTP auth cache, which is the profile's like the cookie jar: other tasks' requests
//! to that origin and realm may then send them too, and a later wrong password for that origin
//! is not tried (the cached one is sent first).
//! Params are checked before anything is sent: a bad one changes nothing.

use serde_json::{json, Map, Value};

use crate::browser::settings::{ColorScheme, Setting};
use crate::command::*;
use crate::error::CommandError;
use crate::protocol::Params;

/// The largest viewport side, in CSS px (the tallest screenshot; the auto-capture follows).
const MAX_SIDE: f64 = 16_384.0;

/// The settings group.
pub const SPECS: &[CommandSpec] = &[
    Group::Settings
        .navigating("set_viewport", set_viewport)
        .summary("Pin the viewport of the task's tabs to width x height CSS px")
        .doc("Applies to every tab of the task, and to tabs it opens later; there is no way \
              back to the window's own size except a new task. Both sides are integers >= 1 \
              (anything else is INVALID_ARGUMENT and nothing changes). Answers width, height and \
              `tabs` (how many tabs have it).")
        .params(&[
            int("width", "CSS px").req().range(1.0, MAX_SIDE),
            int("height", "CSS px").req().range(1.0, MAX_SIDE),
        ])
        .example("page:set_viewport{ width = 390, height = 844 }"),
    Group::Settings
        .action("set_geolocation", set_geolocation)
        .no_capture()
        .summary("Report this position to navigator.geolocation (and grant the permission)")
        .doc("The position applies to the task's tabs (and tabs opened later); the geolocation \
              permission is granted browser-wide (all origins, every task). Latitude -90..90, \
              longitude -180..180.")
        .params(&[
            number("latitude", "latitude").req().range(-90.0, 90.0),
            number("longitude", "longitude").req().range(-180.0, 180.0),
        ])
        .example("page:set_geolocation{ latitude = 48.8584, longitude = 2.2945 }"),
    Group::Settings
        .navigating("set_offline", set_offline)
        .no_capture()
        .summary("Take the task's tabs offline (true) or back online (false, the default)")
        .doc("Network emulation of the task's tabs (and tabs opened later): offline, their \
              requests fail as without a network; other tasks stay online. Answers `offline`.")
        .params(&[boolean("offline", "true = offline").or("false")])
        .example("page:set_offline{ offline = true }"),
    Group::Settings
        .navigating("set_headers", set_headers)
        .no_capture()
        .summary("Send these extra HTTP headers with every request of the task's tabs")
        .doc("headersJson is a JSON object text; values are stringified (strings as they are). \
              Replaces earlier extra headers; `{}` removes them. For the task's tabs only (and \
              tabs opened later). Text that is not a JSON object is INVALID_ARGUMENT \
              ('set_headers failed: ...') and changes nothing. Answers `headers`.")
        .params(&[string(
            "headersJson",
            "JSON object TEXT, e.g. {\"X-Key\":\"v\"}; values are stringified",
        )
        .req()])
        .example("page:set_headers{ headersJson = '{\"X-Key\":\"v\"}' }"),
    Group::Settings
        .navigating("set_media", set_media)
        .summary("Emulate prefers-color-scheme: light, dark or no-preference")
        .doc("For the task's tabs (and tabs opened later). Anything but light/dark is \
              no-preference, which lifts the emulation. Answers `colorScheme`: LIGHT, DARK or \
              NO_PREFERENCE.")
        .params(&[string(
            "colorScheme",
            "light | dark | no-preference (anything else = no-preference)",
        )
        .req()])
        .example("page:set_media{ colorScheme = \"dark\" }"),
    Group::Settings
        .action("set_credentials", set_credentials)
        .summary("Answer HTTP basic-auth challenges of the task's tabs with these credentials")
        .doc("Through the tabs' Fetch domain: no browser relaunch (`restarted` is false); other \
              tasks' challenges are not answered; tabs opened later included. Each challenge is \
              answered once, then cancelled (a wrong password fails the load). Navigate or \
              reload afterwards. Accepted credentials enter Chromium's profile-wide auth cache: \
              later requests to that origin (any task's) may reuse them.")
        .params(&[
            string("username", "HTTP basic auth user").req(),
            string("password", "password").req().secret(Secrecy::Always),
        ])
        .example("page:set_credentials{ username = \"user\", password = \"secret\" }\npage:navigate{ url = \"https://example.com/private\" }"),
];

fn side(p: &mut Params, name: &str) -> Result<u32, CommandError> {
    let n = p.int_req(name)?;
    u32::try_from(n)
        .ok()
        .filter(|n| *n >= 1 && f64::from(*n) <= MAX_SIDE)
        .ok_or_else(|| {
            CommandError::invalid(name, format!("param `{name}`: must be >= 1, got {n}"))
        })
}

fn set_viewport(p: &mut Params) -> Prepared<TaskCx> {
    let width = side(p, "width")?;
    let height = side(p, "height")?;
    run(move |cx: TaskCx| async move {
        let tabs = cx
            .task
            .apply_setting(Setting::Viewport(width, height))
            .await?;
        Ok(json!({"width": width, "height": height, "tabs": tabs}))
    })
}

fn coordinate(p: &mut Params, name: &str, limit: f64) -> Result<f64, CommandError> {
    let n = p.num_opt(name)?.ok_or_else(|| p.missing(name))?;
    if !n.is_finite() || n.abs() > limit {
        return Err(CommandError::invalid(
            name,
            format!("param `{name}`: must be within -{limit}..={limit}, got {n}"),
        ));
    }
    Ok(n)
}

fn set_geolocation(p: &mut Params) -> Prepared<TaskCx> {
    let latitude = coordinate(p, "latitude", 90.0)?;
    let longitude = coordinate(p, "longitude", 180.0)?;
    run(move |cx: TaskCx| async move {
        let tabs = cx
            .task
            .apply_setting(Setting::Geolocation(latitude, longitude))
            .await?;
        Ok(
            json!({"latitude": latitude, "longitude": longitude, "permission": "granted", "tabs": tabs}),
        )
    })
}

fn set_offline(p: &mut Params) -> Prepared<TaskCx> {
    let offline = p.bool_or("offline", false)?;
    run(move |cx: TaskCx| async move {
        let tabs = cx.task.apply_setting(Setting::Offline(offline)).await?;
        Ok(json!({"offline": offline, "tabs": tabs}))
    })
}

/// Parses `headersJson`: a JSON object whose values become strings; names are HTTP tokens.
fn parse_headers(text: &str) -> Result<Map<String, Value>, String> {
    let parsed: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    let Value::Object(map) = parsed else {
        return Err("not a JSON object".into());
    };
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    let mut out = Map::new();
    for (name, value) in map {
        if name.is_empty() || !name.chars().all(token) {
            return Err(format!("`{name}` is not a header name"));
        }
        let text = match value {
            Value::String(s) => s,
            Value::Null => String::new(),
            other => other.to_string(),
        };
        if text.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
            return Err(format!("the value of `{name}` holds a line break"));
        }
        out.insert(name, Value::String(text));
    }
    Ok(out)
}

fn set_headers(p: &mut Params) -> Prepared<TaskCx> {
    let text = p.str_req("headersJson")?;
    let headers = parse_headers(&text).map_err(|why| {
        CommandError::invalid(
            "headersJson",
            format!("set_headers failed: param `headersJson`: {why}"),
        )
    })?;
    run(move |cx: TaskCx| async move {
        let tabs = cx
            .task
            .apply_setting(Setting::Headers(headers.clone()))
            .await?;
        Ok(json!({"headers": headers, "tabs": tabs}))
    })
}

fn set_media(p: &mut Params) -> Prepared<TaskCx> {
    let scheme = ColorScheme::parse(&p.str_req("colorScheme")?);
    run(move |cx: TaskCx| async move {
        let tabs = cx.task.apply_setting(Setting::Media(scheme)).await?;
        Ok(json!({"colorScheme": scheme.enum_name(), "tabs": tabs}))
    })
}

fn set_credentials(p: &mut Params) -> Prepared<TaskCx> {
    let username = p.str_req("username")?;
    let password = p.str_req("password")?;
    if username.contains(':') {
        return Err(CommandError::invalid(
            "username",
            "param `username`: basic auth user names hold no `:`",
        ));
    }
    run(move |cx: TaskCx| async move {
        let ((), tabs) = cx
            .task
            .change_routes(|r| r.set_credentials(Some((username.clone(), password))))
            .await?;
        Ok(json!({"restarted": false, "username": username, "tabs": tabs}))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_stringified_and_checked() {
        let h = parse_headers(r#"{"X-Key":"v","X-N":5,"X-B":true}"#).unwrap_or_default();
        assert_eq!(h["X-Key"], "v");
        assert_eq!(h["X-N"], "5");
        assert_eq!(h["X-B"], "true");
        assert!(parse_headers("[1]").is_err());
        assert!(parse_headers("{").is_err());
        assert!(parse_headers(r#"{"bad name":"v"}"#).is_err());
        assert!(parse_headers(r#"{"X":"a\nb"}"#).is_err());
    }

    #[test]
    fn colour_schemes_follow_the_catalogue() {
        assert_eq!(ColorScheme::parse("DARK").enum_name(), "DARK");
        assert_eq!(ColorScheme::parse("light").enum_name(), "LIGHT");
        assert_eq!(ColorScheme::parse("sepia").enum_name(), "NO_PREFERENCE");
    }
}
