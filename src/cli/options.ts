import type * as z from 'zod/mini';
import { UsageError } from '../core/errors.ts';
import type { OutputStream } from './context.ts';

/** Validates commander's raw options into a typed object; the first problem is a usage error naming its flag. */
export function parseOptions<S extends z.ZodMiniType>(schema: S, raw: Record<string, unknown>): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const key = String(issue.path[0] ?? '');
  const flag = key ? `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}` : 'options';
  throw new UsageError(`${flag}: ${issue.message}`);
}

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** One JSON object on stdout: indented for a person at a terminal, one line for a pipe. */
export function printJson(out: OutputStream, value: unknown): void {
  const text = out.isTTY ? JSON.stringify(value, null, 2) : JSON.stringify(value);
  out.write(`${text}\n`);
}
