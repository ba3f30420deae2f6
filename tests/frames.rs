//! Frames: same-site and cross-site (out-of-process) iframes share one index space.

use crate::support::harness::lua;

const FIND: &str = r#"
local function find(s, pred)
  for _, el in ipairs(s.elements) do if pred(el) then return el end end
  error("no such element in the snapshot", 2)
end
"#;

#[test]
fn default_snapshot_skips_cross_site_frames_with_a_hint() {
    lua(r#"
        page:navigate{ url = A .. "/frames.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        has(s.frameHint, "includeFrames=true")
        has(s.text, "--- frame[0] (main) ---\n")
        has(s.text, "\n--- frame[1] /child.html name=\"samechild\" ---\n")
        has(s.text, "\n--- frame[2] " .. B .. "/child.html (cross-site) not read: includeFrames=true ---")
        has(s.text, "child at 127.0.0.1", "same-origin frame content")
        hasnt(s.text, "child at localhost", "cross-site frame skipped")
    "#);
}

#[test]
fn include_frames_indexes_cross_site_frames() {
    lua(&format!(
        "{FIND}{}",
        r#"
        page:navigate{ url = A .. "/frames.html" }:unwrap()
        local s = page:get_browser_state{ includeFrames = true }:unwrap()
        eq(s.includeFrames, true); eq(s.frameCount, 3)
        has(s.text, "child at localhost")
        local cross = s.frames[3]
        eq(cross.elementCount, 2); eq(cross.skipped, false)
        -- One index space: the ranges follow each other.
        eq(s.frames[1].indexRange, "0-0")
        eq(s.frames[2].indexRange, "1-2")
        eq(cross.indexRange, "3-4")
        local btn = find(s, function(el) return el.frameUrl == B .. "/child.html" and el.tag == "BUTTON" end)
        eq(btn.index, 3)
    "#
    ));
}

#[test]
fn click_and_type_inside_a_cross_site_frame_by_index() {
    lua(&format!(
        "{FIND}{}",
        r#"
        page:navigate{ url = A .. "/frames.html" }:unwrap()
        local s = page:get_browser_state{ includeFrames = true }:unwrap()
        local btn = find(s, function(el) return el.frameUrl == B .. "/child.html" and el.tag == "BUTTON" end)
        local c = page:click_element_by_index{ index = btn.index }
        eq(c.ok, true, tostring(c))
        eq(c.data.changed, true, "the frame changed")
        eq(c.data.probedFrameUrl, B .. "/child.html")
        eq(c.data.mode, "native"); eq(c.data.hit.id, "child-btn", "the hit test ran in the frame")
        eq(c.data.urlBefore, A .. "/frames.html"); eq(c.data.urlAfter, A .. "/frames.html")
        eq(page:execute_js{ body = "document.getElementById('child-btn').textContent", frame = "localhost" }.data.result, "child clicked 1")
        eq(page:execute_js{ body = "document.getElementById('top-btn').textContent" }.data.result, "Top button", "top untouched")
        eq(page:execute_js{ body = "window.n", frame = "1" }.data.result, 0, "same-site frame untouched")
        local input = find(s, function(el) return el.frameUrl == B .. "/child.html" and el.tag == "INPUT" end)
        local t = page:input_text{ index = input.index, text = "déjà vu 你好" }
        eq(t.ok, true, tostring(t))
        eq(page:execute_js{ body = "document.getElementById('child-input').value", frame = 2 }.data.result, "déjà vu 你好")
    "#
    ));
}

#[test]
fn click_inside_a_same_site_frame_by_index() {
    lua(&format!(
        "{FIND}{}",
        r#"
        page:navigate{ url = A .. "/frames.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local btn = find(s, function(el) return el.frameUrl == A .. "/child.html" and el.tag == "BUTTON" end)
        eq(page:click_element_by_index{ index = btn.index }.ok, true)
        eq(page:execute_js{ body = "document.getElementById('child-btn').textContent", frame = "samechild" }.data.result, "child clicked 1")
    "#
    ));
}

#[test]
fn execute_js_frame_selection_errors_list_the_frames() {
    lua(r#"
        page:navigate{ url = A .. "/frames.html" }:unwrap()
        local r = page:execute_js{ body = "1", frame = "nowhere" }
        eq(r.code, "INVALID_ARGUMENT"); eq(r.started, false)
        has(r.msg, "no frame matches `nowhere`")
        has(r.msg, "2: " .. B .. "/child.html")
        eq(page:execute_js{ body = "location.host", frame = 9 }.code, "INVALID_ARGUMENT")
        has(page:execute_js{ body = "location.host", frame = 0 }.data.result, "127.0.0.1")
    "#);
}

#[test]
fn two_copies_of_one_frame_are_never_confused() {
    lua(&format!(
        "{FIND}{}",
        r#"
        page:navigate{ url = A .. "/twins.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        local second
        for _, el in ipairs(s.elements) do
          if el.tag == "BUTTON" and el.frameIndex == 2 then second = el end
        end
        assert(second, "the second frame's button is indexed")
        page:click_element_by_index{ index = second.index }:unwrap()
        eq(page:execute_js{ body = "window.n", frame = 2 }.data.result, 1, "second frame clicked")
        eq(page:execute_js{ body = "window.n", frame = 1 }.data.result, 0, "first frame untouched")
    "#
    ));
}
