//! Listener-only targets (issue 14, scope 5): elements a person can click that only an event
//! listener (or a React/Vue handler) makes clickable are indexed, and every `elements[]` item
//! says why it was indexed (`indexedBecause`). Delegation roots and containers are not indexed.

use crate::support::harness::{lua, ELEMENT_HELPERS};

fn run(body: &str) {
    lua(&format!("{ELEMENT_HELPERS}{body}"));
}

#[test]
fn listener_only_targets_are_indexed_with_the_reason() {
    run(r#"
        page:navigate{ url = A .. "/listener_only.html" }:unwrap()
        local s = page:get_browser_state{ viewportExpansion = -1, highlight = false }:unwrap()
        local m = by_id(s)
        local want = {
          pad = { "listener", "CANVAS" },          -- pointerdown only
          ["help-link"] = { "role", "SPAN" },      -- role=link, a click listener, no tabindex
          ["plain-tile"] = { "listener", "DIV" },  -- a click listener, the default cursor
          ["react-tile"] = { "framework", "DIV" }, -- __reactProps$…onClick under a React root
          ["pointer-tile"] = { "cursor", "DIV" },  -- cursor:pointer (indexed before this rule)
        }
        for id, w in pairs(want) do
          local el = m[id]
          assert(el, "indexed: " .. id)
          eq(el.indexedBecause, w[1], "reason of " .. id)
          eq(el.tag, w[2], "tag of " .. id)
          has(s.text, "[" .. el.index .. "]<" .. w[2]:lower(), "line of " .. id)
        end
        -- The swatch buttons are native; their list (one delegated click listener) is not a
        -- target, nor are body and html (the body holds the React-like delegation listener).
        eq(count(s, function(el) return el.tag == "BUTTON" and el.indexedBecause == "native"
          and el.text ~= "Wipe data" end), 5, "five native swatch buttons")
        eq(m.swatches, nil, "the delegating list has no index")
        eq(count(s, function(el) return el.tag == "UL" or el.tag == "LI" end), 0, "no list index")
        eq(count(s, function(el) return el.tag == "BODY" or el.tag == "HTML" end), 0, "no root index")
        -- Every item says why it was indexed, with a known reason.
        local known = { native = true, role = true, cursor = true, contenteditable = true,
          ["handler-attr"] = true, listener = true, framework = true, class = true,
          tabindex = true, ["label-for-hidden"] = true }
        for _, el in ipairs(s.elements) do
          assert(known[el.indexedBecause], "reason of [" .. el.index .. "]: " .. tostring(el.indexedBecause))
        end
        eq(count(s, function(el) return el.indexedBecause == "listener" end), 2, "pad and plain tile only")

        -- get_interactive_map carries the same reasons.
        local map = page:get_interactive_map{}:unwrap()
        eq(map.count, #s.elements)
        local mm = by_id(map)
        for id, w in pairs(want) do eq(mm[id].indexedBecause, w[1], "map reason of " .. id) end

        -- The default (viewport) read indexes them too.
        local vp = by_id(page:get_browser_state{ highlight = false }:unwrap())
        eq(vp.pad.indexedBecause, "listener"); eq(vp["plain-tile"].indexedBecause, "listener")
    "#);
}

#[test]
fn clicks_by_index_reach_listener_only_targets() {
    run(r#"
        page:navigate{ url = A .. "/listener_only.html" }:unwrap()
        local m = by_id(page:get_browser_state{ viewportExpansion = -1, highlight = false }:unwrap())
        local c = page:click_element_by_index{ index = m.pad.index }:unwrap()
        eq(c.changed, true, "the stroke count changed")
        eq(js("document.getElementById('strokes').textContent"), "1", "one pointerdown, one stroke")
        eq(c.hit.id, "pad")

        page:click_element_by_index{ index = m["plain-tile"].index }:unwrap()
        eq(js("document.getElementById('status').textContent"), "undone")
        page:click_element_by_index{ index = m["help-link"].index }:unwrap()
        eq(js("document.getElementById('status').textContent"), "help opened")
        page:click_element_by_index{ index = m["react-tile"].index }:unwrap()
        eq(js("document.getElementById('status').textContent"), "saved")
        eq(js("document.getElementById('strokes').textContent"), "1", "no stray stroke")

        -- A swatch button: the list's delegated listener gets exactly one click.
        local s = page:get_browser_state{ viewportExpansion = -1, highlight = false }:unwrap()
        local blue
        for _, el in ipairs(s.elements) do if el.text == "Blue" then blue = el.index end end
        page:click_element_by_index{ index = blue }:unwrap()
        eq(js("document.getElementById('colour').textContent"), "blue")
        eq(js("document.getElementById('colour-picks').textContent"), "1")
    "#);
}

#[test]
fn bad_input_and_stale_indices_on_listener_targets() {
    run(r#"
        page:navigate{ url = A .. "/listener_only.html" }:unwrap()
        local bad = page:get_browser_state{ viewportExpansion = "all" }
        eq(bad.ok, false); eq(bad.code, "INVALID_ARGUMENT"); eq(bad.started, false)
        local m = by_id(page:get_browser_state{ viewportExpansion = -1, highlight = false }:unwrap())
        local none = page:click_element_by_index{ index = 999 }
        eq(none.ok, false); eq(none.code, "STALE_ELEMENT"); eq(none.started, false)
        local typo = page:click_element_by_index{ index = "pad" }
        eq(typo.ok, false); eq(typo.code, "INVALID_ARGUMENT"); eq(typo.started, false)
        local missing = page:click_element_by_index{}
        eq(missing.ok, false); eq(missing.code, "INVALID_ARGUMENT")
        -- The canvas leaves the page: its index is stale, nothing else is clicked.
        js("document.getElementById('pad').remove()")
        local gone = page:click_element_by_index{ index = m.pad.index }
        eq(gone.ok, false); eq(gone.code, "STALE_ELEMENT")
        eq(js("document.getElementById('strokes').textContent"), "0")
        eq(js("document.getElementById('status').textContent"), "idle")
        -- A listener removed since the last read: the next read no longer indexes the tile.
        js("const t = document.getElementById('plain-tile'); t.replaceWith(t.cloneNode(true))")
        local again = by_id(page:get_browser_state{ viewportExpansion = -1, highlight = false }:unwrap())
        eq(again["plain-tile"], nil, "no listener, no index")
        eq(again["help-link"].indexedBecause, "role")
    "#);
}

#[test]
fn a_listener_only_target_in_a_cross_site_frame_is_indexed_with_include_frames() {
    run(r#"
        page:navigate{ url = A .. "/listener_frames.html" }:unwrap()
        local plain = page:get_browser_state{ highlight = false }:unwrap()
        eq(by_id(plain)["child-tile"], nil, "the cross-site frame is not read by default")
        local s = page:get_browser_state{ includeFrames = true, highlight = false }:unwrap()
        local tile = by_id(s)["child-tile"]
        assert(tile, "the child's listener-only tile is indexed")
        eq(tile.indexedBecause, "listener"); eq(tile.frameUrl, B .. "/listener_child.html")
        eq(s.frames[2].skipped, false)
        local c = page:click_element_by_index{ index = tile.index }:unwrap()
        eq(c.changed, true)
        eq(page:execute_js{ body = "document.getElementById('child-clicks').textContent", frame = "localhost" }.data.result, "1")
    "#);
}

#[test]
fn listener_targets_are_capped_and_a_listener_heavy_page_still_answers() {
    // 400 small tiles with a click listener each, and one wrapper that listens for clicks
    // around all of them: 300 tiles at most are listener targets, the wrapper is none.
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        js([[
          const wrap = document.createElement('div');
          wrap.id = 'wrap';
          wrap.addEventListener('click', () => {});
          for (let i = 0; i < 400; i++) {
            const d = document.createElement('div');
            d.id = 'tile' + i;
            d.textContent = 't' + i;
            d.style.cssText = 'display:inline-block;width:30px;height:14px;font-size:9px';
            d.addEventListener('click', () => { window.tileClicks = (window.tileClicks || 0) + 1; });
            wrap.appendChild(d);
          }
          document.body.appendChild(wrap);
          true
        ]])
        local s = page:get_browser_state{ viewportExpansion = -1, highlight = false, maxElements = 1000 }:unwrap()
        local n = count(s, function(el) return el.indexedBecause == "listener" end)
        -- 300 listened nodes are stored: the button (its onclick), the wrapper, 298 tiles.
        eq(n, 298, "capped at 300 listened nodes")
        eq(by_id(s).wrap, nil, "the wrapper of many targets is not one")
        eq(by_id(s).btn.indexedBecause, "native")
        eq(s.snapshotConsistent, true)
        local last = by_id(s).tile297
        assert(last, "the first tiles in document order")
        eq(by_id(s).tile298, nil, "past the cap")
        page:click_element_by_index{ index = last.index }:unwrap()
        eq(js("window.tileClicks"), 1)
    "#);
}

/// The cap keeps the listened nodes nearest the viewport: a feed of 1,000 listened tiles
/// scrolled far down indexes the tiles in view.
#[test]
fn the_listener_cap_keeps_what_is_near_the_viewport() {
    run(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        js([[
          for (let i = 0; i < 1000; i++) {
            const d = document.createElement('div');
            d.id = 'feed' + i;
            d.textContent = 'item ' + i;
            d.style.cssText = 'height:40px';
            d.addEventListener('click', () => { window.fed = i; });
            document.body.appendChild(d);
          }
          document.getElementById('feed900').scrollIntoView();
          true
        ]])
        local s = page:get_browser_state{ highlight = false }:unwrap()
        local tile = by_id(s).feed900
        assert(tile, "the tile in view is indexed:\n" .. s.text:sub(1, 400))
        eq(tile.indexedBecause, "listener")
        eq(by_id(s).feed0, nil, "the first tile is far above")
        page:click_element_by_index{ index = tile.index }:unwrap()
        eq(js("window.fed"), 900)
    "#);
}
