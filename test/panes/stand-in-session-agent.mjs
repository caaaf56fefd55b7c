// An interactive stand-in for Claude Code or Codex in a named session's pane (issue 25): started as
// `claude` or `codex` (STAND_IN_AS), it takes prompt after prompt from its terminal as bracketed
// pastes, as the real TUIs do, and runs the hooks MAM configured with payloads shaped like the real
// ones (test/fixtures/agents/): Claude's SessionStart with its session_id and transcript_path,
// UserPromptSubmit, then at the end of each turn Stop. It reports through files, never the screen.
//
// As `codex` it behaves as Codex 0.171's TUI did (docs/agent-cli-facts.md §7.4): hooks given with
// `-c hooks.*` never run (untrusted), only `notify` does, with the thread's id as `thread-id`; what is
// typed in its first CODEX_DEAF_MS is lost; and after its first turn it also notifies for a title
// thread of its own (another thread-id, the prompt quoted inside its own), before the real turn's.
//
// Its conversation is a transcript file per session id in STAND_IN_STATE_DIR: `--resume <id>`
// (Claude) / `resume <id>` (Codex) go on with it, `--continue` / `resume --last` take the latest.
// As `gemini` (for which MAM sets no hooks) it runs the preamble's `started` and `completed` commands
// itself, as an obedient agent does. A turn's brief is the prompt's last line: `sleep:<ms>` makes the turn last that long, `crash`
// makes the agent exit 3 mid-turn.
//
// STAND_IN_ARGV_OUT  one JSON line per start, once its terminal is set up: {as, argv, pid}
// STAND_IN_LOG       one JSON line per turn: {pid, session_id, turn, history, brief}
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const env = process.env;
const as = env.STAND_IN_AS ?? 'claude';
const argv = process.argv.slice(2);
const stateDir = env.STAND_IN_STATE_DIR;
const after = (flag) => {
  const i = argv.indexOf(flag);
  return i === -1 ? undefined : argv[i + 1];
};

/** Hooks by event: [{matcher?, commands}] from Claude's --settings or Codex's -c overrides. */
const hooks = {};
let notify;
if (as === 'claude') {
  const settings = after('--settings');
  const parsed = settings === undefined ? {} : JSON.parse(readFileSync(settings, 'utf8'));
  for (const [event, groups] of Object.entries(parsed.hooks ?? {}))
    hooks[event] = groups.map((g) => ({ matcher: g.matcher, commands: (g.hooks ?? []).map((h) => h.command) }));
} else {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] !== '-c') continue;
    const value = argv[++i];
    // `hooks.*` are ignored: Codex runs no hook a person has not trusted.
    if (value.startsWith('notify=')) notify = JSON.parse(value.slice('notify='.length));
  }
}

let sessionId;
let source = 'startup';
if (as === 'claude' && after('--resume')) [sessionId, source] = [after('--resume'), 'resume'];
else if (as === 'claude' && argv.includes('--continue')) [sessionId, source] = [readFileSync(path.join(stateDir, 'last'), 'utf8'), 'resume'];
else if (as === 'gemini' && after('--resume'))
  [sessionId, source] = [after('--resume') === 'latest' ? readFileSync(path.join(stateDir, 'last'), 'utf8') : after('--resume'), 'resume'];
else if (as === 'codex' && argv[0] === 'resume')
  [sessionId, source] = [argv[1] === '--last' ? readFileSync(path.join(stateDir, 'last'), 'utf8') : argv[1], 'resume'];
else sessionId = randomUUID();
writeFileSync(path.join(stateDir, 'last'), sessionId);
const transcript = path.join(stateDir, `${sessionId}.jsonl`);
const history = () =>
  existsSync(transcript)
    ? readFileSync(transcript, 'utf8')
        .split('\n')
        .filter((l) => l !== '').length
    : 0;
const common = { session_id: sessionId, transcript_path: transcript, cwd: process.cwd() };

/** Runs the event's hooks synchronously, as both CLIs do, with the payload on stdin. */
function fire(event, fields, matchOn) {
  for (const group of hooks[event] ?? []) {
    if (group.matcher && matchOn !== undefined && !group.matcher.split('|').includes(matchOn)) continue;
    for (const command of group.commands) {
      const r = spawnSync('sh', ['-c', command], {
        input: JSON.stringify({ ...common, hook_event_name: event, ...fields }),
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      if (r.status !== 0) process.stderr.write(`stand-in ${as}: ${event} hook exited ${r.status}\n`);
    }
  }
}

function turn(prompt) {
  fire('UserPromptSubmit', { prompt });
  appendFileSync(transcript, `${JSON.stringify({ prompt })}\n`);
  const brief = prompt.trimEnd().split('\n').at(-1);
  if (env.STAND_IN_LOG) appendFileSync(env.STAND_IN_LOG, `${JSON.stringify({ pid: process.pid, session_id: sessionId, turn: history(), brief })}\n`);
  if (brief === 'crash') process.exit(3);
  if (as === 'gemini')
    for (const event of ['started', 'completed']) {
      const line = prompt.split('\n').find((l) => l.includes(`--event ${event} `));
      spawnSync('sh', ['-c', line.trim().replace(/"<[^>]*>"/, '"done by the stand-in"')], { stdio: ['ignore', 'ignore', 'inherit'] });
    }
  const sleep = /^sleep:(\d+)$/.exec(brief);
  setTimeout(
    () => {
      if (as === 'claude') fire('Stop', { permission_mode: 'default', stop_hook_active: false, last_assistant_message: 'Done.' });
      else if (notify) {
        if (history() === 1 && source === 'startup') codexNotify(randomUUID(), `Generate a concise, single-line task title.\n\nUser prompt:\n${prompt}`);
        codexNotify(sessionId, prompt);
      }
      busy = false;
      next();
    },
    sleep ? Number(sleep[1]) : 0,
  );
}

/** Codex's `notify`: the program and its arguments, the payload appended (as codex-rs does). */
function codexNotify(threadId, input) {
  const payload = {
    type: 'agent-turn-complete',
    'thread-id': threadId,
    'turn-id': randomUUID(),
    cwd: process.cwd(),
    client: 'codex-tui',
    'input-messages': [input],
    'last-assistant-message': 'Done.',
  };
  spawnSync(notify[0], [...notify.slice(1), JSON.stringify(payload)], { stdio: 'inherit' });
}

/** How long the Codex stand-in loses what is typed after its start (the real one lost a paste at once). */
const CODEX_DEAF_MS = 1_000;
const startedAt = Date.now();

const START = '\x1b[200~';
const END = '\x1b[201~';
let input = '';
let busy = false;
/** A paste, then Enter (CR in raw mode), is one prompt; what arrives while a turn runs waits. */
function next() {
  if (busy) return;
  const start = input.indexOf(START);
  const end = input.indexOf(END);
  const enter = end > start ? input.indexOf('\r', end) : -1;
  if (start < 0 || enter < 0) return;
  const prompt = input.slice(start + START.length, end).replace(/\r/g, '\n');
  input = input.slice(enter + 1);
  busy = true;
  turn(prompt);
}
process.stdin.setRawMode(true);
// Ready once the terminal is in paste mode: only then does SessionStart say so.
process.stdout.write('\x1b[?2004h', () => {
  if (env.STAND_IN_ARGV_OUT) appendFileSync(env.STAND_IN_ARGV_OUT, `${JSON.stringify({ as, argv, pid: process.pid })}\n`);
  fire('SessionStart', { source, model: 'stand-in' });
});
process.stdin.setEncoding('utf8').on('data', (chunk) => {
  if (as === 'codex' && Date.now() - startedAt < CODEX_DEAF_MS) return;
  input += chunk;
  next();
});
