//! Issue 14, scope 4: the text says what it does not show, one engine line each: what lies
//! above and below the viewport (`… N px below: M more interactive elements …`), a cross-origin
//! frame that was not read, a control another element covers (`<button covered-by='div#cover'>…`)
//! and the controls behind an open dialog or an overlay (`(3 controls behind the open dialog)`).

use crate::support::harness::{lua, ELEMENT_HELPERS};

const HELPERS: &str = r#"
local function lines(text)
  local out = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do out[#out + 1] = line end
  return out
end
-- The lines of `text` that start with `prefix`.
local function starting(text, prefix)
  local out = {}
  for _, line in ipairs(lines(text)) do
    if line:find(prefix, 1, true) == 1 then out[#out + 1] = line end
  end
  return out
end
local function engine_beyond(text) return starting(text, "\u{2026} ") end
local function headers(text) return table.concat(starting(text, "--- frame["), "\n") end
"#;

fn run(body: &str) {
    lua(&format!("{ELEMENT_HELPERS}{HELPERS}\n{body}"));
}

#[test]
fn checkout_says_what_lies_below_and_after_scrolling_what_lies_above() {
    run(r#"
        page:navigate{ url = A .. "/checkout.html" }:unwrap()
        local s = page:get_browser_state{ highlight = false }:unwrap()
        assert(s.pixels_below > 1000, "a tall page: " .. tostring(s.pixels_below))
        local want = "\u{2026} " .. s.pixels_below
          .. " px below: 4 more interactive elements (scroll, or viewportExpansion=-1) \u{2026}"
        local l = lines(s.text)
        eq(l[#l], want, "the last line")
        eq(#engine_beyond(s.text), 1, "no line above at the top of the page")
        eq(count(s, function(el) return el.tag == "A" end), 0, "the footer is not indexed")
        eq(s.beyondViewport.below.count, 4); eq(s.beyondViewport.below.px, s.pixels_below)
        eq(s.beyondViewport.below.capped, false)
        eq(s.beyondViewport.above.count, 0); eq(s.beyondViewport.above.px, 0)

        -- At the bottom: the footer is indexed, the controls above are counted.
        js("window.scrollTo(0, document.documentElement.scrollHeight); window.scrollY")
        local b = page:get_browser_state{ highlight = false }:unwrap()
        eq(b.pixels_below, 0)
        assert(b.pixels_above > 1000, "scrolled: " .. tostring(b.pixels_above))
        local first = lines(b.text)[1]
        -- Email, name, shipping, the summary, terms, Place order, the promo ×, gift wrap.
        eq(first, "\u{2026} " .. b.pixels_above .. " px above: 8 more interactive elements \u{2026}")
        eq(#engine_beyond(b.text), 1, "no line below at the end of the page")
        eq(count(b, function(el) return el.tag == "A" end), 4, "the footer links are indexed")
        has(b.text, ">Contact us/>")
        eq(b.beyondViewport.above.count, 8); eq(b.beyondViewport.below.count, 0)

        -- The whole page: nothing beyond it, so no such line and no such data.
        local all = page:get_browser_state{ highlight = false, viewportExpansion = -1 }:unwrap()
        eq(#engine_beyond(all.text), 0, all.text)
        eq(all.beyondViewport, nil)
        eq(count(all, function(el) return el.tag == "A" end), 4)

        -- Bad input: a mistyped expansion is refused before the page is touched.
        local bad = page:get_browser_state{ viewportExpansion = "all" }
        eq(bad.ok, false); eq(bad.code, "INVALID_ARGUMENT"); eq(bad.started, false)
    "#);
}

#[test]
fn a_long_table_counts_the_rows_below_the_viewport() {
    run(r#"
        page:navigate{ url = A .. "/table?rows=200" }:unwrap()
        local s = page:get_browser_state{ highlight = false }:unwrap()
        eq(s.elementCount % 3, 0, "whole rows: " .. s.elementCount)
        local rows = s.elementCount // 3
        local below = (200 - rows) * 3
        local l = lines(s.text)
        eq(l[#l], "\u{2026} " .. s.pixels_below .. " px below: " .. below
          .. " more interactive elements (scroll, or viewportExpansion=-1) \u{2026}")
        eq(l[1], "row 0", "no line above")
        eq(s.beyondViewport.below.count, below)
        -- An expansion indexes nothing more in viewport mode (the hit test finds nothing past the
        -- viewport), so the line still counts every row past the viewport.
        local e = page:get_browser_state{ highlight = false, viewportExpansion = 400 }:unwrap()
        eq(e.elementCount, s.elementCount)
        eq(e.beyondViewport.below.count, below); eq(e.beyondViewport.below.px, e.pixels_below)
        -- The whole table: no line.
        local all = page:get_browser_state{ highlight = false, viewportExpansion = -1 }:unwrap()
        eq(all.elementCount, 600); eq(#engine_beyond(all.text), 0)
        -- Past 5,000 controls the count is still exact (the walk counts what it passes).
        page:navigate{ url = A .. "/table?rows=2000" }:unwrap()
        local big = page:get_browser_state{ highlight = false }:unwrap()
        eq(big.beyondViewport.below.count, (2000 - big.elementCount // 3) * 3)
        eq(big.beyondViewport.below.capped, false)
        -- Scrolled to the middle: both sides, and what is on screen in neither.
        js("window.scrollTo(0, 20000); window.scrollY")
        local mid = page:get_browser_state{ highlight = false }:unwrap()
        local a, b = mid.beyondViewport.above.count, mid.beyondViewport.below.count
        assert(a > 1000 and b > 1000, a .. " above, " .. b .. " below")
        -- A row cut by an edge is neither indexed nor wholly beyond.
        local n = a + b + mid.elementCount
        assert(n <= 6000 and n >= 5994, n .. " of 6000 controls accounted for")
    "#);
}

/// A page scrolled past thousands of fields reads the fields in view as at its top: their
/// labels are said on their lines, not as lines of their own (the field pass once stopped at
/// the document's first 2,000 fields, in view or not).
#[test]
fn fields_past_the_first_thousands_keep_their_labels_in_view() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        js([[const parts = [];
          for (let i = 0; i < 3000; i++) parts.push(`<div><label>Field ${i} <input name="f${i}"></label></div>`);
          document.body.innerHTML = parts.join(''); true]])
        local function check(s, first)
            local named, bare = 0, 0
            for _, line in ipairs(lines(s.text)) do
                if line:find("<input label='Field ", 1, true) then named = named + 1 end
                if line:match("^%s*Field %d+$") then bare = bare + 1 end
            end
            assert(named >= 10, named .. " named fields in " .. s.text:sub(1, 200))
            eq(bare, 0, "labels said on their fields' lines: " .. s.text:sub(1, 300))
            has(s.text, "<input label='Field " .. first)
        end
        check(page:get_browser_state{ highlight = false }:unwrap(), "0'")
        js("window.scrollTo(0, document.body.scrollHeight); true")
        check(page:get_browser_state{ highlight = false }:unwrap(), "2999'")
    "#);
}

#[test]
fn a_skipped_cross_site_frame_is_a_line_that_says_how_to_read_it() {
    run(r#"
        page:navigate{ url = A .. "/frames.html" }:unwrap()
        local s = page:get_browser_state{ highlight = false }:unwrap()
        eq(headers(s.text), table.concat({
          "--- frame[0] (main) ---",
          "--- frame[1] /child.html name=\"samechild\" ---",
          "--- frame[2] " .. B .. "/child.html (cross-site) not read: includeFrames=true ---",
        }, "\n"))
        local l = lines(s.text)
        eq(l[#l], "--- frame[2] " .. B .. "/child.html (cross-site) not read: includeFrames=true ---")
        hasnt(s.text, "child at localhost"); eq(s.elementCount, 3)
        has(s.frameHint, "includeFrames=true")

        -- With includeFrames the frame's controls are read and its header is a normal one.
        local f = page:get_browser_state{ highlight = false, includeFrames = true }:unwrap()
        eq(headers(f.text), table.concat({
          "--- frame[0] (main) ---",
          "--- frame[1] /child.html name=\"samechild\" ---",
          "--- frame[2] " .. B .. "/child.html (cross-site) name=\"crosschild\" ---",
        }, "\n"))
        has(f.text, "child at localhost"); hasnt(f.text, "not read")
        eq(f.elementCount, 5); eq(f.frames[3].skipped, false)
        local cross = 0
        for _, el in ipairs(f.elements) do
          if el.frameUrl == B .. "/child.html" then
            cross = cross + 1
            has(f.text, "[" .. el.index .. "]<", "the frame's control has a line")
          end
        end
        eq(cross, 2)
    "#);
}

#[test]
fn a_covered_button_is_an_unindexed_line_naming_its_cover() {
    run(r#"
        page:navigate{ url = A .. "/listener_only.html" }:unwrap()
        local s = page:get_browser_state{ highlight = false }:unwrap()
        local line = "<button covered-by='div#cover'>Wipe data/>"
        has(s.text, "\n" .. line)
        local n = 0
        for _, l in ipairs(lines(s.text)) do if l:find("Wipe data", 1, true) then n = n + 1 end end
        eq(n, 1, "one line carries its text")
        eq(by_id(s).wipe, nil, "a covered element has no index")
        assert(by_id(s)["pointer-tile"], "the uncovered tile keeps its index")
        eq(s.behindOverlay, nil, "a small cover is no overlay")
        -- Every index the snapshot gives is another element: clicking them all never wipes.
        local bad = page:click_element_by_index{ index = s.elementCount }
        eq(bad.ok, false); eq(bad.started, false)
        eq(js("document.getElementById('status').textContent"), "idle")

        -- Once the cover is gone the button is indexed and clickable; no covered line is left.
        js("document.getElementById('cover').remove(); true")
        local after = page:get_browser_state{ highlight = false }:unwrap()
        hasnt(after.text, "covered-by")
        local wipe = by_id(after).wipe
        assert(wipe, "indexed once uncovered")
        has(after.text, "[" .. wipe.index .. "]<button >Wipe data/>")
        page:click_element_by_index{ index = wipe.index }:unwrap()
        eq(js("document.getElementById('status').textContent"), "wiped")
    "#);
}

#[test]
fn controls_behind_an_open_dialog_or_an_overlay_are_one_line() {
    run(r#"
        page:navigate{ url = A .. "/modals.html" }:unwrap()
        local s = page:get_browser_state{ highlight = false }:unwrap()
        -- The ant modal's full-page wrap holds a [role=dialog]; it hides the header's two links
        -- and the cookie bar's button.
        eq(lines(s.text)[1], "(3 controls behind the open dialog)")
        eq(s.behindOverlay.count, 3); eq(s.behindOverlay.what, "dialog")
        for _, word in ipairs{ "Home", "Deals", "Accept", "covered-by" } do hasnt(s.text, word) end
        eq(by_id(s)["cookie-ok"], nil)
        has(s.text, "[1]<button >取 消/>", "the dialog's own controls are indexed")

        -- Closed: the controls come back and the line goes.
        js("document.querySelector('.ant-modal-root').remove(); true")
        local after = page:get_browser_state{ highlight = false }:unwrap()
        hasnt(after.text, "behind"); eq(after.behindOverlay, nil)
        assert(by_id(after)["cookie-ok"], "the cookie button is indexed")
        has(after.text, ">Home/>"); has(after.text, ">Deals/>")

        -- A full-page scrim without a dialog is an overlay.
        page:navigate{ url = A .. "/listener_only.html" }:unwrap()
        js("var d = document.createElement('div'); d.id = 'scrim'; d.style.cssText = 'position:fixed;inset:0;z-index:5'; document.body.appendChild(d); true")
        local o = page:get_browser_state{ highlight = false }:unwrap()
        -- The pointer tile and #wipe, the canvas, the help span, the plain and the React tiles
        -- (listener targets) and the five colour swatches.
        eq(lines(o.text)[1], "(11 controls behind an overlay)")
        eq(o.behindOverlay.what, "overlay"); eq(o.elementCount, 0)
        hasnt(o.text, "covered-by"); hasnt(o.text, "Clear board")
    "#);
}
