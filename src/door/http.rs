//! Which origins and hosts an HTTP door answers, and which bodies its JSON endpoints take (issue
//! 42 §1): the one rule behind the guards of the seed port (`server.rs`, `/mcp` included) and the
//! Splash port (`splash/http.rs`). Pure: header values and the bound address in, an answer out;
//! no HTTP crate, no I/O.
//!
//! - **Host** (DNS rebinding): a loopback name (`localhost`, `127.0.0.1`, `[::1]`) or the address
//!   the door is bound to, with any port, or an entry of `--allowed-hosts`. On an unspecified
//!   bind (`0.0.0.0`, `::`) the machine's names cannot be known, so any `Host` is answered (the
//!   token that such a bind requires guards it) unless `--allowed-hosts` is given. `*` answers
//!   any `Host`. A request without `Host` (HTTP/1.0) is answered: a browser always sends one.
//! - **Origin** (requests from web pages): a request without `Origin` (curl, the seed's Python
//!   client, scrapy-splash, MCP SDKs) is answered; one with `Origin` only when it is an entry of
//!   `--allowed-origins` (`scheme://host[:port]`, `:*` for any port, `null`, or `*` for any
//!   origin). A loopback origin is a web page too: the browser the engine drives can open one
//!   (a page of another local server, a mocked route, the server's own pages) and run a script
//!   there for an agent or a Splash script, whose doors must not reach the seed port's wider
//!   rules through it; a local web UI is named with `--allowed-origins http://localhost:3000`.
//!   `Origin: null` (sandboxed frames, `file:` pages) is foreign.
//! - **No `Origin` from a browser**: browsers leave `Origin` out of GET and HEAD requests that
//!   are not CORS requests (an `<img>`, a `<script>`, a link, `location = …`), and Splash's GET
//!   endpoints run scripts. Such a request from another site's page says so in its Fetch
//!   Metadata (`Sec-Fetch-Site: cross-site` or `same-site`), and its page is the `Referer`'s
//!   origin, which a page may hide but cannot forge: it is answered when that origin is, or,
//!   on a door whose GETs change nothing (the seed port), when it is a navigation (a link to a
//!   report). Without Fetch Metadata (a client that is not a browser) nothing changes.
//! - **Body**: a JSON endpoint takes `Content-Type: application/json` (parameters such as
//!   `charset` aside) and nothing else, so no request reaches it as a CORS "simple" request,
//!   without a preflight.
//!
//! Allow-lists only: nothing here is a list of what to refuse.

use std::net::IpAddr;

/// The loopback host names every door answers.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The allow-lists as the flags gave them (`--allowed-hosts`, `--allowed-origins`; empty: none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowLists {
    /// `Host` values answered beyond loopback and the bound address: `name`, `name:port`,
    /// `[v6]`, `[v6]:port`, or `*` (any).
    pub hosts: Vec<String>,
    /// `Origin` values answered (web pages, loopback ones included): `scheme://host[:port]`
    /// (`:*` any port; no port: the scheme's default), `null`, or `*` (any).
    pub origins: Vec<String>,
}

impl AllowLists {
    /// Refuses an entry that cannot match anything (a start-up error: exit code 2), naming it.
    pub fn check(&self) -> Result<(), String> {
        for entry in &self.hosts {
            HostEntry::parse(entry)?;
        }
        for entry in &self.origins {
            OriginEntry::parse(entry)?;
        }
        Ok(())
    }
}

/// Why a request is refused, before it reaches its endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The `Host` header names neither loopback, the bound address nor an allowed host.
    Host(String),
    /// The `Origin` header is neither loopback nor an allowed origin.
    Origin(String),
    /// A browser request from another site's page without `Origin` or `Referer` (the value of
    /// `Sec-Fetch-Site`).
    Site(String),
    /// A JSON endpoint got another content type (`None`: none was sent).
    ContentType(Option<String>),
}

impl Refusal {
    /// The HTTP status: 403 for a host or an origin, 415 for a content type.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::Host(_) | Refusal::Origin(_) | Refusal::Site(_) => 403,
            Refusal::ContentType(_) => 415,
        }
    }

    /// The message for the person reading the answer: what was refused and the flag that
    /// widens it.
    pub fn message(&self) -> String {
        match self {
            Refusal::Host(host) => format!(
                "refused: the `Host` header `{host}` names neither this server's address nor a \
                 loopback name (a guard against DNS rebinding); to answer it, start the server \
                 with `--allowed-hosts {}`",
                host_part(host)
            ),
            Refusal::Origin(origin) => format!(
                "refused: a request from the web page origin `{origin}`; web pages are answered \
                 only when the server is started with `--allowed-origins {origin}`"
            ),
            Refusal::Site(site) => format!(
                "refused: a request from a page of another site (`Sec-Fetch-Site: {site}`) that \
                 names no origin (no `Origin`, no `Referer`); web pages are answered only when \
                 the server is started with `--allowed-origins`"
            ),
            Refusal::ContentType(Some(given)) => format!(
                "unsupported content type `{given}`: this endpoint takes `Content-Type: \
                 application/json`"
            ),
            Refusal::ContentType(None) => {
                "no content type: this endpoint takes `Content-Type: application/json`".into()
            }
        }
    }
}

/// The rule of one door: the address it is bound to and its allow-lists, parsed once.
#[derive(Debug, Clone)]
pub struct Guard {
    bound: IpAddr,
    hosts: Vec<HostEntry>,
    /// `--allowed-hosts` was given (it narrows an unspecified bind to the list).
    hosts_given: bool,
    origins: Vec<OriginEntry>,
}

impl Guard {
    /// The rule of a door bound to `bound` (the listener's own address) with `lists`.
    pub fn new(bound: IpAddr, lists: &AllowLists) -> Result<Guard, String> {
        lists.check()?;
        Ok(Guard {
            bound,
            hosts: lists
                .hosts
                .iter()
                .filter_map(|e| HostEntry::parse(e).ok())
                .collect(),
            hosts_given: !lists.hosts.is_empty(),
            origins: lists
                .origins
                .iter()
                .filter_map(|e| OriginEntry::parse(e).ok())
                .collect(),
        })
    }

    /// The whole rule for a request, in order: [`Guard::host`], then [`Guard::origin`] (without
    /// `Origin`, [`Guard::unnamed_origin`]). The answer is the `Origin` to echo in CORS headers
    /// (`Some`: one was sent, and it is allowed). `navigations`: the request is a GET or HEAD of
    /// a door whose GETs change nothing.
    pub fn admit<'a>(
        &self,
        sent: &Sent<'a>,
        navigations: bool,
    ) -> Result<Option<&'a str>, Refusal> {
        self.host(sent.host)?;
        match sent.origin {
            Some(origin) => self.origin(Some(origin)),
            None => self.unnamed_origin(sent.meta, navigations).map(|()| None),
        }
    }

    /// Whether a request with this `Host` header value is answered (`None`: no header).
    pub fn host(&self, host: Option<&str>) -> Result<(), Refusal> {
        let Some(given) = host else {
            return Ok(());
        };
        let refused = || Refusal::Host(given.to_string());
        let (name, port) = split_authority(given).ok_or_else(refused)?;
        if LOOPBACK_NAMES.contains(&name.as_str()) {
            return Ok(());
        }
        if name.parse::<IpAddr>().ok() == Some(self.bound) {
            return Ok(());
        }
        if self.bound.is_unspecified() && !self.hosts_given {
            return Ok(());
        }
        let listed = self.hosts.iter().any(|entry| match entry {
            HostEntry::Any => true,
            HostEntry::Name(n, p) => *n == name && p.is_none_or(|p| p == port.unwrap_or(80)),
        });
        if listed {
            Ok(())
        } else {
            Err(refused())
        }
    }

    /// Whether a request with this `Origin` header value is answered (`None`: no header). The
    /// answer is the origin to echo in CORS headers: `Some` only for an origin that is there
    /// and allowed.
    pub fn origin<'a>(&self, origin: Option<&'a str>) -> Result<Option<&'a str>, Refusal> {
        let Some(given) = origin else {
            return Ok(None);
        };
        let parsed = Origin::parse(given);
        let allowed = self
            .origins
            .iter()
            .any(|entry| entry.matches(parsed.as_ref()));
        if allowed {
            Ok(Some(given))
        } else {
            Err(Refusal::Origin(given.to_string()))
        }
    }

    /// Whether a request without `Origin` is answered, from what the browser says about it
    /// (see the module's doc): without Fetch Metadata, `same-origin` or `none` (the address
    /// bar), yes; from another site's page, when its `Referer`'s origin is answered, or, with
    /// `navigations` (a door whose GETs change nothing), when it is a navigation.
    pub fn unnamed_origin(
        &self,
        meta: FetchMetadata<'_>,
        navigations: bool,
    ) -> Result<(), Refusal> {
        let Some(site) = meta.site.map(str::trim) else {
            return Ok(());
        };
        if !matches!(site, "cross-site" | "same-site") {
            return Ok(());
        }
        if navigations && meta.mode.map(str::trim) == Some("navigate") {
            return Ok(());
        }
        match meta.referer.and_then(referer_origin) {
            Some(page) => self.origin(Some(&page)).map(|_| ()),
            None => Err(Refusal::Site(site.to_string())),
        }
    }
}

/// The headers of a request the rule reads, as text (`None`: absent; a value that is not
/// UTF-8 is best given as U+FFFD, which no rule allows).
#[derive(Debug, Clone, Copy, Default)]
pub struct Sent<'a> {
    /// `Host` (for HTTP/2, the `:authority`).
    pub host: Option<&'a str>,
    /// `Origin`.
    pub origin: Option<&'a str>,
    /// `Sec-Fetch-Site`, `Sec-Fetch-Mode`, `Referer`.
    pub meta: FetchMetadata<'a>,
}

impl<'a> Sent<'a> {
    /// The headers, each read by its lower-case name through `header`.
    pub fn read(header: impl Fn(&'static str) -> Option<&'a str>) -> Sent<'a> {
        Sent::read_with(header, None)
    }

    /// The headers of `req` ([`Sent::read_with`], its URI's authority standing for `Host`), as
    /// every HTTP door reads them.
    pub fn of_request<B>(req: &'a axum::http::Request<B>) -> Sent<'a> {
        Sent::read_with(
            |name| {
                req.headers()
                    .get(name)
                    .map(|v| v.to_str().unwrap_or("\u{fffd}"))
            },
            req.uri().authority().map(|a| a.as_str()),
        )
    }

    /// [`Sent::read`], with the request's `:authority` standing for a missing `Host` (HTTP/2
    /// carries the host there, and a router may leave it out of the headers).
    pub fn read_with(
        header: impl Fn(&'static str) -> Option<&'a str>,
        authority: Option<&'a str>,
    ) -> Sent<'a> {
        Sent {
            host: header("host").or(authority),
            origin: header("origin"),
            meta: FetchMetadata {
                site: header("sec-fetch-site"),
                mode: header("sec-fetch-mode"),
                referer: header("referer"),
            },
        }
    }
}

/// What a browser tells about a request besides `Origin`: its Fetch Metadata and `Referer`.
#[derive(Debug, Clone, Copy, Default)]
pub struct FetchMetadata<'a> {
    /// `Sec-Fetch-Site`: `same-origin`, `same-site`, `cross-site` or `none`.
    pub site: Option<&'a str>,
    /// `Sec-Fetch-Mode`: `navigate`, `no-cors`, `cors`, …
    pub mode: Option<&'a str>,
    /// `Referer`: the page's URL, or its origin (the default policy across origins).
    pub referer: Option<&'a str>,
}

/// The origin (`scheme://host[:port]`) of a `Referer` URL.
fn referer_origin(referer: &str) -> Option<String> {
    let (scheme, rest) = referer.trim().split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    (!authority.is_empty()).then(|| format!("{scheme}://{authority}"))
}

/// Whether a JSON endpoint takes a body of this content type: `application/json`, any case,
/// parameters (`; charset=utf-8`) aside. Anything else is [`Refusal::ContentType`].
pub fn json_body(content_type: Option<&str>) -> Result<(), Refusal> {
    match content_type {
        Some(ct) if essence(ct) == "application/json" => Ok(()),
        other => Err(Refusal::ContentType(other.map(str::to_string))),
    }
}

/// A content type's media type, lower-cased, without its parameters.
pub fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// The host part of an authority, for the message's suggested flag.
fn host_part(authority: &str) -> String {
    split_authority(authority).map_or_else(
        || authority.to_string(),
        |(name, _)| {
            if name.contains(':') {
                format!("[{name}]")
            } else {
                name
            }
        },
    )
}

/// `host[:port]` or `[v6][:port]` → (host lower-cased, without brackets; port). `None` when it
/// is not an authority (a path, user info, an empty host, a bad port).
fn split_authority(authority: &str) -> Option<(String, Option<u16>)> {
    let a = authority.trim();
    if a.is_empty() || a.contains(['/', '@', '?', '#', ' ']) {
        return None;
    }
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        v6.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (v6.to_string(), port)
    } else {
        match a.split_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (a.to_string(), None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    Some((host.to_ascii_lowercase(), port))
}

/// One entry of `--allowed-hosts`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostEntry {
    /// `*`.
    Any,
    /// A name or address; with a port, that port only.
    Name(String, Option<u16>),
}

impl HostEntry {
    fn parse(entry: &str) -> Result<HostEntry, String> {
        let e = entry.trim();
        if e == "*" {
            return Ok(HostEntry::Any);
        }
        split_authority(e)
            .map(|(name, port)| HostEntry::Name(name, port))
            .ok_or_else(|| {
                format!(
                    "--allowed-hosts: `{entry}` is not a host (`name`, `name:port`, `[v6]:port` \
                     or `*`)"
                )
            })
    }
}

/// An origin's port as an allow-list entry gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PortRule {
    /// `:*`.
    Any,
    /// An explicit port, or the scheme's default when none was written.
    Is(u16),
}

/// A parsed `Origin` value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    /// `null`: an opaque origin.
    Null,
    /// `scheme://host:port`.
    Tuple(Tuple),
}

/// An origin's (scheme, host, port), lower-cased, the port filled in from the scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tuple {
    scheme: String,
    host: String,
    port: u16,
}

/// The port a scheme implies when an origin leaves it out (RFC 6454 §4).
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}

/// The port an origin (or an allow-list entry) writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WrittenPort {
    /// None: the scheme's default.
    Default,
    /// `:*` (allow-lists only).
    Star,
    /// `:N`.
    Number(u16),
}

/// `scheme://host[:port]` → (scheme, host, port) with scheme and host lower-cased.
fn split_origin(value: &str) -> Option<(String, String, WrittenPort)> {
    let (scheme, rest) = value.trim().split_once("://")?;
    let scheme_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.');
    if !scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        || !scheme.bytes().all(scheme_char)
    {
        return None;
    }
    // A `:*` port is an allow-list's; split it off before reading the authority.
    if let Some(authority) = rest.strip_suffix(":*") {
        let (host, None) = split_authority(authority)? else {
            return None;
        };
        return Some((scheme.to_ascii_lowercase(), host, WrittenPort::Star));
    }
    let (host, port) = split_authority(rest)?;
    let port = port.map_or(WrittenPort::Default, WrittenPort::Number);
    Some((scheme.to_ascii_lowercase(), host, port))
}

impl Origin {
    /// The `Origin` header's value, or `None` when it is not one (such a request is foreign).
    fn parse(value: &str) -> Option<Origin> {
        if value.trim() == "null" {
            return Some(Origin::Null);
        }
        let (scheme, host, port) = split_origin(value)?;
        let port = match port {
            WrittenPort::Number(p) => p,
            WrittenPort::Default => default_port(&scheme)?,
            WrittenPort::Star => return None,
        };
        Some(Origin::Tuple(Tuple { scheme, host, port }))
    }
}

/// One entry of `--allowed-origins`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum OriginEntry {
    /// `*`: every origin, `null` included.
    Any,
    /// `null`.
    Null,
    /// `scheme://host[:port|:*]`.
    Tuple {
        scheme: String,
        host: String,
        port: PortRule,
    },
}

impl OriginEntry {
    fn parse(entry: &str) -> Result<OriginEntry, String> {
        let e = entry.trim();
        match e {
            "*" => return Ok(OriginEntry::Any),
            "null" => return Ok(OriginEntry::Null),
            _ => {}
        }
        let bad = || {
            format!(
                "--allowed-origins: `{entry}` is not an origin (`scheme://host[:port]`, `:*` for \
                 any port, `null` or `*`)"
            )
        };
        // A trailing slash is how origins are often copied from an address bar.
        let (scheme, host, port) =
            split_origin(e.strip_suffix('/').unwrap_or(e)).ok_or_else(bad)?;
        let port = match port {
            WrittenPort::Star => PortRule::Any,
            WrittenPort::Number(p) => PortRule::Is(p),
            WrittenPort::Default => PortRule::Is(default_port(&scheme).ok_or_else(bad)?),
        };
        Ok(OriginEntry::Tuple { scheme, host, port })
    }

    fn matches(&self, origin: Option<&Origin>) -> bool {
        match (self, origin) {
            (OriginEntry::Any, _) => true,
            (OriginEntry::Null, Some(Origin::Null)) => true,
            (OriginEntry::Tuple { scheme, host, port }, Some(Origin::Tuple(o))) => {
                *scheme == o.scheme
                    && *host == o.host
                    && match port {
                        PortRule::Any => true,
                        PortRule::Is(p) => *p == o.port,
                    }
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(bound: &str, hosts: &[&str], origins: &[&str]) -> Guard {
        Guard::new(
            bound.parse().unwrap(),
            &AllowLists {
                hosts: hosts.iter().map(|s| s.to_string()).collect(),
                origins: origins.iter().map(|s| s.to_string()).collect(),
            },
        )
        .unwrap()
    }

    #[test]
    fn loopback_hosts_and_the_bound_address_are_answered() {
        let g = guard("127.0.0.1", &[], &[]);
        for host in [
            "localhost",
            "LOCALHOST:10049",
            "127.0.0.1",
            "127.0.0.1:8050",
            "[::1]",
            "[::1]:1",
        ] {
            assert_eq!(g.host(Some(host)), Ok(()), "{host}");
        }
        assert_eq!(g.host(None), Ok(()));
        for host in [
            "evil.test",
            "evil.test:10049",
            "localhost.evil.test",
            "127.0.0.2",
            "192.168.1.5:10049",
            "",
            "a/b",
            "user@localhost",
            "localhost:99999",
            "[::1",
        ] {
            assert_eq!(
                g.host(Some(host)),
                Err(Refusal::Host(host.into())),
                "{host}"
            );
        }
        let g = guard("192.168.1.5", &[], &[]);
        assert_eq!(g.host(Some("192.168.1.5:10049")), Ok(()));
        assert_eq!(g.host(Some("192.168.1.5")), Ok(()));
        assert_eq!(g.host(Some("localhost:10049")), Ok(()));
        assert!(g.host(Some("192.168.1.6")).is_err());
        assert!(g.host(Some("box.lan:10049")).is_err());
        let g = guard("fe80::1", &[], &[]);
        assert_eq!(g.host(Some("[fe80::1]:80")), Ok(()));
    }

    #[test]
    fn an_unspecified_bind_answers_any_host_until_a_list_is_given() {
        for bound in ["0.0.0.0", "::"] {
            let g = guard(bound, &[], &[]);
            assert_eq!(g.host(Some("box.lan:10049")), Ok(()));
            let g = guard(bound, &["box.lan"], &[]);
            assert_eq!(g.host(Some("box.lan:10049")), Ok(()));
            assert_eq!(g.host(Some("localhost")), Ok(()));
            assert!(g.host(Some("evil.test")).is_err());
        }
    }

    #[test]
    fn allowed_hosts_widen_by_name_and_port() {
        let g = guard(
            "127.0.0.1",
            &["box.lan", "Other.Lan:8050", "[fd00::2]"],
            &[],
        );
        assert_eq!(g.host(Some("box.lan")), Ok(()));
        assert_eq!(g.host(Some("BOX.lan:10049")), Ok(()));
        assert_eq!(g.host(Some("other.lan:8050")), Ok(()));
        assert!(g.host(Some("other.lan:10049")).is_err());
        assert!(g.host(Some("other.lan")).is_err());
        assert_eq!(g.host(Some("[fd00::2]:9")), Ok(()));
        let g = guard("127.0.0.1", &["*"], &[]);
        assert_eq!(g.host(Some("anything.example:1")), Ok(()));
    }

    #[test]
    fn no_origin_is_answered_and_a_web_page_only_when_named() {
        let g = guard("127.0.0.1", &[], &[]);
        assert_eq!(g.origin(None), Ok(None));
        // A loopback page is a web page too (the driven browser can open one): named or refused.
        let loopback = [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:8443",
            "http://[::1]:10049",
            "HTTP://LocalHost:1",
        ];
        for origin in loopback {
            assert_eq!(
                g.origin(Some(origin)),
                Err(Refusal::Origin(origin.into())),
                "{origin}"
            );
        }
        let named = guard(
            "127.0.0.1",
            &[],
            &["http://localhost:*", "https://127.0.0.1:8443"],
        );
        for origin in [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:8443",
        ] {
            assert_eq!(named.origin(Some(origin)), Ok(Some(origin)), "{origin}");
        }
        for origin in [
            "null",
            "http://evil.test",
            "http://evil.test:10049",
            "http://localhost.evil.test",
            "http://127.0.0.2:10049",
            "ftp://localhost",
            "chrome-extension://abcdef",
            "file://",
            "localhost",
            "http://user@localhost",
            "",
        ] {
            assert_eq!(
                g.origin(Some(origin)),
                Err(Refusal::Origin(origin.into())),
                "{origin}"
            );
        }
    }

    #[test]
    fn allowed_origins_match_scheme_host_and_port() {
        let g = guard(
            "127.0.0.1",
            &[],
            &[
                "https://app.example",
                "http://evil.test:*",
                "http://box.lan:8080/",
                "null",
            ],
        );
        assert!(g.origin(Some("https://app.example")).is_ok());
        assert!(g.origin(Some("https://app.example:443")).is_ok());
        assert!(g.origin(Some("https://app.example:8443")).is_err());
        assert!(g.origin(Some("http://app.example")).is_err());
        assert!(g.origin(Some("http://evil.test:41234")).is_ok());
        assert!(g.origin(Some("http://evil.test")).is_ok());
        assert!(g.origin(Some("https://evil.test")).is_err());
        assert!(g.origin(Some("http://box.lan:8080")).is_ok());
        assert!(g.origin(Some("http://box.lan")).is_err());
        assert!(g.origin(Some("null")).is_ok());
        let g = guard("127.0.0.1", &[], &["*"]);
        assert_eq!(g.origin(Some("null")), Ok(Some("null")));
        assert_eq!(
            g.origin(Some("https://anywhere.example")),
            Ok(Some("https://anywhere.example"))
        );
    }

    #[test]
    fn bad_entries_are_refused_at_start_up() {
        let lists = |hosts: &[&str], origins: &[&str]| AllowLists {
            hosts: hosts.iter().map(|s| s.to_string()).collect(),
            origins: origins.iter().map(|s| s.to_string()).collect(),
        };
        assert!(lists(&["box.lan", "a:1", "[::2]:3", "*"], &[])
            .check()
            .is_ok());
        for bad in ["", "http://box.lan", "box.lan:http", "a/b"] {
            let e = lists(&[bad], &[]).check().unwrap_err();
            assert!(e.starts_with("--allowed-hosts: "), "{e}");
        }
        assert!(
            lists(&[], &["http://a:1", "https://b", "http://c:*", "null", "*"])
                .check()
                .is_ok()
        );
        for bad in [
            "evil.test",
            "http://",
            "http://a/path",
            "http://a:x",
            "foo://a",
        ] {
            let e = lists(&[], &[bad]).check().unwrap_err();
            assert!(e.starts_with("--allowed-origins: "), "{bad}: {e}");
        }
    }

    #[test]
    fn a_browser_request_without_origin_is_judged_by_its_page() {
        let g = guard("127.0.0.1", &[], &["http://app.test:*"]);
        let meta = |site, mode, referer| FetchMetadata {
            site,
            mode,
            referer,
        };
        // Not a browser, the address bar, this origin's own pages.
        assert_eq!(g.unnamed_origin(FetchMetadata::default(), false), Ok(()));
        assert_eq!(
            g.unnamed_origin(meta(Some("none"), Some("navigate"), None), false),
            Ok(())
        );
        assert_eq!(
            g.unnamed_origin(meta(Some("same-origin"), Some("no-cors"), None), false),
            Ok(())
        );
        // Another site's page: its `Referer` decides; without one, refused.
        let img = |referer| meta(Some("cross-site"), Some("no-cors"), referer);
        assert_eq!(
            g.unnamed_origin(img(Some("http://evil.test:8000/page?q=1")), true),
            Err(Refusal::Origin("http://evil.test:8000".into()))
        );
        assert_eq!(
            g.unnamed_origin(img(None), true),
            Err(Refusal::Site("cross-site".into()))
        );
        assert_eq!(
            g.unnamed_origin(img(Some("garbage")), true),
            Err(Refusal::Site("cross-site".into()))
        );
        // A loopback page is a web page like any other: refused unless named.
        assert_eq!(
            g.unnamed_origin(img(Some("http://localhost:5173/")), false),
            Err(Refusal::Origin("http://localhost:5173".into()))
        );
        assert_eq!(
            g.unnamed_origin(img(Some("http://app.test:81/x")), false),
            Ok(())
        );
        let same_site = meta(
            Some("same-site"),
            Some("no-cors"),
            Some("http://127.0.0.1:3000/"),
        );
        assert!(g.unnamed_origin(same_site, false).is_err());
        // A navigation: answered only where GETs change nothing.
        let link = meta(Some("cross-site"), Some("navigate"), None);
        assert_eq!(g.unnamed_origin(link, true), Ok(()));
        assert_eq!(
            g.unnamed_origin(link, false),
            Err(Refusal::Site("cross-site".into()))
        );
        let m = Refusal::Site("cross-site".into()).message();
        assert!(m.contains("`--allowed-origins`"), "{m}");
    }

    #[test]
    fn admit_checks_the_host_then_the_origin() {
        let g = guard("127.0.0.1", &[], &[]);
        let sent = |host, origin, site| Sent {
            host,
            origin,
            meta: FetchMetadata {
                site,
                ..FetchMetadata::default()
            },
        };
        assert_eq!(
            g.admit(&sent(Some("localhost:1"), None, None), false),
            Ok(None)
        );
        assert_eq!(
            g.admit(
                &sent(Some("localhost:1"), Some("http://localhost:2"), None),
                false
            ),
            Err(Refusal::Origin("http://localhost:2".into()))
        );
        assert_eq!(
            g.admit(
                &sent(Some("evil.test"), Some("http://evil.test"), None),
                false
            ),
            Err(Refusal::Host("evil.test".into()))
        );
        assert_eq!(
            g.admit(&sent(None, Some("http://evil.test"), None), false),
            Err(Refusal::Origin("http://evil.test".into()))
        );
        assert_eq!(
            g.admit(&sent(None, None, Some("cross-site")), false),
            Err(Refusal::Site("cross-site".into()))
        );
        let read = Sent::read(|name| (name == "sec-fetch-mode").then_some("navigate"));
        assert_eq!(read.meta.mode, Some("navigate"));
        assert_eq!(read.host, None);
    }

    #[test]
    fn json_endpoints_take_json_only() {
        assert_eq!(json_body(Some("application/json")), Ok(()));
        assert_eq!(json_body(Some("Application/JSON; charset=utf-8")), Ok(()));
        for ct in [
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "text/plain; x=application/json",
            "application/jsonp",
        ] {
            assert_eq!(
                json_body(Some(ct)),
                Err(Refusal::ContentType(Some(ct.into()))),
                "{ct}"
            );
        }
        assert_eq!(json_body(None), Err(Refusal::ContentType(None)));
    }

    #[test]
    fn refusals_name_the_flag_that_widens_them() {
        let m = Refusal::Origin("http://evil.test:8000".into()).message();
        assert!(
            m.contains("`--allowed-origins http://evil.test:8000`"),
            "{m}"
        );
        let m = Refusal::Host("evil.test:8000".into()).message();
        assert!(m.contains("`--allowed-hosts evil.test`"), "{m}");
        let m = Refusal::Host("[fd00::1]:8000".into()).message();
        assert!(m.contains("`--allowed-hosts [fd00::1]`"), "{m}");
        assert_eq!(Refusal::ContentType(None).status(), 415);
        assert_eq!(Refusal::Origin(String::new()).status(), 403);
        assert_eq!(Refusal::Host(String::new()).status(), 403);
    }
}
