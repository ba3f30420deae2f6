-- Close the page's DOM modals one by one (top first) until none is left or one will not close
--
-- A Lua recipe: `run_recipe{ name = "close-all-modals", vars = { maxRounds = 10 } }`.
-- `page` is the task the recipe runs on; `browser.args` holds the vars.
-- Each round closes one modal with close_modal (which never clicks a committing button). A
-- round in which nothing closes ends the loop: clicking again could open more confirmation
-- layers.
local args = browser.args
-- At most 100 rounds: each one adds an entry to the answer.
local max_rounds = math.min(100, math.max(1, math.tointeger(tonumber(args.maxRounds or 10)) or 10))

-- The top modal first; when it will not close (nothing to click on it), the first one in
-- document order. `vars.which` replaces both.
local tries = args.which and { args.which } or { "top", "first" }

local before = page:get_modals():unwrap()
local closed, rounds, attempts = 0, 0, {}
local stop_reason = "no modal left"
local count = before.count
while count > 0 do
  if rounds >= max_rounds then
    stop_reason = "maxRounds reached"
    break
  end
  rounds = rounds + 1
  local progress = false
  for _, which in ipairs(tries) do
    local r = page:close_modal{ which = which }
    attempts[#attempts + 1] = { which = which, ok = r.ok, closed = r.ok and r.data.closed or false, msg = r.msg }
    if r.ok and r.data.closed then
      progress = true
      break
    end
  end
  if not progress then
    stop_reason = "the remaining modal(s) did not close"
    break
  end
  closed = closed + 1
  count = page:get_modals():unwrap().count
end
local after = page:get_modals():unwrap()
return {
  closed = closed,
  rounds = rounds,
  countBefore = before.count,
  remaining = after.count,
  remainingBlocking = after.countBlocking,
  stopReason = stop_reason,
  attempts = attempts,
}
