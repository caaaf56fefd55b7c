import { notYet } from '../cli/commands/not-yet.ts';
import { runStandalone } from '../cli/program.ts';

await runStandalone('mam-subscribe', notYet('subscribe', 'watch jobs and exit with their outcome'));
