#!/usr/bin/env node
// CommonJS on purpose (bin/package.json): an ESM launcher would cost the ESM loader plus a
// lexer pass over the whole bundle on every start. load-bundle.cjs adds a V8 code cache.
require('./load-bundle.cjs')('mam-close');
