-- Splash's Lua API (`function main(splash, args) ... end`) over moonpilot's commands, for the
-- Splash HTTP API (`/execute`, `/run`, `/render.*`) and `moonpilot splash`. Run by the recipe
-- host before the script, in the recipes' sandbox, with `page` bound to the request's task and
-- `__splash_codec` (JSON and base64 in Rust) installed. The host then runs `__splash_main()`,
-- whose value is the request's result:
--   {value = <JSON>, binary = {base64, content_type}?, status?, content_type?, headers?}
-- Errors raised for the HTTP layer are the marker "\1splash\1" and a JSON object {type,
-- message, ...}; a plain Lua error is a script error with its line.
local codec = __splash_codec
__splash_codec = nil
local page = page

local Binary = {}
Binary.__index = Binary
Binary.__len = function(b) return b.size end
Binary.__tostring = function(b) return codec.base64_decode(b.base64) end
local function binary(b64, content_type)
  return setmetatable({ base64 = b64, content_type = content_type or "application/octet-stream",
    size = #codec.base64_decode(b64) }, Binary)
end
local function is_binary(v) return getmetatable(v) == Binary end

-- A failure the HTTP layer answers in Splash's shape.
local function fail(kind, message, extra)
  local e = { type = kind, message = message }
  for k, v in pairs(extra or {}) do e[k] = v end
  error("\1splash\1" .. codec.json_encode(e), 0)
end

-- `r` unwrapped, or a Splash error naming `method`.
local function must(r, method)
  if not r.ok then
    fail("SPLASH_LUA_ERROR", method .. ": " .. tostring(r.msg), { splash_method = method, code = r.code })
  end
  return r.data
end

-- Splash's reasons for a failed navigation.
local function reason_of(r)
  local msg = tostring(r.msg or "")
  local status = r.data and r.data.status
  if type(status) == "number" and status >= 400 then return "http" .. status end
  if msg:find("ERR_NAME_NOT_RESOLVED", 1, true) then return "network3" end
  if msg:find("ERR_CONNECTION_REFUSED", 1, true) then return "network1" end
  if msg:find("ERR_TIMED_OUT", 1, true) or r.code == "ACTION_TIMEOUT" then return "network5" end
  if msg:find("ERR_ABORTED", 1, true) then return "network5" end
  if r.code == "NETWORK_ERROR" then return "network99" end
  return "render_error"
end

local function js_string(s) return codec.json_encode(s) end

-- The page's JavaScript `expr`'s value.
local function eval(expr)
  local r = page:execute_js{ body = expr }
  if not r.ok then
    local err = r.data and r.data.error
    fail("JS_ERROR", tostring(r.msg), {
      js_error_type = err and err.name, js_error_message = err and err.message,
      js_error = err and ((err.name or "Error") .. ": " .. tostring(err.message)) })
  end
  return r.data.result
end

local Splash = {}
local state = {
  status = nil, content_type = nil, headers = {},
  viewport = { 1024, 768 }, user_agent = nil, custom_headers = nil,
}

local Element = {}

local function element(selector, nth)
  return setmetatable({ __selector = selector, __nth = nth }, Element)
end

-- The JS expression of an element handle.
local function node_js(el)
  return "document.querySelectorAll(" .. js_string(el.__selector) .. ")[" .. el.__nth .. "]"
end

local function node_call(el, body)
  return eval("(() => { const el = " .. node_js(el) .. "; if (!el) throw new Error('the element is gone'); "
    .. body .. " })()")
end

local element_methods = {
  mouse_click = function(self, x, y)
    local r = page:click_element_by_selector{ selector = self.__selector, nth = self.__nth, mode = "mouse" }
    if not r.ok then return nil, tostring(r.msg) end
    return true
  end,
  mouse_hover = function(self)
    local b = self:bounds()
    local r = page:mouse_move{ x = (b.left + b.right) / 2, y = (b.top + b.bottom) / 2 }
    if not r.ok then return nil, tostring(r.msg) end
    return true
  end,
  text = function(self) return node_call(self, "return el.innerText;") end,
  exists = function(self) return eval("!!(" .. node_js(self) .. ")") end,
  focus = function(self) node_call(self, "el.focus(); return true;"); return true end,
  bounds = function(self)
    return node_call(self, "const r = el.getBoundingClientRect(); return {left: r.left, top: r.top, "
      .. "right: r.right, bottom: r.bottom, width: r.width, height: r.height};")
  end,
  visible = function(self)
    return node_call(self, "const s = getComputedStyle(el); return !!(el.offsetWidth || el.offsetHeight "
      .. "|| el.getClientRects().length) && s.visibility !== 'hidden';")
  end,
  info = function(self)
    return node_call(self, "const r = el.getBoundingClientRect(); const attrs = {}; "
      .. "for (const a of el.attributes) attrs[a.name] = a.value; return {nodeName: el.nodeName.toLowerCase(), "
      .. "attributes: attrs, tag: el.outerHTML.slice(0, el.outerHTML.indexOf('>') + 1), html: el.innerHTML, "
      .. "text: el.textContent, x: r.x, y: r.y, width: r.width, height: r.height, visible: !!(el.offsetWidth || el.offsetHeight)};")
  end,
  field_value = function(self)
    return node_call(self, "if (el.type === 'checkbox' || el.type === 'radio') return el.checked; "
      .. "if (el.multiple) return [...el.selectedOptions].map(o => o.value); return el.value;")
  end,
  send_text = function(self, text)
    self:focus()
    local r = page:send_keys{ keys = text }
    if not r.ok then return nil, tostring(r.msg) end
    return true
  end,
  send_keys = function(self, keys)
    self:focus()
    local r = page:send_keys{ keys = keys }
    if not r.ok then return nil, tostring(r.msg) end
    return true
  end,
  select = function(self, css)
    local n = eval("(() => { const el = " .. node_js(self) .. "; const f = el && el.querySelector("
      .. js_string(css) .. "); if (!f) return -1; return [...document.querySelectorAll('*')].indexOf(f); })()")
    if n < 0 then return nil end
    return element("*", n)
  end,
  png = function(self, opts)
    local b = self:bounds()
    local d = must(page:screenshot{ clipX = b.left, clipY = b.top, clipWidth = b.width,
      clipHeight = b.height, inline = true }, "element:png")
    return binary(d.base64, "image/png")
  end,
}

Element.__index = function(self, key)
  local m = element_methods[key]
  if m then return m end
  if key == "node" then
    return setmetatable({}, { __index = function(_, prop)
      return node_call(self, "const v = el[" .. js_string(prop) .. "]; return (typeof v === 'object' && v !== null) ? String(v) : v;")
    end })
  end
  -- DOM attributes read through the handle (element.id, element.innerHTML, ...).
  if type(key) == "string" then
    return node_call(self, "const v = el[" .. js_string(key) .. "]; return (typeof v === 'object' && v !== null) ? String(v) : v;")
  end
  return nil
end
Element.__tostring = function(self) return "Element(" .. self.__selector .. ")" end

function Splash:go(url, baseurl, headers, http_method, body, formdata)
  if type(url) == "table" then
    url, baseurl, headers, http_method, body, formdata =
      url.url or url[1], url.baseurl, url.headers, url.http_method, url.body, url.formdata
  end
  if type(url) ~= "string" or url == "" then
    fail("SPLASH_LUA_ERROR", "splash:go: url is required", { splash_method = "go" })
  end
  if (http_method and http_method:upper() ~= "GET") or body or formdata then
    fail("SPLASH_LUA_ERROR", "splash:go: http_method, body and formdata are not supported yet on this engine",
      { splash_method = "go" })
  end
  if headers then
    must(page:set_headers{ headersJson = codec.json_encode(headers) }, "go")
  end
  local r = page:navigate{ url = url }
  if not r.ok then return nil, reason_of(r) end
  if type(r.data.status) == "number" and r.data.status >= 400 then return nil, "http" .. r.data.status end
  return true
end

function Splash:wait(time, cancel_on_redirect, cancel_on_error)
  if type(time) == "table" then time = time.time or time[1] end
  time = tonumber(time)
  if not time or time < 0 then fail("SPLASH_LUA_ERROR", "splash:wait: time must be a number >= 0") end
  if time > 0 then browser.sleep(math.floor(time * 1000)) end
  return true
end

function Splash:html()
  return eval("(() => { const d = document.doctype; const dt = d ? '<!DOCTYPE ' + d.name + "
    .. "(d.publicId ? ' PUBLIC \"' + d.publicId + '\"' : '') + (d.systemId ? ' \"' + d.systemId + '\"' : '') + '>' : ''; "
    .. "return dt + document.documentElement.outerHTML; })()")
end

function Splash:url() return must(page:get_url(), "url").url end

function Splash:evaljs(snippet)
  return eval("(0, eval)(" .. js_string(snippet) .. ")")
end

function Splash:runjs(snippet)
  local r = page:execute_js{ body = "(0, eval)(" .. js_string(snippet) .. "); return true" }
  if not r.ok then return nil, tostring(r.msg) end
  return true
end

function Splash:jsfunc(source)
  return function(...)
    local args = table.pack(...)
    local list = {}
    for i = 1, args.n do list[i] = codec.json_encode(args[i]) end
    return eval("(" .. source .. ")(" .. table.concat(list, ", ") .. ")")
  end
end

local function capture(opts, method)
  opts = opts or {}
  if opts.width or opts.height or opts.scale_method or opts.region then
    fail("SPLASH_LUA_ERROR", "splash:" .. method .. ": width, height, scale_method and region are not supported yet on this engine",
      { splash_method = method })
  end
  local d = must(page:screenshot{ fullPage = opts.render_all and true or false, inline = true }, method)
  return binary(d.base64, "image/png")
end

function Splash:png(opts) return capture(opts, "png") end

function Splash:get_viewport_size() return state.viewport[1], state.viewport[2] end

function Splash:set_viewport_size(width, height)
  must(page:set_viewport{ width = math.floor(width), height = math.floor(height) }, "set_viewport_size")
  state.viewport = { width, height }
end

function Splash:set_viewport_full()
  local size = eval("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
  self:set_viewport_size(math.max(size[1], state.viewport[1]), size[2])
  return size[1], size[2]
end

function Splash:set_user_agent(ua)
  state.user_agent = ua
  local h = {}
  for k, v in pairs(state.custom_headers or {}) do h[k] = v end
  h["User-Agent"] = ua
  must(page:set_headers{ headersJson = codec.json_encode(h) }, "set_user_agent")
end

function Splash:set_custom_headers(headers)
  state.custom_headers = headers
  local h = {}
  for k, v in pairs(headers or {}) do h[k] = v end
  if state.user_agent then h["User-Agent"] = state.user_agent end
  must(page:set_headers{ headersJson = codec.json_encode(h) }, "set_custom_headers")
end

function Splash:get_cookies()
  local d = must(page:get_cookies{}, "get_cookies")
  local out = {}
  for i, c in ipairs(d.cookies or {}) do
    out[i] = { name = c.name, value = c.value, path = c.path, domain = c.domain,
      expires = c.expires, httpOnly = c.httpOnly, secure = c.secure }
  end
  return out
end

function Splash:add_cookie(cookie, value, path, domain, expires, httpOnly, secure)
  local c = type(cookie) == "table" and cookie or { name = cookie, value = value }
  local url = c.domain and ("http://" .. c.domain:gsub("^%.", "") .. (c.path or "/")) or self:url()
  must(page:set_cookie{ name = c.name, value = c.value, url = url }, "add_cookie")
end

function Splash:init_cookies(cookies)
  self:clear_cookies()
  for _, c in ipairs(cookies or {}) do self:add_cookie(c) end
end

function Splash:clear_cookies()
  must(page:clear_cookies{}, "clear_cookies")
end

function Splash:select(css)
  local n = eval("document.querySelectorAll(" .. js_string(css) .. ").length")
  if n == 0 then return nil end
  return element(css, 0)
end

function Splash:select_all(css)
  local n = eval("document.querySelectorAll(" .. js_string(css) .. ").length")
  local out = {}
  for i = 1, n do out[i] = element(css, i - 1) end
  return out
end

function Splash:mouse_click(x, y)
  must(page:mouse_click{ x = x, y = y }, "mouse_click")
end

function Splash:mouse_hover(x, y) must(page:mouse_move{ x = x, y = y }, "mouse_hover") end

function Splash:mouse_press(x, y)
  if x and y then must(page:mouse_move{ x = x, y = y }, "mouse_press") end
  must(page:mouse_down{}, "mouse_press")
end

function Splash:mouse_release(x, y)
  if x and y then must(page:mouse_move{ x = x, y = y }, "mouse_release") end
  must(page:mouse_up{}, "mouse_release")
end

function Splash:send_keys(keys) must(page:send_keys{ keys = keys }, "send_keys") end

function Splash:send_text(text) must(page:send_keys{ keys = text }, "send_text") end

function Splash:set_content(data, mime_type, baseurl)
  if type(data) == "table" then data, mime_type, baseurl = data.data or data[1], data.mime_type, data.baseurl end
  eval("document.open(); document.write(" .. js_string(data) .. "); document.close(); true")
  return true
end

function Splash:set_result_status_code(code)
  code = tonumber(code)
  if not code or code < 200 or code > 999 then fail("SPLASH_LUA_ERROR", "set_result_status_code: bad status code") end
  state.status = math.floor(code)
end

function Splash:set_result_content_type(ct) state.content_type = tostring(ct) end

function Splash:set_result_header(name, value) state.headers[tostring(name)] = tostring(value) end

function Splash:get_version()
  return { splash = "3.5", major = 3, minor = 5, engine = "moonpilot (Chromium)" }
end

-- The libraries of Splash's sandbox, for `require`.
local json = { encode = codec.json_encode, decode = codec.json_decode }
local base64 = {
  encode = function(s) if is_binary(s) then return s.base64 end return codec.base64_encode(s) end,
  decode = codec.base64_decode,
}
local ARRAY = setmetatable({}, { __mode = "k" })
local treat = {
  as_binary = function(s, content_type) return binary(codec.base64_encode(tostring(s)), content_type) end,
  as_string = function(b) if is_binary(b) then return codec.base64_decode(b.base64) end return tostring(b) end,
  mark_array = function(t) ARRAY[t] = true return t end,
  as_array = function(t) ARRAY[t] = true return t end,
}
local libs = { json = json, base64 = base64, treat = treat }
local plain_require = require
require = function(name)
  if libs[name] then return libs[name] end
  if plain_require then return plain_require(name) end
  error("module '" .. tostring(name) .. "' not found")
end

-- The request's arguments (the recipe host adds `task`, which is not one of them).
local args = {}
for k, v in pairs(browser.args) do
  if k ~= "task" then args[k] = v end
end

local splash = setmetatable({}, {
  __index = function(_, key)
    if key == "args" then return args end
    return Splash[key]
  end,
})

-- Binary values inside a table are base64 strings in the JSON result (Splash's rule).
local function plain(v)
  if is_binary(v) then return v.base64 end
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = plain(x) end
  return out
end

function __splash_main()
  if type(main) ~= "function" then
    fail("MAIN_NOT_FOUND_ERROR", "function \"main\" is not found")
  end
  -- Splash's viewport until the script sets another.
  Splash.set_viewport_size(splash, state.viewport[1], state.viewport[2])
  local value = main(splash, args)
  local result = { status = state.status, content_type = state.content_type, headers = state.headers }
  if is_binary(value) then
    result.binary = { base64 = value.base64, content_type = value.content_type }
  else
    result.value = plain(value)
  end
  return result
end
