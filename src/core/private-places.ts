import { type Stats, constants, lstatSync, statSync } from 'node:fs';
import path from 'node:path';
import { UnsafePlace } from './errors.ts';

/**
 * What MAM trusts on disk, checked as ssh checks `~/.ssh` (issue 27 item 3): a record, an audit
 * line or a `.mam.env` that another local user can write lets that user forge an outcome or point
 * the broker at a listener that collects `MQTT_PASSWORD`. So the places are refused — with the fix
 * in the message, exit 64 — when they are open to others, and MAM never follows a symbolic link
 * planted inside the registry or the logs.
 *
 * Windows has no such modes; there the checks are skipped.
 */
const CHECKED = process.platform !== 'win32';

/** `O_NOFOLLOW`: opening a file in the registry or the logs never goes through a symbolic link. */
export const NO_FOLLOW: number = constants.O_NOFOLLOW ?? 0;

const GROUP_OR_WORLD_WRITE = 0o022;
const GROUP_OR_WORLD_ANY = 0o077;
const WORLD_WRITE = 0o002;
const STICKY = 0o1000;

const modeText = (st: Stats): string => `0${(st.mode & 0o7777).toString(8).padStart(3, '0')}`;

function tooOpen(place: string, st: Stats, fix: string): UnsafePlace {
  return new UnsafePlace(`${place}: permissions are too open (mode ${modeText(st)}); ${fix}`);
}

/** The user running MAM, or root: nobody else may own what MAM reads as its own. */
function assertOwned(place: string, st: Stats): void {
  const uid = process.getuid?.();
  if (uid === undefined || st.uid === uid || st.uid === 0) return;
  throw new UnsafePlace(`${place}: owned by uid ${st.uid}, not by you (uid ${uid}) or root; chown ${uid} ${place}`);
}

function statOrUndefined(place: string): Stats | undefined {
  try {
    return statSync(place);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * The registry and log folders (`.mam/jobs`, `.mam/logs`, or what MAM_REGISTRY_DIR / MAM_LOG_DIR
 * name): owned by you or root, writable by nobody else. The folder holding one is checked too:
 * `.mam` as strictly, any other only for world-write without the sticky bit (a project folder of
 * mode 0775 under a user-private group is common and harmless; `/tmp`'s sticky bit keeps others
 * from renaming our folder away). A folder not made yet is fine: MAM makes it 0700.
 */
export function assertPrivateFolder(dir: string): void {
  if (!CHECKED) return;
  const st = statOrUndefined(dir);
  if (st !== undefined) {
    assertOwned(dir, st);
    if (st.mode & GROUP_OR_WORLD_WRITE) throw tooOpen(dir, st, `chmod 700 ${dir}`);
  }
  const parent = path.dirname(dir);
  const pst = statOrUndefined(parent);
  if (pst === undefined || parent === dir) return;
  if (path.basename(parent) === '.mam') {
    assertOwned(parent, pst);
    if (pst.mode & GROUP_OR_WORLD_WRITE) throw tooOpen(parent, pst, `chmod 700 ${parent}`);
  } else if (pst.mode & WORLD_WRITE && !(pst.mode & STICKY)) {
    throw tooOpen(parent, pst, `chmod o-w ${parent} (or chmod +t), or keep the registry elsewhere`);
  }
}

/** Keys whose values are secrets (the broker password, the signing secrets, tokens, API keys). */
const SECRET_KEY = /PASSWORD|SECRET|TOKEN|API_KEY/;

/**
 * `.mam.env`, as opened (the target of a symbolic link the owner made is what counts): owned by
 * you or root; writable by nobody else, ever; readable by others only while it holds no secret,
 * so a file of broker host and topic root may stay 0644.
 */
export function assertPrivateEnvFile(file: string, st: Stats, keys: readonly string[]): void {
  if (!CHECKED) return;
  assertOwned(file, st);
  if (st.mode & GROUP_OR_WORLD_WRITE) throw tooOpen(file, st, `chmod 600 ${file}`);
  const secret = keys.find((k) => SECRET_KEY.test(k));
  if (secret !== undefined && st.mode & GROUP_OR_WORLD_ANY) throw tooOpen(file, st, `it holds ${secret}: chmod 600 ${file}`);
}

/**
 * Refuses a symbolic link where MAM is about to write a file of the registry or the logs
 * (write-file-atomic resolves one and would write the target, wherever it points).
 */
export function refuseSymlink(file: string): void {
  let st: Stats;
  try {
    st = lstatSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (st.isSymbolicLink()) throw symlinkRefused(file);
}

export function symlinkRefused(file: string): UnsafePlace {
  return new UnsafePlace(`${file}: is a symbolic link; MAM never follows one inside the registry or the logs (remove it)`);
}

/** An `open` that failed because of `NO_FOLLOW` (ELOOP on Linux and macOS; EMLINK on FreeBSD). */
export function isSymlinkRefusal(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ELOOP' || code === 'EMLINK';
}
