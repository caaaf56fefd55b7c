// Bundle-time stand-in for `node:child_process`: commander requires it at load for executable
// subcommands, which MAM's bins never have, and loading it (with dgram and the socket list it
// pulls in) is ~5 ms of every start. Each export is a getter that loads the real module on first
// use, so a bin that spawns still gets Node's own functions. The names are those of the Node that
// builds, listed by scripts/build.mjs (__MAM_CHILD_PROCESS_EXPORTS__), so that no use is missed.
'use strict';
let real;
const load = () => {
  real ??= require('node:child_process');
  return real;
};
for (const name of JSON.parse(__MAM_CHILD_PROCESS_EXPORTS__)) {
  Object.defineProperty(exports, name, { enumerable: true, get: () => load()[name] });
}
