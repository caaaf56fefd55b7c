import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors.ts';
import { assertPrivateEnvFile } from '../private-places.ts';

/**
 * Parses `.mam.env`: KEY=VALUE lines; blank lines and `#` comments skipped; an optional
 * `export ` prefix and one pair of surrounding quotes are removed, as a shell user would expect.
 */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    const key = line
      .slice(0, eq)
      .replace(/^export\s+/, '')
      .trim();
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) continue;
    const value = line.slice(eq + 1).trim();
    // `KEY="a b" # note` is quoted too: the comment after the closing quote goes, the quotes with it.
    const quoted = /^(["'])(.*)\1(?:\s+#.*)?$/.exec(value);
    out[key] = quoted ? quoted[2]! : value.replace(/\s+#.*$/, '');
  }
  return out;
}

/**
 * Which file to read (contract §7): with `MAM_ENV_FILE` only that one, else `<root>/.mam.env`.
 * A missing file is skipped; one that exists but cannot be read is an error naming it, and so is
 * one that others could write, or read while it holds a secret (src/core/private-places.ts).
 */
export function readEnvFile(env: NodeJS.ProcessEnv, root: string, cwd: string = root): Record<string, string> {
  // A relative MAM_ENV_FILE is relative to where the command runs, as any shell user expects.
  const file = env.MAM_ENV_FILE ? path.resolve(cwd, env.MAM_ENV_FILE) : path.join(root, '.mam.env');
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO put in its place must not hang every command.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unknown';
    if (code === 'ENOENT') return {};
    throw new ConfigError(`${file}: cannot read (${code})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new ConfigError(`${file}: cannot read (${st.isDirectory() ? 'EISDIR' : 'not a regular file'})`);
    const vars = parseEnvFile(readFileSync(fd, 'utf8'));
    assertPrivateEnvFile(file, st, Object.keys(vars));
    return vars;
  } finally {
    closeSync(fd);
  }
}

/** Variables already in the environment win over the file's; an empty one (`MQTT_BROKER=`) does not erase it. */
export function mergeEnv(fileVars: Record<string, string>, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const merged: NodeJS.ProcessEnv = { ...fileVars };
  for (const [k, v] of Object.entries(env)) if (v !== undefined && (v !== '' || !(k in fileVars))) merged[k] = v;
  return merged;
}
