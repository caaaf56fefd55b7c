// Bundle-time stand-in for `worker_threads` inside write-file-atomic, which reads `threadId` at
// load to make temp-file names unique across threads of one process. A bin's bundle is a process
// of its own and runs on the main thread, whose threadId is 0 by definition; the real module costs
// ~5 ms of every start (its message ports and serializer).
'use strict';
exports.isMainThread = true;
exports.threadId = 0;
