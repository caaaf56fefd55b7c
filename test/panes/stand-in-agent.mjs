// An interactive stand-in for a coding agent run in a tmux pane: it reads its prompt from its
// terminal (stdin is the pane's tty) as a person would type it, and reports through files, never
// through the screen: the tests, like MAM, do not read what a pane shows.
//
// PANE_AGENT_MODE  lines: read PANE_AGENT_LINES lines (default 1) in the terminal's line mode
//                  paste: raw mode and bracketed paste, as TUI agents do; the prompt is the paste
//                  hang:  start a child in the same process group and wait to be killed
// PANE_AGENT_OUT   JSON written here (atomically): prompt, env, cwd, isTTY; or the pids in hang mode
// PANE_AGENT_READY written once the terminal is set up (paste, hang)
// PANE_AGENT_EXIT  exit code after reporting (default 0)
import { spawn } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';

const env = process.env;
const mode = env.PANE_AGENT_MODE ?? 'lines';
const exitCode = Number(env.PANE_AGENT_EXIT ?? '0');

function report(value) {
  const out = env.PANE_AGENT_OUT;
  writeFileSync(`${out}.tmp`, JSON.stringify(value));
  renameSync(`${out}.tmp`, out);
}

function ready() {
  if (env.PANE_AGENT_READY) writeFileSync(env.PANE_AGENT_READY, String(process.pid));
}

function done(prompt) {
  report({ prompt, env, cwd: process.cwd(), isTTY: Boolean(process.stdin.isTTY) });
  process.exit(exitCode);
}

let input = '';
if (mode === 'lines') {
  const want = Number(env.PANE_AGENT_LINES ?? '1');
  process.stdin.setEncoding('utf8').on('data', (chunk) => {
    input += chunk;
    const lines = input.split('\n');
    if (lines.length > want) done(lines.slice(0, want).join('\n'));
  });
} else if (mode === 'paste') {
  const START = '\x1b[200~';
  const END = '\x1b[201~';
  process.stdin.setRawMode(true);
  process.stdout.write('\x1b[?2004h', ready);
  process.stdin.setEncoding('utf8').on('data', (chunk) => {
    input += chunk;
    const start = input.indexOf(START);
    const end = input.indexOf(END);
    // The paste, then Enter (CR in raw mode) submits it; a terminal pastes line breaks as CR.
    if (start >= 0 && end > start && input.indexOf('\r', end) > end) done(input.slice(start + START.length, end).replace(/\r/g, '\n'));
  });
} else if (mode === 'hang') {
  const child = spawn('sleep', ['300'], { stdio: 'ignore' });
  report({ agent: process.pid, child: child.pid });
  ready();
  setInterval(() => undefined, 60_000);
}
