-- `moonpilot test examples/tests`: the quickstart page, tested. Each test gets `page`, a fresh
-- task in a browser context of its own; assertions on a page wait until it agrees.
local here = arg[0]:match("^(.*)/[^/]*$") or "."
local url = "file://" .. here .. "/../quickstart.html"

describe("the quickstart page", function()
  before_each(function(page)
    page:navigate{ url = url }:unwrap()
  end)

  it("has its title and heading", function(page)
    expect(page):to_have_title{ title = "moonpilot quickstart" }
    expect(page):to_have_url{ pattern = "quickstart%.html$" }
    expect(page):to_be_visible{ role = "heading", name = "Greeter" }
  end)

  it("greets who you name", function(page)
    page:input_text_by_label{ label = "Name", text = "Ada" }:unwrap()
    page:click_element_by_role{ role = "button", name = "Greet" }:unwrap()
    expect(page):to_have_text{ selector = "#out", text = "Hello, Ada!" }
    expect(page):to_have_value{ label = "Name", value = "Ada" }
  end)
end)

test("plain values", function()
  expect({ 1, { a = 2 } }):to_equal({ 1, { a = 2 } })
  expect("moonpilot"):to_match("^moon")
end)
