//! Tab completion for the REPL, from the registry: `page:` + prefix completes command names,
//! inside `page:cmd{` the command's param names, `browser.` the module's functions, and a bare
//! word the globals. Pure functions over the line, so they are unit-tested without a terminal.

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

/// Names that do not come from the registry, collected from the Lua state when the REPL starts.
#[derive(Debug, Default, Clone)]
pub struct Names {
    /// Functions and fields of the `browser` table.
    pub browser: Vec<String>,
    /// Global names (`browser`, `page`, `print`, ...).
    pub globals: Vec<String>,
}

/// The rustyline helper: completion only; hints, highlighting and validation are the defaults
/// (multi-line input is handled by the REPL loop, which knows when Lua calls a chunk incomplete).
pub struct ReplHelper {
    names: Names,
}

impl ReplHelper {
    /// A helper completing from the registry and `names`.
    pub fn new(names: Names) -> ReplHelper {
        ReplHelper { names }
    }
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        Ok(complete(line, pos, &self.names))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}
impl Highlighter for ReplHelper {}
impl Validator for ReplHelper {}
impl Helper for ReplHelper {}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Completions for the word ending at `pos`: where it starts and the candidates.
pub fn complete(line: &str, pos: usize, names: &Names) -> (usize, Vec<Pair>) {
    let pos = pos.min(line.len());
    let Some(before) = line.get(..pos) else {
        return (pos, Vec::new());
    };
    let start = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_word(*c))
        .last()
        .map_or(pos, |(i, _)| i);
    let word = &before[start..];
    let head = &before[..start];

    // `page:get_ti` — a method call on a task: completed with its call, `()` for a command
    // without params and `{` for one with, so Enter runs it (a bare name would open a
    // continuation line). Text already after the cursor is left alone.
    if head.ends_with(':') && !head.ends_with("::") {
        let rest = line.get(pos..).unwrap_or("");
        let called = rest.starts_with(['(', '{', '"', '\'']);
        let mut found: Vec<Pair> = crate::commands::registry()
            .all()
            .iter()
            .filter(|s| s.needs_task() && s.name.starts_with(word))
            .map(|s| Pair {
                display: s.name.to_string(),
                replacement: match (called, s.params.is_empty()) {
                    (true, _) => s.name.to_string(),
                    (false, true) => format!("{}()", s.name),
                    (false, false) => format!("{}{{", s.name),
                },
            })
            .collect();
        found.sort_unstable_by(|a, b| a.display.cmp(&b.display));
        found.dedup_by(|a, b| a.display == b.display);
        return (start, found);
    }
    // `browser.st`
    if let Some(object) = head.strip_suffix('.') {
        if trailing_word(object) == "browser" {
            let names = names.browser.iter().map(String::as_str);
            return (start, candidates(names, word, ""));
        }
        return (start, Vec::new());
    }
    // `page:navigate{ ur` — a param name of the command whose table is open.
    if let Some((command, table_so_far)) = open_call_table(head) {
        let given = given_keys(table_so_far);
        let mut params: Vec<&str> = Vec::new();
        if command == "browser.start" {
            params.push("id");
        }
        let name = command.rsplit([':', '.']).next().unwrap_or(&command);
        if let Some(spec) = crate::commands::registry().lookup(name) {
            params.extend(spec.params.iter().map(|p| p.name));
        }
        let open: Vec<&str> = params
            .into_iter()
            .filter(|p| !given.iter().any(|g| g == p))
            .collect();
        return (start, candidates(open.into_iter(), word, " = "));
    }
    // A bare word: globals and keywords.
    if head
        .chars()
        .next_back()
        .is_some_and(|c| c == '.' || c == ':' || c == '"' || c == '\'')
    {
        return (start, Vec::new());
    }
    if word.is_empty() {
        return (start, Vec::new());
    }
    let globals = names
        .globals
        .iter()
        .map(String::as_str)
        .chain(LUA_KEYWORDS.iter().copied());
    (start, candidates(globals, word, ""))
}

const LUA_KEYWORDS: &[&str] = &[
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
    "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
];

fn candidates<'a>(names: impl Iterator<Item = &'a str>, prefix: &str, suffix: &str) -> Vec<Pair> {
    let mut found: Vec<&str> = names.filter(|n| n.starts_with(prefix)).collect();
    found.sort_unstable();
    found.dedup();
    found
        .into_iter()
        .map(|n| Pair {
            display: n.to_string(),
            replacement: format!("{n}{suffix}"),
        })
        .collect()
}

/// The identifier (with dots) ending `text`, e.g. `browser` in `x = browser`.
fn trailing_word(text: &str) -> &str {
    let start = text
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_word(*c) || *c == '.')
        .last()
        .map_or(text.len(), |(i, _)| i);
    &text[start..]
}

/// When `head` ends inside the params table of a call, at a key position (`{`, `,` or `;` then
/// spaces): the callee (`page:navigate`, `browser.start`) and the table's text so far.
fn open_call_table(head: &str) -> Option<(String, &str)> {
    let trimmed = head.trim_end();
    if !(trimmed.ends_with('{') || trimmed.ends_with(',') || trimmed.ends_with(';')) {
        return None;
    }
    // The innermost `{` still open, outside strings.
    let mut stack: Vec<usize> = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in head.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '{' => stack.push(i),
            '}' => {
                stack.pop();
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return None;
    }
    let open = *stack.last()?;
    let callee_text = head[..open].trim_end();
    let callee_text = callee_text
        .strip_suffix('(')
        .unwrap_or(callee_text)
        .trim_end();
    let start = callee_text
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_word(*c) || *c == '.' || *c == ':')
        .last()
        .map(|(i, _)| i)?;
    let callee = &callee_text[start..];
    let is_call = callee.contains(':') || callee == "browser.start";
    is_call.then(|| (callee.to_string(), &head[open + 1..]))
}

/// Keys already written in a table constructor's text (`url = "x", timeout = 5`), top level only.
fn given_keys(table: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut current = String::new();
    for c in table.chars() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => depth = depth.saturating_sub(1),
            '=' if depth == 0 => {
                let key = current.trim();
                if !key.is_empty() && key.chars().all(is_word) {
                    keys.push(key.to_string());
                }
            }
            ',' | ';' if depth == 0 => current.clear(),
            _ if depth == 0 => current.push(c),
            _ => {}
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names {
            browser: vec![
                "start".into(),
                "sleep".into(),
                "spawn".into(),
                "task".into(),
            ],
            globals: vec![
                "browser".into(),
                "page".into(),
                "print".into(),
                "pairs".into(),
            ],
        }
    }

    fn replacements(line: &str) -> (usize, Vec<String>) {
        let (start, found) = complete(line, line.len(), &names());
        (start, found.into_iter().map(|p| p.replacement).collect())
    }

    #[test]
    fn command_names_after_a_colon() {
        // Issue 10 #15: with its call, so Enter runs it instead of opening a continuation line.
        assert_eq!(
            replacements("page:get_ti"),
            (5, vec!["get_title()".to_string()])
        );
        assert_eq!(
            replacements("page:navig"),
            (5, vec!["navigate{".to_string()])
        );
        let (start, found) = complete("page:get_ti()", 11, &names());
        assert_eq!(start, 5);
        assert_eq!(
            found[0].replacement, "get_title",
            "the call is already there"
        );
        let (_, all) = replacements("x = page:");
        assert!(all.contains(&"click_element_by_index{".to_string()));
        assert!(
            !all.iter().any(|n| n.starts_with("start")),
            "start needs no task"
        );
        assert_eq!(replacements("page::"), (6, vec![]));
    }

    #[test]
    fn param_names_inside_the_call_table() {
        let (start, found) = replacements("page:navigate{ ur");
        assert_eq!((start, found), (15, vec!["url = ".to_string()]));
        let (_, found) = replacements("page:click_element_by_index{ index = 3, ");
        assert!(!found.contains(&"index = ".to_string()), "{found:?}");
        assert!(found.contains(&"mode = ".to_string()), "{found:?}");
        let (_, found) = replacements("page:navigate({ url = \"a,b{\", ");
        assert!(!found.iter().any(|f| f == "url = "), "{found:?}");
        let (_, found) = replacements("browser.start{ ");
        assert!(found.contains(&"id = ".to_string()) && found.contains(&"headless = ".to_string()));
        // A value position, a string, or an unknown command: nothing.
        assert_eq!(
            replacements("page:navigate{ url = ur").1,
            Vec::<String>::new()
        );
        assert_eq!(
            replacements("page:navigate{ url = \"ur").1,
            Vec::<String>::new()
        );
        assert_eq!(replacements("page:no_such{ u").1, Vec::<String>::new());
    }

    #[test]
    fn module_functions_and_globals() {
        assert_eq!(
            replacements("browser.s"),
            (
                8,
                vec![
                    "sleep".to_string(),
                    "spawn".to_string(),
                    "start".to_string()
                ]
            )
        );
        assert_eq!(replacements("other.s").1, Vec::<String>::new());
        assert_eq!(
            replacements("pa").1,
            vec!["page".to_string(), "pairs".to_string()]
        );
        assert_eq!(replacements("x = whi").1, vec!["while".to_string()]);
        assert_eq!(replacements("").1, Vec::<String>::new());
    }

    #[test]
    fn odd_positions_do_not_panic() {
        let n = names();
        for line in ["é:", "page:é", "{{{", "\"", "page:navigate{ 'é',"] {
            for pos in 0..=line.len() + 2 {
                let _ = complete(line, pos, &n);
            }
        }
    }
}
