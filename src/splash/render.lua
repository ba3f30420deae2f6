-- Splash's render endpoints (`/render.html`, `/render.png`, `/render.json`) as the Lua scripts
-- Splash's documentation gives for them, run like any `/execute` script. The HTTP layer has
-- checked the arguments; `args.endpoint__` names the endpoint.
function main(splash, args)
  local endpoint = args.endpoint__
  if args.viewport and args.viewport ~= "full" then
    local w, h = args.viewport:match("^(%d+)x(%d+)$")
    splash:set_viewport_size(tonumber(w), tonumber(h))
  end
  if args.images == 0 then splash.images_enabled = false end
  if args.response_body == 1 then splash.response_body_enabled = true end
  local ok, reason = splash:go{ args.url, baseurl = args.baseurl, headers = args.headers,
    http_method = args.http_method, body = args.body }
  if not ok then
    -- Splash's RenderError info: {type = "HTTP" | "Network" | ..., code, text, url}.
    local kind, code = tostring(reason):match("^(%a+)(%d+)$")
    local kinds = { http = "HTTP", network = "Network" }
    error("\1splash\1" .. require("json").encode({ type = "RENDER_ERROR", message = reason,
      kind = kinds[kind] or "Unknown", code = tonumber(code) or 0, url = args.url }), 0)
  end
  if args.wait and args.wait > 0 then splash:wait(args.wait) end
  -- js_source runs after the wait; its exceptions are not errors (Splash's rule). Its value is
  -- render.json's `script`, the page's console messages since the load its `console`.
  local js_output = nil
  if args.js_source then
    local ok, value = pcall(splash.evaljs, splash, args.js_source)
    if ok then js_output = value end
  end
  if args.viewport == "full" then splash:set_viewport_full() end
  if endpoint == "render.html" then
    splash:set_result_content_type("text/html; charset=utf-8")
    return splash:html()
  end
  local render_all = args.render_all == 1 or args.viewport == "full"
  local shot = { render_all = render_all, width = args.width, height = args.height,
    scale_method = args.scale_method, quality = args.quality }
  if endpoint == "render.png" then
    return splash:png(shot)
  end
  if endpoint == "render.jpeg" then
    return splash:jpeg(shot)
  end
  if endpoint == "render.har" then
    return splash:har()
  end
  -- render.json
  local w, h = splash:get_viewport_size()
  local out = {
    url = splash:url(),
    requestedUrl = args.url,
    geometry = { 0, 0, w, h },
    title = splash:evaljs("document.title"),
  }
  if args.html == 1 then out.html = splash:html() end
  if args.iframes == 1 then
    out.frameName = ""
    out.childFrames = splash:__child_frames(args.html == 1)
  end
  if args.png == 1 then
    shot.quality = nil
    out.png = splash:png(shot)
  end
  if args.script == 1 and js_output ~= nil then out.script = js_output end
  if args.console == 1 and args.js_source then
    local messages = {}
    for i, m in ipairs(splash:__console()) do messages[i] = m end
    if #messages > 0 then out.console = messages end
  end
  if args.history == 1 then out.history = splash:history() end
  if args.har == 1 then out.har = splash:har() end
  if args.jpeg == 1 then
    shot.quality = args.quality
    out.jpeg = splash:jpeg(shot)
  end
  return out
end
