() => ({ ok: true, value: { url: location.href, readyState: document.readyState, title: document.title } })
