function () { return this; }
