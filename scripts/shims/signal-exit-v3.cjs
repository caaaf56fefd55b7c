// Bundle-time stand-in for signal-exit 3 inside proper-lockfile: version 3 requires `assert` at
// load (~4 ms of every start) to check its one argument. Version 4, which write-file-atomic
// already brings, has the same `onExit(callback, options)` and returns the same remover.
'use strict';
module.exports = require('signal-exit-v4').onExit;
