# A TLS-terminating proxy for the tests: python3 tls_proxy.py LISTEN_PORT TARGET_PORT CERT KEY.
# Prints "ready" once it listens on 127.0.0.1:LISTEN_PORT; forwards bytes to 127.0.0.1:TARGET_PORT.
import asyncio, ssl, sys
listen, target = int(sys.argv[1]), int(sys.argv[2])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[3], sys.argv[4])
async def pipe(r, w):
    try:
        while (b := await r.read(65536)):
            w.write(b); await w.drain()
    except Exception: pass
    finally:
        try: w.close()
        except Exception: pass
async def handle(r, w):
    tr, tw = await asyncio.open_connection('127.0.0.1', target)
    await asyncio.gather(pipe(r, tw), pipe(tr, w))
async def main():
    srv = await asyncio.start_server(handle, '127.0.0.1', listen, ssl=ctx)
    print("ready", flush=True)
    async with srv: await srv.serve_forever()
asyncio.run(main())
