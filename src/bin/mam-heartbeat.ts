// Internal: the detached heartbeat timer that `mam-publish --event started --heartbeat N` spawns
// (contract §5). Not a user command; its stdio is /dev/null, so MAM_DEBUG=1 is the only way to hear it.
import { isTrueText } from '../core/config/text-values.ts';
import { parseTimerArgs } from '../core/heartbeat/timer-args.ts';
import { runTimer } from '../core/heartbeat/timer.ts';

const log = isTrueText(process.env.MAM_DEBUG) ? (line: string) => process.stderr.write(`mam-heartbeat: ${line}\n`) : undefined;
// No top-level await: the bins are CommonJS bundles (see scripts/build.mjs).
runTimer(parseTimerArgs(process.argv.slice(2)), log).then(
  (code) => process.exit(code),
  (err: Error) => {
    log?.(err.message);
    process.exit(1);
  },
);
