import { runMain } from '../cli/run-main.ts';
import { VERBS } from '../cli/verbs.ts';

void runMain('mam', VERBS);
