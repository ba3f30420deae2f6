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
