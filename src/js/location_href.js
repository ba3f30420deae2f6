location.href
