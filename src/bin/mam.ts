import { runUmbrella } from '../cli/program.ts';
import { VERBS } from '../cli/verbs.ts';

await runUmbrella('mam', VERBS);
