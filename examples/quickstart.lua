-- moonpilot quickstart: open a local page, read it as indexed elements, type, click, verify.
-- Run: moonpilot run examples/quickstart.lua
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
local page = browser.start{}

page:navigate{ url = "file://" .. dir .. "/quickstart.html" }:unwrap()
local state = page:get_browser_state{}:unwrap()
print(state.text)

-- Find the name field and the button by what the snapshot says about them.
local field, button
for _, el in ipairs(state.elements) do
  if el.tag == "INPUT" and el.name == "who" then field = el.index end
  if el.tag == "BUTTON" then button = el.index end
end
assert(field and button, "the page has a name field and a button")

page:input_text{ index = field, text = "Lua" }:unwrap()
local click = page:click_element_by_index{ index = button }:unwrap()
print("click changed the page:", click.changed)

local greeting = page:execute_js{ body = "document.getElementById('out').textContent" }:unwrap().result
print(greeting)
assert(greeting == "Hello, Lua!", "unexpected greeting: " .. tostring(greeting))

page:close()
print("quickstart: done")
