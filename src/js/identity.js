function () { return { ok: true, value: this }; }
