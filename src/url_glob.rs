//! The engine's URL glob: playwright-core's own (`globToRegexPattern` and, for patterns that do
//! not start with `*`, its URL resolution without a base URL), so a pattern written for
//! `page.waitForURL` or `page.route` means the same here. `wait_for_url`, `wait_for_response`,
//! `route` and `unroute` all match with it.
//!
//! The rules, character by character: `**/` after a `/` is "empty, or any run ending in `/`",
//! `**/` elsewhere "any run ending in `/`", `**` not followed by `/` "any characters, `/`
//! included", `*` "any characters but `/`", `{a,b}` alternatives (not nested), `\` escapes the
//! next character, and every other character (`?` and `.` among them) stands for itself. The
//! whole URL must match. A pattern that does not start with `*` is first normalised as a URL
//! (`http://h` becomes `http://h/`, the origin lower-cased), its wildcards kept.
//!
//! Pure and unit-tested against a table of playwright-core's own answers
//! (`tests/data/url_globs.json`, written by `benches/node/globs.mjs`).

use std::collections::HashSet;

/// One token of a glob.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// This character.
    Lit(char),
    /// `*`: any run of characters without `/` (regex `[^/]*`).
    Star,
    /// `**` not before `/`: any run (regex `.*`).
    Any,
    /// `**/` not after `/`: any run that ends with `/` (regex `.*/`).
    AnyDir,
    /// `/**/`'s `**/`: empty, or a run of at least two characters ending with `/`
    /// (regex `((.+/)|)`).
    OptDir,
}

/// A parsed URL glob: every alternative of its `{…}` group spelled out as a token list.
#[derive(Debug, Clone)]
pub struct UrlGlob {
    alternatives: Vec<Vec<Tok>>,
    /// The empty pattern matches every URL (playwright-core's `urlMatches`).
    everything: bool,
}

/// The most alternatives `{a,b}` groups may spell out.
const MAX_ALTERNATIVES: usize = 256;

impl UrlGlob {
    /// Parses `pattern`; an unmatched `{` or `}` or a nested group is refused, with
    /// playwright-core's reason.
    pub fn parse(pattern: &str) -> Result<UrlGlob, String> {
        if pattern.is_empty() {
            return Ok(UrlGlob {
                alternatives: Vec::new(),
                everything: true,
            });
        }
        let resolved = resolve(pattern);
        let chars: Vec<char> = resolved.chars().collect();
        // Token lists so far, and the alternatives of an open group.
        let mut lists: Vec<Vec<Tok>> = vec![Vec::new()];
        let mut group: Option<Vec<Vec<Tok>>> = None;
        let push =
            |lists: &mut Vec<Vec<Tok>>, group: &mut Option<Vec<Vec<Tok>>>, t: Tok| match group {
                Some(alts) => alts.last_mut().into_iter().for_each(|a| a.push(t.clone())),
                None => lists.iter_mut().for_each(|l| l.push(t.clone())),
            };
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '\\' if i + 1 < chars.len() => {
                    i += 1;
                    push(&mut lists, &mut group, Tok::Lit(chars[i]));
                }
                '*' => {
                    let before = i.checked_sub(1).map(|b| chars[b]);
                    let mut stars = 1;
                    while chars.get(i + 1) == Some(&'*') {
                        stars += 1;
                        i += 1;
                    }
                    let tok = if stars == 1 {
                        Tok::Star
                    } else if chars.get(i + 1) == Some(&'/') {
                        // The token takes its slash with it.
                        i += 1;
                        if before == Some('/') {
                            Tok::OptDir
                        } else {
                            Tok::AnyDir
                        }
                    } else {
                        Tok::Any
                    };
                    push(&mut lists, &mut group, tok);
                }
                '{' if group.is_some() => {
                    return Err(format!("nested '{{' is not supported in {resolved:?}"))
                }
                '{' => group = Some(vec![Vec::new()]),
                '}' => {
                    let Some(alts) = group.take() else {
                        return Err(format!("unmatched '}}' in {resolved:?}"));
                    };
                    let mut spelled = Vec::with_capacity(lists.len() * alts.len());
                    for l in &lists {
                        for a in &alts {
                            let mut both = l.clone();
                            both.extend(a.iter().cloned());
                            spelled.push(both);
                        }
                    }
                    if spelled.len() > MAX_ALTERNATIVES {
                        return Err(format!("more than {MAX_ALTERNATIVES} alternatives"));
                    }
                    lists = spelled;
                }
                ',' if group.is_some() => {
                    if let Some(alts) = group.as_mut() {
                        alts.push(Vec::new());
                    }
                }
                c => push(&mut lists, &mut group, Tok::Lit(c)),
            }
            i += 1;
        }
        if group.is_some() {
            return Err(format!("unmatched '{{' in {resolved:?}"));
        }
        Ok(UrlGlob {
            alternatives: lists,
            everything: false,
        })
    }

    /// Whether the whole of `url` matches.
    pub fn matches(&self, url: &str) -> bool {
        if self.everything {
            return true;
        }
        let s: Vec<char> = url.chars().collect();
        self.alternatives.iter().any(|toks| {
            let mut failed = HashSet::new();
            glob_at(toks, 0, &s, 0, &mut failed)
        })
    }
}

/// What JavaScript's `.` does not match (the regex has no `s` flag).
fn line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// Whether `toks[ti..]` matches all of `s[si..]` (memoised on failures).
fn glob_at(
    toks: &[Tok],
    ti: usize,
    s: &[char],
    si: usize,
    failed: &mut HashSet<(usize, usize)>,
) -> bool {
    if failed.contains(&(ti, si)) {
        return false;
    }
    // The furthest end of a run that `.` or `[^/]` can take from `si`.
    let run_end = |stop: fn(char) -> bool| {
        s[si..]
            .iter()
            .position(|c| stop(*c))
            .map_or(s.len(), |p| si + p)
    };
    let ok = match toks.get(ti) {
        None => si == s.len(),
        Some(Tok::Lit(c)) => s.get(si) == Some(c) && glob_at(toks, ti + 1, s, si + 1, failed),
        Some(Tok::Star) => {
            let end = run_end(|c| c == '/' || line_terminator(c));
            (si..=end).any(|k| glob_at(toks, ti + 1, s, k, failed))
        }
        Some(Tok::Any) => {
            let end = run_end(line_terminator);
            (si..=end).any(|k| glob_at(toks, ti + 1, s, k, failed))
        }
        Some(Tok::AnyDir) => {
            let end = run_end(line_terminator).min(s.len().saturating_sub(1));
            (si..=end)
                .filter(|&k| k < s.len() && s[k] == '/')
                .any(|k| glob_at(toks, ti + 1, s, k + 1, failed))
        }
        Some(Tok::OptDir) => {
            glob_at(toks, ti + 1, s, si, failed) || {
                let end = run_end(line_terminator).min(s.len().saturating_sub(1));
                // `.+/`: at least one character before the slash.
                (si + 1..=end)
                    .filter(|&k| k < s.len() && s[k] == '/')
                    .any(|k| glob_at(toks, ti + 1, s, k + 1, failed))
            }
        }
    };
    if !ok {
        failed.insert((ti, si));
    }
    ok
}

/// playwright-core's `resolveGlobBase` without a base URL: a pattern that does not start with
/// `*` is normalised as a URL where it parses as one, its glob parts held aside by
/// placeholders (so `?` and `{` cannot change how it parses) and put back afterwards
/// (lower-cased where they sit in the origin).
fn resolve(pattern: &str) -> String {
    if pattern.starts_with('*') {
        return pattern.to_string();
    }
    // "Escaped `\\?` behaves the same as `?`."
    let pattern = pattern.replace("\\\\?", "?");
    if ["about:", "data:", "chrome:", "edge:", "file:"]
        .iter()
        .any(|p| pattern.starts_with(p))
    {
        return pattern;
    }
    let mut held: Vec<(String, String)> = Vec::new();
    let mut hold = |original: &str, placeholder: String| {
        if original.is_empty() {
            return String::new();
        }
        held.push((placeholder.clone(), original.to_string()));
        placeholder
    };
    let relative: Vec<String> = pattern
        .split('/')
        .enumerate()
        .map(|(index, token)| {
            if matches!(token, "." | ".." | "") {
                return token.to_string();
            }
            if index == 0 && token.ends_with(':') {
                // `http*://`: any pattern scheme stands as http, so the host parses as one.
                if token.contains(['*', '{']) {
                    return hold(token, "http:".into());
                }
                return token.to_string();
            }
            if !token.contains(['*', '?', '{', '}', '\\']) {
                return token.to_string();
            }
            match token.find('?') {
                None => hold(token, format!("$_{index}_$")),
                Some(q) => {
                    let prefix = hold(&token[..q], format!("$_{index}_$"));
                    let suffix = hold(&token[q..], format!("?$_{index}_$"));
                    prefix + &suffix
                }
            }
        })
        .collect();
    let relative = relative.join("/");
    let (mut resolved, origin) = match url::Url::parse(&relative) {
        Ok(u) => (u.to_string(), Some(u.origin().ascii_serialization())),
        Err(_) => (relative, None),
    };
    for (placeholder, original) in held {
        let in_origin = origin.as_deref().is_some_and(|o| o.contains(&placeholder));
        let original = if in_origin {
            original.to_lowercase()
        } else {
            original
        };
        resolved = resolved.replacen(&placeholder, &original, 1);
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn glob(p: &str, url: &str) -> bool {
        UrlGlob::parse(p).unwrap().matches(url)
    }

    /// Every case of the table that playwright-core answered (`benches/node/globs.mjs`).
    #[test]
    fn matches_as_playwright_core_does() {
        let table: Value =
            serde_json::from_str(include_str!("../tests/data/url_globs.json")).unwrap();
        let urls: Vec<&str> = table["urls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u.as_str().unwrap())
            .collect();
        let mut wrong = Vec::new();
        for row in table["patterns"].as_array().unwrap() {
            let pattern = row["pattern"].as_str().unwrap();
            if row["error"].is_string() {
                assert!(
                    UrlGlob::parse(pattern).is_err(),
                    "{pattern} is refused by playwright-core"
                );
                continue;
            }
            let glob = UrlGlob::parse(pattern).unwrap();
            let want: Vec<u64> = row["matches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_u64().unwrap())
                .collect();
            for (i, url) in urls.iter().enumerate() {
                let expected = want.contains(&(i as u64));
                if glob.matches(url) != expected {
                    wrong.push(format!(
                        "{pattern:?} on {url:?}: playwright-core says {expected}"
                    ));
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "{} differences:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }

    #[test]
    fn the_issue_21_globs() {
        let u = "http://127.0.0.1:8080/u-waits.html?step=2";
        for p in [
            "**step=2*",
            "**step=2",
            "**?step=2*",
            "**/u-waits.html?step=2",
        ] {
            assert!(glob(p, u), "{p}");
        }
        // The trailing-slash trap of COMMANDS.md: `*` cannot eat the slash.
        assert!(!glob("**/example.com*", "https://example.com/"));
        assert!(glob("**/example.com/**", "https://example.com/"));
        assert!(glob("https://example.com", "https://example.com/"));
        assert!(glob("", "anything at all"));
        assert!(glob("\\*x", "*x"));
        assert!(!glob("**", "a\nb"), "`.` does not match a line break");
        assert!(UrlGlob::parse("**/{a,b").is_err());
        assert!(UrlGlob::parse("**/a}").is_err());
    }
}
