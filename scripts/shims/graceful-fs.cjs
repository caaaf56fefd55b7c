// Bundle-time stand-in for graceful-fs inside proper-lockfile, which uses it for mkdir, stat,
// utimes, rmdir and realpath on the lock folder. graceful-fs queues and retries calls that open
// files when the process runs out of descriptors (EMFILE), and none of these opens one; loading it
// patches fs.ReadStream and fs.WriteStream, which makes Node load its file streams, fs/promises
// and readline at every start (~7 ms). Node's own fs serves the same calls.
'use strict';
module.exports = require('node:fs');
