#!/usr/bin/env node
// Prints README's serve flag table from the built flag tables (dist/src/config/flag-table.js).
// After adding a flag: `npm run build && npm run -s flag-table`, and paste the table into README.md
// (a test checks README holds it verbatim).
'use strict';
const path = require('node:path');
const { flagTableMarkdown } = require(path.join(__dirname, '..', 'dist', 'src', 'config', 'flag-table'));

process.stdout.write(flagTableMarkdown());
