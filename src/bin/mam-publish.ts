import { notYet } from '../cli/commands/not-yet.ts';
import { runStandalone } from '../cli/program.ts';

await runStandalone('mam-publish', notYet('publish', 'record, sign and publish one lifecycle event'));
