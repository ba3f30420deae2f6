//! What an agent reads on the issue 14 fixture pages (checkout, shop, listener-only): the pages
//! load and `get_browser_state` indexes the controls a person can act on that moonpilot already
//! indexes. The character figures against Playwright's ARIA snapshot are measured by
//! `benches/observation.rs` (not part of the suite: it needs node and playwright-core); today's
//! figures are in `benches/observation_baseline.json`.
//!
//! Not indexed yet (the coverage target of issue 14), so not asserted here:
//! - checkout.html: the hidden `<input type=file>` itself (today its label is indexed instead,
//!   which is what the issue asks for); the labels Email / Full name / Shipping / I accept the
//!   terms are indexed today beside their controls, which the issue removes, so their indices
//!   are not asserted either.
//! - listener_only.html: the drawing pad `<canvas>` (pointerdown only), the `role=link` span
//!   without tabindex, the clickable `div` with the default cursor (`#plain-tile`) and the
//!   React-like `#react-tile`; only the `cursor:pointer` tile is indexed today. `#wipe` is
//!   indexed today although `#cover` lies over it (the issue wants it unindexed, `covered-by`).

use crate::support::harness::lua;

const FIND: &str = r#"
local function by_id(s)
  local m = {}
  for _, el in ipairs(s.elements) do if el.id and el.id ~= "" then m[el.id] = el end end
  return m
end
local function count(s, pred)
  local n = 0
  for _, el in ipairs(s.elements) do if pred(el) then n = n + 1 end end
  return n
end
"#;

fn run(body: &str) {
    lua(&format!("{FIND}{body}"));
}

#[test]
fn checkout_indexes_its_controls_and_places_an_order_by_index() {
    run(r#"
        page:navigate{ url = A .. "/checkout.html" }:unwrap()
        local s = page:get_browser_state{ viewportExpansion = -1, highlight = false }:unwrap()
        local m = by_id(s)
        for _, id in ipairs{ "email", "fullname", "shipping", "terms", "place", "remove-promo" } do
          assert(m[id], "indexed: " .. id)
          has(s.text, "[" .. m[id].index .. "]<", "line of " .. id)
        end
        eq(m.email.tag, "INPUT"); eq(m.shipping.tag, "SELECT"); eq(m.place.tag, "BUTTON")
        eq(m.attachment, nil, "the hidden file input has no index of its own")
        eq(count(s, function(el) return el.tag == "LABEL" and el.text == "Attach document" end), 1,
          "its label is indexed instead")
        eq(count(s, function(el) return el.tag == "A" end), 4, "the footer links below the spacer")
        -- The default read is the viewport: the footer 2,000 px down is not indexed.
        local vp = page:get_browser_state{ highlight = false }:unwrap()
        eq(count(vp, function(el) return el.tag == "A" end), 0, "footer not in the viewport read")
        assert(vp.pixels_below > 1000, "content below: " .. tostring(vp.pixels_below))

        -- A bad email: Place order marks it invalid and shows the error, no order.
        page:click_element_by_index{ index = m.place.index }:unwrap()
        local after = page:get_browser_state{ viewportExpansion = -1, highlight = false }:unwrap()
        has(after.text, "Enter a valid email address", "error shown")
        hasnt(after.text, "Order placed", "no order yet")
        eq(page:execute_js{ body = "document.getElementById('email').getAttribute('aria-invalid')" }:unwrap().result, "true")

        local again = by_id(after)
        page:input_text{ index = again.email.index, text = "ann@example.com" }:unwrap()
        page:input_text{ index = again.fullname.index, text = "Ann Example" }:unwrap()
        page:select_dropdown_option{ index = again.shipping.index, text = "Express" }:unwrap()
        page:click_element_by_index{ index = again.terms.index }:unwrap()
        page:click_element_by_index{ index = again.place.index }:unwrap()
        local done = page:get_browser_state{ viewportExpansion = -1, highlight = false }:unwrap()
        has(done.text, "Order placed #1042", "order placed")
        hasnt(done.text, "Enter a valid email address", "error cleared")
        eq(page:execute_js{ body = "[document.getElementById('shipping').value, document.getElementById('terms').checked].join()" }:unwrap().result, "express,true")

        -- Bad input: an index past the snapshot places nothing.
        local bad = page:click_element_by_index{ index = 999 }
        eq(bad.ok, false); eq(bad.started, false)
    "#);
}

#[test]
fn shop_indexes_search_category_cart_and_every_product() {
    run(r#"
        page:navigate{ url = A .. "/shop.html" }:unwrap()
        local s = page:get_browser_state{ viewportExpansion = -1, highlight = false }:unwrap()
        local m = by_id(s)
        for _, id in ipairs{ "logo", "cart", "accept-cookies" } do assert(m[id], "indexed: " .. id) end
        eq(count(s, function(el) return el.tag == "INPUT" and el.name == "q" end), 1, "search box")
        eq(count(s, function(el) return el.tag == "SELECT" and el.name == "category" end), 1, "category")
        eq(count(s, function(el) return el.tag == "BUTTON" and el.text == "Add to cart" end), 12, "12 cart buttons")
        eq(count(s, function(el) return el.tag == "A" end), 18, "logo, 12 product links, 4 pages, cookie policy")
        eq(count(s, function(el) return el.tag == "A" and el.text == "Arc desk lamp" end), 1, "a product link")
        eq(count(s, function(el) return el.tag == "A" and el.text == "Next" end), 1, "pagination")
        has(s.text, "€129.00", "prices are in the text")

        -- The third card's button adds one item to the cart; nothing else changes.
        local third
        for _, el in ipairs(s.elements) do
          if el.tag == "BUTTON" and el.text == "Add to cart" then
            third = (third or 0) + 1
            if third == 3 then third = el.index; break end
          end
        end
        page:click_element_by_index{ index = third }:unwrap()
        eq(page:execute_js{ body = "document.getElementById('cart-count').textContent" }:unwrap().result, "1")
        page:click_element_by_index{ index = m["accept-cookies"].index }:unwrap()
        eq(page:execute_js{ body = "!!document.getElementById('cookies')" }:unwrap().result, false, "cookie bar gone")
    "#);
}

#[test]
fn listener_only_page_loads_and_indexes_the_pointer_tile() {
    run(r#"
        page:navigate{ url = A .. "/listener_only.html" }:unwrap()
        local s = page:get_browser_state{ viewportExpansion = -1, highlight = false }:unwrap()
        has(s.text, "Sketch board")
        local m = by_id(s)
        assert(m["pointer-tile"], "the cursor:pointer tile with a click listener is indexed")
        eq(m["pointer-tile"].text, "Clear board")
        page:click_element_by_index{ index = m["pointer-tile"].index }:unwrap()
        eq(page:execute_js{ body = "document.getElementById('status').textContent" }:unwrap().result, "board cleared")
        -- The click went to the tile only: the pad's pointerdown listener counted no stroke.
        eq(page:execute_js{ body = "document.getElementById('strokes').textContent" }:unwrap().result, "0")
    "#);
}
