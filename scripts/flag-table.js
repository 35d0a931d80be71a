#!/usr/bin/env node
// Prints the serve flag table of docs/serve-flags.md from the built flag tables
// (dist/src/config/flag-table.js). After adding a flag: `npm run build && npm run -s flag-table`,
// and paste the table into docs/serve-flags.md (a test checks the page holds it verbatim).
'use strict';
const path = require('node:path');
const { flagTableMarkdown } = require(path.join(__dirname, '..', 'dist', 'src', 'config', 'flag-table'));

process.stdout.write(flagTableMarkdown());
