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

-- Splash's reasons for a failed navigation (QtNetwork's codes: 1 connection refused, 2 remote
-- host closed, 3 host not found, 4 timeout, 5 operation canceled, 6 TLS handshake failed,
-- 99 unknown network error).
local NETWORK_CODES = {
  { "ERR_CONNECTION_REFUSED", 1 }, { "ERR_CONNECTION_CLOSED", 2 }, { "ERR_CONNECTION_RESET", 2 },
  { "ERR_EMPTY_RESPONSE", 2 }, { "ERR_NAME_NOT_RESOLVED", 3 }, { "ERR_ADDRESS_UNREACHABLE", 3 },
  { "ERR_TIMED_OUT", 4 }, { "ERR_CONNECTION_TIMED_OUT", 4 }, { "ERR_ABORTED", 5 },
  { "ERR_SSL", 6 }, { "ERR_CERT", 6 },
}
local function reason_of(r)
  local msg = tostring(r.msg or "")
  local status = r.data and r.data.status
  if type(status) == "number" and status >= 400 then return "http" .. status end
  for _, known in ipairs(NETWORK_CODES) do
    if msg:find(known[1], 1, true) then return "network" .. known[2] end
  end
  if r.code == "ACTION_TIMEOUT" or r.code == "COMMAND_TIMEOUT" then return "network4" end
  if r.code == "NETWORK_ERROR" then return "network99" end
  return "render_error"
end

-- A Splash operation answered in Rust (`src/splash/ops.rs`) on the request's own task.
-- Tables marked as arrays (treat.as_array, and the lists the splash object answers): an empty
-- one is `[]` in the result, not `{}`. The marker string stands for it until Rust's answer.
local ARRAY = setmetatable({}, { __mode = "k" })
local EMPTY_ARRAY = "\1splash-empty-array\1"
local function as_array(t)
  if type(t) == "table" then ARRAY[t] = true end
  return t
end

-- lock_navigation: the main frame's navigations are held and dropped, each shown to the
-- on_navigation_locked callbacks (set with the request callbacks below).
local nav = { locked = false, callbacks = {}, main_frame = nil }

local function op(name, params)
  return must(page["splash." .. name](page, params or {}), name)
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
-- Defined with the captures below; element:png and element:jpeg use it.
local capture

local function element(selector, nth)
  return setmetatable({ __selector = selector, __nth = nth }, Element)
end

-- An element a DOM method or property gave, kept by reference in the page.
local function element_ref(ref)
  return setmetatable({ __ref = ref }, Element)
end

-- The JS expression of an element handle.
local function node_js(el)
  if el.__ref then return "(window.__splash_nodes || [])[" .. el.__ref .. "]" end
  return "document.querySelectorAll(" .. js_string(el.__selector) .. ")[" .. el.__nth .. "]"
end

-- Page-side: a DOM value as the Lua side takes it (nodes by reference, lists of them, plain
-- values; attribute maps, class lists and styles as tables).
local JS_TO_LUA = "const keep = (n) => { const r = window.__splash_nodes = window.__splash_nodes || []; "
  .. "let i = r.indexOf(n); if (i < 0) i = r.push(n) - 1; return i; }; "
  .. "const out = (v) => { if (v instanceof Node && v.nodeType === 1) return {__node: keep(v)}; "
  .. "if (v instanceof NodeList || v instanceof HTMLCollection) return {__nodes: [...v].filter(n => n.nodeType === 1).map(keep)}; "
  .. "if (v instanceof NamedNodeMap) { const o = {}; for (const a of v) o[a.name] = a.value; return o; } "
  .. "if (v instanceof DOMTokenList) return [...v]; "
  .. "if (v instanceof CSSStyleDeclaration) { const o = {}; for (const k of v) o[k] = v.getPropertyValue(k); return o; } "
  .. "if (v instanceof DOMStringMap) return Object.assign({}, v); "
  .. "if (v && typeof v === 'object' && !Array.isArray(v) && Object.getPrototypeOf(v) !== Object.prototype) return String(v); "
  .. "return v === undefined ? null : v; }; "

local function lua_of(v)
  if type(v) == "table" and v.__node ~= nil then return element_ref(v.__node) end
  if type(v) == "table" and v.__nodes ~= nil then
    local list = {}
    for i, r in ipairs(v.__nodes) do list[i] = element_ref(r) end
    return list
  end
  return v
end

local function node_call(el, body)
  return eval("(() => { const el = " .. node_js(el) .. "; if (!el || !el.isConnected) throw new Error('Element no longer exists in DOM'); "
    .. body .. " })()")
end

local element_methods = {
  mouse_click = function(self, x, y)
    if type(x) == "table" then x, y = x.x, x.y end
    if self.__selector and x == nil and y == nil then
      local r = page:click_element_by_selector{ selector = self.__selector, nth = self.__nth, mode = "mouse" }
      if not r.ok then return nil, tostring(r.msg) end
      return true
    end
    -- At a point of the element (its top-left corner plus x, y), with the real mouse.
    node_call(self, "el.scrollIntoView({block: 'nearest', inline: 'nearest'}); return true;")
    local b = self:bounds()
    local r = page:mouse_click{ x = b.left + (x or (b.width / 2)), y = b.top + (y or (b.height / 2)) }
    if not r.ok then return nil, tostring(r.msg) end
    return true
  end,
  styles = function(self)
    return node_call(self, "const s = getComputedStyle(el); const o = {}; for (const k of s) o[k] = s.getPropertyValue(k); return o;")
  end,
  focused = function(self) return node_call(self, "return document.activeElement === el;") end,
  form_values = function(self, values_type)
    local ok, v = pcall(node_call, self, "if (el.nodeName !== 'FORM') throw new Error('the element is not a form'); "
      .. "const o = {}; for (const f of el.elements) { if (!f.name || f.disabled) continue; "
      .. "if ((f.type === 'checkbox' || f.type === 'radio') && !f.checked) continue; "
      .. "const v = f.multiple ? [...f.selectedOptions].map(x => x.value) : f.value; "
      .. "if (o[f.name] === undefined) o[f.name] = v; else o[f.name] = [].concat(o[f.name], v); } return o;")
    if not ok then return nil, tostring(v) end
    if values_type == "first" then
      for k, x in pairs(v) do if type(x) == "table" then v[k] = x[1] end end
    end
    return true, v
  end,
  fill = function(self, values)
    local ok, err = pcall(node_call, self, "if (el.nodeName !== 'FORM') throw new Error('the element is not a form'); "
      .. "const values = " .. codec.json_encode(values or {}) .. "; "
      .. "for (const [k, v] of Object.entries(values)) { for (const f of el.querySelectorAll('[name=\"' + CSS.escape(k) + '\"]')) { "
      .. "if (f.type === 'checkbox') f.checked = Array.isArray(v) ? v.includes(f.value) : !!v; "
      .. "else if (f.type === 'radio') f.checked = (f.value === String(v)); "
      .. "else if (f.multiple) { for (const o of f.options) o.selected = [].concat(v).map(String).includes(o.value); } "
      .. "else f.value = v; f.dispatchEvent(new Event('input', {bubbles: true})); "
      .. "f.dispatchEvent(new Event('change', {bubbles: true})); } } return true;")
    if not ok then return nil, tostring(err) end
    return true
  end,
  submit = function(self)
    local ok, err = pcall(node_call, self, "if (el.nodeName !== 'FORM') throw new Error('the element is not a form'); "
      .. "if (el.requestSubmit) el.requestSubmit(); else el.submit(); return true;")
    if not ok then return nil, tostring(err) end
    return true
  end,
  mouse_hover = function(self)
    local b = self:bounds()
    local r = page:mouse_move{ x = (b.left + b.right) / 2, y = (b.top + b.bottom) / 2 }
    if not r.ok then return nil, tostring(r.msg) end
    return true
  end,
  text = function(self) return node_call(self, "return el.innerText;") end,
  exists = function(self) return eval("(() => { const el = " .. node_js(self) .. "; return !!el && el.isConnected; })()") end,
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
    local ok, err = pcall(Splash.send_text, nil, text)
    if not ok then return false, tostring(err) end
    return true
  end,
  send_keys = function(self, keys)
    self:focus()
    local ok, err = pcall(Splash.send_keys, nil, keys)
    if not ok then return false, tostring(err) end
    return true
  end,
  select = function(self, css)
    return lua_of(node_call(self, JS_TO_LUA .. "return out(el.querySelector(" .. js_string(css) .. "));"))
  end,
  select_all = function(self, css)
    return as_array(lua_of(node_call(self, JS_TO_LUA .. "return out(el.querySelectorAll(" .. js_string(css) .. "));")) or {})
  end,
  png = function(self, width, scale_method, pad)
    if type(width) == "table" then width, scale_method, pad = width.width, width.scale_method, width.pad end
    local b = self:bounds()
    local p = pad or 0
    if type(p) == "number" then p = { p, p, p, p } end
    return capture("png", "png", { width = width, scale_method = scale_method,
      region = { b.left - p[1], b.top - p[2], b.right + p[3], b.bottom + p[4] } })
  end,
  jpeg = function(self, width, scale_method, quality, pad)
    if type(width) == "table" then
      width, scale_method, quality, pad = width.width, width.scale_method, width.quality, width.pad
    end
    local b = self:bounds()
    local p = pad or 0
    if type(p) == "number" then p = { p, p, p, p } end
    return capture("jpeg", "jpeg", { width = width, scale_method = scale_method, quality = quality,
      region = { b.left - p[1], b.top - p[2], b.right + p[3], b.bottom + p[4] } })
  end,
}

-- A DOM property of `self`, or a function calling its DOM method of that name.
local function dom_get(self, prop)
  local v = node_call(self, JS_TO_LUA .. "const v = el[" .. js_string(prop) .. "]; "
    .. "if (typeof v === 'function') return {__method: true}; return out(v);")
  if type(v) == "table" and v.__method then
    return function(first, ...)
      local args = table.pack(...)
      -- node:method(...) passes the node itself first; node.method(...) does not.
      if first == self or (type(first) == "table" and rawget(first, "__of") == self) then
        args = table.pack(...)
      else
        args = table.pack(first, ...)
      end
      local list = {}
      for i = 1, args.n do
        local a = args[i]
        if getmetatable(a) == Element then list[i] = "(" .. node_js(a) .. ")"
        else list[i] = codec.json_encode(a) end
      end
      return lua_of(node_call(self, JS_TO_LUA .. "return out(el[" .. js_string(prop) .. "]("
        .. table.concat(list, ", ") .. "));"))
    end
  end
  return lua_of(v)
end

-- DOM event handlers (`element.node.onclick = function(event) … end`, element:set_event_handler,
-- element:addEventListener). The page side is a real listener in the page's main world that
-- records each event (its plain fields; nodes by reference, as Elements) into the handler's
-- queue; a coroutine of the script drains the queues every 100 ms and calls the Lua handlers
-- with Event objects, in the order the events happened. A handler therefore runs after its
-- event: preventDefault and the stop methods cannot act then, and say so (`event_refusal`),
-- unless the handler was set to do them in the page, at the event.
local event_handlers = {}
local event_next_id = 0
local event_loop = nil
-- The first Event method a handler called that cannot act after the event: the script's
-- answer is then that error (a handler's own error is only printed, as Splash logs it).
local event_refusal = nil

local EVENT_RECORDER = "const reg = window.__splash_events = window.__splash_events || {handlers: {}, seq: 0}; "
  .. "const keep = (n) => { const r = window.__splash_nodes = window.__splash_nodes || []; "
  .. "let i = r.indexOf(n); if (i < 0) i = r.push(n) - 1; return i; }; "
  .. "const field = (v) => { if (v instanceof Element) return {__node: keep(v)}; "
  .. "if (v === null || ['string', 'number', 'boolean'].includes(typeof v)) return v; return undefined; }; "
  .. "const q = []; const rec = function (ev) { "
  .. "if (o.prevent_default) ev.preventDefault(); "
  .. "if (o.stop_immediate_propagation) ev.stopImmediatePropagation(); else if (o.stop_propagation) ev.stopPropagation(); "
  .. "const e = {__seq: ++reg.seq}; for (const k in ev) { let v; try { v = ev[k]; } catch (_) { continue; } "
  .. "if (typeof v === 'function') continue; v = field(v); if (v !== undefined) e[k] = v; } "
  .. "if (q.length < 1000) q.push(e); }; rec.__splash_id = id; "
  -- Events the document still holds when it is left are kept for the next one of its origin
  -- (their nodes are gone with it: their Elements no longer exist).
  .. "if (!reg.hide) { reg.hide = true; addEventListener('pagehide', () => { const left = []; "
  .. "for (const [hid, h] of Object.entries(reg.handlers)) for (const e of h.q.splice(0)) { "
  .. "for (const k in e) if (e[k] && e[k].__node !== undefined) e[k] = {__node: -1}; left.push([Number(hid), e]); } "
  .. "left.sort((a, b) => a[1].__seq - b[1].__seq); if (left.length) try { "
  .. "const was = JSON.parse(sessionStorage.getItem('__splash_events_left') || '[]'); "
  .. "sessionStorage.setItem('__splash_events_left', JSON.stringify(was.concat(left))); } catch (_) {} }); } "

-- Page-side: `old` (a handler of ours, or anything) taken off; answers its id and the events
-- it still held.
local EVENT_FORGET = "const forget = (old) => { const reg = window.__splash_events; "
  .. "const oid = old && old.__splash_id; const h = oid && reg && reg.handlers[oid]; "
  .. "if (!h) return null; delete reg.handlers[oid]; return {id: oid, events: h.q.splice(0)}; }; "

local Event = {}

-- An event as its handler sees it: its recorded fields, nodes as Elements.
local function event_of(fields, handler)
  local ev = { __handler = handler }
  for k, v in pairs(fields) do
    if k ~= "__seq" then ev[k] = lua_of(v) end
  end
  return setmetatable(ev, Event)
end

local function event_method(name, option)
  return function(self)
    local h = rawget(self, "__handler")
    if h and h.options[option] then return end
    local message = "event:" .. name .. ": a Lua event handler runs after its event on this engine, "
      .. "too late to " .. (name == "preventDefault" and "cancel its default action" or "stop it")
      .. "; set the handler with element:set_event_handler(name, handler, {" .. option .. " = true}) to do it in the page"
    event_refusal = event_refusal or { message = message, method = "event:" .. name }
    fail("SPLASH_LUA_ERROR", message, { splash_method = "event:" .. name })
  end
end

Event.__index = {
  preventDefault = event_method("preventDefault", "prevent_default"),
  stopPropagation = event_method("stopPropagation", "stop_propagation"),
  stopImmediatePropagation = event_method("stopImmediatePropagation", "stop_immediate_propagation"),
}

-- Calls `h` with each of `events`; its error is printed (Splash logs it) and ends nothing else.
local function deliver(h, events)
  for _, fields in ipairs(events) do
    -- A `once` listener is gone from the page after its event.
    if h.options.once then event_handlers[h.id] = nil end
    local ok, err = pcall(h.fn, event_of(fields, h))
    if not ok then print("[element:on" .. h.name .. "] error " .. tostring(err)) end
  end
end

-- The handlers' queued events, all of them in the order they happened.
local function drain_events()
  local got = eval("(() => { let left = []; try { left = JSON.parse(sessionStorage.getItem('__splash_events_left') "
    .. "|| '[]'); sessionStorage.removeItem('__splash_events_left'); } catch (_) {} "
    .. "const reg = window.__splash_events; if (!reg) return left; const out = []; "
    .. "for (const [id, h] of Object.entries(reg.handlers)) for (const e of h.q.splice(0)) out.push([Number(id), e]); "
    .. "return left.concat(out.sort((a, b) => a[1].__seq - b[1].__seq)); })()")
  for _, pair in ipairs(got or {}) do
    local h = event_handlers[pair[1]]
    if h then deliver(h, { pair[2] }) end
  end
end

local function ensure_event_loop()
  if event_loop ~= nil then return end
  event_loop = browser.spawn(function()
    while next(event_handlers) ~= nil do
      -- A page between documents answers nothing this time; the next look finds its events.
      pcall(drain_events)
      browser.sleep(100)
    end
    event_loop = nil
  end)
end

-- Takes the handler a page-side `forget` answered off, and gives it the events it held.
local function forgotten(got)
  if type(got) ~= "table" or got.id == nil then return false end
  local h = event_handlers[got.id]
  event_handlers[got.id] = nil
  if h then deliver(h, got.events or {}) end
  if next(event_handlers) == nil and event_loop ~= nil then
    event_loop:cancel()
    event_loop = nil
  end
  return true
end

local EVENT_OPTIONS = { capture = true, once = true, passive = true, prevent_default = true,
  stop_propagation = true, stop_immediate_propagation = true }

-- Sets `fn` for `name` on `el`: as its `on<name>` property (`how` "on": it replaces the one set
-- there before), or as one more listener.
local function add_event_handler(el, method, name, fn, options, how)
  if type(name) ~= "string" or name == "" then
    fail("SPLASH_LUA_ERROR", "element:" .. method .. " event_name must be specified",
      { splash_method = method, argument = "event_name" })
  end
  if type(fn) ~= "function" then
    fail("SPLASH_LUA_ERROR", "element:" .. method .. " handler is not a function",
      { splash_method = method, argument = "handler" })
  end
  local o = {}
  if type(options) == "boolean" then o.capture = options
  elseif type(options) == "table" then
    for k, v in pairs(options) do
      if not EVENT_OPTIONS[k] then
        fail("SPLASH_LUA_ERROR", "element:" .. method .. ": unknown option " .. tostring(k),
          { splash_method = method, argument = "options" })
      end
      o[k] = v and true or false
    end
  elseif options ~= nil then
    fail("SPLASH_LUA_ERROR", "element:" .. method .. " options must be a boolean or a table",
      { splash_method = method, argument = "options" })
  end
  event_next_id = event_next_id + 1
  local id = event_next_id
  local install
  if how == "on" then
    install = "const p = 'on' + name; if (!(p in el)) throw new Error('the element has no ' + p "
      .. "+ ' property: set a handler of this event with element:set_event_handler'); "
      .. "const old = el[p]; el[p] = rec; reg.handlers[id] = {q, el, off: () => { if (el[p] === rec) el[p] = null; }}; "
      .. "return forget(old);"
  else
    install = "const c = {capture: !!o.capture}; el.addEventListener(name, rec, {capture: c.capture, once: !!o.once, "
      .. "passive: !!o.passive}); reg.handlers[id] = {q, el, off: () => el.removeEventListener(name, rec, c)}; return null;"
  end
  event_handlers[id] = { id = id, fn = fn, name = name, options = o, on = how == "on" }
  local ok, got = pcall(node_call, el, "const id = " .. id .. ", name = " .. js_string(name) .. ", o = "
    .. codec.json_encode(next(o) and o or { capture = false }) .. "; " .. EVENT_RECORDER .. EVENT_FORGET .. install)
  if not ok then
    event_handlers[id] = nil
    error(got, 0)
  end
  forgotten(got)
  ensure_event_loop()
  return id
end

-- Takes handler `id` off its element; the events it held are still given to it. False when
-- no handler has that id.
local function remove_event_handler(id)
  if event_handlers[id] == nil then return false end
  -- A page between documents has no listener left to take off.
  local ok, got = pcall(eval, "(() => { " .. EVENT_FORGET .. "const reg = window.__splash_events; "
    .. "const h = reg && reg.handlers[" .. id .. "]; if (h) h.off(); return forget({__splash_id: " .. id .. "}); })()")
  if not (ok and forgotten(got)) then forgotten({ id = id }) end
  return true
end

-- `element.on<name> = nil`: the property emptied (and a handler of ours there taken off).
local function clear_on_property(el, prop)
  forgotten(node_call(el, EVENT_FORGET .. "const p = " .. js_string(prop) .. "; const old = el[p]; el[p] = null; "
    .. "return forget(old);"))
end

-- The event methods of an Element and of its `node`.
local event_methods = {
  set_event_handler = function(self, name, fn, options)
    return add_event_handler(rawget(self, "__of") or self, "set_event_handler", name, fn, options, "listen")
  end,
  -- unset_event_handler(id) or unset_event_handler(event_name, id).
  unset_event_handler = function(_, name, id)
    if id == nil then id = name end
    if math.tointeger(id) == nil then
      fail("SPLASH_LUA_ERROR", "element:unset_event_handler id must be the number set_event_handler returned",
        { splash_method = "unset_event_handler", argument = "id" })
    end
    return remove_event_handler(math.tointeger(id))
  end,
  addEventListener = function(self, name, fn, options)
    add_event_handler(rawget(self, "__of") or self, "addEventListener", name, fn, options, "listen")
  end,
  -- The listeners of `fn` for `name` set on this very element (Splash's rule: by function).
  removeEventListener = function(self, name, fn)
    local el = rawget(self, "__of") or self
    for id, h in pairs(event_handlers) do
      if h.fn == fn and h.name == name and not h.on
        and node_call(el, "const reg = window.__splash_events; return !!reg && !!reg.handlers[" .. id
          .. "] && reg.handlers[" .. id .. "].el === el;") then
        remove_event_handler(id)
      end
    end
  end,
}
for k, f in pairs(event_methods) do element_methods[k] = f end

-- `f` with the handlers' queued events given to them right after it: what an input did is seen
-- before the script goes on (and before a page it made leave is gone).
local function then_events(f)
  return function(...)
    local r = table.pack(f(...))
    if next(event_handlers) ~= nil then pcall(drain_events) end
    return table.unpack(r, 1, r.n)
  end
end
for _, k in ipairs({ "mouse_click", "mouse_hover", "send_keys", "send_text", "submit", "fill", "focus" }) do
  element_methods[k] = then_events(element_methods[k])
end

local function dom_set(self, prop, value)
  -- `element.node.onclick = function(event) … end` sets the element's handler of that event;
  -- `= nil` takes it off.
  if type(prop) == "string" and prop:match("^on%a") then
    if type(value) == "function" then
      add_event_handler(self, "set_event_handler", prop:sub(3), value, nil, "on")
      return
    end
    if value == nil then
      clear_on_property(self, prop)
      return
    end
  end
  -- Tables go where the DOM keeps them: styles, classes, data and attributes.
  node_call(self, "const p = " .. js_string(prop) .. "; const v = " .. codec.json_encode(value) .. "; "
    .. "if (v && typeof v === 'object') { "
    .. "if (p === 'style') { for (const [k, x] of Object.entries(v)) el.style.setProperty(k.replace(/[A-Z]/g, m => '-' + m.toLowerCase()), String(x)); return true; } "
    .. "if (p === 'classList' && Array.isArray(v)) { el.className = v.join(' '); return true; } "
    .. "if (p === 'dataset') { Object.assign(el.dataset, v); return true; } "
    .. "if (p === 'attributes') { for (const [k, x] of Object.entries(v)) el.setAttribute(k, String(x)); return true; } "
    .. "throw new Error('element.node.' + p + ' takes no table'); } "
    .. "el[p] = v; return true;")
end

Element.__index = function(self, key)
  local m = element_methods[key]
  if m then return m end
  -- The handle's own fields (`__ref` of a selector's element is absent, not a DOM property).
  if type(key) == "string" and key:sub(1, 2) == "__" then return nil end
  if key == "node" then
    return setmetatable({ __of = self }, {
      __index = function(_, prop) return event_methods[prop] or dom_get(self, prop) end,
      __newindex = function(_, prop, value) dom_set(self, prop, value) end,
    })
  end
  if key == "inner_id" then return rawget(self, "__ref") or rawget(self, "__nth") end
  -- DOM attributes read through the handle (element.id, element.innerHTML, ...).
  if type(key) == "string" then return dom_get(self, key) end
  return nil
end
Element.__newindex = function(self, key, value) dom_set(self, key, value) end
Element.__tostring = function(self) return "Element(" .. (self.__selector or ("#" .. self.__ref)) .. ")" end

-- The headers every request carries: the custom ones and the user agent.
local function standing_headers()
  local h = {}
  for k, v in pairs(state.custom_headers or {}) do h[k] = v end
  if state.user_agent then h["User-Agent"] = state.user_agent end
  return h
end

local function go_error(message)
  fail("SPLASH_LUA_ERROR", message, { splash_method = "go" })
end

-- `body` (`a=1&b=2`) as its form fields, or nil when it is not form-encoded.
local function form_fields(body)
  -- Form-encoded: `name=value` pairs of URL-safe characters joined by `&`.
  if body:find("[^%w%%%-%._~%+%*!'%(%)=&]") then return nil end
  local fields = {}
  for pair in body:gmatch("[^&]+") do
    local k, v = pair:match("^([^=]+)=(.*)$")
    if not k then return nil end
    local function unescape(x)
      return (x:gsub("+", " "):gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
    end
    fields[#fields + 1] = { unescape(k), unescape(v) }
  end
  return fields
end

-- Navigates to `address` answered with `body` (`content_type`) instead of the network: the
-- page is `body`, at `address` (Splash's `baseurl`).
local function shown_as(address, body, content_type)
  if address:find("[*{}]") then
    go_error("splash: a baseurl with *, { or } is not supported on this engine")
  end
  must(page:route{ urlPattern = address, action = "mock", body = body, status = 200,
    contentType = content_type }, "go")
  local r = page:navigate{ url = address }
  page:unroute{ urlPattern = address }
  return r
end

-- A POST navigation: a form of `fields` submitted from the current page, then its load.
local function post(url, fields)
  local js = "(() => { window.__splash_before_post = true; const f = document.createElement('form'); "
    .. "f.method = 'POST'; f.action = " .. js_string(url) .. "; "
    .. "for (const [k, v] of " .. codec.json_encode(fields) .. ") { const i = document.createElement('input'); "
    .. "i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i); } "
    .. "(document.body || document.documentElement).appendChild(f); f.submit(); return true; })()"
  local r = page:execute_js{ body = js }
  if not r.ok then return r end
  return page:wait_for_function{
    expression = "() => !window.__splash_before_post && document.readyState === 'complete'" }
end

function Splash:go(url, baseurl, headers, http_method, body, formdata)
  if type(url) == "table" then
    url, baseurl, headers, http_method, body, formdata =
      url.url or url[1], url.baseurl, url.headers, url.http_method, url.body, url.formdata
  end
  if type(url) ~= "string" or url == "" then go_error("'url' is required for splash:go") end
  if nav.locked then return nil, "navigation_locked" end
  local method = tostring(http_method or "GET"):upper()
  if method ~= "GET" and method ~= "POST" then go_error("Unsupported HTTP method: " .. method) end
  if body and formdata then go_error("formdata and body cannot be passed to go() in one call") end
  if formdata ~= nil and type(formdata) ~= "table" then go_error("formdata argument for go() must be a Lua table") end
  if body ~= nil and type(body) ~= "string" then go_error("request body must be a string") end
  if method == "GET" and body then go_error("GET request cannot have body") end
  if baseurl ~= nil and type(baseurl) ~= "string" then go_error("splash:go: baseurl must be a string") end
  if baseurl and method ~= "GET" then
    go_error("splash:go: baseurl with a POST is not supported on this engine")
  end
  if formdata and method == "GET" then method = "POST" end
  local fields
  if method == "POST" then
    if formdata then
      fields = {}
      for k, v in pairs(formdata) do fields[#fields + 1] = { tostring(k), tostring(v) } end
    else
      fields = form_fields(body or "")
      if not fields then
        go_error("splash:go: a POST body that is not form-encoded is not supported on this engine")
      end
    end
  end
  -- `headers` are the request's own: they replace the custom headers for this navigation
  -- (the page's document and what it loads while it loads), which come back after it.
  if headers then
    local h = {}
    for k, v in pairs(headers) do h[tostring(k)] = tostring(v) end
    if h["User-Agent"] then state.user_agent = h["User-Agent"] end
    if not h["User-Agent"] and state.user_agent then h["User-Agent"] = state.user_agent end
    must(page:set_headers{ headersJson = codec.json_encode(h) }, "go")
  end
  local r
  if baseurl then
    -- Loaded from `url`, shown as if from `baseurl` (its address, its relative paths).
    local got = op("fetch", { url = url })
    if not got.ok then
      if headers then must(page:set_headers{ headersJson = codec.json_encode(standing_headers()) }, "go") end
      if got.status and got.status >= 400 then return nil, "http" .. got.status end
      return nil, "network3"
    end
    local ct = "text/html; charset=utf-8"
    for k, v in pairs(got.headers or {}) do if k:lower() == "content-type" then ct = v end end
    r = shown_as(baseurl, codec.base64_decode(got.base64), ct)
  elseif fields then r = post(url, fields) else r = page:navigate{ url = url } end
  if headers then
    must(page:set_headers{ headersJson = codec.json_encode(standing_headers()) }, "go")
  end
  if not r.ok then return nil, reason_of(r) end
  local status = r.data and r.data.status
  if fields then
    -- A form's navigation: its document's status, as the recorder saw it.
    local q = page:get_requests{ resourceType = "document", limit = 1 }
    local last = q.ok and q.data.requests and q.data.requests[1]
    status = last and last.status
  end
  if type(status) == "number" and status >= 400 then return nil, "http" .. status end
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

-- A capture in Splash's terms: {width, height, render_all, scale_method, region, quality}
-- (named or positional), as PNG or JPEG; nil for an empty area.
capture = function(format, method, a, ...)
  local o
  if type(a) == "table" and getmetatable(a) == nil and (a.width or a.height or a.render_all ~= nil
      or a.scale_method or a.region or a.quality or next(a) == nil) then
    o = a
  else
    local rest = table.pack(...)
    o = { width = a, height = rest[1], render_all = rest[2], scale_method = rest[3] }
    if format == "jpeg" then o.quality, o.region = rest[4], rest[5] else o.region = rest[4] end
  end
  local function bad(msg, argument)
    fail("SPLASH_LUA_ERROR", msg, { splash_method = method, argument = argument })
  end
  for _, k in ipairs({ "width", "height", "quality" }) do
    if o[k] ~= nil and type(o[k]) ~= "number" then bad("splash:" .. method .. ": " .. k .. " must be a number", k) end
  end
  if o.width and o.width <= 0 then bad("splash:" .. method .. ": width must be > 0", "width") end
  if o.height and o.height <= 0 then bad("splash:" .. method .. ": height must be > 0", "height") end
  if o.quality and (o.quality < 0 or o.quality > 100) then
    bad("splash:jpeg: quality must be between 0 and 100", "quality")
  end
  if o.scale_method and o.scale_method ~= "raster" and o.scale_method ~= "vector" then
    bad("splash:" .. method .. ": scale_method must be 'raster' or 'vector'", "scale_method")
  end
  local region = nil
  if o.region ~= nil then
    local r = o.region
    if type(r) ~= "table" or #r ~= 4 then
      bad("region must be a table containing 4 numbers {left, top, right, bottom} ", "region")
    end
    region = { r[1], r[2], r[3], r[4] }
    for i = 1, 4 do
      if type(region[i]) ~= "number" then
        bad("region must be a table containing 4 numbers {left, top, right, bottom} ", "region")
      end
    end
  end
  local d = op("capture", { format = format, width = o.width, height = o.height,
    render_all = o.render_all and true or false, region = region, quality = o.quality })
  if d.base64 == nil then return nil end
  return binary(d.base64, "image/" .. format)
end

function Splash:png(...) return capture("png", "png", ...) end

function Splash:jpeg(...) return capture("jpeg", "jpeg", ...) end

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
  if type(ua) ~= "string" then
    fail("SPLASH_LUA_ERROR", "splash:set_user_agent() argument must be a string", { splash_method = "set_user_agent" })
  end
  state.user_agent = ua
  must(page:set_headers{ headersJson = codec.json_encode(standing_headers()) }, "set_user_agent")
end

function Splash:set_custom_headers(headers)
  state.custom_headers = {}
  for k, v in pairs(headers or {}) do state.custom_headers[tostring(k)] = tostring(v) end
  must(page:set_headers{ headersJson = codec.json_encode(standing_headers()) }, "set_custom_headers")
end

function Splash:get_cookies() return as_array(op("get_cookies")) end

function Splash:add_cookie(name, value, path, domain, expires, httpOnly, secure)
  local c
  if type(name) == "table" then
    c = name
    if c.name == nil then c.name, c.value, c.path, c.domain, c.expires, c.httpOnly, c.secure =
      c[1], c[2], c[3], c[4], c[5], c[6], c[7] end
  else
    c = { name = name, value = value, path = path, domain = domain, expires = expires,
      httpOnly = httpOnly, secure = secure }
  end
  if c.name == nil or c.value == nil then
    fail("SPLASH_LUA_ERROR", "splash:add_cookie: name and value are required", { splash_method = "add_cookie" })
  end
  local url = nil
  if not c.domain then url = must(page:get_url(), "add_cookie").url end
  return op("add_cookie", { name = tostring(c.name), value = tostring(c.value), path = c.path,
    domain = c.domain, expires = c.expires, httpOnly = c.httpOnly, secure = c.secure, url = url })
end

function Splash:init_cookies(cookies)
  if type(cookies) ~= "table" then
    fail("SPLASH_LUA_ERROR", "splash:init_cookies: cookies must be a table", { splash_method = "init_cookies" })
  end
  op("clear_cookies")
  local list = {}
  for _, c in pairs(cookies) do list[#list + 1] = c end
  for _, c in ipairs(list) do self:add_cookie(c) end
end

function Splash:clear_cookies() return op("clear_cookies") end

function Splash:delete_cookies(name, url)
  if type(name) == "table" then name, url = name.name, name.url end
  return op("delete_cookies", { name = name, url = url })
end

-- Elements are references to the nodes themselves (kept in the page), as Splash's are: one
-- that leaves the DOM, or a page that navigates away, is gone, not another node in its place.
local function select_nodes(css, method, all)
  local ok, v = pcall(eval, "(() => { " .. JS_TO_LUA .. "return out(document.querySelector"
    .. (all and "All" or "") .. "(" .. js_string(css) .. ")); })()")
  if not ok then
    fail("SPLASH_LUA_ERROR", "cannot select the specified element" .. (all and "s " or " ") .. tostring(v),
      { splash_method = method })
  end
  return lua_of(v)
end

function Splash:select(css) return select_nodes(css, "select", false) end

function Splash:select_all(css) return as_array(select_nodes(css, "select_all", true) or {}) end

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

-- Qt's key names, as Splash's send_keys takes them in `<...>`, in the names moonpilot presses.
local KEY_NAMES = {
  Return = "Enter", Enter = "Enter", Tab = "Tab", Space = " ", Backspace = "Backspace",
  Delete = "Delete", Home = "Home", End = "End", Left = "ArrowLeft", Right = "ArrowRight",
  Up = "ArrowUp", Down = "ArrowDown", Escape = "Escape", PageUp = "PageUp", PageDown = "PageDown",
  Insert = "Insert", Backtab = "Shift+Tab",
}

-- Splash's send_keys: edmacro's subset, where whitespace only separates keys, `<Name>` is a
-- key and every other character is typed as itself.
-- Types `text` literally: a word that reads as a key name or a chord (`Enter`, `Control+A`)
-- goes character by character, so it is typed, not pressed.
local function type_literal(text, method)
  if #text > 1 and text:match("^[%w+]+$") then
    for ch in text:gmatch(utf8.charpattern) do must(page:send_keys{ keys = ch }, method) end
  elseif text ~= "" then
    must(page:send_keys{ keys = text }, method)
  end
end

local function send_keys(keys, method)
  if type(keys) ~= "string" then
    fail("SPLASH_LUA_ERROR", "splash:" .. method .. ": keys must be a string", { splash_method = method })
  end
  local text = {}
  local function flush()
    if #text > 0 then
      type_literal(table.concat(text), method)
      text = {}
    end
  end
  for word in keys:gmatch("%S+") do
    local name = word:match("^<(.+)>$")
    if name then
      local key = KEY_NAMES[name] or (name:match("^F%d+$") and name)
      if not key then
        fail("SPLASH_LUA_ERROR", "splash:" .. method .. ": unknown key <" .. name .. ">", { splash_method = method })
      end
      flush()
      must(page:send_keys{ keys = key }, method)
    else
      text[#text + 1] = word
    end
  end
  flush()
end

function Splash:send_keys(keys) send_keys(keys, "send_keys") end

function Splash:send_text(text)
  if type(text) ~= "string" then
    fail("SPLASH_LUA_ERROR", "splash:send_text: text must be a string", { splash_method = "send_text" })
  end
  type_literal(text, "send_text")
end

for _, k in ipairs({ "mouse_click", "mouse_hover", "mouse_press", "mouse_release", "send_keys", "send_text" }) do
  Splash[k] = then_events(Splash[k])
end

function Splash:set_content(data, mime_type, baseurl)
  if type(data) == "table" then data, mime_type, baseurl = data.data or data[1], data.mime_type, data.baseurl end
  if type(data) ~= "string" then
    fail("SPLASH_LUA_ERROR", "splash:set_content: data must be a string", { splash_method = "set_content" })
  end
  if baseurl and baseurl ~= "" then
    local r = shown_as(baseurl, data, mime_type or "text/html; charset=utf-8")
    if not r.ok then return nil, reason_of(r) end
    return true
  end
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

-- Timers and timeouts -----------------------------------------------------------------------
local Timer = {}
Timer.__index = Timer
function Timer:cancel()
  if not self.started then self.cancelled = true; self.job:cancel() end
end
function Timer:is_pending() return not self.started and not self.cancelled end
function Timer:reraise()
  if self.error ~= nil then
    fail("SPLASH_LUA_ERROR", tostring(self.error), { timer_method = "reraise" })
  end
end

local function splash_arg_error(method, argument, message)
  fail("SPLASH_LUA_ERROR", message, { splash_method = method, argument = argument })
end

function Splash:call_later(callback, delay)
  delay = delay or 0
  if type(delay) ~= "number" then splash_arg_error("call_later", "delay", "splash:call_later delay must be a number") end
  if delay < 0 then splash_arg_error("call_later", "delay", "splash:call_later delay must be >= 0") end
  if type(callback) ~= "function" then
    splash_arg_error("call_later", "callback", "splash:call_later callback is not a function")
  end
  local timer = setmetatable({ started = false, cancelled = false }, Timer)
  timer.job = browser.spawn(function()
    -- Never at once, even with 0 (Splash's rule).
    browser.sleep(math.max(1, math.floor(delay * 1000)))
    timer.started = true
    local ok, err = pcall(callback)
    if not ok then timer.error = err end
  end)
  return timer
end

function Splash:with_timeout(func, timeout)
  if type(timeout) ~= "number" then splash_arg_error("with_timeout", "timeout", "splash:with_timeout timeout must be a number") end
  if timeout < 0 then splash_arg_error("with_timeout", "timeout", "splash:with_timeout timeout must be >= 0") end
  if type(func) ~= "function" then splash_arg_error("with_timeout", "func", "splash:with_timeout func is not a function") end
  local job = browser.spawn(function() return table.pack(pcall(func)) end)
  local deadline = browser.clock() + timeout
  while not job:done() do
    if browser.clock() >= deadline then
      job:cancel()
      return nil, "timeout_over"
    end
    browser.sleep(10)
  end
  local res = job:join()
  if res[1] then return true, table.unpack(res, 2, res.n) end
  return nil, tostring(res[2])
end

-- JavaScript that resumes the script ----------------------------------------------------------
function Splash:wait_for_resume(snippet, timeout)
  if type(snippet) == "table" then snippet, timeout = snippet.snippet or snippet[1], snippet.timeout end
  timeout = timeout or 0
  if type(snippet) ~= "string" then splash_arg_error("wait_for_resume", "snippet", "splash:wait_for_resume snippet must be a string") end
  if type(timeout) ~= "number" or timeout < 0 then
    splash_arg_error("wait_for_resume", "timeout", "splash:wait_for_resume timeout must be a number >= 0")
  end
  local js = "() => new Promise((done) => { const out = {}; let over = false; "
    .. "const finish = (v) => { if (!over) { over = true; done(v); } }; "
    .. "const splash = { resume: (v) => { if (v !== undefined) out.value = v; finish({ok: true, out}); }, "
    .. "error: (m) => finish({ok: false, error: 'JavaScript error: ' + String(m)}), "
    .. "set: (k, v) => { out[k] = v; } }; "
    .. "let main; try { main = (0, eval)('(function () { ' + " .. js_string(snippet)
    .. " + '\\n; return typeof main === `function` ? main : undefined; })()'); } "
    .. "catch (e) { return finish({ok: false, error: 'JavaScript error: ' + e}); } "
    .. "if (typeof main !== 'function') return finish({ok: false, error: 'error: wait_for_resume(): no main() function defined'}); "
    .. "try { main(splash); } catch (e) { finish({ok: false, error: 'JavaScript error: ' + e}); } "
    .. (timeout > 0 and ("setTimeout(() => finish({ok: false, error: 'error: One shot callback timed out while waiting for resume() or error().'}), "
      .. math.floor(timeout * 1000) .. "); ") or "")
    .. "})"
  local r = page:execute_js{ body = js, timeoutMs = 0 }
  if not r.ok then return nil, "JavaScript error: " .. tostring(r.msg) end
  local v = r.data.result
  if not v.ok then return nil, v.error end
  return v.out
end

-- Scripts on every page load ------------------------------------------------------------------
local autoloaded = {}

function Splash:autoload(source_or_url, source, url)
  if type(source_or_url) == "table" then
    source_or_url, source, url = source_or_url.source_or_url or source_or_url[1], source_or_url.source, source_or_url.url
  end
  local given = (source_or_url and 1 or 0) + (source and 1 or 0) + (url and 1 or 0)
  if given ~= 1 then splash_arg_error("autoload", nil, "splash:autoload requires a single argument") end
  if source_or_url then
    if source_or_url:match("^https?://") then url = source_or_url else source = source_or_url end
  end
  if url then
    local got = op("fetch", { url = url })
    if not got.ok then return nil, tostring(got.error or ("http" .. tostring(got.status))) end
    source = codec.base64_decode(got.base64)
  end
  autoloaded[#autoloaded + 1] = op("autoload", { source = source })
  return true
end

function Splash:autoload_reset()
  op("autoload_reset", { ids = autoloaded })
  autoloaded = {}
end

-- Requests outside the page --------------------------------------------------------------------
local Response = {}
Response.__index = Response

local function response_of(url, got)
  local headers = {}
  for k, v in pairs(got.headers or {}) do headers[k] = v end
  local body = binary(got.base64 or "", headers["Content-Type"] or headers["content-type"])
  return setmetatable({ url = url, status = got.status, ok = got.ok == true, headers = headers,
    body = body, info = { url = url, status = got.status, headers = headers,
      content = { text = codec.base64_decode(got.base64 or "") } } }, Response)
end

-- A request outside the page, with the page's user agent (unless `headers` set one).
local function http_request(method, url, headers, follow_redirects, body)
  local h = {}
  for k, v in pairs(standing_headers()) do h[k] = v end
  for k, v in pairs(headers or {}) do h[tostring(k)] = tostring(v) end
  local has_ua = false
  for k in pairs(h) do if k:lower() == "user-agent" then has_ua = true end end
  if not has_ua then h["User-Agent"] = eval("navigator.userAgent") end
  local got = op("http", { method = method, url = url, headers = h, follow_redirects = follow_redirects ~= false,
    body = body and codec.base64_encode(body) or nil })
  local r = response_of(got.url or url, got)
  r.request = { url = url, method = method, headers = h }
  return r
end

function Splash:http_get(url, headers, follow_redirects)
  if type(url) == "table" then url, headers, follow_redirects = url.url or url[1], url.headers, url.follow_redirects end
  if type(url) ~= "string" then splash_arg_error("http_get", "url", "'url' is required for splash:http_get") end
  return http_request("GET", url, headers, follow_redirects, nil)
end

function Splash:http_post(url, headers, follow_redirects, body)
  if type(url) == "table" then
    url, headers, follow_redirects, body = url.url or url[1], url.headers, url.follow_redirects, url.body
  end
  if type(url) ~= "string" then splash_arg_error("http_post", "url", "'url' is required for splash:http_post") end
  if body ~= nil and type(body) ~= "string" and not is_binary(body) then
    splash_arg_error("http_post", "body", "body argument for splash:http_post() must be string")
  end
  if is_binary(body) then body = codec.base64_decode(body.base64) end
  local h = headers
  if h == nil then h = { ["Content-Type"] = "application/x-www-form-urlencoded" } end
  return http_request("POST", url, h, follow_redirects, body or "")
end

function Splash:get_perf_stats()
  return { walltime = browser.clock(), cputime = os.clock and os.clock() or 0, maxrss = 0 }
end

-- render.json's `childFrames`: every frame below the main one, nested as the page nests them,
-- each {url, requestedUrl, frameName, title, geometry, html?, childFrames} (a child's geometry
-- is its own viewport at 0, 0: where it sits in its parent is not measured).
function Splash:__child_frames(with_html)
  local d = must(page:list_frames{}, "iframes")
  local by_index, top = {}, {}
  for _, f in ipairs(d.frames or {}) do
    if not f.isMain then
      local function in_frame(expr)
        local r = page:execute_js{ body = expr, frame = tostring(f.index) }
        if r.ok then return r.data.result end
        return nil
      end
      local size = in_frame("[innerWidth, innerHeight]") or { 0, 0 }
      local info = { url = f.url, requestedUrl = f.url, frameName = f.name or "",
        title = in_frame("document.title") or "", geometry = { 0, 0, size[1], size[2] },
        childFrames = {} }
      if with_html then info.html = in_frame("document.documentElement.outerHTML") or "" end
      by_index[f.index] = info
      local parent = by_index[f.parentIndex]
      if parent then
        parent.childFrames[#parent.childFrames + 1] = info
      else
        top[#top + 1] = info
      end
    end
  end
  return top
end

-- The page's console messages, as `console.log` wrote them (render.json's `console`).
function Splash:__console()
  local d = must(page:get_console_logs{}, "console")
  local out = {}
  for _, line in ipairs(d.logs or {}) do
    out[#out + 1] = tostring(line):gsub("^%a+: ", "", 1)
  end
  return out
end

function Splash:get_version()
  return { splash = "3.5", major = 3, minor = 5, engine = "moonpilot (Chromium)" }
end

-- What Splash has and this engine does not do yet: a clear SPLASH_LUA_ERROR naming it.
-- on_request: every request of the page is held in Rust until a coroutine of the script has
-- run the callbacks on it and answered (abort, or go on, changed or not).
local request_callbacks = {}
local response_callbacks = {}
local request_loop = nil
local request_hold = false

-- Holds requests while a callback or the lock needs them, and lets them go when none does.
local function sync_request_hold()
  local want = #request_callbacks > 0 or nav.locked
  if want ~= request_hold then
    op("on_request", { on = want })
    request_hold = want
  end
end

local Request = {}
Request.__index = Request

-- A headers table read case-insensitively (`headers["content-type"]` finds `Content-Type`).
local function header_table(h)
  local t = {}
  for k, v in pairs(h or {}) do t[k] = v end
  return setmetatable(t, { __index = function(tbl, key)
    if type(key) ~= "string" then return nil end
    local want = key:lower()
    for k, v in pairs(tbl) do
      if type(k) == "string" and k:lower() == want then return v end
    end
    return nil
  end })
end

local function request_of(seen)
  local headers = header_table(seen.headers)
  local r = setmetatable({ url = seen.url, method = seen.method, headers = headers,
    info = { url = seen.url, method = seen.method, headers = headers, resource_type = seen.resourceType },
    __id = seen.id, __decision = {} }, Request)
  -- `request.abort()` and `request:abort()` both work.
  r.abort = function() r.__decision.abort = true end
  return r
end

function Request:abort() self.__decision.abort = true end
function Request:set_url(url) self.__decision.url = tostring(url) end
function Request:set_http_method(method) self.__decision.method = tostring(method):upper() end
function Request:set_body(body) self.__decision.body = tostring(body) end
function Request:set_header(name, value)
  self.__decision.headers = self.__decision.headers or {}
  self.__decision.headers[tostring(name)] = tostring(value)
end
-- Kept so scripts run: response bodies are copied for xhr/fetch, and a request's own
-- timeout is not set (the request's `timeout` bounds it).
function Request:enable_response_body() end
function Request:set_timeout(_) end
function Request:set_proxy()
  fail("SPLASH_LUA_ERROR", "request:set_proxy: Chromium takes a proxy per browser context, not per request; "
    .. "give the request's `proxy` argument instead (each request has a context of its own)", { splash_method = "set_proxy" })
end

-- A response whose headers are in (on_response_headers): read it, or abort it.
local Response_headers = {}
Response_headers.__index = Response_headers

local function answer_response(seen)
  local headers = header_table(seen.responseHeaders)
  local request = { url = seen.url, method = seen.method, headers = seen.headers,
    info = { url = seen.url, method = seen.method, headers = seen.headers } }
  local response = setmetatable({ url = seen.url, status = seen.status, headers = headers,
    ok = type(seen.status) == "number" and seen.status < 400, request = request,
    info = { url = seen.url, status = seen.status, headers = headers, statusText = seen.statusText },
    __decision = {} }, Response_headers)
  -- Splash's own example calls `response.abort()`; `response:abort()` works too.
  response.abort = function() response.__decision.abort = true end
  for _, cb in ipairs(response_callbacks) do
    local ok, err = pcall(cb, response)
    if not ok then print("splash: an on_response_headers callback failed: " .. tostring(err)) end
  end
  op("decide", { id = seen.id, abort = response.__decision.abort })
end

local function answer_request(seen)
  if seen.stage == "response" then return answer_response(seen) end
  if nav.locked and seen.resourceType == "Document" and seen.frameId == nav.main_frame then
    for _, cb in ipairs(nav.callbacks) do
      local ok, err = pcall(cb, request_of(seen))
      if not ok then print("splash: an on_navigation_locked callback failed: " .. tostring(err)) end
    end
    op("decide", { id = seen.id, abort = true })
    return
  end
  local request = request_of(seen)
  for _, cb in ipairs(request_callbacks) do
    local ok, err = pcall(cb, request)
    if not ok then print("splash: an on_request callback failed: " .. tostring(err)) end
  end
  local d = request.__decision
  local decision = { id = seen.id, abort = d.abort, url = d.url, method = d.method, body = d.body }
  if d.headers then
    -- The request's headers with the callback's set over them (CDP takes the whole list).
    local all = {}
    for k, v in pairs(seen.headers or {}) do all[k] = v end
    for k, v in pairs(d.headers) do
      for existing in pairs(all) do
        if existing:lower() == k:lower() then all[existing] = nil end
      end
      all[k] = v
    end
    decision.headers = all
  end
  op("decide", decision)
end

-- The coroutine that answers held requests and responses while any callback is set.
local function ensure_loop()
  if request_loop ~= nil then return end
  request_loop = browser.spawn(function()
    while #request_callbacks + #response_callbacks > 0 or nav.locked do
      for _, seen in ipairs(op("asked", { wait_ms = 200 })) do
        -- Each on a coroutine of its own: one slow answer holds no other request, and one
        -- that fails (the request went away) ends nothing else.
        browser.spawn(function()
          local ok, err = pcall(answer_request, seen)
          if not ok then print("splash: a held request was not answered: " .. tostring(err)) end
        end)
      end
    end
  end)
end

local function stop_loop_if_idle()
  if request_loop ~= nil and #request_callbacks + #response_callbacks == 0 and not nav.locked then
    request_loop:cancel()
    request_loop = nil
  end
end

function Splash:on_request(callback)
  if type(callback) ~= "function" then
    fail("SPLASH_LUA_ERROR", "splash:on_request callback is not a function", { splash_method = "on_request" })
  end
  request_callbacks[#request_callbacks + 1] = callback
  sync_request_hold()
  ensure_loop()
end

function Splash:on_request_reset()
  request_callbacks = {}
  sync_request_hold()
  stop_loop_if_idle()
end

function Splash:lock_navigation()
  if nav.main_frame == nil then nav.main_frame = op("main_frame") end
  nav.locked = true
  sync_request_hold()
  ensure_loop()
end

function Splash:unlock_navigation()
  nav.locked = false
  sync_request_hold()
  stop_loop_if_idle()
end

function Splash:on_navigation_locked(callback)
  if type(callback) ~= "function" then
    fail("SPLASH_LUA_ERROR", "splash:on_navigation_locked callback is not a function",
      { splash_method = "on_navigation_locked" })
  end
  nav.callbacks[#nav.callbacks + 1] = callback
end

function Splash:on_navigation_locked_reset() nav.callbacks = {} end

function Splash:on_response_headers(callback)
  if type(callback) ~= "function" then
    fail("SPLASH_LUA_ERROR", "splash:on_response_headers callback is not a function",
      { splash_method = "on_response_headers" })
  end
  if #response_callbacks == 0 then op("on_response_headers", { on = true }) end
  response_callbacks[#response_callbacks + 1] = callback
  ensure_loop()
end

function Splash:on_response_headers_reset()
  if #response_callbacks > 0 then
    response_callbacks = {}
    op("on_response_headers", { on = false })
  end
  stop_loop_if_idle()
end


-- The splash object's attributes: what Chromium does already is accepted (and read back);
-- the other setting, which this engine cannot give, is a clear error.
local attributes = {
  js_enabled = { value = true, fixed = true }, images_enabled = { value = true, accept = true },
  plugins_enabled = { value = false, fixed = true }, webgl_enabled = { value = true, fixed = true },
  indexeddb_enabled = { value = true, accept = true }, html5_media_enabled = { value = true, accept = true },
  media_source_enabled = { value = true, fixed = true }, http2_enabled = { value = true, accept = true },
  -- Each request is private here: its own cookies and storage, gone after it.
  private_mode_enabled = { value = true, accept = true },
  -- Kept and read back: the HAR includes request bodies either way, and xhr/fetch response
  -- bodies when response_body_enabled is on.
  request_body_enabled = { value = false, accept = true },
  response_body_enabled = { value = false, accept = true },
  -- Kept and read back: a request's resources are bounded by its `timeout` only.
  resource_timeout = { value = 0, accept = true },
}

-- HAR of the request's traffic -----------------------------------------------------------------
local har_since = 0

function Splash:har(reset)
  if type(reset) == "table" then reset = reset.reset end
  local title = eval("document.title")
  local h = op("har", { since = har_since, bodies = attributes.response_body_enabled.value, title = title })
  if reset then self:har_reset() end
  return h
end

function Splash:har_reset() har_since = math.floor(eval("Date.now()")) end

function Splash:history()
  return as_array(op("har", { since = 0, history = true, bodies = attributes.response_body_enabled.value }))
end

-- on_response: each response once it is in (the recorder's), shown to the callbacks on a
-- coroutine of their own, after the fact, as Splash runs them.
local done_callbacks = {}
local done_loop = nil

local function response_done(seen)
  local headers = header_table(seen.headers)
  local body = nil
  if seen.body then body = binary(seen.body, seen.mimeType) end
  local response = { url = seen.url, status = seen.status, headers = headers, ok = seen.ok == true,
    mimeType = seen.mimeType, body = body,
    request = { url = seen.request.url, method = seen.request.method, headers = header_table(seen.request.headers) },
    info = { url = seen.url, status = seen.status, headers = headers, mimeType = seen.mimeType,
      error = seen.failure } }
  for _, cb in ipairs(done_callbacks) do
    local ok, err = pcall(cb, response)
    if not ok then print("splash: an on_response callback failed: " .. tostring(err)) end
  end
end

function Splash:on_response(callback)
  if type(callback) ~= "function" then
    fail("SPLASH_LUA_ERROR", "splash:on_response callback is not a function", { splash_method = "on_response" })
  end
  done_callbacks[#done_callbacks + 1] = callback
  if done_loop == nil then
    local cursor = math.floor(eval("Date.now()"))
    done_loop = browser.spawn(function()
      while #done_callbacks > 0 do
        local d = op("finished", { after = cursor, bodies = attributes.response_body_enabled.value })
        cursor = d.last
        for _, seen in ipairs(d.responses) do response_done(seen) end
        browser.sleep(100)
      end
    end)
  end
end

function Splash:on_response_reset()
  done_callbacks = {}
  if done_loop ~= nil then
    done_loop:cancel()
    done_loop = nil
  end
end

local function get_attribute(key)
  if key == "scroll_position" then
    return eval("({x: window.scrollX, y: window.scrollY})")
  end
  local a = attributes[key]
  if a then return a.value end
  return nil
end

local function set_attribute(t, key, value)
  if type(key) == "string" and key:sub(1, 1) == "_" then
    fail("SPLASH_LUA_ERROR", "Cannot set private field: " .. key)
  end
  if key == "args" then fail("SPLASH_LUA_ERROR", "Attribute args is read-only.") end
  if key == "scroll_position" then
    if type(value) ~= "table" then fail("SPLASH_LUA_ERROR", "splash.scroll_position must be a table") end
    local x, y = value.x or value[1], value.y or value[2]
    eval("window.scrollTo(" .. (tonumber(x) and tostring(x) or "window.scrollX") .. ", "
      .. (tonumber(y) and tostring(y) or "window.scrollY") .. "); true")
    return
  end
  local a = attributes[key]
  if not a then rawset(t, key, value) return end
  if key == "resource_timeout" then
    value = tonumber(value or 0)
    if not value or value < 0 then fail("SPLASH_LUA_ERROR", "splash.resource_timeout can't be negative") end
    a.value = value
    return
  end
  if value == nil then return end
  local want = value and true or false
  if type(value) == "number" then want = value ~= 0 end
  if key == "images_enabled" and want ~= a.value then op("images", { enabled = want }) end
  if a.fixed and want ~= a.value then
    fail("SPLASH_LUA_ERROR", "splash." .. key .. " = " .. tostring(value) .. " is not supported on this engine (Chromium's setting is "
      .. tostring(a.value) .. ")", { splash_method = key })
  end
  a.value = want
end

-- The libraries of Splash's sandbox, for `require`.
local json = { encode = codec.json_encode, decode = codec.json_decode }
local base64 = {
  encode = function(s) if is_binary(s) then return s.base64 end return codec.base64_encode(s) end,
  decode = codec.base64_decode,
}
local treat = {
  as_binary = function(s, content_type) return binary(codec.base64_encode(tostring(s)), content_type) end,
  as_string = function(b) if is_binary(b) then return codec.base64_decode(b.base64) end return tostring(b) end,
  mark_array = as_array,
  as_array = as_array,
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
    local m = Splash[key]
    if m ~= nil then return m end
    return get_attribute(key)
  end,
  __newindex = set_attribute,
})

-- Binary values inside a table are base64 strings in the JSON result (Splash's rule). Below the
-- depth the JSON conversion takes (64), a table is left as it is, for that conversion to refuse
-- (a table that contains itself was copied until the Lua stack overflowed: seconds, and
-- "stack overflow" for a message).
local function plain(v, depth)
  depth = depth or 0
  if is_binary(v) then return v.base64 end
  if type(v) ~= "table" or depth > 64 then return v end
  if ARRAY[v] and next(v) == nil then return EMPTY_ARRAY end
  local out = {}
  for k, x in pairs(v) do out[k] = plain(x, depth + 1) end
  return out
end

function __splash_main()
  if type(main) ~= "function" then
    fail("MAIN_NOT_FOUND_ERROR", "function \"main\" is not found")
  end
  -- Splash's viewport until the script sets another.
  Splash.set_viewport_size(splash, state.viewport[1], state.viewport[2])
  local values = table.pack(main(splash, args))
  -- An Event method that could not act (its handler ran after the event): the answer says so.
  if event_refusal then
    fail("SPLASH_LUA_ERROR", event_refusal.message, { splash_method = event_refusal.method })
  end
  local value = values[1]
  -- `return a, b` is a list (Splash's rule).
  if values.n > 1 then value = as_array({ table.unpack(values, 1, values.n) }) end
  local result = { status = state.status, content_type = state.content_type, headers = state.headers }
  if is_binary(value) then
    result.binary = { base64 = value.base64, content_type = value.content_type }
  else
    result.value = plain(value)
  end
  return result
end
