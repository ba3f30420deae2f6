// A lone surrogate in a hostile title would break the JSON answer (see well_formed.js).
document.title.toWellFormed()
