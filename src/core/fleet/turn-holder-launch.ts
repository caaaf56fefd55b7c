import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { findPackageRoot } from '../bin-path.ts';
import { MamError } from '../errors.ts';
import { HOLDING_LINE, TURN_HOLD_ENV, type TurnHold } from './turn-holder.ts';

/** Node start-up, a CONNECT, a SUBSCRIBE and a publish; this bounds a machine under heavy load. */
const READY_WAIT_MS = 10_000;

/**
 * Starts `dist/mam-turn-holder.cjs` detached (through `bin/load-bundle.cjs` for its code cache) and
 * resolves with its pid once it has printed HOLDING: until then the claim keeps guarding the bid
 * itself, so there is no moment in which nobody does. Its stderr is /dev/null; what it restores is
 * audited in `fleet.ndjson` (`turn_restored`).
 */
export async function startTurnHolder(hold: TurnHold, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const root = findPackageRoot();
  const script = path.join(root, 'dist', 'mam-turn-holder.cjs');
  if (!existsSync(script)) throw new MamError(`turn holder not found at ${script}; run the build`);
  const loader = path.join(root, 'bin', 'load-bundle.cjs');
  const child = spawn(process.execPath, existsSync(loader) ? [loader, script] : [script], {
    detached: true,
    stdio: ['ignore', 'pipe', 'ignore'],
    env: { ...env, [TURN_HOLD_ENV]: JSON.stringify(hold) },
  });
  const pid = child.pid;
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new MamError(`turn holder did not start within ${READY_WAIT_MS / 1000} s`)), READY_WAIT_MS);
      child.once('error', (err) => reject(new MamError(`turn holder did not start: ${err.message}`)));
      child.once('exit', (code) => reject(new MamError(`turn holder exited (${code}) before it held the turn`)));
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        if (out.includes(`${HOLDING_LINE}\n`)) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  } catch (err) {
    if (pid !== undefined) child.kill('SIGKILL');
    throw err;
  } finally {
    child.removeAllListeners();
    child.stdout!.destroy();
    child.unref();
  }
  return pid!;
}
