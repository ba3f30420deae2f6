-- moonpilot.human: human-in-the-loop helpers. They only compose commands
-- (request_human_input, ask_user, get_human_input); the state machine lives in the engine.
--
--   local human = require("moonpilot.human")
--   local r = human.ask(page, { questions = { { id = "code", question = "SMS code?" } } })
--   if r.status == "answered" then print(r.answers[1].custom) end
local human = {}

local function final(status) return status == "answered" or status == "expired" end

-- Waits until request `id` is answered or expired, or `seconds` (default: until it expires)
-- have passed; answers the last get_human_input data. Raises on a failed read.
function human.wait(page, id, seconds)
  local deadline = seconds and (browser.clock() + seconds) or math.huge
  while true do
    local left = deadline - browser.clock()
    local poll = math.max(1, math.min(60, math.floor(left)))
    local data = page:get_human_input{ requestId = id, timeoutSeconds = poll }:unwrap()
    if final(data.status) or browser.clock() >= deadline then return data end
    -- `partial` returns at once (the long-poll waits only while pending): pace the loop.
    if data.status == "partial" then browser.sleep(200) end
  end
end

-- Opens a request and waits for its final status. `spec` holds either `questions` (ask_user:
-- values and choices) or `prompt`/`steps` (request_human_input: act in the page), plus the
-- deadline params of those commands. Answers the final get_human_input data.
function human.ask(page, spec, seconds)
  assert(type(spec) == "table", "human.ask(page, spec): spec must be a table")
  local opened
  if spec.questions then
    opened = page:ask_user(spec):unwrap()
  else
    opened = page:request_human_input(spec):unwrap()
  end
  if final(opened.status) then return opened end
  return human.wait(page, opened.requestId, seconds)
end

return human
