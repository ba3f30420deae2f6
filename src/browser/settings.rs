//! A task's browser settings (viewport, geolocation, offline mode, extra headers, colour scheme,
//! user agent and locale, time zone), the proxy of a task's own browser context, and the cookie
//! and local-storage calls of the `storage` group.
//!
//! Settings are per task: [`crate::browser::task::Task`] keeps them and applies each one to
//! every tab it has and to every tab that joins it later (`new_tab`, adopted popups,
//! replacements), so the CDP calls that make them are here, one per kind ([`Tab::apply_setting`]).
//! The exceptions are the browser's own: cookies live in the one shared profile (every task sees
//! the same jar) and the geolocation permission is granted browser-wide.
//!
//! HTTP credentials are not here: they are answered through the task's Fetch domain, with its
//! routes (`routes.rs`, the one owner of Fetch).

use serde_json::{json, Map, Value};

use super::Tab;
use crate::error::CommandError;

/// The colour scheme `set_media` emulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorScheme {
    /// `prefers-color-scheme: light`.
    Light,
    /// `prefers-color-scheme: dark`.
    Dark,
    /// No emulation: the browser's own preference.
    NoPreference,
}

impl ColorScheme {
    /// The catalogue's rule: `light`, `dark`, anything else is no preference.
    pub fn parse(raw: &str) -> ColorScheme {
        match raw.trim().to_ascii_lowercase().as_str() {
            "light" => ColorScheme::Light,
            "dark" => ColorScheme::Dark,
            _ => ColorScheme::NoPreference,
        }
    }

    /// The engine enum name the receipt echoes.
    pub fn enum_name(self) -> &'static str {
        match self {
            ColorScheme::Light => "LIGHT",
            ColorScheme::Dark => "DARK",
            ColorScheme::NoPreference => "NO_PREFERENCE",
        }
    }

    /// The media feature value (`""` lifts the emulation).
    fn feature(self) -> &'static str {
        match self {
            ColorScheme::Light => "light",
            ColorScheme::Dark => "dark",
            ColorScheme::NoPreference => "",
        }
    }
}

/// One setting, as a command changes it.
#[derive(Debug, Clone)]
pub enum Setting {
    /// The viewport, CSS px.
    Viewport(u32, u32),
    /// Latitude, longitude.
    Geolocation(f64, f64),
    /// Offline (true) or online.
    Offline(bool),
    /// Extra HTTP headers (values are strings), replacing earlier ones.
    Headers(Map<String, Value>),
    /// The emulated colour scheme.
    Media(ColorScheme),
    /// The user agent and the locale (`navigator.language`, `Intl`, `Accept-Language`); the
    /// browser's own user agent when only the locale is given.
    Agent {
        /// The `User-Agent` and `navigator.userAgent`.
        user_agent: Option<String>,
        /// A BCP 47 locale (`de-DE`).
        locale: Option<String>,
    },
    /// An IANA time zone (`Europe/Berlin`).
    Timezone(String),
}

/// The proxy of a task's own browser context (`start{proxy}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Proxy {
    /// `scheme://host:port`, as Chromium takes it.
    pub server: String,
    /// Chromium's bypass list (`<-loopback>` sends loopback through the proxy too).
    pub bypass: Option<String>,
    /// User and password, answered to the proxy's challenges.
    pub credentials: Option<(String, String)>,
}

impl Proxy {
    /// The proxy of URL `raw` (`http://`, `https://`, `socks4://` or `socks5://`, with
    /// credentials for the first two: Chromium answers no SOCKS authentication); `Err` says
    /// what is wrong.
    pub fn parse(raw: &str, bypass: Option<String>) -> Result<Proxy, String> {
        let url = url::Url::parse(raw.trim())
            .map_err(|e| format!("`{raw}` is no proxy URL ({e}): write scheme://host:port"))?;
        let scheme = url.scheme();
        if !["http", "https", "socks4", "socks5"].contains(&scheme) {
            return Err(format!(
                "proxy scheme `{scheme}`: http, https, socks4 and socks5 are the ones Chromium takes"
            ));
        }
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("`{raw}` names no proxy host"))?;
        let port = url
            .port_or_known_default()
            .or_else(|| (scheme.starts_with("socks")).then_some(1080))
            .ok_or_else(|| format!("`{raw}` names no proxy port"))?;
        if url.path() != "/" && !url.path().is_empty() || url.query().is_some() {
            return Err(format!("`{raw}`: a proxy URL has no path or query"));
        }
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        let credentials = (!url.username().is_empty()).then(|| {
            (
                decode(url.username()),
                decode(url.password().unwrap_or_default()),
            )
        });
        if credentials.is_some() && scheme.starts_with("socks") {
            return Err(format!(
                "a {scheme} proxy with a user and password: Chromium cannot authenticate to a SOCKS proxy (use an http proxy, or one that needs no login)"
            ));
        }
        if let Some(b) = &bypass {
            if b.chars().any(|c| c.is_control()) {
                return Err("proxyBypass holds a control character".into());
            }
        }
        Ok(Proxy {
            server: format!("{scheme}://{host}:{port}"),
            bypass,
            credentials,
        })
    }

    /// The proxy as receipts say it: its server, and its user (never the password).
    pub fn to_json(&self) -> Value {
        json!({
            "server": self.server,
            "bypass": self.bypass,
            "user": self.credentials.as_ref().map(|(u, _)| u),
        })
    }
}

/// What a task's settings commands have set so far.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    viewport: Option<(u32, u32)>,
    geolocation: Option<(f64, f64)>,
    offline: bool,
    headers: Option<Map<String, Value>>,
    media: Option<ColorScheme>,
    agent: Option<(Option<String>, Option<String>)>,
    timezone: Option<String>,
}

impl Settings {
    /// Records `setting` (a later one of a kind replaces the earlier).
    pub fn record(&mut self, setting: &Setting) {
        match setting {
            Setting::Viewport(w, h) => self.viewport = Some((*w, *h)),
            Setting::Geolocation(lat, lon) => self.geolocation = Some((*lat, *lon)),
            Setting::Offline(off) => self.offline = *off,
            Setting::Headers(h) => self.headers = Some(h.clone()),
            Setting::Media(m) => self.media = Some(*m),
            Setting::Agent { user_agent, locale } => {
                self.agent = Some((user_agent.clone(), locale.clone()))
            }
            Setting::Timezone(t) => self.timezone = Some(t.clone()),
        }
    }

    /// What a fresh tab needs to match: every setting that differs from a fresh tab's.
    pub fn to_apply(&self) -> Vec<Setting> {
        let mut out = Vec::new();
        if let Some((w, h)) = self.viewport {
            out.push(Setting::Viewport(w, h));
        }
        if let Some((lat, lon)) = self.geolocation {
            out.push(Setting::Geolocation(lat, lon));
        }
        if self.offline {
            out.push(Setting::Offline(true));
        }
        if let Some(h) = &self.headers {
            out.push(Setting::Headers(h.clone()));
        }
        if let Some(m) = self.media {
            out.push(Setting::Media(m));
        }
        if let Some((user_agent, locale)) = &self.agent {
            out.push(Setting::Agent {
                user_agent: user_agent.clone(),
                locale: locale.clone(),
            });
        }
        if let Some(t) = &self.timezone {
            out.push(Setting::Timezone(t.clone()));
        }
        out
    }
}

/// One cookie as the receipts show it.
fn cookie_json(c: &Value) -> Value {
    json!({
        "name": c["name"],
        "value": c["value"],
        "domain": c["domain"],
        "path": c["path"],
        "expires": c["expires"],
        "httpOnly": c["httpOnly"],
        "secure": c["secure"],
        "sameSite": c.get("sameSite").cloned().unwrap_or(Value::Null),
    })
}

fn cookies_of(res: &Value) -> Vec<Value> {
    res["cookies"]
        .as_array()
        .map(|a| a.iter().map(cookie_json).collect())
        .unwrap_or_default()
}

impl Tab {
    /// Applies one setting to this tab's page session.
    pub async fn apply_setting(&self, setting: &Setting) -> Result<(), CommandError> {
        match setting {
            Setting::Viewport(w, h) => {
                self.call(
                    "Emulation.setDeviceMetricsOverride",
                    json!({"width": w, "height": h, "deviceScaleFactor": 0, "mobile": false}),
                )
                .await?;
            }
            Setting::Geolocation(lat, lon) => {
                self.call(
                    "Emulation.setGeolocationOverride",
                    json!({"latitude": lat, "longitude": lon, "accuracy": 1}),
                )
                .await?;
                // Permissions belong to the browser context: granted for every origin.
                let mut grant = json!({"permissions": ["geolocation"]});
                if let Some(c) = self.context() {
                    grant["browserContextId"] = json!(c);
                }
                self.browser()
                    .call("Browser.grantPermissions", grant)
                    .await?;
            }
            Setting::Offline(offline) => {
                self.call(
                    "Network.emulateNetworkConditions",
                    json!({
                        "offline": offline,
                        "latency": 0,
                        "downloadThroughput": -1,
                        "uploadThroughput": -1,
                    }),
                )
                .await?;
            }
            Setting::Headers(headers) => {
                self.call("Network.setExtraHTTPHeaders", json!({"headers": headers}))
                    .await?;
            }
            Setting::Media(scheme) => {
                self.call(
                    "Emulation.setEmulatedMedia",
                    json!({"features": [{"name": "prefers-color-scheme", "value": scheme.feature()}]}),
                )
                .await?;
            }
            Setting::Agent { user_agent, locale } => {
                let user_agent = match user_agent {
                    Some(ua) => ua.clone(),
                    None => self.browser().call("Browser.getVersion", json!({})).await?
                        ["userAgent"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                };
                if let Some(l) = locale {
                    self.call("Emulation.setLocaleOverride", json!({"locale": l}))
                        .await?;
                }
                let mut params = json!({"userAgent": user_agent});
                if let Some(l) = locale {
                    params["acceptLanguage"] = json!(l);
                }
                self.call("Emulation.setUserAgentOverride", params).await?;
            }
            Setting::Timezone(zone) => {
                self.call("Emulation.setTimezoneOverride", json!({"timezoneId": zone}))
                    .await?;
            }
        }
        Ok(())
    }

    /// Every cookie of the tab's context: the profile's, which tasks share, or its task's own.
    pub async fn all_cookies(&self) -> Result<Vec<Value>, CommandError> {
        let params = match self.context() {
            Some(c) => json!({"browserContextId": c}),
            None => json!({}),
        };
        let res = self.browser().call("Storage.getCookies", params).await?;
        Ok(cookies_of(&res))
    }

    /// The cookies a request to `url` would carry.
    pub async fn cookies_for(&self, url: &str) -> Result<Vec<Value>, CommandError> {
        let res = self
            .call("Network.getCookies", json!({"urls": [url]}))
            .await?;
        Ok(cookies_of(&res))
    }

    /// Sets cookie `name=value` for `url` in the shared profile; false when the browser refused
    /// it (an invalid domain or name).
    pub async fn set_cookie(
        &self,
        name: &str,
        value: &str,
        url: &str,
    ) -> Result<bool, CommandError> {
        let res = self
            .call(
                "Network.setCookie",
                json!({"name": name, "value": value, "url": url}),
            )
            .await?;
        Ok(res["success"].as_bool().unwrap_or(true))
    }

    /// Sets a cookie from its CDP fields (`name`, `value`, and `url` or `domain` + `path`;
    /// `expires` in Unix seconds, `httpOnly`, `secure`) in the tab's context; false when the
    /// browser refused it.
    pub async fn add_cookie(&self, cookie: Value) -> Result<bool, CommandError> {
        let res = self.call("Network.setCookie", cookie).await?;
        Ok(res["success"].as_bool().unwrap_or(true))
    }

    /// Deletes the cookie `name` of `domain` and `path` in the tab's context.
    pub async fn delete_cookie(
        &self,
        name: &str,
        domain: &str,
        path: &str,
    ) -> Result<(), CommandError> {
        self.call(
            "Network.deleteCookies",
            json!({"name": name, "domain": domain, "path": path}),
        )
        .await?;
        Ok(())
    }

    /// Removes every cookie of the shared profile.
    pub async fn clear_all_cookies(&self) -> Result<(), CommandError> {
        self.call("Network.clearBrowserCookies", json!({})).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxies_parse_with_credentials_and_refuse_what_chromium_cannot() {
        let p = Proxy::parse(
            "http://u%40x:p%3Ass@127.0.0.1:8080",
            Some("<-loopback>".into()),
        )
        .expect("a proxy");
        assert_eq!(p.server, "http://127.0.0.1:8080");
        assert_eq!(p.credentials, Some(("u@x".into(), "p:ss".into())));
        assert_eq!(p.to_json()["user"], "u@x");
        assert!(!p.to_json().to_string().contains("p:ss"));
        assert_eq!(
            Proxy::parse("socks5://10.0.0.1", None).map(|p| p.server),
            Ok("socks5://10.0.0.1:1080".into())
        );
        assert_eq!(
            Proxy::parse("https://proxy.example", None).map(|p| p.server),
            Ok("https://proxy.example:443".into())
        );
        for bad in [
            "ftp://x:21",
            "socks5://u:p@x:1080",
            "http://x:1/path",
            "not a url",
            "http://:8080",
        ] {
            assert!(Proxy::parse(bad, None).is_err(), "{bad}");
        }
    }
}
