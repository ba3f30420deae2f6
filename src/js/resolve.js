(args) => ({ ok: false, msg: "placeholder" })
