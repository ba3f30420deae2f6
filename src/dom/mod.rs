//! The snapshot model of one frame: what the DOM index probe (`src/js/dom_index.js`,
//! JS-PROBES.md §1) reports, turned into typed Rust data.
//!
//! The probe returns a flat, pruned pre-order list of nodes (see [`parse_frame`] for the wire
//! format); this module rebuilds the element list (index, locator, text, attributes, rect) from
//! it, and [`render`] turns it into the `[index]<tag attr='v'>text/>` text of JS-PROBES.md §2.
//! Everything here is pure: no browser, no async, no clock.

pub mod render;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use render::render_frames;

/// The separator between a shadow host's locator and the path inside its open shadow root.
///
/// A locator is `html/body/div[2]/my-widget/#shadow-root/div/button[2]`: every part is a
/// positional path (JS-PROBES.md §1.9) relative to the document or to the previous host's shadow
/// root. Locators without this marker are plain document XPaths without the leading slash.
pub const SHADOW_MARKER: &str = "/#shadow-root/";

/// One frame's snapshot as read by the DOM index probe.
///
/// Deserialising it from the probe's `value` is the same as calling [`parse_frame`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(try_from = "Value")]
pub struct FrameDom {
    /// Indexed elements in index order (document pre-order, contiguous from the start index).
    pub elements: Vec<IndexedElement>,
    /// `scrollY` of the frame in CSS px.
    pub pixels_above: i64,
    /// Page height minus `scrollY` minus viewport height, in CSS px (can be negative).
    pub pixels_below: i64,
    /// `innerHeight` of the frame in CSS px.
    pub viewport_height: i64,
    /// `documentElement.scrollHeight` in CSS px.
    pub page_height: i64,
    /// Large-image hint (JS-PROBES.md §15); `None` when the frame shows no big image.
    pub media: Option<MediaHint>,
    /// The pruned tree in document pre-order; each node knows its depth and subtree end.
    pub nodes: Vec<DomNode>,
    /// The reader's time budget ran out: the walk stopped early, so elements after the last
    /// index were not visited (the indices given are correct, the list is incomplete).
    pub time_up: bool,
    /// Text was left out at the reader's text budget (`maxTextChars`).
    pub text_cut: bool,
    /// Characters of text nodes left out by the text budget (whitespace included).
    pub text_dropped: u64,
    /// Interactive elements above the expanded viewport (viewport mode only).
    pub above: Option<Beyond>,
    /// Interactive elements below the expanded viewport (viewport mode only).
    pub below: Option<Beyond>,
    /// Covered candidates whose cover is an open dialog or a page-wide overlay (they get no line).
    pub behind: Option<Behind>,
}

/// What lies beyond the expanded viewport on one side (JS-PROBES.md §1.2 `above`/`below`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct Beyond {
    /// Pixels of page past the viewport on that side (`scrollY`, or the height left below).
    #[serde(default)]
    pub px: i64,
    /// Interactive elements there (not indexed, not disabled, not zero-sized), as the reader's
    /// walk passed them (shadow trees included, frames not).
    #[serde(default)]
    pub count: u64,
    /// The count is a lower bound (kept for readers of older receipts: the walk now counts
    /// every element it passes, and a read out of time sends no count at all).
    #[serde(default)]
    pub capped: bool,
}

/// Controls hidden behind an open dialog or an overlay (JS-PROBES.md §1.2 `behind`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct Behind {
    /// How many index candidates the cover hides.
    #[serde(default)]
    pub count: u64,
    /// `dialog` (an open dialog, or an overlay holding one) or `overlay`.
    #[serde(default)]
    pub what: String,
}

/// One indexed (interactive) element of a frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexedElement {
    /// The highlight index, unique across the frames of one snapshot.
    pub index: u32,
    /// Lower-case tag name.
    pub tag: String,
    /// The locator: a positional XPath without the leading slash, with [`SHADOW_MARKER`]
    /// between a shadow host and the path inside its shadow root.
    pub xpath: String,
    /// The `id` attribute, if any.
    pub id: Option<String>,
    /// The `name` attribute, if any.
    pub name: Option<String>,
    /// Whitelisted attributes with live form state (JS-PROBES.md §1.8, §2.2); passwords are
    /// already `[redacted]`.
    pub attributes: BTreeMap<String, String>,
    /// The element's text per JS-PROBES.md §2.1 (text nodes up to the next indexed element).
    pub text: String,
    /// Bounding client rect `[left, top, width, height]` in the frame's viewport, CSS px.
    pub rect: [i64; 4],
    /// Why the probe indexed it (JS-PROBES.md §1.7): `native`, `role`, `cursor`,
    /// `contenteditable`, `handler-attr`, `listener`, `framework`, `class`, `tabindex` or
    /// `label-for-hidden`; `None` when the probe did not say.
    pub reason: Option<String>,
}

/// The large-image hint of a frame (JS-PROBES.md §15).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct MediaHint {
    /// Number of big images (natural size at least 120×120 and 40,000 px²).
    pub media_count: u32,
    /// Number of `img` elements in the frame.
    pub image_count: u32,
    /// Up to three `{src, w, h}` samples of big images.
    pub samples: Vec<Value>,
}

/// One node of the pruned tree.
#[derive(Debug, Clone, PartialEq)]
pub struct DomNode {
    /// Depth below the root (`body` is 0); shadow-root children sit one level below their host.
    pub depth: u32,
    /// Element or text.
    pub kind: NodeKind,
    /// Position (in [`FrameDom::nodes`]) just past this node's subtree.
    pub subtree_end: usize,
}

/// The two kinds of nodes the renderer knows.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// An element.
    Element(ElementNode),
    /// A text node, trimmed and non-empty.
    Text(String),
}

/// An element of the pruned tree.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ElementNode {
    /// Lower-case tag name.
    pub tag: String,
    /// Highlight index, when the element received one.
    pub index: Option<u32>,
    /// Not present in the previous snapshot (rendered `*[i]`); see [`FrameDom::mark_new`].
    pub is_new: bool,
    /// Visible per JS-PROBES.md §1.5.
    pub visible: bool,
    /// Top-most per JS-PROBES.md §1.6.
    pub top: bool,
    /// An index candidate in the viewport that another element covers (flag 16): it renders an
    /// unindexed line with `covered-by`.
    pub covered: bool,
    /// Attributes in whitelist order; empty unless the element renders a line.
    pub attributes: Vec<(String, String)>,
}

impl ElementNode {
    /// The value of attribute `name`, if present.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Flag bits of an element entry on the wire.
const FLAG_VISIBLE: u64 = 1;
const FLAG_TOP: u64 = 2;
const FLAG_SHADOW_CHILD: u64 = 4;
const FLAG_NEW: u64 = 8;
const FLAG_COVERED: u64 = 16;

/// Per-element data that only indexed elements carry.
struct Extra {
    id: Option<String>,
    name: Option<String>,
    rect: [i64; 4],
    reason: Option<String>,
}

/// Parses the `value` of a successful DOM index probe call into a [`FrameDom`].
///
/// Wire format of `value.tree`, a flat pre-order list (so that no JSON nesting limit is ever
/// reached on deep pages), given as an array or as its JSON text (the probe sends text: one
/// string crosses the protocol much faster than thousands of small arrays):
/// - element: `[depth, tag, seg, flags, index, attrs|null, [id|null, name|null, [l,t,w,h],
///   reason]]`,
///   where `seg` is the 1-based position among same-tag siblings (0 when unique), `flags` has
///   bits 1 visible, 2 top-most, 4 shadow-root child, 8 new, 16 covered, `index` is -1 when not
///   indexed, and the last two items may be omitted;
/// - text: `[depth, text]`.
///
/// Locators are rebuilt from `value.root_xpath` and the `seg` chain of each element's ancestors.
pub fn parse_frame(value: Value) -> Result<FrameDom, String> {
    // Fields are taken out of the object by hand: deserialising the tree into `Vec<Value>`
    // through serde would copy every node once more.
    let Value::Object(mut map) = value else {
        return Err("the probe value is not an object".to_string());
    };
    let number = |map: &serde_json::Map<String, Value>, key: &str| -> i64 {
        map.get(key)
            .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f.round() as i64)))
            .unwrap_or(0)
    };
    // Optional and lenient: a malformed count is no count (the line is left out).
    let mut optional = |key: &str| match map.remove(key) {
        None | Some(Value::Null) => None,
        Some(v) => Some(v),
    };
    let above = optional("above").and_then(|v| serde_json::from_value::<Beyond>(v).ok());
    let below = optional("below").and_then(|v| serde_json::from_value::<Beyond>(v).ok());
    let behind = optional("behind")
        .and_then(|v| serde_json::from_value::<Behind>(v).ok())
        .filter(|b| b.count > 0);
    let media = match map.remove("media") {
        None | Some(Value::Null) => None,
        Some(v) => Some(serde_json::from_value::<MediaHint>(v).map_err(|e| format!("media: {e}"))?),
    };
    let root_xpath = match map.remove("root_xpath") {
        Some(Value::String(s)) if !s.is_empty() => s,
        _ => "html/body".to_string(),
    };
    let tree = match map.remove("tree") {
        Some(Value::Array(tree)) => tree,
        Some(Value::String(text)) => serde_json::from_str::<Vec<Value>>(&text)
            .map_err(|e| format!("the probe value's tree is not a JSON list: {e}"))?,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err("the probe value's tree is not an array".to_string()),
    };
    let mut nodes: Vec<DomNode> = Vec::with_capacity(tree.len());
    // Open elements, root first. Full locators are only joined for indexed elements, so deep
    // pages stay linear.
    let mut open: Vec<OpenElement> = Vec::new();
    let mut pending: Vec<(usize, String, Extra)> = Vec::new();
    for (pos, entry) in tree.into_iter().enumerate() {
        let Value::Array(mut items) = entry else {
            return Err(format!("tree entry {pos} is not an array"));
        };
        let depth = items
            .first()
            .and_then(Value::as_u64)
            .and_then(|d| u32::try_from(d).ok())
            .ok_or_else(|| format!("tree entry {pos} has no depth"))?;
        while open.last().is_some_and(|o| o.depth >= depth) {
            if let Some(o) = open.pop() {
                nodes[o.at].subtree_end = nodes.len();
            }
        }
        let depth_ok = match open.last() {
            Some(parent) => depth == parent.depth + 1,
            None => depth == 0 && nodes.is_empty(),
        };
        if !depth_ok {
            return Err(format!("tree entry {pos} has depth {depth} out of place"));
        }
        let name = match items.get_mut(1).map(Value::take) {
            Some(Value::String(s)) if !s.is_empty() => s,
            _ => return Err(format!("tree entry {pos} has no tag or text")),
        };
        if items.len() == 2 {
            nodes.push(DomNode {
                depth,
                kind: NodeKind::Text(name),
                subtree_end: nodes.len() + 1,
            });
            continue;
        }
        if items.len() < 5 {
            return Err(format!("tree entry {pos} is neither a text nor an element"));
        }
        let tag = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            name.to_ascii_lowercase()
        } else {
            name
        };
        let seg = items[2].as_u64().unwrap_or(0);
        let flags = items[3].as_u64().unwrap_or(0);
        let index = items[4].as_i64().and_then(|i| u32::try_from(i).ok());
        let attributes = match items.get_mut(5).map(Value::take) {
            Some(Value::Object(map)) => map
                .into_iter()
                .map(|(k, v)| (k, value_text(v)))
                .collect::<Vec<(String, String)>>(),
            _ => Vec::new(),
        };
        let at = nodes.len();
        let shadow = flags & FLAG_SHADOW_CHILD != 0;
        if index.is_some() {
            let mut xpath = locator(&root_xpath, &open, &nodes);
            if !open.is_empty() {
                push_step(&mut xpath, &tag, seg, shadow);
            }
            pending.push((at, xpath, parse_extra(items.get(6))));
        }
        nodes.push(DomNode {
            depth,
            kind: NodeKind::Element(ElementNode {
                tag,
                index,
                is_new: flags & FLAG_NEW != 0,
                visible: flags & FLAG_VISIBLE != 0,
                top: flags & FLAG_TOP != 0,
                covered: flags & FLAG_COVERED != 0,
                attributes,
            }),
            subtree_end: at + 1,
        });
        open.push(OpenElement {
            at,
            depth,
            seg,
            shadow,
        });
    }
    for o in open.drain(..) {
        nodes[o.at].subtree_end = nodes.len();
    }
    let mut elements = Vec::with_capacity(pending.len());
    for (at, xpath, extra) in pending {
        let NodeKind::Element(el) = &nodes[at].kind else {
            continue;
        };
        let Some(index) = el.index else { continue };
        elements.push(IndexedElement {
            index,
            tag: el.tag.clone(),
            xpath,
            id: extra.id,
            name: extra.name,
            attributes: el.attributes.iter().cloned().collect(),
            text: render::element_text(&nodes, at),
            rect: extra.rect,
            reason: extra.reason,
        });
    }
    elements.sort_by_key(|e| e.index);
    Ok(FrameDom {
        elements,
        pixels_above: number(&map, "pixels_above"),
        pixels_below: number(&map, "pixels_below"),
        viewport_height: number(&map, "viewport_height"),
        page_height: number(&map, "page_height"),
        media,
        nodes,
        time_up: map.get("time_up") == Some(&Value::Bool(true)),
        text_cut: map.get("text_cut") == Some(&Value::Bool(true)),
        text_dropped: u64::try_from(number(&map, "text_dropped")).unwrap_or(0),
        above,
        below,
        behind,
    })
}

impl FrameDom {
    /// Characters of page text in the tree (what the text budget counts).
    pub fn text_chars(&self) -> usize {
        self.nodes
            .iter()
            .map(|n| match &n.kind {
                NodeKind::Text(t) => t.chars().count(),
                NodeKind::Element(_) => 0,
            })
            .sum()
    }

    /// Marks the indexed elements that `seen` does not know as new, so they render as `*[i]`
    /// (JS-PROBES.md §1.11). The caller decides identity, e.g. tag + locator + id/name of the
    /// previous snapshot of the same document.
    pub fn mark_new(&mut self, seen: impl Fn(&IndexedElement) -> bool) {
        let fresh: std::collections::HashSet<u32> = self
            .elements
            .iter()
            .filter(|e| !seen(e))
            .map(|e| e.index)
            .collect();
        for node in &mut self.nodes {
            if let NodeKind::Element(el) = &mut node.kind {
                if let Some(index) = el.index {
                    el.is_new = fresh.contains(&index);
                }
            }
        }
    }
}

impl TryFrom<Value> for FrameDom {
    type Error = String;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        parse_frame(value)
    }
}

/// An element whose subtree is still being read.
struct OpenElement {
    /// Position in the node list.
    at: usize,
    depth: u32,
    /// Position among same-tag siblings, 0 when unique.
    seg: u64,
    /// Child of its parent's shadow root.
    shadow: bool,
}

/// The locator of the innermost open element: `root_xpath` for the root, then one step per
/// open element below it.
fn locator(root_xpath: &str, open: &[OpenElement], nodes: &[DomNode]) -> String {
    let mut out = root_xpath.to_string();
    for o in open.iter().skip(1) {
        if let NodeKind::Element(el) = &nodes[o.at].kind {
            push_step(&mut out, &el.tag, o.seg, o.shadow);
        }
    }
    out
}

/// Appends `/tag` or `/tag[k]` (with the shadow marker instead of `/` for shadow children).
fn push_step(out: &mut String, tag: &str, seg: u64, shadow: bool) {
    out.push_str(if shadow { SHADOW_MARKER } else { "/" });
    out.push_str(tag);
    if seg > 0 {
        out.push('[');
        out.push_str(&seg.to_string());
        out.push(']');
    }
}

/// Reads the `[id, name, [l, t, w, h], reason]` item of an indexed element (lenient: missing
/// parts are `None` or zero; a reason is a short lower-case word, anything else is `None`).
fn parse_extra(value: Option<&Value>) -> Extra {
    let items = value.and_then(Value::as_array);
    let text_at = |i: usize| {
        items
            .and_then(|a| a.get(i))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let mut rect = [0i64; 4];
    if let Some(r) = items.and_then(|a| a.get(2)).and_then(Value::as_array) {
        for (slot, v) in rect.iter_mut().zip(r) {
            // Rects arrive rounded; a float from another writer is rounded here too.
            *slot = v
                .as_i64()
                .or_else(|| v.as_f64().map(|f| f.round() as i64))
                .unwrap_or(0);
        }
    }
    Extra {
        id: text_at(0),
        name: text_at(1),
        rect,
        reason: text_at(3)
            .filter(|r| r.len() <= 32 && r.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')),
    }
}

/// Attribute values arrive as strings; anything else is kept as its JSON text.
fn value_text(v: Value) -> String {
    match v {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Header data of one frame section in a multi-frame snapshot (JS-PROBES.md §2.4).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameHeader {
    /// Depth-first position in the frame tree; 0 is the main frame.
    pub ordinal: usize,
    /// Whether this is the main frame.
    pub is_main: bool,
    /// The frame's URL (shown relative to the main frame's origin when it shares it).
    pub url: String,
    /// The frame's name (may be empty).
    pub name: String,
    /// The frame runs in another renderer process (a cross-site frame).
    pub cross_site: bool,
    /// Not read because it is cross-origin and `includeFrames` is off: its header says so and
    /// its section is empty.
    pub skipped: bool,
    /// Why the frame could not be read, when it failed.
    pub read_failure: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn elements_of(tree: Value) -> Vec<IndexedElement> {
        parse_frame(json!({"root_xpath": "html/body", "tree": tree}))
            .unwrap()
            .elements
    }

    #[test]
    fn the_reason_an_element_was_indexed_is_read_from_extra() {
        let els = elements_of(json!([
            [0, "body", 0, 0, -1],
            [1, "canvas", 0, 3, 0, null, ["pad", null, [16, 60, 400, 200], "listener"]],
            [1, "span", 1, 3, 1, {"role": "link"}, [null, null, [0, 0, 80, 18], "role"]],
            [1, "div", 1, 3, 2, null, ["react-tile", null, [0, 0, 90, 34], "framework"]],
            [1, "div", 2, 3, 3, null, ["pointer-tile", null, [0, 0, 90, 34], "cursor"]],
            [1, "button", 0, 3, 4, null, [null, null, [0, 0, 60, 20], "label-for-hidden"]]
        ]));
        let reasons: Vec<Option<&str>> = els.iter().map(|e| e.reason.as_deref()).collect();
        assert_eq!(
            reasons,
            [
                Some("listener"),
                Some("role"),
                Some("framework"),
                Some("cursor"),
                Some("label-for-hidden")
            ]
        );
        assert_eq!(els[0].id.as_deref(), Some("pad"));
        assert_eq!(els[0].rect, [16, 60, 400, 200]);
        assert_eq!(els[0].xpath, "html/body/canvas");
    }

    #[test]
    fn a_missing_or_odd_reason_is_none() {
        let els = elements_of(json!([
            [0, "body", 0, 0, -1],
            [1, "a", 1, 3, 0, null, ["x", null, [0, 0, 1, 1]]],
            [1, "a", 2, 3, 1, null, ["y", null, [0, 0, 1, 1], ""]],
            [1, "a", 3, 3, 2, null, ["z", null, [0, 0, 1, 1], 7]],
            [
                1,
                "a",
                4,
                3,
                3,
                null,
                ["w", null, [0, 0, 1, 1], "Not A Reason!"]
            ],
            [1, "a", 5, 3, 4]
        ]));
        assert_eq!(els.len(), 5);
        assert!(els.iter().all(|e| e.reason.is_none()), "{els:?}");
        assert_eq!(els[0].id.as_deref(), Some("x"));
    }
}
