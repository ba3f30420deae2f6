-- Optionally search for a query, then read a table of the page as headers and rows
--
-- A Lua recipe: `run_recipe{ name = "query-and-read-table", vars = { query = "north" } }`.
-- vars (all optional): url (navigate there first), query (typed into `input`, then `submit`
-- is clicked or Enter pressed), input (selector of the search field, default the first search
-- or text input), submit (selector of the search button), table (selector of the table,
-- default "table"), timeoutSeconds (how long to wait for the table, default 10).
-- Returns {headers, rows, rowCount, selector, query, url}.
local args = browser.args

if args.url then page:navigate{ url = args.url }:unwrap() end
if args.query ~= nil then
  page:input_text_by_selector{
    selector = args.input or "input[type=search], input[name=q], input[type=text]",
    text = tostring(args.query),
  }:unwrap()
  if args.submit then
    page:click_element_by_selector{ selector = args.submit }:unwrap()
  else
    page:press_key{ key = "Enter" }:unwrap()
  end
end

local selector = args.table or "table"
page:wait_for_element{ selector = selector, timeoutSeconds = tonumber(args.timeoutSeconds or 10) }:unwrap()
local md = page:extract_markdown{ selector = selector }:unwrap().markdown or ""

-- The GFM table extract_markdown writes: a header row, a separator row, then the body rows;
-- a `|` inside a cell is written as `\|`.
local function cells(line)
  local out = {}
  local text = line:gsub("\\|", "\1"):gsub("^%s*|", ""):gsub("|%s*$", "")
  for cell in (text .. "|"):gmatch("(.-)|") do
    out[#out + 1] = (cell:gsub("\1", "|"):gsub("^%s+", ""):gsub("%s+$", ""))
  end
  return out
end

local headers, rows = nil, {}
for line in md:gmatch("[^\n]+") do
  -- Table rows, without the separator row (`| --- | --- |`).
  if line:match("^%s*|") and not line:match("^%s*|[%s%-:|]+$") then
    if not headers then
      headers = cells(line)
    else
      rows[#rows + 1] = cells(line)
    end
  end
end

return {
  headers = headers or {},
  rows = rows,
  rowCount = #rows,
  selector = selector,
  query = args.query,
  url = page:get_url():unwrap().url,
}
