import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { UsageError } from '../core/errors.ts';

export interface FlagFileOptions {
  /** The flag as the user wrote it, to start every error: `--brief-file x.md`. */
  where: string;
  /** Refuse more than this many bytes (a file that grows while read is cut at the bound, then refused). */
  maxBytes: number;
  /** A file of credentials: the user's own and open to no one else, as ssh wants a private key. */
  private?: boolean;
}

/**
 * A file a flag names (`--brief-file F`, `--notify @F`), read whole, safely: checked on the open file,
 * not the path (no swap between check and read); opened O_NONBLOCK so that a FIFO is refused instead
 * of waiting for a writer; only a regular file, and never more than `maxBytes` (`/dev/zero` is not
 * a regular file; a huge one is refused before it is read). `-` is stdin: a pipe is read up to the bound.
 */
export function readFlagFile(file: string, options: FlagFileOptions): string {
  const { where } = options;
  const stdin = file === '-';
  let fd: number | undefined;
  try {
    fd = stdin ? 0 : openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
    const stat = fstatSync(fd);
    if (!stdin && !stat.isFile()) throw new UsageError(`${where}: not a regular file`);
    if (options.private) {
      if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) throw new UsageError(`${where}: not yours`);
      if ((stat.mode & 0o077) !== 0) {
        const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
        throw new UsageError(`${where}: permissions are too open (mode ${mode}); chmod 600 it`);
      }
    }
    if (stat.isFile() && stat.size > options.maxBytes) throw tooLarge(options);
    return readBounded(fd, options);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`${where}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  } finally {
    if (fd !== undefined && !stdin) closeSync(fd);
  }
}

function readBounded(fd: number, options: FlagFileOptions): string {
  const buffer = Buffer.alloc(options.maxBytes + 1);
  let length = 0;
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, buffer, length, buffer.length - length, null);
    } catch (err) {
      // stdin as a non-blocking pipe with no writer yet: wait for it as `cat` would.
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') continue;
      throw err;
    }
    if (n === 0) break;
    length += n;
    if (length > options.maxBytes) throw tooLarge(options);
  }
  return buffer.toString('utf8', 0, length);
}

/** Text already in memory (a test's stdin) held to the same bound as a file: the same error. */
export function boundedText(text: string, options: Pick<FlagFileOptions, 'where' | 'maxBytes'>): string {
  if (Buffer.byteLength(text) > options.maxBytes) throw tooLarge(options);
  return text;
}

function tooLarge(options: Pick<FlagFileOptions, 'where' | 'maxBytes'>): UsageError {
  return new UsageError(`${options.where}: larger than ${options.maxBytes} bytes`);
}
