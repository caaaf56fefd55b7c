/**
 * The seed's @mention response rules (docs/coordination.md): what one agent does with one chat
 * message — answer it, stay silent, or race the others for the turn. Pure: the command
 * (`mam mentions`) reads the message and runs the claim; this module only decides.
 *
 * | mentions (the thread parent's, for a reply in a thread)  | action                   |
 * |---|---|
 * | only me                                                  | respond, no claim race   |
 * | only other agents                                        | silent                   |
 * | several agents, me among them                            | respond (each of them)   |
 * | none                                                     | claim the turn           |
 *
 * A thread is owned by the agents its parent mentions; a parent that mentions none leaves each
 * reply to be decided on its own, as a message outside a thread would be.
 */

/** Every name an agent answers to, lowercased: its agent name and its display names. */
export interface AliasBook {
  /** alias (lowercase) → agent name. */
  readonly byAlias: ReadonlyMap<string, string>;
  /** Whether the fleet's names were given: then a mention of anyone else (a person) is no agent's. */
  readonly complete: boolean;
}

export type MentionAction = 'respond' | 'silent' | 'claim';

export type MentionRule =
  | 'only_me_mentioned'
  | 'others_mentioned'
  | 'several_mentioned_me_among'
  | 'no_mention'
  | 'thread_mine'
  | 'thread_others'
  | 'thread_shared_with_me';

export interface MentionVerdict {
  action: MentionAction;
  rule: MentionRule;
  /** The agents whose mentions decided, by agent name, in the order first mentioned. */
  mentioned: string[];
  decidedBy: 'message' | 'thread_parent';
}

export interface MentionQuestion {
  agent: string;
  /** The message's mentions: agent names or aliases as written, `@` optional. */
  mentions: readonly string[];
  /** For a reply in a thread: the parent message's mentions (empty when it has none). */
  threadMentions?: readonly string[] | undefined;
}

/**
 * An alias book from `MAM_AGENT_ALIASES` (`ada=Ada,Ada Lovelace;bob=Bob`) plus the asking agent's
 * own `--alias` names. Every agent also answers to its own name, in any case.
 */
export function aliasBook(spec: string | undefined, me: string, myAliases: readonly string[] = []): AliasBook {
  const byAlias = new Map<string, string>();
  const add = (alias: string, agent: string) => {
    const key = normalize(alias);
    if (key !== '' && !byAlias.has(key)) byAlias.set(key, agent);
  };
  let complete = false;
  for (const entry of (spec ?? '').split(';')) {
    const eq = entry.indexOf('=');
    const agent = (eq < 0 ? entry : entry.slice(0, eq)).trim();
    if (agent === '') continue;
    complete = true;
    add(agent, agent);
    for (const alias of eq < 0 ? [] : entry.slice(eq + 1).split(',')) add(alias, agent);
  }
  add(me, me);
  for (const alias of myAliases) add(alias, me);
  return { byAlias, complete };
}

/** Mentions as written in a message's text: `@name`, `<@name>`, and `@Display Name` for a known alias. */
export function mentionsInText(text: string, book: AliasBook): string[] {
  const found: Array<{ at: number; name: string }> = [];
  const lower = text.toLowerCase();
  // Known aliases first, longest first, so `@Ada Lovelace` is not read as `@Ada` plus prose.
  const taken: Array<[number, number]> = [];
  for (const alias of [...book.byAlias.keys()].sort((a, b) => b.length - a.length)) {
    let from = 0;
    for (;;) {
      const at = lower.indexOf(`@${alias}`, from);
      if (at < 0) break;
      from = at + 1;
      const end = at + alias.length + 1;
      if (!isBoundary(lower[at - 1], 'before') || !isBoundary(lower[end], 'after')) continue;
      if (taken.some(([s, e]) => at < e && end > s)) continue;
      taken.push([at, end]);
      found.push({ at, name: alias });
    }
  }
  // Then any other `@word`: a name the book does not know.
  for (const m of text.matchAll(/@([A-Za-z0-9_][A-Za-z0-9_.-]*[A-Za-z0-9_]|[A-Za-z0-9_])/g)) {
    const at = m.index;
    if (!isBoundary(lower[at - 1], 'before') || taken.some(([s, e]) => at >= s && at < e)) continue;
    found.push({ at, name: m[1]! });
  }
  return found.sort((a, b) => a.at - b.at).map((f) => f.name);
}

export function decideMention(q: MentionQuestion, book: AliasBook): MentionVerdict {
  // The asking agent by the book's spelling of it (`Ada` asking, `ada=…` in the book).
  const me = book.byAlias.get(normalize(q.agent)) ?? q.agent;
  if (q.threadMentions !== undefined) {
    const owners = agentsOf(q.threadMentions, book);
    if (owners.length > 0) {
      const rule = !owners.includes(me) ? 'thread_others' : owners.length === 1 ? 'thread_mine' : 'thread_shared_with_me';
      return { action: rule === 'thread_others' ? 'silent' : 'respond', rule, mentioned: owners, decidedBy: 'thread_parent' };
    }
  }
  const mentioned = agentsOf(q.mentions, book);
  if (mentioned.length === 0) return { action: 'claim', rule: 'no_mention', mentioned, decidedBy: 'message' };
  if (!mentioned.includes(me)) return { action: 'silent', rule: 'others_mentioned', mentioned, decidedBy: 'message' };
  const rule = mentioned.length === 1 ? 'only_me_mentioned' : 'several_mentioned_me_among';
  return { action: 'respond', rule, mentioned, decidedBy: 'message' };
}

/** Mentions resolved to agent names, first mention first, each once; a person's name is dropped when the book is complete. */
function agentsOf(mentions: readonly string[], book: AliasBook): string[] {
  const agents: string[] = [];
  for (const raw of mentions) {
    const key = normalize(raw);
    if (key === '') continue;
    const agent = book.byAlias.get(key) ?? (book.complete ? undefined : key);
    if (agent !== undefined && !agents.includes(agent)) agents.push(agent);
  }
  return agents;
}

function normalize(name: string): string {
  return name.trim().replace(/^<?@/, '').replace(/>$/, '').replace(/\s+/g, ' ').toLowerCase();
}

/** An `@` starts a mention after nothing, a space or punctuation — not inside `me@host`; one ends before anything but a name character. */
function isBoundary(ch: string | undefined, side: 'before' | 'after'): boolean {
  if (ch === undefined) return true;
  return side === 'before' ? !/[A-Za-z0-9_.@]/.test(ch) : !/[A-Za-z0-9_]/.test(ch);
}
