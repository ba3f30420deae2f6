//! What a command points at and how its params say so: the [`Locator`] (an index, a selector
//! with `nth`/`frame` and its [`Pick`], a text, a role or a label), the catalogue's locator
//! params ([`INDEX_OR`], [`SELECTOR_OR`], [`FRAME_PARAM`], [`NTH_PARAM`]), [`Takes`] and the
//! readers every command shares ([`index_or_selector`], [`selector_param`]), and the ARIA roles
//! a role locator accepts ([`check_role`]).
//!
//! Pure: nothing here touches the browser. Finding the element a locator means is `find.rs`.

use serde_json::{json, Value};

use crate::command::{int, string, ParamSpec};
use crate::error::CommandError;
use crate::protocol::Params;

/// What a command points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locator {
    /// An `[index]` of the task's latest snapshot; its frame is found again by id, URL or name
    /// (iframes that reloaded keep their indices).
    Index(u32),
    /// The matches of a CSS or Playwright-style selector (`probe_lib.js` `selectAll`): `nth`
    /// picks one explicitly, else the first visible match whose point receives events among
    /// the first 20, else the first visible, else the first ([`Pick`]).
    Selector {
        /// The selector.
        css: String,
        /// The 0-based explicit pick.
        nth: Option<u32>,
        /// The `frame` param (ordinal, or substring of the frame URL or name); main without.
        frame: Option<String>,
        /// How a match is chosen without `nth`.
        pick: Pick,
        /// Refuse more than one match instead of choosing (the framework param `strict`).
        strict: bool,
    },
    /// The element showing a text (case-insensitive substring; an exact match wins), or rather
    /// its closest clickable ancestor (JS-PROBES.md §9, text target).
    Text {
        /// The text.
        text: String,
        /// The `frame` param; main without.
        frame: Option<String>,
        /// Refuse more than one match instead of choosing.
        strict: bool,
    },
    /// The first element of an ARIA role (explicit or implicit), optionally with an accessible
    /// name containing `name` (case-insensitive); hidden elements are not in the tree.
    Role {
        /// The role, lower-case (checked by [`check_role`]).
        role: String,
        /// The accessible name filter.
        name: Option<String>,
        /// The `frame` param; main without.
        frame: Option<String>,
        /// Refuse more than one match instead of choosing.
        strict: bool,
    },
    /// The first control labelled `label` (`<label>`, aria-label, aria-labelledby; exact
    /// label texts before those that contain it).
    Label {
        /// The label text.
        label: String,
        /// The `frame` param; main without.
        frame: Option<String>,
        /// Refuse more than one match instead of choosing.
        strict: bool,
    },
}

/// How a selector match is chosen when no `nth` is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pick {
    /// Prefer a visible match that receives events (actions and reads).
    #[default]
    Visible,
    /// The first in document order, visible or not (file inputs: `upload_file`).
    Document,
}

impl Locator {
    /// A selector locator in the main frame, chosen by visibility.
    pub fn css(selector: impl Into<String>) -> Locator {
        Locator::Selector {
            css: selector.into(),
            nth: None,
            frame: None,
            pick: Pick::Visible,
            strict: false,
        }
    }

    /// The `frame` param of the locator (`None` for an index: indices carry their frame).
    pub fn frame(&self) -> Option<&str> {
        match self {
            Locator::Index(_) => None,
            Locator::Selector { frame, .. }
            | Locator::Text { frame, .. }
            | Locator::Role { frame, .. }
            | Locator::Label { frame, .. } => frame.as_deref(),
        }
    }

    /// How receipts name the target: `index=3`, `selector #go`, `selector #go (frame=1)`,
    /// `text Save`, `role button "Save"`, `label Email`.
    pub fn describe(&self) -> String {
        let base = match self {
            Locator::Index(i) => return format!("index={i}"),
            Locator::Selector { css, nth, .. } => match nth {
                Some(n) => format!("selector {css} (nth={n})"),
                None => format!("selector {css}"),
            },
            Locator::Text { text, .. } => format!("text {text}"),
            Locator::Role { role, name, .. } => match name {
                Some(n) => format!("role {role} \"{n}\""),
                None => format!("role {role}"),
            },
            Locator::Label { label, .. } => format!("label {label}"),
        };
        match self.frame() {
            Some(f) => format!("{base} (frame={f})"),
            None => base,
        }
    }

    /// The same locator with another [`Pick`] (no effect on other variants).
    pub fn with_pick(self, pick: Pick) -> Locator {
        match self {
            Locator::Selector {
                css,
                nth,
                frame,
                strict,
                ..
            } => Locator::Selector {
                css,
                nth,
                frame,
                pick,
                strict,
            },
            other => other,
        }
    }

    /// How messages name the element: `element 3`, `selector `#go``, ...
    /// How to wait for this element to arrive (an action finds what is there now: its
    /// `timeoutMs` bounds actionability, not arrival).
    pub(super) fn wait_hint(&self) -> Option<String> {
        let frame = self
            .frame()
            .map(|f| format!(", frame = {f:?}"))
            .unwrap_or_default();
        Some(match self {
            Locator::Index(_) => return None,
            Locator::Selector { css, .. } => {
                format!("wait_for_element{{ selector = {css:?}{frame}, timeoutSeconds = N }}")
            }
            Locator::Text { text, .. } => {
                format!("wait_for_text{{ text = {text:?}, timeoutSeconds = N }}")
            }
            Locator::Role { .. } | Locator::Label { .. } => {
                "wait_for_element{ selector = \"…\", timeoutSeconds = N } (or wait_for_text)"
                    .to_string()
            }
        })
    }

    pub(super) fn label(&self) -> String {
        match self {
            Locator::Index(i) => format!("element {i}"),
            Locator::Selector { css, .. } => format!("the element of selector `{css}`"),
            Locator::Text { text, .. } => format!("the element with text `{text}`"),
            Locator::Role { role, name, .. } => match name {
                Some(n) => format!("the {role} named `{n}`"),
                None => format!("the {role}"),
            },
            Locator::Label { label, .. } => format!("the field with label `{label}`"),
        }
    }

    /// The `query` argument of the element probe's `resolve` and `count` ops (`None` for an
    /// index).
    pub(super) fn query(&self) -> Option<Value> {
        Some(match self {
            Locator::Index(_) => return None,
            Locator::Selector {
                css,
                nth,
                pick,
                strict,
                ..
            } => json!({
                "css": css,
                "nth": nth,
                "prefer": match pick { Pick::Visible => "visible", Pick::Document => "document" },
                "strict": strict,
            }),
            Locator::Text { text, strict, .. } => json!({"text": text, "strict": strict}),
            Locator::Role {
                role, name, strict, ..
            } => json!({"role": role, "name": name, "strict": strict}),
            Locator::Label { label, strict, .. } => json!({"label": label, "strict": strict}),
        })
    }
}

/// Which of the locator params besides `index` and `selector` a command declares (a handler
/// reads exactly its declared params).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Takes {
    /// `nth`: the 0-based explicit pick among the selector's matches.
    pub nth: bool,
    /// `frame`: the frame the selector is looked up in.
    pub frame: bool,
}

impl Takes {
    /// `index` / `selector` only (selectors look in the main frame).
    pub const PLAIN: Takes = Takes {
        nth: false,
        frame: false,
    };
    /// With `frame`.
    pub const FRAME: Takes = Takes {
        nth: false,
        frame: true,
    };
    /// With `nth` and `frame`.
    pub const NTH_FRAME: Takes = Takes {
        nth: true,
        frame: true,
    };
}

/// The catalogue's `index` param where `selector` is the alternative.
pub const INDEX_OR: ParamSpec = int("index", "element index from the latest snapshot");
/// The catalogue's `selector` param where `index` is the alternative.
pub const SELECTOR_OR: ParamSpec =
    string("selector", "CSS/Playwright selector (no snapshot needed)");
/// The catalogue's `frame` param.
pub const FRAME_PARAM: ParamSpec = string(
    "frame",
    "frame to search in: integer ordinal (0 = main frame, depth-first order as in list_frames) or a substring of the frame URL or name; numeric strings are treated as ordinals; unknown ordinal or no match -> failure listing available frames",
);
/// The catalogue's `nth` param.
pub const NTH_PARAM: ParamSpec = int(
    "nth",
    "0-based explicit match; disables visibility-based choice; out of range -> ELEMENT_NOT_FOUND with the count",
)
.range(0.0, f64::INFINITY);

/// An `index` param's value as a snapshot index (`INVALID_ARGUMENT` below 0).
pub fn index_value(index: i64) -> Result<u32, CommandError> {
    u32::try_from(index).map_err(|_| {
        CommandError::invalid("index", format!("param `index`: must be >= 0, got {index}"))
    })
}

fn nth_value(nth: Option<i64>) -> Result<Option<u32>, CommandError> {
    nth.map(|n| {
        u32::try_from(n).map_err(|_| {
            CommandError::invalid("nth", format!("param `nth`: must be >= 0, got {n}"))
        })
    })
    .transpose()
}

/// Reads the "index or selector" params of `cmd` the same way for every command: `index`,
/// `selector` and, as `takes` says, `nth` and `frame` (all read before any is judged, so
/// unknown-param tracking sees them). The index wins when both are given (`nth` and `frame`
/// then do not apply: indices carry their frame). Neither is `INVALID_ARGUMENT`
/// `<cmd>: needs index or selector` (the executor puts the name in front; `cmd` names the
/// command in the hint).
pub fn index_or_selector(p: &mut Params, cmd: &str, takes: Takes) -> Result<Locator, CommandError> {
    let index = p.int_opt("index")?;
    let selector = p.str_opt("selector")?;
    let nth = if takes.nth { p.int_opt("nth")? } else { None };
    let frame = if takes.frame {
        p.str_opt("frame")?
    } else {
        None
    };
    let strict = strict_param(p)?;
    let nth = nth_value(nth)?;
    match (index, selector) {
        (Some(i), _) => Ok(Locator::Index(index_value(i)?)),
        (None, Some(css)) => Ok(Locator::Selector {
            css,
            nth,
            frame,
            pick: Pick::Visible,
            strict,
        }),
        // The receipt's message gets the command's name in front: `<cmd>: needs ...`.
        (None, None) => Err(
            CommandError::invalid("index", "needs index or selector").with_details(json!({
                "hint": format!("{cmd}{{ index = N }} (from get_browser_state) or {cmd}{{ selector = \"css\" }}"),
            })),
        ),
    }
}

/// Reads a required `selector` and, as `takes` says, `nth` and `frame`.
pub fn selector_param(p: &mut Params, takes: Takes) -> Result<Locator, CommandError> {
    let css = p.str_req("selector")?;
    let nth = if takes.nth { p.int_opt("nth")? } else { None };
    let frame = if takes.frame {
        p.str_opt("frame")?
    } else {
        None
    };
    let strict = strict_param(p)?;
    Ok(Locator::Selector {
        css,
        nth: nth_value(nth)?,
        frame,
        pick: Pick::Visible,
        strict,
    })
}

/// The framework param `strict` (any command may carry it; `browser.strict_locators` sets it
/// for a whole script): a selector, text, role or label that matches more than one element is
/// refused, its candidates listed, instead of one being chosen (Playwright's strict locators).
pub fn strict_param(p: &mut Params) -> Result<bool, CommandError> {
    p.bool_or("strict", false)
}

/// The ARIA roles a role locator accepts (those of Playwright's `AriaRole`).
pub const ARIA_ROLES: &[&str] = &[
    "alert",
    "alertdialog",
    "application",
    "article",
    "banner",
    "blockquote",
    "button",
    "caption",
    "cell",
    "checkbox",
    "code",
    "columnheader",
    "combobox",
    "complementary",
    "contentinfo",
    "definition",
    "deletion",
    "dialog",
    "directory",
    "document",
    "emphasis",
    "feed",
    "figure",
    "form",
    "generic",
    "grid",
    "gridcell",
    "group",
    "heading",
    "img",
    "insertion",
    "link",
    "list",
    "listbox",
    "listitem",
    "log",
    "main",
    "marquee",
    "math",
    "meter",
    "menu",
    "menubar",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "navigation",
    "none",
    "note",
    "option",
    "paragraph",
    "presentation",
    "progressbar",
    "radio",
    "radiogroup",
    "region",
    "row",
    "rowgroup",
    "rowheader",
    "scrollbar",
    "search",
    "searchbox",
    "separator",
    "slider",
    "spinbutton",
    "status",
    "strong",
    "subscript",
    "superscript",
    "switch",
    "tab",
    "table",
    "tablist",
    "tabpanel",
    "term",
    "textbox",
    "time",
    "timer",
    "toolbar",
    "tooltip",
    "tree",
    "treegrid",
    "treeitem",
];

/// A `role` param checked against [`ARIA_ROLES`] (any case): unknown is `INVALID_ARGUMENT`
/// naming the near roles.
pub fn check_role(role: &str) -> Result<String, CommandError> {
    let want = role.trim().to_ascii_lowercase();
    if ARIA_ROLES.contains(&want.as_str()) {
        return Ok(want);
    }
    let near = crate::registry::suggest_among(&want, ARIA_ROLES.iter().copied());
    Err(CommandError::invalid(
        "role",
        format!(
            "param `role`: `{role}` is not an ARIA role{}",
            if near.is_empty() {
                " (button, link, textbox, checkbox, radio, combobox, heading, ...)".to_string()
            } else {
                format!("; did you mean {}?", near.join(", "))
            }
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ErrorCode;

    fn params(v: Value) -> Params {
        Params::new(v).unwrap()
    }

    #[test]
    fn index_or_selector_reads_every_param_and_prefers_the_index() {
        let mut p = params(json!({"index": 2, "selector": "#a", "nth": 1, "frame": "1"}));
        assert_eq!(
            index_or_selector(&mut p, "is_visible", Takes::NTH_FRAME).unwrap(),
            Locator::Index(2)
        );
        assert_eq!(
            p.read_keys(),
            ["index", "selector", "nth", "frame", "strict"]
        );
        let mut p = params(json!({"selector": "#a", "nth": "1", "frame": 2}));
        let loc = index_or_selector(&mut p, "x", Takes::NTH_FRAME).unwrap();
        assert_eq!(
            loc,
            Locator::Selector {
                css: "#a".into(),
                nth: Some(1),
                frame: Some("2".into()),
                pick: Pick::Visible,
                strict: false,
            }
        );
        assert_eq!(loc.describe(), "selector #a (nth=1) (frame=2)");
        let mut p = params(json!({"selector": "#a", "nth": 1}));
        index_or_selector(&mut p, "x", Takes::PLAIN).unwrap();
        assert_eq!(p.unread(), ["nth"], "undeclared params stay unread");
        let e = index_or_selector(&mut params(json!({})), "is_checked", Takes::FRAME).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(e.msg, "needs index or selector");
        assert!(e.details.unwrap()["hint"]
            .as_str()
            .unwrap()
            .starts_with("is_checked{"));
        let e = index_or_selector(
            &mut params(json!({"selector": "a", "nth": -1})),
            "x",
            Takes::NTH_FRAME,
        )
        .unwrap_err();
        assert!(e.msg.contains("`nth`"), "{}", e.msg);
        let e =
            index_or_selector(&mut params(json!({"index": -3})), "x", Takes::PLAIN).unwrap_err();
        assert!(e.msg.contains("`index`"), "{}", e.msg);
        let e = selector_param(&mut params(json!({"selector": ""})), Takes::PLAIN).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
    }

    #[test]
    fn roles_are_checked_against_aria() {
        assert_eq!(check_role("Button").unwrap(), "button");
        let e = check_role("buton").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.msg.contains("button"), "{}", e.msg);
    }
}
