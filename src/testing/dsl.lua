-- The test API of `moonpilot test`: busted's names for writing tests (describe, it, test,
-- before_each, after_each, before_all, after_all, .skip, .only, pending) and Playwright's
-- waiting assertions (`expect(page):to_have_text{...}`), loaded into a worker's Lua state
-- before a test file runs. Called with the runner's core functions; answers the functions the
-- runner calls (src/testing/mod.rs):
--   list()     the file's tests, in order: {id, title, line, skip, only};
--   run(id)    runs test `id` (first the after_all hooks of the blocks it leaves and the
--              before_all hooks of the blocks it enters); answers nil, or the failure:
--              {message, where, expected, actual, target, waited_ms};
--   finish()   the after_all hooks of the blocks still entered (nil or a failure).
-- A test and its before_each/after_each hooks share one `page`, opened on first use; each
-- before_all/after_all hook gets a page of its own. The runner closes them (core.open_page).
local core = ...

local SEP = " › "

local root = {
  name = nil, parent = nil, children = {}, skip = false, only = false,
  before_each = {}, after_each = {}, before_all = {}, after_all = {},
}
local current = root
local tests = {}
local collecting = true

-- "file:line" of the innermost frame outside this file, found with `error`'s own position
-- prefix (the state has no `debug` library).
local function where(level)
  for l = level + 2, level + 40 do
    local _, m = pcall(error, "", l)
    if type(m) ~= "string" or m == "" then return nil end
    if m:sub(1, 15) ~= "moonpilot-test:" and m:sub(1, 3) ~= "[C]" then
      return (m:gsub(": $", ""))
    end
  end
  return nil
end

local function fail_arg(fname, argn, expected, got)
  error(string.format("bad argument #%d to `%s`: expected %s, got %s", argn, fname, expected,
    type(got)), 3)
end

local function outside_collection(fname)
  if not collecting then
    error("`" .. fname .. "` is called while tests run: declare tests and hooks at the top of "
      .. "the file or inside describe", 3)
  end
end

local function add_block(fname, name, fn, skip, only)
  outside_collection(fname)
  if type(name) ~= "string" then fail_arg(fname, 1, "a name (string)", name) end
  if type(fn) ~= "function" then fail_arg(fname, 2, "a function", fn) end
  local block = {
    name = name, parent = current, children = {}, skip = skip or current.skip,
    only = only or current.only, before_each = {}, after_each = {}, before_all = {},
    after_all = {},
  }
  table.insert(current.children, block)
  local saved = current
  current = block
  local ok, err = pcall(fn)
  current = saved
  if not ok then error(err, 0) end
end

local function add_test(fname, name, fn, skip, only)
  outside_collection(fname)
  if type(name) ~= "string" then fail_arg(fname, 1, "a name (string)", name) end
  if fn ~= nil and type(fn) ~= "function" then fail_arg(fname, 2, "a function", fn) end
  local title = { name }
  local b = current
  while b ~= root do
    table.insert(title, 1, b.name)
    b = b.parent
  end
  local at = where(1)
  tests[#tests + 1] = {
    id = #tests + 1, name = name, title = table.concat(title, SEP), fn = fn, block = current,
    skip = skip or current.skip or fn == nil, only = only or current.only,
    line = tonumber(at and at:match(":(%d+)$")) or 0,
  }
end

local function callable(fname, add)
  return setmetatable({
    skip = function(name, fn) add(fname .. ".skip", name, fn, true, false) end,
    only = function(name, fn) add(fname .. ".only", name, fn, false, true) end,
  }, { __call = function(_, name, fn) add(fname, name, fn, false, false) end })
end

describe = callable("describe", add_block)
context = describe
it = callable("it", add_test)
test = callable("test", add_test)
function pending(name) add_test("pending", name, nil, true, false) end

local function hook(kind)
  return function(fn)
    outside_collection(kind)
    if type(fn) ~= "function" then fail_arg(kind, 1, "a function", fn) end
    table.insert(current[kind], fn)
  end
end
before_each = hook("before_each")
after_each = hook("after_each")
before_all = hook("before_all")
after_all = hook("after_all")
setup = before_all
teardown = after_all

-- Expectations ------------------------------------------------------------------------------

-- A failed expectation: raised as a table the runner reports field by field.
local Failure = {}
Failure.__index = Failure
Failure.__tostring = function(f)
  return f.where and (f.where .. ": " .. f.message) or f.message
end

local function failure(fields, level)
  fields.where = fields.where or where(level + 1)
  error(setmetatable(fields, Failure), 0)
end

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) == "table" then
    local ok, js = pcall(core.json, v)
    if ok then return js end
  end
  return tostring(v)
end

local function deep_equal(a, b, seen)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  seen = seen or {}
  if seen[a] == b then return true end
  seen[a] = b
  for k, v in pairs(a) do
    if not deep_equal(v, b[k], seen) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

-- The target keys of the catalogue an element assertion takes (the rest are its options).
local TARGET_KEYS = { selector = true, text = true, role = true, name = true, label = true,
  index = true, frame = true, nth = true }

local function target_of(args, text_is_target)
  local t = {}
  for k in pairs(TARGET_KEYS) do
    if args[k] ~= nil and (k ~= "text" or text_is_target) then t[k] = args[k] end
  end
  return t
end

local function describe_target(t)
  if t.selector then return "selector " .. t.selector end
  if t.role then return "role " .. t.role .. (t.name and (" \"" .. t.name .. "\"") or "") end
  if t.label then return "label " .. t.label end
  if t.text then return "text " .. t.text end
  if t.index then return "index " .. tostring(t.index) end
  return "(no target)"
end

local function has_target(t)
  return t.selector ~= nil or t.role ~= nil or t.label ~= nil or t.text ~= nil or t.index ~= nil
end

-- An element read (src/testing/read.rs); a failed read raises {code, msg}.
local function read_element(id, target, what, name)
  local v, code, msg = core.read(id, target, what, name)
  if v == nil then error({ code = code, msg = msg }, 0) end
  return v
end

-- Reads that can never succeed: the assertion fails at once instead of waiting.
local FATAL = { INVALID_ARGUMENT = true, TASK_NOT_FOUND = true, BROWSER_GONE = true }

local DEFAULT_TIMEOUT_MS = 5000
local POLL_MS = 100

-- Polls `read()` until `holds(seen)` agrees with `want` (true; false for not_to_*) or the
-- timeout passes; raises the failure with what was last seen.
local function waiting(name, negated, args, read, holds, expected, target, level, shown)
  local timeout = tonumber(args.timeoutMs) or DEFAULT_TIMEOUT_MS
  local t0 = browser.clock()
  local seen, err
  while true do
    local ok, value = pcall(read)
    if ok then
      seen, err = value, nil
      local held = holds(seen)
      if held ~= negated then return seen end
    else
      err = value
    end
    local waited = (browser.clock() - t0) * 1000
    if waited >= timeout or (type(err) == "table" and FATAL[err.code]) then
      local last = err ~= nil and ("the read failed: " .. tostring(type(err) == "table" and
        (err.msg or err.message) or err)) or (shown and shown(seen) or show(seen))
      failure({
        message = string.format("expect(page):%s%s failed after %.1f s on %s: expected %s%s, last seen %s",
          negated and "not_" or "", name, waited / 1000, target, negated and "not " or "",
          expected, last),
        expected = expected, actual = last, target = target, waited_ms = math.floor(waited),
      }, level + 1)
    end
    browser.sleep(math.min(POLL_MS, math.max(1, timeout - waited)))
  end
end

local function text_matches(seen, want, exact)
  if type(seen) ~= "string" then return false end
  local s = seen:gsub("%s+", " "):match("^%s*(.-)%s*$")
  local w = tostring(want):gsub("%s+", " "):match("^%s*(.-)%s*$")
  if exact then return s == w end
  return s:find(w, 1, true) ~= nil
end

local page_matchers = {}

-- `to_have_url` / `to_have_title`: the page's `key`, exact or a Lua `pattern`, read by `read`.
local function page_value_matcher(name, key, read)
  page_matchers[name] = function(page, args, negated, level)
    if args[key] == nil and args.pattern == nil then
      error(name .. ": give " .. key .. " = the exact " .. key .. ", or pattern = a Lua pattern",
        level + 1)
    end
    local expected = args[key] and show(args[key])
      or ("a " .. key .. " matching " .. show(args.pattern))
    waiting(name, negated, args, function() return read(page) end, function(v)
      if args[key] then return v == args[key] end
      return type(v) == "string" and v:find(args.pattern) ~= nil
    end, expected, "the page", level + 1)
  end
end
page_value_matcher("to_have_url", "url", function(page) return page:get_url{}:unwrap().url end)
page_value_matcher("to_have_title", "title",
  function(page) return page:get_title{}:unwrap().title end)

-- An element assertion: `what` is read from the element `args` targets (core.read).
local function element_matcher(name, what, text_is_expected, expected_of, holds, field)
  page_matchers[name] = function(page, args, negated, level)
    local target = target_of(args, not text_is_expected)
    if not has_target(target) then
      error(name .. ": give a target (selector, text, role + name, label or index)", level + 1)
    end
    local shown = describe_target(target)
    waiting(name, negated, args, function()
      return read_element(page.id, target, what)
    end, function(seen) return holds(seen, args) end, expected_of(args), shown, level + 1,
      function(seen)
        if type(seen) ~= "table" then return show(seen) end
        if field == "count" then return tostring(seen.count) end
        if seen.count == 0 then return "no matching element" end
        return show(seen[field])
      end)
  end
end

element_matcher("to_have_text", "text", true,
  function(a) return (a.exact == false and "text containing " or "text ") .. show(a.text) end,
  function(seen, a) return seen.count > 0 and text_matches(seen.text, a.text, a.exact ~= false) end, "text")
element_matcher("to_contain_text", "text", true,
  function(a) return "text containing " .. show(a.text) end,
  function(seen, a) return seen.count > 0 and text_matches(seen.text, a.text, false) end, "text")
element_matcher("to_be_visible", "state", nil, function() return "visible" end,
  function(seen) return seen.count > 0 and seen.visible == true end, "visible")
element_matcher("to_be_hidden", "state", nil, function() return "hidden (or absent)" end,
  function(seen) return seen.count == 0 or seen.visible == false end, "visible")
element_matcher("to_be_enabled", "state", nil, function() return "enabled" end,
  function(seen) return seen.count > 0 and seen.enabled == true end, "enabled")
element_matcher("to_be_disabled", "state", nil, function() return "disabled" end,
  function(seen) return seen.count > 0 and seen.enabled == false end, "enabled")
element_matcher("to_be_checked", "checked", nil, function() return "checked" end,
  function(seen) return seen.count > 0 and seen.checked == true end, "checked")
element_matcher("to_have_value", "value", nil,
  function(a) return "value " .. show(a.value) end,
  function(seen, a) return seen.count > 0 and seen.value == a.value end, "value")
element_matcher("to_have_count", "count", nil,
  function(a) return "count " .. tostring(a.count) end,
  function(seen, a) return seen.count == a.count end, "count")
-- `to_have_attribute{selector=…, name=…, value=…}`: `name` is the attribute's, not an
-- accessible name (use `attribute =` with a role target).
function page_matchers.to_have_attribute(page, args, negated, level)
    local a = {}
    for k, v in pairs(args) do a[k] = v end
    if a.attribute == nil and a.role == nil then a.attribute, a.name = a.name, nil end
    if a.attribute == nil then
      error("to_have_attribute: give name = the attribute (attribute = with a role target)",
        level + 1)
    end
    if a.role then a.name = args.name end
    local target = target_of(a, true)
    local shown = describe_target(target)
    waiting("to_have_attribute", negated, a, function()
      return read_element(page.id, target, "attribute", a.attribute)
    end, function(seen)
      if seen.count == 0 or not seen.present then return false end
      return a.value == nil or seen.attribute == a.value
    end, "attribute " .. a.attribute .. (a.value ~= nil and ("=" .. show(a.value)) or ""), shown,
      level + 1, function(seen)
        if type(seen) ~= "table" then return show(seen) end
        if seen.count == 0 then return "no matching element" end
        return seen.present and show(seen.attribute) or "no such attribute"
      end)
end

function page_matchers.to_have_screenshot(page, args, negated, level)
  if negated then error("to_have_screenshot has no not_ form", level + 1) end
  if type(args.name) ~= "string" or args.name == "" then
    error("to_have_screenshot: give name = the baseline's name", level + 1)
  end
  local target = target_of(args, true)
  local res = core.screenshot_check(page.id, args.name, has_target(target) and target or nil,
    tonumber(args.maxDiffPixelRatio) or 0, tonumber(args.timeoutMs) or DEFAULT_TIMEOUT_MS)
  if res.ok then return end
  failure({ message = "expect(page):to_have_screenshot{name=" .. show(args.name) .. "}: "
    .. res.message, expected = res.expected, actual = res.actual,
    target = has_target(target) and describe_target(target) or "the page" }, level + 1)
end

local value_matchers = {}

local function value_check(name, ok, negated, expected, actual, level)
  if ok ~= negated then return end
  failure({
    message = string.format("expect(value):%s%s: expected %s%s, got %s", negated and "not_" or "",
      name, negated and "not " or "", expected, show(actual)),
    expected = expected, actual = show(actual),
  }, level + 1)
end

function value_matchers.to_equal(v, negated, level, x)
  value_check("to_equal", deep_equal(v, x), negated, show(x), v, level + 1)
end
function value_matchers.to_be(v, negated, level, x)
  value_check("to_be", rawequal(v, x), negated, show(x), v, level + 1)
end
function value_matchers.to_be_truthy(v, negated, level)
  value_check("to_be_truthy", v ~= nil and v ~= false, negated, "a truthy value", v, level + 1)
end
function value_matchers.to_be_falsy(v, negated, level)
  value_check("to_be_falsy", v == nil or v == false, negated, "nil or false", v, level + 1)
end
function value_matchers.to_be_nil(v, negated, level)
  value_check("to_be_nil", v == nil, negated, "nil", v, level + 1)
end
function value_matchers.to_contain(v, negated, level, x)
  local found = false
  if type(v) == "string" then
    found = type(x) == "string" and v:find(x, 1, true) ~= nil
  elseif type(v) == "table" then
    for _, item in pairs(v) do
      if deep_equal(item, x) then found = true break end
    end
  end
  value_check("to_contain", found, negated, "something containing " .. show(x), v, level + 1)
end
function value_matchers.to_match(v, negated, level, pattern)
  local ok = type(v) == "string" and type(pattern) == "string" and v:find(pattern) ~= nil
  value_check("to_match", ok, negated, "a string matching " .. show(pattern), v, level + 1)
end
function value_matchers.to_be_ok(v, negated, level)
  local ok = type(v) == "table" and v.ok == true
  local got = v
  if type(v) == "table" and v.ok ~= nil then got = tostring(v) end
  value_check("to_be_ok", ok, negated, "an ok Result", got, level + 1)
end

-- A test's `page`: opened on first use (a task in a browser context of its own, which the
-- runner closes after the test), so a test that never touches it costs no task.
local LazyPage = {}
local function real_page(p)
  local task = rawget(p, "task")
  if task == nil then
    task = browser.task(core.open_page())
    rawset(p, "task", task)
  end
  return task
end
LazyPage.__index = function(p, key)
  local task = real_page(p)
  local v = task[key]
  if type(v) == "function" then
    return function(self, ...)
      if self == p then self = task end
      return v(self, ...)
    end
  end
  return v
end
LazyPage.__tostring = function(p)
  local task = rawget(p, "task")
  return task and ("page " .. tostring(task.id)) or "page (not opened)"
end
local function lazy_page()
  return setmetatable({}, LazyPage)
end

local Expect = {}
Expect.__index = function(self, key)
  local negated = false
  local name = key
  if type(key) == "string" and key:sub(1, 7) == "not_to_" then
    negated, name = true, key:sub(5)
  end
  local subject = rawget(self, "subject")
  local is_page = (type(subject) == "table" and getmetatable(subject) == LazyPage)
    or (type(subject) == "userdata" and subject.id ~= nil)
  if is_page and page_matchers[name] then
    return function(_, args)
      if args ~= nil and type(args) ~= "table" then
        error(key .. ": expected a table of arguments, got " .. type(args), 2)
      end
      page_matchers[name](subject, args or {}, negated, 2)
    end
  end
  if value_matchers[name] then
    return function(_, ...)
      value_matchers[name](subject, negated, 2, ...)
    end
  end
  error("expect(...):" .. tostring(key) .. " is no assertion" .. (is_page and " of a page" or ""), 2)
end

function expect(subject)
  return setmetatable({ subject = subject }, Expect)
end

-- Running -----------------------------------------------------------------------------------

local function chain(block)
  local list = {}
  while block ~= nil do
    table.insert(list, 1, block)
    block = block.parent
  end
  return list
end

local function as_failure(err, fallback_where)
  if getmetatable(err) == Failure then return err end
  local message
  if type(err) == "table" then
    message = tostring(err)
    if message:match("^table: ") then
      message = err.msg or err.message or show(err)
    end
  else
    message = tostring(err)
  end
  return setmetatable({ message = message, where = fallback_where }, Failure)
end

local function traced(fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then return nil end
  return as_failure(err, nil)
end

local entered = {}
local broken = {}

local function leave_to(depth)
  local first
  while #entered > depth do
    local b = table.remove(entered)
    if not broken[b] then
      for _, h in ipairs(b.after_all) do
        local f = traced(h, lazy_page())
        if f and not first then
          f.message = "after_all hook failed: " .. f.message
          first = f
        end
      end
    end
  end
  return first
end

local api = {}

function api.list()
  collecting = false
  local any_only = false
  for _, t in ipairs(tests) do
    if t.only then any_only = true end
  end
  local out = {}
  for _, t in ipairs(tests) do
    out[#out + 1] = { id = t.id, title = t.title, line = t.line, skip = t.skip, only = t.only,
      focused = any_only }
  end
  return out
end

function api.run(id)
  local t = tests[id]
  local page = lazy_page()
  local blocks = chain(t.block)
  -- Leave the blocks this test is not in, enter the ones it is.
  local keep = 0
  while keep < #entered and keep < #blocks and entered[keep + 1] == blocks[keep + 1] do
    keep = keep + 1
  end
  local left = leave_to(keep)
  if left then return left end
  for i = keep + 1, #blocks do
    local b = blocks[i]
    table.insert(entered, b)
    for _, h in ipairs(b.before_all) do
      local f = traced(h, lazy_page())
      if f then
        f.message = "before_all hook failed: " .. f.message
        broken[b] = f
        break
      end
    end
  end
  for _, b in ipairs(blocks) do
    if broken[b] then return broken[b] end
  end
  local first
  local ran = 0
  for _, b in ipairs(blocks) do
    for _, h in ipairs(b.before_each) do
      first = traced(h, page)
      if first then
        first.message = "before_each hook failed: " .. first.message
        break
      end
    end
    if first then break end
    ran = ran + 1
  end
  if not first then first = traced(t.fn, page) end
  for i = ran, 1, -1 do
    for _, h in ipairs(blocks[i].after_each) do
      local f = traced(h, page)
      if f and not first then
        f.message = "after_each hook failed: " .. f.message
        first = f
      end
    end
  end
  return first
end

function api.finish()
  return leave_to(0)
end

return api
