"""moonpilot's MCP server driven by the official Python SDK's client (PyPI `mcp`).

Run by tools/test-clients: `python mcp_client.py BINARY FIXTURE_ORIGIN SERVE_URL`. Over stdio (the
binary as `moonpilot mcp`) and over Streamable HTTP (`SERVE_URL`/mcp of a running `moonpilot
serve`): the tool list, a checkout flow on the fixture page, a failing command, an unknown tool,
an image result, run_lua, a cancelled wait, and two HTTP sessions that do not see each other's
tabs. Exits non-zero on the first failed check, naming it.
"""

import asyncio
import base64
import re
import sys
import tempfile

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

BINARY, ORIGIN, SERVE = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3].rstrip("/")
CHECKS = []


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAIL: {what}")
    CHECKS.append(what)


def text(result):
    return result.content[0].text


def index_of(observation, needle):
    for line in observation.splitlines():
        m = re.match(r"\s*\[(\d+)\]", line)
        if m and needle in line:
            return int(m.group(1))
    raise SystemExit(f"FAIL: no indexed line with {needle!r} in:\n{observation}")


async def checkout(session, where):
    tools = (await session.list_tools()).tools
    names = {t.name for t in tools}
    check({"navigate", "get_browser_state", "commands", "run_lua", "screenshot"} <= names, f"{where}: the default tools")
    check("shutdown" not in names, f"{where}: no engine-wide tool")

    opened = await session.call_tool("navigate", {"url": ORIGIN + "/checkout.html"})
    obs = text(opened)
    check(not opened.is_error and "Title: Checkout" in obs, f"{where}: navigate gives the page")
    steps = [
        {"input_text": {"index": index_of(obs, "label='Email'"), "text": "ann@example.com"}},
        {"input_text": {"index": index_of(obs, "label='Full name'"), "text": "Ann Lee"}},
        {"select_dropdown_option": {"index": index_of(obs, "label='Shipping'"), "text": "Express"}},
        {"click_element_by_index": {"index": index_of(obs, "Place order")}},
    ]
    done = await session.call_tool("commands", {"commands": steps})
    check(not done.is_error and "Order placed #1042" in text(done), f"{where}: the checkout places the order")
    check(done.structured_content["data"]["succeeded"] == 4, f"{where}: four steps succeeded")

    failed = await session.call_tool("click_element_by_index", {"index": 999})
    check(failed.is_error and failed.structured_content["ok"] is False, f"{where}: a failing command is a tool error")
    check("retryable" in failed.structured_content and "started" in failed.structured_content, f"{where}: with retryable and started")

    bad = await session.call_tool("click_element_by_index", {"indx": 1})
    check(bad.is_error and "`indx`" in text(bad), f"{where}: a wrong argument is named")

    try:
        await session.call_tool("no_such_tool", {})
        check(False, f"{where}: an unknown tool is a JSON-RPC error")
    except Exception as e:  # McpError
        check("no_such_tool" in str(e), f"{where}: an unknown tool is a JSON-RPC error")

    shot = await session.call_tool("screenshot", {})
    images = [c for c in shot.content if c.type == "image"]
    check(images and images[0].mime_type == "image/png", f"{where}: a screenshot is an image")
    check(base64.b64decode(images[0].data)[:8] == b"\x89PNG\r\n\x1a\n", f"{where}: the image is a PNG")

    ran = await session.call_tool("run_lua", {"script": "return page:get_title():unwrap().title"})
    check(not ran.is_error and ran.structured_content["value"] == "Checkout", f"{where}: run_lua returns its value")


async def cancelled_wait(session, where):
    await session.call_tool("navigate", {"url": ORIGIN + "/basic.html"})
    started = anyio.Event()

    async def on_progress(progress, total, message):
        started.set()

    t0 = anyio.current_time()
    with anyio.move_on_after(2.5) as scope:
        await session.call_tool(
            "wait_for_text", {"text": "never shown", "timeoutSeconds": 60}, progress_callback=on_progress
        )
    check(scope.cancel_called, f"{where}: the wait was cancelled by the client")
    check(started.is_set(), f"{where}: the wait reported progress")
    after = await session.call_tool("get_tabs", {})
    check(not after.is_error and anyio.current_time() - t0 < 15, f"{where}: the session answers right after the cancel")


async def over_stdio():
    state = tempfile.mkdtemp(prefix="moonpilot-mcp-py-")
    params = StdioServerParameters(command=BINARY, args=["mcp", "--state-dir", state])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await checkout(session, "stdio")
            await cancelled_wait(session, "stdio")


async def over_http():
    async with streamable_http_client(SERVE + "/mcp") as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as a:
            await a.initialize()
            await checkout(a, "http")
            await cancelled_wait(a, "http")
            async with streamable_http_client(SERVE + "/mcp") as streams_b:
                async with ClientSession(streams_b[0], streams_b[1]) as b:
                    await b.initialize()
                    await b.call_tool("navigate", {"url": ORIGIN + "/second.html"})
                    ta = (await a.call_tool("get_tabs", {})).structured_content["data"]["tabs"]
                    tb = (await b.call_tool("get_tabs", {})).structured_content["data"]["tabs"]
                    check(len(ta) == 1 and ta[0]["url"].endswith("/basic.html"), "http: session A sees only its tab")
                    check(len(tb) == 1 and tb[0]["url"].endswith("/second.html"), "http: session B sees only its tab")


async def main():
    await over_stdio()
    await over_http()
    print(f"mcp python client: {len(CHECKS)} checks passed")


asyncio.run(main())
