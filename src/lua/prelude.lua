-- The `browser` module: thin composition over the engine's core functions.
-- It only wraps receipts into Result objects, raises structured errors, and builds Task handles
-- whose methods are generated from the registry. No command semantics live here.
local core = ...

local browser = {}
local strict = false
-- browser.strict_locators(true): every task command carries strict = true (unless the call
-- says otherwise), so an ambiguous selector, text, role or label is refused, not chosen.
local strict_locators = false

-- Results --------------------------------------------------------------------------------
local Result = {}
local json_of = setmetatable({}, { __mode = "k" })
-- The task a Result came from, for `r:wait_files()`.
local task_of = setmetatable({}, { __mode = "k" })

local Error = {}
Error.__index = Error
Error.__tostring = function(e)
  return (e.where or "") .. tostring(e.code) .. ": " .. tostring(e.msg)
end

local function position(level)
  -- Without the debug library, the only way to learn "file:line" is to let `error` compute it.
  -- `level` counts from position's caller; pcall and position itself add two.
  local _, where = pcall(error, "", level + 2)
  return where
end

local function raise(r, prefix, level)
  local msg = r.msg or "failed"
  if prefix then msg = prefix .. ": " .. msg end
  error(setmetatable({
    code = r.code, msg = msg, method = r.method, retryable = r.retryable, started = r.started,
    data = r.data, where = position(level + 1),
  }, Error), level + 1)
end

Result.__index = {
  unwrap = function(self)
    if self.ok then return self.data end
    raise(self, nil, 2)
  end,
  expect = function(self, text)
    if self.ok then return self.data end
    raise(self, text, 2)
  end,
  json = function(self) return json_of[self] end,
  -- The files the receipt names (`screenshot_path`, `state_file`) are written in the
  -- background (`data.files_pending`); this waits until they are on disk. Answers true, or
  -- false and why (also set as `data.screenshot_error`).
  -- Downloads a receipt names (`data.downloads`, `downloadsPending`) are waited for too
  -- (at most two minutes): each entry then says its final state, path and size.
  wait_files = function(self)
    local d = self.data
    if type(d) ~= "table" then return true end
    if d.downloadsPending and type(d.downloads) == "table" then
      local now = core.wait_downloads(task_of[self])
      for _, entry in ipairs(d.downloads) do
        local done = now[entry.path]
        if done then for k, v in pairs(done) do entry[k] = v end end
      end
      d.downloadsPending = nil
      for _, entry in ipairs(d.downloads) do
        if entry.state ~= "completed" then
          local why = "download " .. tostring(entry.fileName) .. " is " .. tostring(entry.state)
          if not d.files_pending then return false, why end
        end
      end
    end
    if not d.files_pending then return true end
    local err = core.wait_files(task_of[self], math.tointeger(d.seq))
    d.files_pending = nil
    if err then
      d.screenshot_error = d.screenshot_error or err
      return false, err
    end
    return true
  end,
}
Result.__tostring = function(self) return core.describe(self) end

local function wrap(r, js, level, task_id)
  json_of[r] = js
  task_of[r] = task_id
  setmetatable(r, Result)
  if strict and not r.ok then raise(r, nil, (level or 2) + 1) end
  return r
end

-- A params value that is not a table is a mistake in the script, not a command failure: it is
-- raised (LUA-API.md "Raised errors"), shaped like mlua's BadArgument.
local function check_params(method, params, argn)
  if params ~= nil and type(params) ~= "table" then
    error(setmetatable({
      code = "INVALID_ARGUMENT", method = method, retryable = false, started = false,
      msg = string.format("bad argument #%d to `%s`: expected a params table, got %s",
        argn, method, type(params)),
      where = position(3),
    }, Error), 3)
  end
end

-- A wrong argument to a `browser` function: raised as an INVALID_ARGUMENT error table at the
-- caller's line (LUA-API.md "Raised errors"), never as a plain string from inside the bridge.
-- `level` 1 is the caller of the function that checks (the script, for a `browser` function).
local function bad_argument(fname, argn, expected, got, level)
  level = (level or 1) + 2
  error(setmetatable({
    code = "INVALID_ARGUMENT", method = fname, retryable = false, started = false,
    msg = string.format("bad argument #%d to `%s`: expected %s, got %s", argn, fname, expected,
      type(got)),
    where = position(level),
  }, Error), level)
end

local function check_method(fname, method, argn)
  if type(method) ~= "string" then bad_argument(fname, argn, "a method name (string)", method, 2) end
end

-- Tasks ----------------------------------------------------------------------------------
-- A Task is a Rust userdata holding only its id; its methods live here, one per registry
-- command that needs a task, and are found through the userdata's __index.
local function with_strict(params)
  if not strict_locators or (params ~= nil and params.strict ~= nil) then return params end
  local copy = { strict = true }
  for k, v in pairs(params or {}) do copy[k] = v end
  return copy
end
local task_methods = {}
for _, name in ipairs(core.task_methods()) do
  task_methods[name] = function(self, params)
    check_params(name, params, 1)
    local r, js = core.exec(self.id, name, with_strict(params))
    return wrap(r, js, 2, self.id)
  end
end
task_methods.call = function(self, method, params)
  check_method("task:call", method, 1)
  check_params(method, params, 2)
  local r, js = core.exec(self.id, method, with_strict(params))
  return wrap(r, js, 2, self.id)
end
-- Bound to the unknown name by __index: the executor answers UNKNOWN_METHOD with near names.
task_methods.__unknown = function(name, self, params)
  local r, js = core.exec(self.id, name, params)
  return wrap(r, js, 2)
end
core.set_task_methods(task_methods)

local new_task = core.new_task

-- The module -----------------------------------------------------------------------------
function browser.start(opts)
  if opts ~= nil and type(opts) ~= "table" then
    error(setmetatable({ code = "INVALID_ARGUMENT", method = "start", retryable = false,
      msg = "bad argument #1 to `browser.start`: expected a table, got " .. type(opts),
      where = position(2) }, Error), 2)
  end
  local params, id = {}, nil
  -- Read raw, as every other params table is (lua/convert.rs): a __pairs that errors or never
  -- ends is not run.
  for k, v in next, opts or {} do
    if k == "id" then id = v else params[k] = v end
  end
  -- A live `id` is taken over (the engine answers with that task; watch mode records it).
  local r, js = core.exec(id, "start", params)
  json_of[r] = js
  setmetatable(r, Result)
  -- The host tells a browser that did not start from a script error by this.
  core.start_result(not r.ok and (r.msg or "failed") or nil)
  if not r.ok then raise(r, nil, 2) end
  return new_task(math.tointeger(tonumber(r.data.id)))
end

function browser.task(id)
  if id ~= nil and core.task_alive(id) then return new_task(math.tointeger(tonumber(id))) end
  return nil
end

function browser.call(method, params)
  check_method("browser.call", method, 1)
  check_params(method, params, 2)
  local r, js = core.exec(nil, method, params)
  return wrap(r, js, 2)
end

function browser.methods(filter)
  if filter ~= nil and type(filter) ~= "string" then
    bad_argument("browser.methods", 1, "a filter (string)", filter)
  end
  return core.methods(filter)
end

function browser.strict(on)
  local previous = strict
  strict = on and true or false
  return previous
end

function browser.strict_locators(on)
  local previous = strict_locators
  strict_locators = on and true or false
  return previous
end

-- Watch mode: marks a point a re-run may resume after (see README "Watch mode"); elsewhere
-- it does nothing.
function browser.checkpoint(name)
  if type(name) ~= "string" or name == "" then
    error(setmetatable({ code = "INVALID_ARGUMENT", method = "checkpoint", retryable = false,
      msg = "bad argument #1 to `browser.checkpoint`: expected a name", where = position(2) },
      Error), 2)
  end
  core.checkpoint(name, core.script_line())
end

function browser.sleep(ms)
  local n = tonumber(ms)
  if n == nil or n ~= n then bad_argument("browser.sleep", 1, "a number of milliseconds", ms) end
  return core.sleep(n)
end
browser.clock = core.clock

local function callable(f) return type(f) == "function" end

function browser.spawn(fn, ...)
  if not callable(fn) then bad_argument("browser.spawn", 1, "a function", fn) end
  return core.spawn(fn, ...)
end
browser.args = core.args

function browser.parallel(...)
  local fns = table.pack(...)
  local jobs = {}
  for i = 1, fns.n do
    if not callable(fns[i]) then bad_argument("browser.parallel", i, "a function", fns[i]) end
  end
  for i = 1, fns.n do jobs[i] = core.spawn(fns[i]) end
  local results = {}
  for i = 1, fns.n do results[i] = jobs[i]:join() end
  return table.unpack(results, 1, fns.n)
end

browser.Result = Result
browser.Error = Error
return browser
