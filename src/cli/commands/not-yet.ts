import { MamError } from '../../core/errors.ts';
import type { CommandSpec } from '../program.ts';

/** A command of the contract that this version does not provide yet: exit 1 with one line. */
export function notYet(name: string, summary: string): CommandSpec {
  return {
    name,
    summary: `${summary} (not yet available)`,
    configure: (cmd) => cmd.allowUnknownOption(true).allowExcessArguments(true),
    async run() {
      throw new MamError(`mam ${name} is not available in this version yet`);
    },
  };
}
