//! Reading pages as data without spending an observation: text, Markdown (tables as GFM
//! tables), text search, table discovery (issue 12).

use crate::support::harness::lua;

#[test]
fn extract_markdown_renders_a_table_page_as_gfm() {
    lua(r##"
        page:navigate{ url = A .. "/tables.html" }:unwrap()
        local r = page:extract_markdown{}:unwrap()
        local want = table.concat({
          "# Quarterly report",
          "",
          "Sales by **region**, see [details](" .. A .. "/basic.html).",
          "",
          "| Region | Q1 | Q2 |",
          "| --- | --- | --- |",
          "| North | 10 | 12 |",
          "| South \\| East | 7 | 9 |",
          "",
          "- First",
          "- Second *item*",
          "",
          "| ![logo](" .. A .. "/none.png) | only row |",
          "| --- | --- |",
          "",
          "total total total",
        }, "\n")
        eq(r.markdown, want, "the whole page as Markdown")
        eq(r.length, #want); eq(r.truncated, false); eq(r.source, "body")
        eq(r.url, A .. "/tables.html"); eq(r.title, "Tables")
        -- One table by the selector list_tables hands out.
        local t = page:extract_markdown{ selector = "table", nth = 1 }:unwrap()
        eq(t.source, "table >> nth=1")
        eq(t.markdown, "| ![logo](" .. A .. "/none.png) | only row |\n| --- | --- |")
        local first = page:extract_markdown{ selector = "table >> nth=0", maxChars = 20 }:unwrap()
        eq(first.markdown, "| Region | Q1 | Q2 |"); eq(first.truncated, true)
        eq(first.length, 86)
        local l = page:extract_markdown{ selector = "#sales", includeLinks = true }:unwrap()
        eq(l.links[1].href, A .. "/basic.html"); eq(l.links[1].text, "details")
        -- Bad input.
        local none = page:extract_markdown{ selector = "#nothing" }
        eq(none.ok, false); eq(none.code, "ELEMENT_NOT_FOUND")
        local far = page:extract_markdown{ selector = "table", nth = 5 }
        eq(far.code, "INVALID_ARGUMENT"); eq(far.data.param, "nth"); has(far.msg, "matches 2 element(s)")
        local bad = page:extract_markdown{ maxChars = "many" }
        eq(bad.code, "INVALID_ARGUMENT"); eq(bad.data.param, "maxChars"); eq(bad.started, false)
        local nf = page:extract_markdown{ frame = "nowhere" }
        eq(nf.code, "INVALID_ARGUMENT"); eq(nf.data.param, "frame")
    "##);
}

#[test]
fn find_text_counts_hits_and_returns_context() {
    lua(r##"
        page:navigate{ url = A .. "/tables.html" }:unwrap()
        local r = page:find_text{ text = "total", contextChars = 6, maxMatches = 2 }:unwrap()
        eq(r.matchCount, 3, "the hidden div's text is not innerText"); eq(r.returned, 2)
        eq(r.truncated, true); has(r.hint, "3 hits, 2 returned")
        eq(r.pattern, "total"); eq(r.regex, false); eq(r.contextChars, 6); eq(r.source, "body")
        local m1, m2 = r.matches[1], r.matches[2]
        eq(m1.match, "total"); eq(m1.after, " total"); eq(m2.index, m1.index + 6)
        eq(m2.before, "total "); eq(m1.line, m2.line)
        eq(m1.line > 5, true, "a 1-based line after the table")
        local rx = page:find_text{ text = "Q[12]", regex = true }:unwrap()
        eq(rx.matchCount, 2); eq(rx.matches[1].match, "Q1"); eq(rx.matches[2].match, "Q2")
        eq(rx.truncated, false); eq(rx.hint, nil)
        local scoped = page:find_text{ text = "o", selector = "#sales" }:unwrap()
        eq(scoped.source, "#sales"); eq(scoped.matchCount, 3, "Region, North, South")
        local miss = page:find_text{ text = "absent words" }:unwrap()
        eq(miss.matchCount, 0); has(miss.hint, "no hit")
        -- Inside a cross-site frame.
        local fr = page:find_text{ text = "child at", frame = "crosschild" }:unwrap()
        eq(fr.matchCount, 1); has(fr.matches[1].after, "localhost")
        -- Bad input: an invalid regex is never searched literally; a missing text.
        local bad = page:find_text{ text = "(", regex = true }
        eq(bad.code, "INVALID_ARGUMENT"); eq(bad.data.param, "text"); has(bad.msg, "not a valid regex")
        local missing = page:find_text{}
        eq(missing.code, "INVALID_ARGUMENT"); eq(missing.data.param, "text"); eq(missing.started, false)
        local wide = page:find_text{ text = "x", contextChars = 5000 }
        eq(wide.code, "INVALID_ARGUMENT"); eq(wide.data.param, "contextChars")
    "##);
}

#[test]
fn list_tables_gives_selectors_shapes_and_previews() {
    lua(r##"
        page:navigate{ url = A .. "/tables.html" }:unwrap()
        local r = page:list_tables{}:unwrap()
        eq(r.count, 2); eq(r.url, A .. "/tables.html"); eq(r.title, "Tables")
        has(r.hint, "extract_markdown")
        local a, b = r.tables[1], r.tables[2]
        eq(a.index, 0); eq(a.selector, "table >> nth=0"); eq(a.rows, 3); eq(a.cols, 3)
        eq(a.id, "sales"); eq(a.className, "data grid"); eq(a.imageCount, 0)
        eq(a.preview, "Region Q1 Q2 North 10 12 South | East 7 9")
        eq(a.textLength > 20, true)
        eq(b.selector, "table >> nth=1"); eq(b.rows, 1); eq(b.cols, 2); eq(b.imageCount, 1)
        eq(b.id, nil); eq(b.className, nil); eq(b.preview, "only row")
        local none = page:list_tables{ frame = "crosschild" }:unwrap()
        eq(none.count, 0); has(none.hint, "no <table>")
        eq(page:list_tables{ frame = "nowhere" }.code, "INVALID_ARGUMENT")
    "##);
}

#[test]
fn extract_structured_data_reads_body_text_and_links() {
    lua(r##"
        page:navigate{ url = A .. "/tables.html" }:unwrap()
        page:get_browser_state{}:unwrap() -- the overlay is drawn; it must not be read
        local r = page:extract_structured_data{ query = "sales?", extractLinks = true }:unwrap()
        eq(r.query, "sales?"); eq(r.limit, 20000); eq(r.truncated, false)
        has(r.text, "Quarterly report"); has(r.text, "North"); hasnt(r.text, "hidden total")
        eq(r.length, utf8.len(r.text)); eq(r.truncatedHint, nil)
        eq(#r.links, 1); eq(r.links[1].href, A .. "/basic.html"); eq(r.links[1].text, "details")
        local plain = page:extract_structured_data{}:unwrap()
        eq(plain.links, nil); eq(plain.query, nil)
        eq(page:extract_structured_data{ extractLinks = "often" }.code, "INVALID_ARGUMENT")
    "##);
}

/// The password of `form_errors.html`: it must never leave the page.
const PASSWORD: &str = "S3cr3t-Hunter-99";

#[test]
fn get_form_state_reads_labels_values_validity_and_errors() {
    lua(r##"
        page:navigate{ url = A .. "/form_errors.html" }:unwrap()
        local r = page:get_form_state{ selector = "#signup" }:unwrap()
        eq(r.scope, "#signup"); eq(r.url, A .. "/form_errors.html"); eq(r.truncated, false)
        local by = {}
        for _, f in ipairs(r.fields) do by[f.id] = f end
        eq(r.count, 7, "hidden, display:none and out-of-scope controls are skipped")
        eq(by.gone, nil); eq(by.search, nil)
        -- Error text and the error class of the form item.
        local email = by.email
        eq(email.label, "E-mail:"); eq(email.type, "email"); eq(email.value, "not-an-email")
        eq(email.required, true); eq(email.invalid, true); eq(email.error, "Enter a valid e-mail")
        eq(email.validity.typeMismatch, true); eq(email.validity.valid, false)
        -- Required and empty: validity says so, but an untouched field is not flagged invalid.
        local nick = by.nick
        eq(nick.label, "Nickname", "the item's label without ' *'"); eq(nick.type, "input")
        eq(nick.value, ""); eq(nick.required, true); eq(nick.invalid, false); eq(nick.error, nil)
        eq(nick.validity.valueMissing, true)
        -- aria-invalid with its described-by text; the value is redacted.
        local pw = by.pw
        eq(pw.value, "[redacted]"); eq(pw.valueFrom, "dom"); eq(pw.label, "Password")
        eq(pw.invalid, true); eq(pw.error, "At least 20 characters")
        -- A custom validity message.
        local code = by.code
        eq(code.label, "Invite code"); eq(code.invalid, true)
        eq(code.error, "This invite code has expired"); eq(code.validity.customError, true)
        -- `errorBoundary` is not the word `error`; `ds-select--error` is.
        eq(by.city.invalid, false); eq(by.city.label, "City"); eq(by.city.placeholder, "City")
        local country = by.country
        eq(country.invalid, true); eq(country.value, "Norway"); eq(country.valueFrom, "display")
        eq(country.readOnly, true)
        eq(by.agree.checked, true); eq(by.agree.disabled, true); eq(by.agree.type, "checkbox")
        eq(r.errorCount, 4)
        local errs = {}
        for _, e in ipairs(r.errors) do errs[e.id] = e.error end
        eq(errs.email, "Enter a valid e-mail"); eq(errs.pw, "At least 20 characters")
        eq(errs.code, "This invite code has expired"); eq(errs.country, nil)
        -- Hidden ones on request; the document scope; max.
        local all = page:get_form_state{ includeHidden = true }:unwrap()
        eq(all.scope, "document"); eq(all.count, 10)
        local two = page:get_form_state{ max = 2 }:unwrap()
        eq(two.count, 2); eq(two.truncated, true)
        local none = page:get_form_state{ selector = "#nothing" }:unwrap()
        eq(none.error, "scope-not-found"); eq(none.count, 0); eq(#none.fields, 0)
        -- Bad input.
        local bad = page:get_form_state{ max = "lots" }
        eq(bad.code, "INVALID_ARGUMENT"); eq(bad.data.param, "max"); eq(bad.started, false)
        local sel = page:get_form_state{ selector = "[[" }
        eq(sel.code, "INVALID_ARGUMENT"); eq(sel.data.param, "selector")
        -- The page still holds the password; only our reads redact it.
        local typed = page:get_browser_state{}:unwrap()
        hasnt(typed.text, "S3cr3t")
    "##);
}

/// Issue 12: the password of the form never reaches a receipt, the trace or a state file.
#[test]
fn issue12_password_values_never_reach_receipts_traces_or_state_files() {
    use crate::support::harness::{private, test_config, url_a};
    use moonpilot::browser::task::TaskId;
    use serde_json::json;
    let dir = std::env::temp_dir().join(format!("moonpilot-test-forms-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut config = test_config();
    config.data_dir = dir.join("data");
    config.trace_dir = Some(dir.join("trace"));
    private(config, |ex| async move {
        let r = ex.execute(None, "start", json!({})).await;
        let id = TaskId(r.data["id"].as_str().unwrap().parse().unwrap());
        let nav = ex
            .execute(
                Some(id),
                "navigate",
                json!({"url": url_a("form_errors.html")}),
            )
            .await;
        assert!(nav.ok, "{:?}", nav.msg);
        let mut receipts = Vec::new();
        for (method, params) in [
            ("get_form_state", json!({})),
            (
                "get_form_state",
                json!({"includeHidden": true, "selector": "form"}),
            ),
            ("get_browser_state", json!({})),
            ("get_interactive_map", json!({})),
            ("diff_dom_text", json!({})),
            ("extract_structured_data", json!({})),
            ("extract_markdown", json!({})),
            ("get_page_snapshot", json!({})),
        ] {
            let r = ex.execute(Some(id), method, params).await;
            assert!(r.ok, "{method}: {:?}", r.msg);
            receipts.push(serde_json::to_string(&r.data).unwrap());
        }
        // Typed inside a batch and a job: the batch's own trace line must not repeat it.
        let typed = "Batch-Typed-77!";
        let step = json!([{"input_text_by_selector": {"selector": "#pw", "text": typed}}]);
        let b = ex
            .execute(Some(id), "commands", json!({"commands": step.clone()}))
            .await;
        assert!(b.ok, "{:?}", b.msg);
        receipts.push(serde_json::to_string(&b.data).unwrap());
        for r in &receipts {
            assert!(!r.contains(PASSWORD), "a receipt holds the password: {r}");
            assert!(
                !r.contains(typed),
                "a receipt holds the typed password: {r}"
            );
        }
        assert!(receipts[0].contains("[redacted]"), "{}", receipts[0]);
        // The page itself still holds it: the redaction is ours.
        let js = ex
            .execute(
                Some(id),
                "execute_js",
                json!({"body": "document.getElementById('pw').value.length"}),
            )
            .await;
        assert_eq!(js.data["result"], typed.len(), "the batch typed it");
        let _ = ex.execute(Some(id), "close", json!({})).await;
    });
    // Every file the engine wrote (trace lines, state files, evidence) under the test's dirs.
    let mut stack = vec![dir.clone()];
    let (mut files, mut state_files, mut traces) = (0, 0, 0);
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                files += 1;
                let name = path.display().to_string();
                state_files += usize::from(name.ends_with(".txt"));
                traces += usize::from(name.contains("trace"));
                let hay = String::from_utf8_lossy(&bytes);
                assert!(!hay.contains(PASSWORD), "{name} holds the password");
                assert!(
                    !hay.contains("Batch-Typed-77!"),
                    "{name} holds the typed password"
                );
            }
        }
    }
    assert!(
        files > 0 && state_files > 0 && traces > 0,
        "{files} files, {state_files} state files, {traces} trace files"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn get_interactive_map_reads_items_and_listener_traces() {
    lua(r##"
        page:navigate{ url = A .. "/listeners.html" }:unwrap()
        local m = page:get_interactive_map():unwrap()
        eq(m.snapshotBuilt, true, "no snapshot yet: one is built"); has(m.source, "index")
        eq(m.count, #m.elements)
        local by = {}
        for _, e in ipairs(m.elements) do by[e.id] = e end
        local inline, added, link, long = by.inline, by.added, by.link, by.long
        eq(inline.tag, "BUTTON"); eq(inline.hasListeners, true); eq(inline.listeners[1], "click")
        eq(inline.listenerDetection, "heuristic"); eq(inline.text, "Inline handler")
        eq(added.hasListeners, nil, "addEventListener leaves no trace: null, never false")
        eq(link.href, "/basic.html"); eq(link.tag, "A"); eq(link.visible, true)
        eq(#link.rect, 4); eq(link.rect[3] > 0, true)
        eq(#long.value, 120, "values are capped at 120"); eq(long.name, "long")
        for _, e in ipairs(m.elements) do
          eq(e.resolved, true); eq(e.frameIndex, 0); eq(e.frameUrl, A .. "/listeners.html")
          eq(type(e.xpath), "string"); eq(e.snapshotTag, string.lower(e.tag))
        end
        -- The same item shape as get_browser_state's elements, the same indices.
        local s = page:get_browser_state{ highlight = false }:unwrap()
        local again = page:get_interactive_map():unwrap()
        eq(again.snapshotBuilt, false); eq(again.count, s.elementCount)
        for i, e in ipairs(s.elements) do
          local a = again.elements[i]
          eq(a.index, e.index); eq(a.tag, e.tag); eq(a.id, e.id); eq(a.xpath, e.xpath)
          eq(a.hasListeners, e.hasListeners); eq(a.listenerDetection, e.listenerDetection)
          for k in pairs(e) do if k ~= "rect" and k ~= "listeners" then eq(a[k], e[k], "field " .. k) end end
        end
        -- A removed element keeps its snapshot tag and says it could not be re-read.
        page:execute_js{ body = "document.getElementById('added').remove()" }:unwrap()
        local gone
        for _, e in ipairs(page:get_interactive_map():unwrap().elements) do
          if e.snapshotId == "added" then gone = e end
        end
        eq(gone.resolved, false); eq(gone.text, "[element could not be re-read]"); eq(gone.tag, "BUTTON")
        eq(page:get_interactive_map{ bogus = 1 }:unwrap().unknownParams[1], "bogus", "it takes no params")
    "##);
}

#[test]
fn diff_dom_text_reports_added_and_removed_lines() {
    lua(r##"
        page:navigate{ url = A .. "/listeners.html" }:unwrap()
        local first = page:diff_dom_text{ highlight = false }:unwrap()
        eq(first.first, true); eq(first.changed, true); eq(#first.removed, 0)
        eq(first.url, A .. "/listeners.html"); eq(first.title, "Listeners"); eq(#first.tabs, 1)
        local all = table.concat(first.added, "\n")
        has(all, "Status: idle"); has(all, "Inline handler")
        local same = page:diff_dom_text{}:unwrap()
        eq(same.first, false); eq(same.changed, false); eq(#same.added, 0); eq(#same.removed, 0)
        page:execute_js{ body = [[
          document.getElementById('status').textContent = 'Status: done';
          const p = document.createElement('p'); p.textContent = 'A fresh line';
          document.body.appendChild(p);
        ]] }:unwrap()
        local d = page:diff_dom_text{}:unwrap()
        eq(d.changed, true); eq(d.first, false)
        local added, removed = table.concat(d.added, "\n"), table.concat(d.removed, "\n")
        has(added, "Status: done"); has(added, "A fresh line"); has(removed, "Status: idle")
        hasnt(added, "Inline handler", "unchanged lines are not listed")
        eq(d.addedCount, #d.added); eq(d.removedCount, #d.removed); eq(d.truncated, false)
        -- get_browser_state's text is the new baseline, and diff_dom_text writes no files.
        local s = page:get_browser_state{}:unwrap()
        local after = page:diff_dom_text{}:unwrap()
        eq(after.changed, false)
        local seq = page:diff_dom_text{}:unwrap()
        eq(seq.seq, nil); eq(seq.screenshot, nil)
        local bad = page:diff_dom_text{ viewportExpansion = -5 }
        eq(bad.code, "INVALID_ARGUMENT"); eq(bad.data.param, "viewportExpansion"); eq(bad.started, false)
    "##);
}

#[test]
fn get_page_snapshot_summarises_without_dom_text() {
    lua(r##"
        page:navigate{ url = A .. "/dialog.html" }:unwrap()
        local s = page:get_page_snapshot{}:unwrap()
        eq(s.url, A .. "/dialog.html"); eq(s.title, "Dialog"); eq(s.loading, false)
        eq(s.dialog, nil); eq(#s.tabs, 1); eq(s.tabs[1].current, true)
        has(s.browser_state, "current tab is: 1"); eq(s.text, nil); eq(s.screenshot, nil)
        page:execute_js{ body = "setTimeout(() => alert('ping'), 0); 1" }:unwrap()
        local t0 = browser.clock()
        local d
        repeat d = page:get_page_snapshot{}:unwrap().dialog until d or browser.clock() - t0 > 5
        eq(d.type, "alert"); eq(d.message, "ping")
        page:execute_js{ body = "console.log('snap-log'); fetch('/basic.html?snapshot-req'); 1" }:unwrap()
        local c
        t0 = browser.clock()
        repeat
          c = page:get_page_snapshot{ includeConsole = true, includeRequests = true, requestFilter = "snapshot-req" }:unwrap()
        until (#c.requests > 0 and #c.logs > 0) or browser.clock() - t0 > 5
        eq(c.requestFilter, "snapshot-req"); eq(c.requestCount, 1); has(c.requests[1].url, "snapshot-req")
        local logged = false
        for _, l in ipairs(c.logs) do if string.find(l, "snap-log", 1, true) then logged = true end end
        assert(logged, "the console line is in the snapshot's logs")
        eq(page:get_page_snapshot{ includeConsole = "yes" }.data.param, "includeConsole")
    "##);
}

#[test]
fn extract_structured_data_parses_json_ld_and_microdata() {
    lua(r##"
        page:navigate{ url = A .. "/product.html" }:unwrap()
        local r = page:extract_structured_data{}:unwrap()
        eq(r.jsonLdCount, 2); eq(r.jsonLdTruncated, false)
        local p = r.jsonLd[1]
        eq(p.index, 0); eq(p.error, nil); eq(p.value["@type"], "Product"); eq(p.value.offers.price, "19.90")
        eq(r.jsonLd[2].value, nil); has(r.jsonLd[2].error, "not valid JSON")
        eq(r.microdataCount, 1, "the nested Person is a property, not a top-level item")
        local book = r.microdata[1]
        eq(book.type, "https://schema.org/Book"); eq(book.id, "urn:isbn:42")
        eq(book.properties.name[1], "The Lua Book")
        eq(book.properties.author[1].type, "https://schema.org/Person")
        eq(book.properties.author[1].properties.name[1], "Ana")
        eq(book.properties.isbn[1], "42"); eq(book.properties.url[1], A .. "/basic.html")
        eq(book.properties.datePublished[1], "2024-05-01")
        has(r.text, "The Lua Book")
        local plain = page:navigate{ url = A .. "/basic.html" }:unwrap()
        local none = page:extract_structured_data{}:unwrap()
        eq(none.jsonLdCount, 0); eq(none.microdataCount, 0); eq(#none.jsonLd, 0)
    "##);
}

#[test]
fn lone_surrogates_from_cuts_or_hostile_pages_do_not_lose_the_answer() {
    // Half an emoji (a cut at a char count, or a page that puts one there) used to travel as an
    // unpaired `\uD83D` escape that the engine's JSON reader refused: the answer was lost and
    // the command timed out after 30 s. Every probe's strings are made well-formed (U+FFFD).
    lua(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        page:execute_js{ body = [[
          document.body.textContent = 'ab\u{1F600}cd';
          document.title = 'bad\uD83D';
          window.lone = 'x\uDE00';
          return true
        ]] }:unwrap()
        local f = page:find_text{ text = "c", contextChars = 1 }:unwrap()
        eq(f.matchCount, 1, "found"); eq(f.matches[1].before, "\u{FFFD}", "the cut half is U+FFFD")
        eq(f.matches[1].after, "d")
        eq(page:get_title():unwrap().title, "bad\u{FFFD}")
        eq(page:execute_js{ body = "return window.lone" }:unwrap().result, "x\u{FFFD}")
        local s = page:get_browser_state{}:unwrap()
        has(s.title or "", "bad")
    "#);
}

#[test]
fn a_runaway_regex_is_stopped_and_the_tab_keeps_working() {
    lua(r#"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        page:execute_js{ body = "document.body.textContent = 'a'.repeat(40) + '!'; return 1" }:unwrap()
        local r = page:find_text{ text = "(a+)+$", regex = true }
        eq(r.ok, false); eq(r.code, "EVAL_TIMEOUT"); eq(r.retryable, false)
        assert(r.elapsed_ms < 20000, "stopped at its budget: " .. r.elapsed_ms)
        eq(page:find_text{ text = "aaa" }:unwrap().matchCount, 13, "the tab answers again")
    "#);
}

#[test]
fn a_form_the_browser_s_validation_holds_back_says_so_and_why() {
    // Issue 36 §5: the click's receipt says the form did not submit and why; the state line
    // and get_form_state give the browser's message, a password's without its length.
    lua(r##"
        page:navigate{ url = A .. "/basic.html" }:unwrap()
        page:execute_js{ body = [[document.body.insertAdjacentHTML('beforeend',
          '<form id="login" action="/submitted"><label>Name <input id="who" name="who" required></label>' +
          '<label>Password <input type="password" id="pw" name="pw" minlength="8"></label>' +
          '<button id="go">Log in</button></form>'); true]] }:unwrap()
        page:input_text_by_selector{ selector = "#pw", text = "abc" }:unwrap()
        local c = page:click_element_by_selector{ selector = "#go" }:unwrap()
        eq(c.changed, false); eq(c.formBlocked, true)
        has(c.hint, "the form did not submit"); has(c.hint, "`Name`: Please fill out this field.")
        eq(#c.formInvalidFields, 2); eq(c.formInvalidFields[1].name, "who")
        local pwmsg = c.formInvalidFields[2].message
        has(pwmsg, "Please lengthen this text to 8 characters or more"); hasnt(pwmsg, "currently")
        eq(page:get_url{}:unwrap().url, A .. "/basic.html", "nothing was submitted")
        -- The state line says the message, not a bare `invalid`.
        local text = page:get_browser_state{}:unwrap().text
        has(text, "invalid='Please fill out this field.'")
        has(text, "invalid='Please lengthen this text to 8 characters or more")
        hasnt(text, "currently using")
        -- get_form_state: the password's message is no secret; its value and length are.
        local f = page:get_form_state{ selector = "#login" }:unwrap()
        local pw
        for _, x in ipairs(f.fields) do if x.id == "pw" then pw = x end end
        eq(pw.value, "[redacted]"); has(pw.error, "Please lengthen this text to 8 characters")
        hasnt(pw.error, "3"); hasnt(pw.validity.message, "3")
    "##);
}
