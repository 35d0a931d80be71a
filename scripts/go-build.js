// Builds a Go program kept in this repository with Debian's Go toolchain and its packaged
// libraries under /usr/share/gocode, in GOPATH mode, so nothing is downloaded. Shared by the
// chart renderer (scripts/chart-render) and the test tools (test/fixtures/*/main.go).
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const GOPATH = '/usr/share/gocode';

/** Where Debian installs the Go package `importPath`. */
function debianGoPackage(importPath) {
  return path.join(GOPATH, 'src', importPath);
}

/** Compiles the program in `sourceDir` to `binary` unless that is newer than every source; returns `binary`. */
function goBuild(sourceDir, binary) {
  const sources = fs.readdirSync(sourceDir).filter((f) => f.endsWith('.go'));
  const newest = Math.max(...sources.map((f) => fs.statSync(path.join(sourceDir, f)).mtimeMs));
  if (fs.existsSync(binary) && fs.statSync(binary).mtimeMs >= newest) return binary;
  const outDir = path.dirname(binary);
  fs.mkdirSync(outDir, { recursive: true });
  // Built beside the target and renamed: concurrent test files never run half a binary.
  const partial = `${binary}.${process.pid}`;
  const env = { ...process.env, GO111MODULE: 'off', GOPATH, GOCACHE: path.join(outDir, 'go-build'), GOFLAGS: '' };
  const build = spawnSync('go', ['build', '-o', partial, '.'], { cwd: sourceDir, env, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`building ${path.relative(process.cwd(), sourceDir)} failed:\n${build.stderr}`);
  fs.renameSync(partial, binary);
  return binary;
}

module.exports = { GOPATH, debianGoPackage, goBuild };
