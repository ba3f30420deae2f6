//! DOM modals (`get_modals`, `close_modal`): detection rounds and filters on real pages, target
//! and button choice, trusted clicks, refusal without a second click, cross-site frames, and
//! the line between DOM modals and native dialogs. Every close is checked in the page itself.

use crate::support::harness::lua;

const HELPERS: &str = r#"
local function js(expr, frame) return page:execute_js{ body = expr, frame = frame }:unwrap().result end
local function by_class(m, part)
  for _, x in ipairs(m.modals) do
    if string.find(x.className, part, 1, true) then return x end
  end
end
local function classes(m)
  local out = {}
  for _, x in ipairs(m.modals) do out[#out + 1] = x.className end
  return table.concat(out, " | ")
end
"#;

fn run(body: &str) {
    lua(&format!("{HELPERS}\n{body}"));
}

#[test]
fn an_alert_is_not_a_modal_and_a_modal_is_not_a_dialog() {
    run(r#"
        page:navigate{ url = A .. "/modals.html" }:unwrap()
        eq(page:get_modals():unwrap().count, 4, "DOM modals are there")
        eq(page:get_dialog{}:unwrap().dialog, nil, "no native dialog record for DOM modals")
        eq(page:close_modal{ which = "class:notice" }:unwrap().closed, true)
        eq(page:get_dialog{}:unwrap().dialog, nil, "closing a DOM modal records no dialog")

        page:navigate{ url = A .. "/dialog.html" }:unwrap()
        local s = page:get_browser_state{}:unwrap()
        for _, el in ipairs(s.elements) do
          if el.id == "alert" then page:click_element_by_index{ index = el.index }:unwrap() end
        end
        eq(js("document.getElementById('result').textContent"), "after alert", "the alert fired")
        local m = page:get_modals():unwrap()
        eq(m.count, 0, "an alert is not a DOM modal")
        eq(#m.modals, 0); eq(m.top, nil); eq(m.topIsBlocking, false)
        local d = page:get_dialog{}:unwrap().dialog
        eq(d.type, "alert"); eq(d.message, "hello")
        local c = page:close_modal{}:unwrap()
        eq(c.closed, false); eq(c.countBefore, 0); eq(c.countAfter, 0)
        has(c.note, "no DOM modal is open")
        eq(#c.clicked, 0, "nothing clicked")
    "#);
}

#[test]
fn stacked_modals_are_listed_without_page_chrome_or_scrims() {
    run(r#"
        page:navigate{ url = A .. "/modals.html" }:unwrap()
        local m = page:get_modals():unwrap()
        eq(m.count, 4, "modals: " .. classes(m))
        eq(m.countStrict, 2); eq(m.countHeuristic, 2); eq(m.countBlocking, 3)
        eq(#m.scannedBy, 3); eq(m.scannedBy[1], "selector"); eq(m.scannedBy[3], "heuristic:fixed-overlay")
        eq(#m.frameErrors, 0)
        has(m.note, "admission order")
        -- Page furniture and scrims are never modals.
        for _, part in ipairs{ "site-header", "cookie-banner", "loading-overlay", "ant-modal-mask" } do
          eq(by_class(m, part), nil, part .. " reported: " .. classes(m))
        end

        -- Admission order: framework selectors, then class-name hints, then geometry.
        local ant = m.modals[1]
        eq(ant.className, "ant-modal-wrap"); eq(ant.kind, "ant-modal")
        eq(ant.matchedBy, "selector:.ant-modal-wrap, .ant-drawer-open"); eq(ant.confidence, "strict")
        eq(ant.title, "用户协议"); eq(ant.blocking, true); eq(ant.overlayish, true)
        eq(ant.hasMask, true, "the ant mask is a scrim beside it"); eq(ant.isCover, false)
        eq(ant.hasClose, true); assert(ant.closePoint, "visible close (x)")
        eq(table.concat(ant.buttons, ","), "取消,确定", "whitespace-free labels, the lone × is no button")
        eq(ant.buttonPoints[1].tag, "button"); eq(ant.buttonPoints[1].matchedBy, "selector")
        eq(ant.zIndex, "1000"); eq(ant.frameIndex, 0); eq(ant.frameUrl, A .. "/modals.html")
        eq(ant.rect[3], 1280, "the wrap spans the viewport")

        local notice = m.modals[2]
        eq(notice.id, "notice"); eq(notice.kind, "dialog"); eq(notice.confidence, "strict")
        has(notice.matchedBy, "selector:[role=dialog]")
        eq(notice.title, "系统通知"); eq(notice.hasClose, false); eq(notice.closePoint, nil)
        eq(notice.buttons[1], "知道了"); eq(notice.blocking, true)
        eq(notice.rect[1], 60); eq(notice.rect[2], 360); eq(notice.rect[3], 300); eq(notice.rect[4], 150)

        local promo = m.modals[3]
        eq(promo.className, "promo-popup"); eq(promo.kind, "class-hint")
        eq(promo.matchedBy, "heuristic:class-name"); eq(promo.confidence, "heuristic")
        eq(promo.title, "限时优惠"); eq(promo.blocking, true)
        eq(#promo.buttonPoints, 1); eq(promo.buttons[1], "去看看")
        eq(promo.buttonPoints[1].matchedBy, "fallback-anchor"); eq(promo.buttonPoints[1].tag, "a")

        local chat = m.modals[4]
        eq(chat.className, "chat-bubble"); eq(chat.kind, "heuristic")
        eq(chat.matchedBy, "heuristic:fixed-overlay"); eq(chat.confidence, "heuristic")
        eq(chat.hasContent, false); eq(chat.overlayish, true); eq(chat.blocking, false)

        -- top: the last blocking modal (the chat bubble does not block).
        eq(m.top.className, "promo-popup"); eq(m.topIsBlocking, true)

        -- An empty full-page scrim alone is no modal either.
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        eq(js([[const d = document.createElement('div'); d.className = 'mask overlay';
             d.style.cssText = 'position:fixed;inset:0;z-index:999;background:rgba(0,0,0,.5)';
             document.body.appendChild(d); return document.querySelectorAll('.overlay').length]]), 1, "the scrim is in the page")
        local none = page:get_modals():unwrap()
        eq(none.count, 0, "scrim reported: " .. classes(none))
        eq(none.top, nil); eq(none.topIsBlocking, false)
    "#);
}

#[test]
fn close_modal_targets_by_class_and_title_and_names_a_filter_that_matches_nothing() {
    run(r#"
        page:navigate{ url = A .. "/modals.html" }:unwrap()
        -- class: (which is lower-cased) picks the notice; it has no (x), so its 知道了 is clicked.
        local r = page:close_modal{ which = "CLASS:Notice" }:unwrap()
        eq(r.closed, true); eq(r.countBefore, 4); eq(r.countAfter, 3); eq(r.closedAll, false)
        eq(r.which, "class:notice"); eq(#r.clicked, 1)
        eq(r.clicked[1].label, "知道了"); eq(r.clicked[1].via, "mouse"); eq(#r.clicked[1].point, 2)
        eq(r.hint, nil)
        eq(js("document.getElementById('notice') === null"), true, "the notice is gone")
        eq(js("document.getElementById('log').textContent"), "notice ok")

        -- title overrides which; whitespace is ignored on both sides; the requested button wins.
        r = page:close_modal{ title = "用户 协议", which = "first", button = "取 消" }:unwrap()
        eq(r.closed, true); eq(r.countAfter, 2); eq(r.title, "用户 协议")
        eq(r.clicked[1].label, "取消")
        eq(js("document.querySelector('.ant-modal-root') === null"), true, "the ant modal is gone")
        eq(js("document.getElementById('log').textContent"), "ant cancel", "its 取消 was clicked")

        -- Filters that match nothing fail, naming the filter and the count; nothing is clicked.
        local bad = page:close_modal{ which = "class:nothing-like-this" }
        eq(bad.ok, false); eq(bad.code, "ELEMENT_NOT_FOUND")
        has(bad.msg, "class `nothing-like-this`"); has(bad.msg, "2 modal(s) are open")
        eq(bad.data.countBefore, 2)
        bad = page:close_modal{ title = "不存在的标题" }
        eq(bad.code, "ELEMENT_NOT_FOUND"); has(bad.msg, "title `不存在的标题`")
        eq(page:close_modal{ which = "class:" }.code, "ELEMENT_NOT_FOUND", "empty class matches nothing")
        eq(page:get_modals():unwrap().count, 2, "failed calls closed nothing")

        -- An unknown button label falls back to the close (x) point, and says so.
        r = page:close_modal{ which = "first", button = "Subscribe" }:unwrap()
        eq(r.closed, true); eq(r.clicked[1].label, "关闭按钮(×)"); has(r.buttonNote, "`Subscribe`")
        eq(js("document.querySelector('.promo-popup') === null"), true, "the promo is gone")
    "#);
}

#[test]
fn close_all_goes_top_down_and_stops_where_it_cannot_click() {
    run(r#"
        page:navigate{ url = A .. "/modals.html" }:unwrap()
        -- close_modal's top is the LAST modal of the list: here the chat bubble, which has
        -- nothing to click, so `all` stops at once without clicking anything.
        local r = page:close_modal{ which = "all" }:unwrap()
        eq(r.closed, false); eq(r.countAfter, 4); eq(#r.clicked, 1)
        eq(r.clicked[1].label, nil); has(r.clicked[1].error, "no visible close")
        eq(r.targets[1].className, "chat-bubble"); has(r.hint, "do not repeat close_modal")

        js("document.querySelector('.chat-bubble').remove()")
        r = page:close_modal{ which = "all" }:unwrap()
        eq(r.closed, true); eq(r.closedAll, true); eq(r.countBefore, 3); eq(r.countAfter, 0)
        eq(#r.clicked, 3)
        eq(r.targets[1].className, "promo-popup"); eq(r.clicked[1].label, "关闭按钮(×)")
        eq(r.targets[2].id, "notice"); eq(r.clicked[2].label, "知道了")
        eq(r.targets[3].className, "ant-modal-wrap"); eq(r.clicked[3].label, "关闭按钮(×)")
        eq(js("document.getElementById('log').textContent"), "ant close", "the last click hit the ant (x)")
        eq(js("document.querySelectorAll('.promo-popup, #notice, .ant-modal-root').length"), 0)
        eq(page:get_modals():unwrap().count, 0)
    "#);
}

#[test]
fn a_modal_that_only_accepts_trusted_clicks_is_closed() {
    run(r#"
        page:navigate{ url = A .. "/modal_trusted.html" }:unwrap()
        local m = page:get_modals():unwrap()
        eq(m.count, 1); eq(m.top.kind, "agreement"); eq(m.top.title, "隐私政策")
        eq(table.concat(m.top.buttons, ","), "不同意,我接受")
        -- A synthetic click is ignored by the page: the layer stays.
        js("document.getElementById('accept').click()")
        eq(js("window.untrusted"), 1)
        eq(page:get_modals():unwrap().count, 1, "still open after an untrusted click")

        local r = page:close_modal{}:unwrap()
        eq(r.closed, true); eq(r.countBefore, 1); eq(r.countAfter, 0); eq(r.closedAll, true)
        eq(r.which, "top")
        eq(r.clicked[1].label, "我接受", "no (x): the first default label present")
        eq(r.clicked[1].via, "mouse")
        eq(js("document.getElementById('state').textContent"), "accepted")
        eq(js("window.trusted"), 1); eq(js("window.untrusted"), 1, "no synthetic click was added")
        eq(js("document.querySelector('.agreement-container') === null"), true)
    "#);
}

#[test]
fn a_modal_that_refuses_to_close_gets_one_click_and_a_hint() {
    run(r#"
        page:navigate{ url = A .. "/modal_refuse.html" }:unwrap()
        local m = page:get_modals():unwrap()
        eq(m.count, 1); eq(m.top.kind, "dialog"); eq(m.top.title, "确认离开？")
        local r = page:close_modal{}:unwrap()
        eq(r.closed, false); eq(r.countBefore, 1); eq(r.countAfter, 1); eq(r.closedAll, false)
        eq(#r.clicked, 1); eq(r.clicked[1].label, "关闭按钮(×)")
        eq(js("window.clicks"), 1, "exactly one click reached the page")
        has(r.hint, "mouse_click"); has(r.hint, "do not repeat close_modal")
        has(r.hint, "关闭按钮(×) at [" .. m.top.closePoint[1] .. "," .. m.top.closePoint[2] .. "]")
        has(r.hint, "确定 at [")
        eq(#r.points, 3, "close point + 取消 + 确定")
        -- `all` never loops on a modal that stays: one more click, then it stops.
        r = page:close_modal{ which = "all" }:unwrap()
        eq(r.closed, false); eq(#r.clicked, 1)
        eq(js("window.clicks"), 2, "one click per call")
        eq(js("document.getElementById('state').textContent"), "open")
    "#);
}

#[test]
fn a_modal_in_a_cross_site_frame_is_found_and_closed_in_main_viewport_coordinates() {
    run(r#"
        -- A tab opened after ours (another task's) puts ours in the background before the
        -- frame has ever been rendered.
        local other = browser.start{}
        page:navigate{ url = A .. "/modal_frame.html" }:unwrap()
        local m = page:get_modals():unwrap()
        eq(m.count, 1, "modals: " .. classes(m)); eq(#m.frameErrors, 0)
        local x = m.modals[1]
        eq(x.frameIndex, 1); eq(x.frameUrl, B .. "/modal_child.html")
        eq(x.kind, "dialog"); eq(x.title, "支付确认"); eq(x.buttons[1], "确定")
        -- Frame-local geometry, read in the frame, plus the iframe's content-box origin.
        local here = js([==[const r = document.getElementById('inner-close').getBoundingClientRect();
                          return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)]]==], "localhost")
        local off = js([==[const f = document.getElementById('pay'); const r = f.getBoundingClientRect();
                         return [r.left + f.clientLeft, r.top + f.clientTop]]==])
        assert(off[1] > 50 and off[2] > 30, "the frame is offset")
        local function near(got, want, what) assert(math.abs(got - want) <= 1, what .. ": " .. got .. " vs " .. want) end
        near(x.closePoint[1], here[1] + off[1], "closePoint x")
        near(x.closePoint[2], here[2] + off[2], "closePoint y")
        near(x.rect[1], 60 + off[1], "rect x"); near(x.rect[2], 40 + off[2], "rect y")
        eq(x.rect[3], 360, "sizes are not shifted")

        -- The close handler wants a trusted click exactly there, and gets it although the tab
        -- is in the background, where Chromium does not route page-level mouse events into
        -- an out-of-process iframe that never rendered.
        local res = page:close_modal{}
        other:close()
        local r = res:unwrap()
        eq(r.closed, true, res:json()); eq(r.countAfter, 0); eq(r.clicked[1].label, "关闭按钮(×)")
        eq(js("document.getElementById('state').textContent", "localhost"), "closed")
        eq(js("window.closes", "localhost"), 1)
    "#);
}

#[test]
fn bad_params_are_invalid_arguments_and_change_nothing() {
    run(r#"
        page:navigate{ url = A .. "/modal_refuse.html" }:unwrap()
        local r = page:close_modal{ which = 5 }
        eq(r.ok, false); eq(r.code, "INVALID_ARGUMENT"); eq(r.started, false)
        has(r.msg, "`which`")
        r = page:close_modal{ which = "second" }
        eq(r.code, "INVALID_ARGUMENT"); has(r.msg, "unknown value `second`")
        eq(page:close_modal{ title = true }.code, "INVALID_ARGUMENT")
        eq(page:close_modal{ button = false }.code, "INVALID_ARGUMENT")
        eq(js("window.clicks"), 0, "nothing was clicked")
        local g = page:get_modals{ wich = "top" }
        eq(g.ok, true); eq(g.data.unknownParams[1], "wich")
    "#);
}
