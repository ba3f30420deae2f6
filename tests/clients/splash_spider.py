"""A Scrapy project with scrapy-splash against moonpilot's Splash API, unchanged but for
SPLASH_URL: `python splash_spider.py SPLASH_URL FIXTURE_ORIGIN`. Renders a page whose text only
JavaScript writes (render.html), takes render.png, asks render.json for html+png+har, and runs an
execute script that clicks, waits for an element and returns a table and a PNG; then a session
(scrapy-splash's `session_id`): a cookie the page set in one request comes back in the next
through scrapy-splash's cookie jar (each request has a jar of its own on the server, as with
Splash), with `cache_args` saving the script once and loading it by hash after. Exits non-zero
naming the first check that failed. Run by tools/test-clients.
"""

import base64
import json
import sys

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy_splash import SplashRequest

SPLASH, ORIGIN = sys.argv[1].rstrip("/"), sys.argv[2].rstrip("/")
PAGE = ORIGIN + "/splash_js.html"
RESULTS = {}

CLICK_AND_TABLE = """
function main(splash, args)
  assert(splash:go(args.url))
  assert(splash:select("#more"):mouse_click())
  local t
  for _ = 1, 50 do
    t = splash:select("#late")
    if t then break end
    splash:wait(0.05)
  end
  assert(t, "no table")
  return {
    rows = splash:evaljs("[...document.querySelectorAll('#late tr')].map(r => [...r.cells].map(c => c.textContent))"),
    png = splash:png(),
  }
end
"""


SESSION = """
function main(splash, args)
  splash:init_cookies(args.cookies)
  assert(splash:go(args.url))
  if args.set then splash:runjs("document.cookie = 'sess=' + " .. string.format("%q", args.set) .. " + '; path=/'") end
  return {cookie = splash:evaljs("document.cookie"), cookies = splash:get_cookies()}
end
"""


class Checks(scrapy.Spider):
    name = "moonpilot-splash"

    def start_requests(self):
        yield SplashRequest(PAGE, self.html, endpoint="render.html", args={"wait": 0.1})
        yield SplashRequest(PAGE, self.png, endpoint="render.png", args={"wait": 0.1}, dont_filter=True)
        yield SplashRequest(PAGE, self.json, endpoint="render.json", args={"html": 1, "png": 1, "har": 1, "wait": 0.1}, dont_filter=True)
        yield SplashRequest(PAGE, self.execute, endpoint="execute", args={"lua_source": CLICK_AND_TABLE}, dont_filter=True)
        yield SplashRequest(PAGE + "?first", self.session_first, endpoint="execute", session_id="s1",
                            args={"lua_source": SESSION, "set": "abc"}, cache_args=["lua_source"])

    def session_first(self, response):
        RESULTS["session set"] = response.data.get("cookie")
        yield SplashRequest(PAGE + "?second", self.session_second, endpoint="execute", session_id="s1",
                            args={"lua_source": SESSION}, cache_args=["lua_source"], dont_filter=True)

    def session_second(self, response):
        RESULTS["session kept"] = response.data.get("cookie")

    def html(self, response):
        RESULTS["render.html"] = response.css("#out::text").get()

    def png(self, response):
        RESULTS["render.png"] = response.body[:8] == b"\x89PNG\r\n\x1a\n"

    def json(self, response):
        data = response.data
        entries = data.get("har", {}).get("log", {}).get("entries", [])
        RESULTS["render.json"] = ("rendered 42" in data.get("html", ""),
                                  base64.b64decode(data.get("png", ""))[:4] == b"\x89PNG", data.get("title"),
                                  any(e["request"]["url"] == PAGE and e["response"]["status"] == 200 for e in entries))

    def execute(self, response):
        data = response.data
        RESULTS["execute"] = (data.get("rows"), base64.b64decode(data.get("png", ""))[:4] == b"\x89PNG")


process = CrawlerProcess(settings={
    "SPLASH_URL": SPLASH,
    "DOWNLOADER_MIDDLEWARES": {
        "scrapy_splash.SplashCookiesMiddleware": 723,
        "scrapy_splash.SplashMiddleware": 725,
        "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": 810,
    },
    "SPIDER_MIDDLEWARES": {"scrapy_splash.SplashDeduplicateArgsMiddleware": 100},
    "DUPEFILTER_CLASS": "scrapy_splash.SplashAwareDupeFilter",
    "LOG_LEVEL": "WARNING",
    "ROBOTSTXT_OBEY": False,
})
process.crawl(Checks)
process.start()

expected = {
    "render.html": "rendered 42",
    "render.png": True,
    "render.json": (True, True, "Written by script", True),
    "execute": ([["a", "1"], ["b", "2"]], True),
    "session set": "sess=abc",
    "session kept": "sess=abc",
}
for key, want in expected.items():
    got = RESULTS.get(key)
    if got != want:
        raise SystemExit(f"FAIL: scrapy-splash {key}: got {got!r}, want {want!r}")
print(f"scrapy-splash: {len(expected)} checks passed")
