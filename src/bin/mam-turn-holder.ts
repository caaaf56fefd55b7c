// Internal: the detached process that `mam claim --broker` leaves behind when it wins a turn. It
// keeps the winner's signed bid retained until the claim's TTL, putting it back whenever anyone
// clears or overwrites it (docs/coordination-reference.md, "A hostile broker client"). Not a user
// command; its input is MAM_TURN_HOLD.
import { loadConfig } from '../core/config/config.ts';
import { HOLDING_LINE, TURN_HOLD_ENV, holdTurn, parseTurnHold } from '../core/fleet/turn-holder.ts';

const stop = new Promise<void>((resolve) => {
  process.once('SIGTERM', resolve);
  process.once('SIGINT', resolve);
});
// The claim's terminal may close: a hangup must not end the guard.
process.on('SIGHUP', () => undefined);
// After HOLDING the claim closes its end of the pipe; a late write must not kill the holder.
process.stdout.on('error', () => undefined);

// No top-level await: the bins are CommonJS bundles (see scripts/build.mjs).
Promise.resolve()
  .then(() => holdTurn(loadConfig(), parseTurnHold(process.env[TURN_HOLD_ENV]), () => process.stdout.write(`${HOLDING_LINE}\n`), stop))
  .then(
    () => process.exit(0),
    () => process.exit(1),
  );
