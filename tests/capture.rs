//! Capture: screenshot (viewport, full page, element, clip), get_element_screenshot inside a
//! cross-site frame, pdf, download_image and ocr_image — the files decoded by hand (PNG IHDR,
//! PDF page objects), not only `ok`.

use crate::support::harness::lua;

/// Lua helpers: a file's bytes, a PNG's pixel size from its IHDR chunk, a PDF's page count.
const FILES: &str = r##"
local function bytes(path)
  local f = assert(io.open(path, "rb"), "cannot open " .. tostring(path))
  local b = f:read("a"); f:close(); return b
end
local function png_size(b)
  eq(b:sub(1, 8), "\137PNG\r\n\26\n", "PNG signature")
  eq(b:sub(13, 16), "IHDR", "IHDR first")
  return string.unpack(">I4I4", b, 17)
end
local function pdf_pages(b)
  assert(b:sub(1, 5) == "%PDF-", "a PDF header")
  local n = 0
  for after in b:gmatch("/Type%s*/Page(.)") do if after ~= "s" then n = n + 1 end end
  return n
end
local function exists(path) local f = io.open(path, "rb"); if f then f:close() end; return f ~= nil end
"##;

fn lua_files(snippet: &str) {
    lua(&format!("{FILES}\n{snippet}"));
}

#[test]
fn screenshots_of_the_viewport_the_full_page_a_clip_and_an_element() {
    lua_files(
        r##"
        page:navigate{ url = A .. "/capture.html" }:unwrap()
        local vp = page:execute_js{ body = "[innerWidth, innerHeight, devicePixelRatio, document.documentElement.scrollHeight]" }:unwrap().result
        local w, h, dpr, full = vp[1], vp[2], vp[3], vp[4]
        -- Viewport: written to the task's data dir, no base64 unless inline.
        local s = page:screenshot{}:unwrap()
        eq(s.mode, "viewport"); eq(s.base64Omitted, true); eq(s.base64, nil); eq(s.inline, false)
        has(s.path, "/shot-"); has(s.url, "/data/"); eq(s.capture.stage, "complete")
        local b = bytes(s.path); eq(s.size, #b, "size is the file's")
        local pw, ph = png_size(b)
        eq(pw, math.floor(w * dpr + 0.5)); eq(ph, math.floor(h * dpr + 0.5)); eq(s.width, pw); eq(s.height, ph)
        -- N only increases.
        local s2 = page:screenshot{ inline = true }:unwrap()
        assert(s2.path ~= s.path, "a new file each time"); has(s2.base64, "iVBORw0KGgo")
        local n1 = tonumber(s.path:match("shot%-(%d+)%.png$")); local n2 = tonumber(s2.path:match("shot%-(%d+)%.png$"))
        assert(n2 > n1, "shot numbers increase: " .. n1 .. " then " .. n2)
        -- Full page: the whole scroll height.
        local f = page:screenshot{ fullPage = true }:unwrap()
        local fw, fh = png_size(bytes(f.path))
        eq(f.mode, "fullPage"); eq(f.fullPageCaptured, true); eq(fw, pw)
        eq(fh, math.floor(full * dpr + 0.5), "full-page height"); assert(fh > ph, "taller than the viewport")
        -- Clip: exactly the box, to a path of our choosing.
        local dir = s.path:match("^(.*)/[^/]+$")
        local mine = dir .. "/my-clip.png"
        local c = page:screenshot{ clipX = 10, clipY = 5, clipWidth = 150, clipHeight = 70, path = mine }:unwrap()
        eq(c.path, mine); eq(c.mode, "clip")
        local cw, ch = png_size(bytes(mine)); eq(cw, 150 * dpr); eq(ch, 70 * dpr)
        -- Element by selector and by index: #box is 200x100.
        local e = page:screenshot{ selector = "#box" }:unwrap()
        eq(e.target, "selector=#box")
        local ew, eh = png_size(bytes(e.path)); eq(ew, 200 * dpr); eq(eh, 100 * dpr)
        local state = page:get_browser_state{}:unwrap()
        local go
        for _, el in ipairs(state.elements) do if el.id == "go" then go = el.index end end
        assert(go, "the button has an index")
        local ei = page:screenshot{ index = go }:unwrap()
        eq(ei.target, "index=" .. go); local iw, ih = png_size(bytes(ei.path)); eq(iw, 90 * dpr); eq(ih, 40 * dpr)
        -- Nothing on the page changed.
        eq(page:execute_js{ body = "document.title" }:unwrap().result, "Capture")
    "##,
    );
}

#[test]
fn screenshot_bad_input_is_invalid_argument_and_writes_nothing() {
    lua_files(
        r##"
        page:navigate{ url = A .. "/capture.html" }:unwrap()
        local r = page:screenshot{ path = "/no/such/dir/x.png" }
        eq(r.code, "INVALID_ARGUMENT"); eq(r.started, false); has(r.msg, "path"); has(r.msg, "/no/such/dir")
        eq(exists("/no/such/dir/x.png"), false)
        -- A local script's relative path is the working directory's, as Playwright's is.
        local name = "moonpilot-named-" .. tostring(os.time()) .. ".png"
        local named = page:screenshot{ path = name }:unwrap()
        has(named.path, "/" .. name); eq(named.url, nil); eq(exists(name), true)
        os.remove(name)
        eq(page:screenshot{ path = "no-such-sub/x.png" }.code, "INVALID_ARGUMENT")
        local d = page:screenshot{ path = "/tmp" }
        eq(d.code, "INVALID_ARGUMENT"); has(d.msg, "directory")
        local partial = page:screenshot{ clipX = 0, clipY = 0, clipWidth = 10 }
        eq(partial.code, "INVALID_ARGUMENT"); has(partial.msg, "clipHeight")
        local neg = page:screenshot{ clipX = 0, clipY = 0, clipWidth = -5, clipHeight = 10 }
        eq(neg.code, "INVALID_ARGUMENT"); has(neg.msg, "clipWidth")
        eq(page:screenshot{ timeoutMs = 0 }.code, "INVALID_ARGUMENT", "timeoutMs below 1")
        eq(page:screenshot{ timeoutMs = 200000 }.code, "INVALID_ARGUMENT", "timeoutMs above 120000")
        eq(page:screenshot{ fullPage = "yes" }.code, "INVALID_ARGUMENT", "a mistyped flag")
        local none = page:screenshot{ selector = "#nope" }
        eq(none.code, "ELEMENT_NOT_FOUND"); eq(none.ok, false)
        local stale = page:screenshot{ index = 9999 }
        eq(stale.code, "STALE_ELEMENT")
        eq(page:screenshot{ index = -1 }.code, "INVALID_ARGUMENT")
        local neither = page:get_element_screenshot{}
        eq(neither.code, "INVALID_ARGUMENT"); eq(neither.started, false)
        eq(page:get_element_screenshot{ selector = "#box", path = "/no/such/dir/e.png" }.code, "INVALID_ARGUMENT")
    "##,
    );
}

#[test]
fn element_screenshot_inside_a_cross_site_frame_has_the_elements_size() {
    lua_files(
        r##"
        page:navigate{ url = A .. "/capture_frames.html" }:unwrap()
        page:wait_for_element{ selector = "#square", frame = "crosscap" }:unwrap()
        eq(page:get_element_text{ selector = "#where", frame = "crosscap" }:unwrap().text, "child at " .. B:match("//(.*)$"))
        local dpr = page:execute_js{ body = "devicePixelRatio" }:unwrap().result
        local e = page:get_element_screenshot{ selector = "#square", frame = "crosscap", inline = true }:unwrap()
        eq(e.target, "selector=#square(frame=crosscap)")
        has(e.base64, "iVBORw0KGgo")
        local w, h = png_size(bytes(e.path)); eq(w, 120 * dpr); eq(h, 80 * dpr)
        -- The box sits inside the frame: iframe left 40 + border 4 + element margin 15.
        eq(e.box.x, 59); eq(e.box.width, 120)
        -- A frame that does not exist fails and names the frames there are.
        local bad = page:get_element_screenshot{ selector = "#square", frame = "nowhere" }
        eq(bad.ok, false); eq(bad.code, "INVALID_ARGUMENT"); eq(bad.started, false)
        has(bad.msg, "no frame matches `nowhere`"); has(bad.msg, "0: "); has(bad.msg, "capture_child.html")
    "##,
    );
}

#[test]
fn pdf_decodes_with_its_page_count() {
    lua_files(
        r##"
        page:navigate{ url = A .. "/capture.html" }:unwrap()
        local p = page:pdf{}:unwrap()
        has(p.path, "/page-"); has(p.path, ".pdf"); has(p.url, "/data/")
        local b = bytes(p.path); eq(p.size, #b)
        local n = pdf_pages(b)
        -- 3000 px of #tall plus the rest on Letter pages: more than one page.
        assert(n >= 3, "pages: " .. n); eq(p.pages, n)
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        local one = page:pdf{}:unwrap()
        eq(pdf_pages(bytes(one.path)), 1, "a short page prints on one page")
        local bad = page:pdf{ path = "/no/such/dir/x.pdf" }
        eq(bad.code, "INVALID_ARGUMENT"); eq(bad.started, false)
    "##,
    );
}

#[test]
fn download_image_sends_the_page_cookies() {
    lua_files(
        r##"
        page:set_cookie{ name = "pass", value = "1", url = A }:unwrap()
        page:navigate{ url = A .. "/cookie_img.html" }:unwrap()
        local d = page:download_image{ selector = "#pic" }:unwrap()
        eq(d.via, "browser-context"); eq(d.contentType, "image/png")
        eq(bytes(d.path) == bytes("tests/fixtures/pixel.png"), true, "the bytes behind the cookie")
        -- Without the cookie the server refuses, so the bytes above came with it. (Changed, not
        -- cleared: the jar is the profile's, shared with the other tests.)
        page:set_cookie{ name = "pass", value = "0", url = A }:unwrap()
        local r = page:download_image{ selector = "#pic" }
        eq(r.ok, false); eq(r.code, "NETWORK_ERROR"); eq(r.data.httpStatus, 403)
    "##,
    );
}

#[test]
fn download_image_saves_the_original_file() {
    lua_files(
        r##"
        page:navigate{ url = A .. "/capture.html" }:unwrap()
        local original = bytes("tests/fixtures/pixel.png")
        local d = page:download_image{ selector = "#pic" }:unwrap()
        eq(d.srcUrl, A .. "/pixel.png"); eq(d.via, "browser-context"); eq(d.contentType, "image/png")
        eq(d.alt, "a gradient"); eq(d.naturalWidth, 40); eq(d.naturalHeight, 30)
        has(d.filename, "img-"); has(d.filename, ".png"); has(d.url, "/data/")
        local got = bytes(d.path)
        eq(#got, #original); eq(got == original, true, "the original bytes"); eq(d.size, #original)
        eq(#d.sha256, 64)
        -- A new numbered file each time.
        local d2 = page:download_image{ selector = "#pic" }:unwrap()
        assert(d2.path ~= d.path, "a new file"); eq(d2.sha256, d.sha256)
        -- A CSS background image, to a chosen (sanitised) name.
        local bg = page:download_image{ selector = "#bg", filename = "../bg image.png" }:unwrap()
        eq(bg.filename, "bg_image.png"); eq(bytes(bg.path) == original, true); has(bg.hint, "div")
        -- A blob: URL only the page can read: fetched inside the page.
        page:wait_for_element{ selector = "body[data-blob=ready]" }:unwrap()
        local blob = page:download_image{ selector = "#blobimg" }:unwrap()
        eq(blob.via, "in-page-fetch"); has(blob.srcUrl, "blob:"); eq(bytes(blob.path) == original, true)
        eq(blob.contentType, "image/png")
        -- Not an image; a broken one; nothing matching; neither param.
        local no = page:download_image{ selector = "#plain" }
        eq(no.code, "ACTION_FAILED"); has(no.msg, "not an image")
        local dead = page:download_image{ selector = "#dead" }
        eq(dead.ok, false); eq(dead.code, "NETWORK_ERROR"); eq(dead.data.httpStatus, 404)
        has(dead.msg, "browser context: "); has(dead.msg, "in-page fetch: HTTP status 404")
        eq(page:download_image{ selector = "#nope" }.code, "ELEMENT_NOT_FOUND")
        eq(page:download_image{}.code, "INVALID_ARGUMENT")
        eq(page:download_image{ selector = "#pic", filename = "..." }.code, "INVALID_ARGUMENT")
    "##,
    );
}

#[test]
fn ocr_reads_english_and_chinese_text_rendered_large() {
    lua_files(
        r##"
        page:navigate{ url = A .. "/capture.html" }:unwrap()
        -- English from a screenshot file (path), then Chinese straight from the element.
        local shot = page:get_element_screenshot{ selector = "#en" }:unwrap()
        local en = page:call("ocr_image", { path = shot.path, language = "en-US" }):unwrap()
        eq(en.ok, true, tostring(en.error)); eq(en.engine, "command"); eq(en.tesseractLanguage, "eng")
        has(en.text, "HELLO MOONPILOT"); eq(en.lineCount, 1); eq(en.imagePath, shot.path)
        local zh = page:call("ocr_image", { selector = "#zh" }):unwrap()
        eq(zh.ok, true, tostring(zh.error)); eq(zh.tesseractLanguage, "chi_sim+eng")
        has((zh.text:gsub("%s", "")), "你好世界"); eq(zh.target, "selector=#zh"); has(zh.imagePath, "/shot-")
        -- Without a task a path still works; an element does not.
        local free = browser.call("ocr_image", { path = shot.path, language = "eng" }):unwrap()
        has(free.text, "MOONPILOT")
        local notask = browser.call("ocr_image", { selector = "#en" })
        eq(notask.ok, false); has(notask.msg, "task")
        -- Bad input.
        local missing = browser.call("ocr_image", { path = "/no/such/image.png" })
        eq(missing.code, "INVALID_ARGUMENT"); has(missing.msg, "/no/such/image.png")
        eq(browser.call("ocr_image", {}).code, "INVALID_ARGUMENT")
        local lang = browser.call("ocr_image", { path = shot.path, language = "Klingon!" })
        eq(lang.code, "INVALID_ARGUMENT"); has(lang.msg, "language")
        -- A Tesseract language without data names the package to install.
        local nodata = browser.call("ocr_image", { path = shot.path, language = "heb" }):unwrap()
        eq(nodata.ok, false); has(nodata.error, "tesseract-ocr-heb"); eq(nodata.engineMissing, true)
        -- request_human_input{ocr=true} reads the element image with the same OCR.
        local r = page:request_human_input{ prompt = "read", selector = "#en", ocr = true, ocrLanguage = "en", inline = false }:unwrap()
        eq(r.ocr, true); has(r.ocrText, "HELLO MOONPILOT"); eq(r.ocrError, nil)
        local nr = page:request_human_input{ prompt = "read", ocr = true }:unwrap()
        has(nr.ocrError, "no image")
    "##,
    );
}

#[test]
fn element_and_clip_shots_do_not_show_the_highlight_overlay() {
    lua_files(
        r##"
        page:navigate{ url = A .. "/capture.html" }:unwrap()
        local clip = { clipX = 0, clipY = 100, clipWidth = 300, clipHeight = 120 }
        local e1 = page:get_element_screenshot{ selector = "#go" }:unwrap()
        local c1 = page:screenshot(clip):unwrap()
        -- get_browser_state draws numbered boxes over #go.
        page:get_browser_state{}:unwrap()
        local shown = "getComputedStyle(document.getElementById('playwright-highlight-container')).display"
        assert(page:execute_js{ body = shown }:unwrap().result ~= "none", "the overlay is drawn")
        local e2 = page:get_element_screenshot{ selector = "#go" }:unwrap()
        local c2 = page:screenshot(clip):unwrap()
        local e3 = page:screenshot{ selector = "#go" }:unwrap()
        eq(bytes(e2.path) == bytes(e1.path), true, "the element shot has no overlay in it")
        eq(bytes(e3.path) == bytes(e1.path), true, "the screenshot{selector} has no overlay in it")
        eq(bytes(c2.path) == bytes(c1.path), true, "the clip has no overlay in it")
        -- And the overlay is back afterwards.
        assert(page:execute_js{ body = shown }:unwrap().result ~= "none", "the overlay is restored")
    "##,
    );
}

#[test]
fn the_capture_circuit_is_per_task_and_its_codes_reach_the_caller() {
    lua_files(
        r##"
        page:navigate{ url = A .. "/capture.html" }:unwrap()
        -- Three capture failures (a budget no shot fits in): each a CAPTURE_FAILED in the data.
        for i = 1, 3 do
          local f = page:screenshot{ timeoutMs = 1 }
          eq(f.ok, false); eq(f.code, "ACTION_FAILED", "failure " .. i)
          eq(f.data.errorCode, "CAPTURE_FAILED"); eq(f.data.captureTimeout, true); eq(f.started, true)
          has(f.data.screenshot_error, "budget of 1 ms")
        end
        -- The circuit is open: refused before anything reaches the browser.
        local open = page:screenshot{}
        eq(open.ok, false); eq(open.data.errorCode, "CAPTURE_CIRCUIT_OPEN"); eq(open.started, false)
        eq(open.data.started, false); eq(open.data.capture.stage, "circuit-open"); has(open.msg, "force:true")
        assert(open.data.retryAfterMs > 100000 and open.data.retryAfterMs <= 120000, "remaining cooldown " .. tostring(open.data.retryAfterMs))
        eq(open.data.capture_degraded, true)
        eq(page:get_element_screenshot{ selector = "#box" }.data.errorCode, "CAPTURE_CIRCUIT_OPEN", "element shots share it")
        -- This task's auto-capture is degraded too.
        local j = page:execute_js{ body = "1 + 1" }:unwrap()
        eq(j.capture_degraded, true); has(j.capture_note, "resumes"); eq(j.seq, nil)
        -- A forced probe that fails keeps the cooldown: never extends it.
        local forced = page:screenshot{ force = true, timeoutMs = 1 }
        eq(forced.data.errorCode, "CAPTURE_FAILED"); eq(forced.started, true)
        local again = page:screenshot{}
        eq(again.data.errorCode, "CAPTURE_CIRCUIT_OPEN")
        assert(again.data.retryAfterMs <= open.data.retryAfterMs, "the cooldown was not extended")
        -- Another task captures as usual, by hand and automatically.
        local other = browser.start{}
        other:navigate{ url = A .. "/capture.html" }:unwrap()
        local o = other:screenshot{}:unwrap()
        eq(o.capture.stage, "complete"); eq(o.capture.halfOpen, false); eq(bytes(o.path):sub(2, 4), "PNG")
        local oj = other:execute_js{ body = "1 + 1" }:unwrap()
        assert(oj.seq, "the other task's auto-capture ran"); eq(oj.capture_degraded, nil)
        other:close()
        -- A forced probe that succeeds closes the circuit again.
        page:screenshot{ force = true }:unwrap()
        eq(page:screenshot{}:unwrap().capture.stage, "complete")
        assert(page:execute_js{ body = "1 + 1" }:unwrap().seq, "auto-capture is back")
    "##,
    );
}

#[test]
fn a_full_page_shot_cut_at_16384_px_says_so() {
    lua_files(
        r##"
        page:navigate{ url = A .. "/capture_tall.html" }:unwrap()
        local dpr = page:execute_js{ body = "devicePixelRatio" }:unwrap().result
        eq(page:execute_js{ body = "document.documentElement.scrollHeight" }:unwrap().result, 20000)
        local f = page:screenshot{ fullPage = true }:unwrap()
        eq(f.fullPageCaptured, false); eq(f.capture_degraded, true)
        eq(f.capturedHeight, 16384); eq(f.pageHeight, 20000); has(f.warning, "16384")
        local _, h = png_size(bytes(f.path)); eq(h, 16384 * dpr)
        -- A viewport as large as that is refused, naming the param.
        local v = page:set_viewport{ width = 20000, height = 800 }
        eq(v.code, "INVALID_ARGUMENT"); eq(v.started, false); has(v.msg, "width")
        eq(page:set_viewport{ width = 800, height = 16385 }.code, "INVALID_ARGUMENT")
    "##,
    );
}

#[test]
fn a_slow_capture_has_its_budget_and_a_late_one_restores_the_overlay() {
    lua_files(
        r##"
        -- The page keeps its main thread busy for 3.5 s each time the overlay is hidden.
        page:navigate{ url = A .. "/capture_slow.html?busy=3500" }:unwrap()
        page:get_browser_state{}
        local function wait_shown(what)
          local t = ""
          for _ = 1, 100 do
            t = page:get_title{}:unwrap().title
            if t == "overlay:shown" then return end
            browser.sleep(100)
          end
          error(what .. ": the overlay stayed hidden (" .. t .. ")")
        end
        wait_shown("after get_browser_state")
        -- The budget runs out while the overlay is hidden: an honest capture failure, and the
        -- overlay is shown again once the page answers.
        local t = page:screenshot{ timeoutMs = 1000 }
        eq(t.ok, false); eq(t.code, "ACTION_FAILED"); eq(t.data.errorCode, "CAPTURE_FAILED")
        eq(t.data.captureTimeout, true); has(t.msg, "1000 ms")
        wait_shown("after the timed-out shot")
        -- A budget above 3 s is the shot's: it waits for the busy page.
        local s = page:screenshot{ timeoutMs = 10000 }:unwrap()
        assert(s.capture.elapsedMs >= 3000, "waited " .. s.capture.elapsedMs .. " ms"); eq(s.capture.timeoutMs, 10000)
        wait_shown("after the slow shot")
    "##,
    );
}

#[test]
fn files_are_never_overwritten_and_paths_are_resolved() {
    lua_files(
        r##"
        page:navigate{ url = A .. "/capture.html" }:unwrap()
        local s = page:screenshot{}:unwrap()
        local shot_name = s.path:match("([^/]+)$")
        local dir = s.path:match("^(.*)/[^/]+$")
        local before = bytes(s.path)
        -- download_image{filename} writes a new file, with the image's extension.
        local d = page:download_image{ selector = "#pic", filename = shot_name }:unwrap()
        assert(d.path ~= s.path, "a new file"); eq(bytes(s.path) == before, true, "the screenshot is intact")
        has(d.filename, (shot_name:gsub("%.png$", "")) .. "-"); has(d.filename, ".png")
        local l1 = page:download_image{ selector = "#pic", filename = "logo" }:unwrap()
        eq(l1.filename, "logo.png"); has(l1.url, "/logo.png")
        local l2 = page:download_image{ selector = "#pic", filename = "logo" }:unwrap()
        assert(l2.filename ~= "logo.png", "a second logo is a new file: " .. l2.filename); has(l2.filename, "logo-")
        eq(bytes(l1.path) == bytes(l2.path), true)
        eq(page:download_image{ selector = "#pic", filename = "pic.jpg" }:unwrap().filename, "pic.png")
        -- A data: URL is echoed shortened.
        local len = page:execute_js{ body = [[(() => {
          const c = document.createElement('canvas'); c.width = 300; c.height = 300;
          const g = c.getContext('2d');
          for (let i = 0; i < 300; i++) { g.fillStyle = 'hsl(' + i + ',80%,50%)'; g.fillRect(i, (i * 7) % 300, 3, 1 + i % 50); }
          const im = document.createElement('img'); im.id = 'inline'; im.src = c.toDataURL(); document.body.prepend(im);
          return im.src.length; })()]] }:unwrap().result
        assert(len > 1000, "a long data URL: " .. len)
        local du = page:download_image{ selector = "#inline" }:unwrap()
        eq(du.via, "data-url"); has(du.srcUrl, "data:image/png;base64,"); has(du.srcUrl, len .. " chars")
        assert(#du.srcUrl < 200, "shortened: " .. #du.srcUrl)
        -- `..` is resolved: a file outside the task's data dir gets no /data URL.
        local up = page:screenshot{ path = dir .. "/../escaped-" .. shot_name }:unwrap()
        eq(up.url, nil, "outside the task's data dir"); eq(up.path, dir:match("^(.*)/[^/]+$") .. "/escaped-" .. shot_name)
        eq(exists(up.path), true)
        local inside = page:screenshot{ path = dir .. "/./nowhere/../in.png" }:unwrap()
        eq(inside.path, dir .. "/in.png"); has(inside.url, "/in.png"); eq(inside.url:find("%.%."), nil)
        local task = dir:match("([^/]+)$")
        eq(inside.url, "/data/" .. task .. "/in.png")
        os.remove(up.path)
    "##,
    );
}

/// Issue 22: a state read whose page drew nothing new since the last capture reuses that
/// capture as its screenshot (no second capture for the next command to wait for); a change the
/// page made by itself, a scroll or a running animation gets a new one.
#[test]
fn a_state_read_reuses_the_last_capture_only_while_the_page_is_unchanged() {
    lua_files(
        r##"
        local function reused()
          for _, t in ipairs(browser.call("list_tasks").data.tasks) do
            if t.id == tostring(page.id) then return t.screenshotsReused end
          end
        end
        local function read()
          local r = page:get_browser_state{}; assert(r.ok, tostring(r))
          r:wait_files()
          return r.data
        end
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        read()
        local c = page:click_element_by_selector{ selector = "#btn" }
        assert(c.ok, tostring(c)); c:wait_files()
        eq(reused(), 0)
        -- Nothing changed since the click's capture: the read's screenshot is that capture.
        local r = read()
        eq(reused(), 1, "the read after the click reused its capture")
        eq(bytes(r.screenshot_path), bytes(c.data.screenshot_path))
        assert(r.screenshot_path ~= c.data.screenshot_path, "a file of its own")
        has(bytes(r.state_file), "clicked 1")
        read(); eq(reused(), 2, "and so does a read after a read")
        -- The page changes by itself after the last capture: a new one, showing the change.
        local before = bytes(r.screenshot_path)
        page:execute_js{ body = "setTimeout(() => { document.getElementById('msg').textContent = 'changed by a timer, with a long text'; }, 200)" }:unwrap()
        browser.sleep(500)
        local changed = read()
        eq(reused(), 2, "a mutation since the last capture")
        assert(bytes(changed.screenshot_path) ~= before, "the new screenshot shows the change")
        read(); eq(reused(), 3)
        -- A scroll by the page, without a mutation.
        page:execute_js{ body = "document.body.style.height = '5000px'" }:unwrap()
        read(); eq(reused(), 4)
        page:execute_js{ body = "setTimeout(() => window.scrollTo(0, 300), 200)" }:unwrap()
        browser.sleep(500)
        read(); eq(reused(), 4, "scrolled since the last capture")
        -- A change inside a shadow tree is no mutation of the document: never reused there.
        page:execute_js{ body = "const h = document.createElement('div'); h.style.cssText = 'position: fixed; top: 0; left: 0; background: #fff'; h.attachShadow({ mode: 'open' }).innerHTML = '<p id=inner>shadow one</p>'; document.body.prepend(h); window.host = h" }:unwrap()
        local unchanged = read()
        local n = reused()
        page:execute_js{ body = "setTimeout(() => { host.shadowRoot.getElementById('inner').textContent = 'shadow two, changed'; }, 200)" }:unwrap()
        browser.sleep(500)
        local shadow = read()
        eq(reused(), n, "a change inside a shadow tree")
        assert(bytes(shadow.screenshot_path) ~= bytes(unchanged.screenshot_path), "it shows the change")
        -- A running animation draws without a mutation: never reused.
        page:navigate{ url = A .. "/moving.html" }:unwrap()
        read(); read(); read()
        eq(reused(), 4, "an animation is running")
    "##,
    );
}

#[test]
fn downloads_land_in_the_task_s_directory_and_the_click_says_so() {
    // Issue 36 §1: never ~/Downloads; the click's receipt names each file, its path and size.
    lua_files(
        r##"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        page:execute_js{ body = [[document.body.insertAdjacentHTML('beforeend',
          '<a id="dl" href="/download?name=report.csv&bytes=300">Report</a>' +
          '<a id="big" href="/download?name=report.csv&bytes=2000000">Big report</a>'); true]] }:unwrap()
        local c = page:click_element_by_selector{ selector = "#dl" }:unwrap()
        eq(c.changed, true); eq(c.downloadsStarted, 1); eq(c.hint, nil, "no 'may have been ignored'")
        local d = c.downloads[1]
        eq(d.fileName, "report.csv"); eq(d.state, "completed"); eq(d.size, 300)
        has(d.path, "/downloads/" .. page.id .. "/report.csv"); eq(exists(d.path), true)
        has(d.downloadUrl, "/downloads/" .. page.id .. "/report.csv")
        -- The same name again is not overwritten.
        local again = page:click_element_by_selector{ selector = "#dl" }:unwrap()
        eq(again.downloads[1].fileName, "report-1.csv"); eq(exists(again.downloads[1].path), true)
        -- A big one: wait_files waits for it.
        local big = page:click_element_by_selector{ selector = "#big" }:unwrap()
        eq(big.downloadsStarted, 1)
        local r = page:click_element_by_selector{ selector = "#big" }
        eq(r:wait_files(), true)
        eq(r.data.downloads[1].state, "completed"); eq(r.data.downloads[1].size, 2000000)
        eq(exists(r.data.downloads[1].path), true)
    "##,
    );
}
