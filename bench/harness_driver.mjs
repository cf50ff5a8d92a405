#!/usr/bin/env node
/**
 * Driver of bench_ingest.py for the MCPL reference host (the TypeScript mcpl-harness).
 *
 * It loads the harness's host engine from a local build named by MCPL_HARNESS_DIR (nothing of
 * the harness is copied here), has that engine spawn the connector given after `--` over
 * stdio, completes the handshake, then lets the connector run: the engine answers its
 * `channels/register` and `channels/incoming` requests by itself. The driver exits 0 once the
 * connector has written OUT (a non-empty file), or 1 if the connector exits first. On a clean
 * exit it first writes OUT.cpu: its own CPU time so far (`process.cpuUsage()`, microseconds),
 * which the bench reads because the process may be gone before it can look in /proc.
 *
 * Usage: MCPL_HARNESS_DIR=/path/to/mcpl-harness node harness_driver.mjs OUT -- COMMAND [ARGS...]
 *
 * The harness must be built (`npm run build`), so that dist/src/session.js exists there.
 */
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

// What the bench's other hosts grant the connector in their featureSets/update.
const GRANT = ['channels.register', 'channels.incoming', 'channels.publish'];
const POLL_MS = 10;

function fail(message, code = 2) {
  process.stderr.write(`harness_driver: ${message}\n`);
  process.exit(code);
}

const argv = process.argv.slice(2);
if (argv.length < 3 || argv[1] !== '--') {
  fail('usage: MCPL_HARNESS_DIR=DIR node harness_driver.mjs OUT -- COMMAND [ARGS...]');
}
const out = argv[0];
const [command, ...args] = argv.slice(2);
const harnessDir = process.env.MCPL_HARNESS_DIR;
if (!harnessDir) fail('MCPL_HARNESS_DIR is not set');
const engine = join(resolve(harnessDir), 'dist', 'src', 'session.js');
if (!existsSync(engine)) fail(`${engine} is missing: build the harness first (npm run build)`);

const { HostSession } = await import(pathToFileURL(engine).href);

function outWritten() {
  try {
    return statSync(out).size > 0;
  } catch {
    return false;
  }
}

// No state file (the harness would otherwise write one in the working folder) and no human in
// the loop: any interactive request is answered at once.
const session = new HostSession({ command, args, statePath: null, autoApprove: true });
let done = false;
let poll;

function finish(code) {
  if (done) return;
  done = true;
  clearInterval(poll);
  session.close();
  if (code === 0) writeFileSync(`${out}.cpu`, JSON.stringify(process.cpuUsage()));
  process.exit(code);
}

session.on('exit', (code) => {
  if (outWritten()) finish(0);
  process.stderr.write(`harness_driver: the connector exited (${code}) before writing ${out}\n`);
  finish(1);
});

try {
  await session.start();
} catch (err) {
  // start() runs initialize, then lists tools and channels; the bench connector offers no
  // tools and answers tools/list with an error. Only a failed initialize is fatal.
  if (!session.snapshot().connected) {
    process.stderr.write(`harness_driver: handshake failed: ${err?.message ?? err}\n`);
    finish(1);
  }
}

// The engine's own featureSets/update is a notification; the bench connector (like the other
// hosts of the bench) waits for it as a request, so it goes through the engine's raw request.
try {
  await session.raw('featureSets/update', { effectiveCapabilities: GRANT });
} catch (err) {
  process.stderr.write(`harness_driver: featureSets/update failed: ${err?.message ?? err}\n`);
  finish(1);
}

poll = setInterval(() => {
  if (outWritten()) finish(0);
}, POLL_MS);
