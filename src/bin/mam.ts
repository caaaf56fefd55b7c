import { runUmbrella } from '../cli/program.ts';
import { VERBS } from '../cli/verbs.ts';

void runUmbrella('mam', VERBS);
