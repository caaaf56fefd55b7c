import { notYet } from '../cli/commands/not-yet.ts';
import { runStandalone } from '../cli/program.ts';

await runStandalone('mam-remote', notYet('remote', 'dispatch a job to, or run jobs from, another host'));
