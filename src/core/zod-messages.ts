import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';

// zod/mini ships without messages (it is ~30 KB bundled where classic zod is ~750 KB and ~65 ms
// of every command's start-up); the English ones are 8 KB. Imported for this side effect by the
// modules whose errors reach people: configuration, records and payloads.
z.config(en());
