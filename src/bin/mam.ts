import { runMain } from '../cli/run-main.ts';
import { MAM } from '../cli/verbs.ts';

void runMain('mam', MAM);
