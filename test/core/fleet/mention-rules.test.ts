import { describe, expect, it } from 'vitest';
import { aliasBook, decideMention, mentionsInText } from '../../../src/core/fleet/mention-rules.ts';

/** The seed's @mention response rules, as a table (src/core/fleet/mention-rules.ts). */

const open = aliasBook(undefined, 'ada');
const fleet = aliasBook('ada=Ada,Ada Lovelace;bob=Bob,Bobby;cy=Cy', 'ada');

describe('decideMention: the seed table', () => {
  it.each<[string, string[], string[] | undefined, string, string, string[]]>([
    ['only me mentioned', ['ada'], undefined, 'respond', 'only_me_mentioned', ['ada']],
    ['only another agent mentioned', ['bob'], undefined, 'silent', 'others_mentioned', ['bob']],
    ['two others mentioned', ['bob', 'cy'], undefined, 'silent', 'others_mentioned', ['bob', 'cy']],
    ['several mentioned, me among them', ['bob', 'ada'], undefined, 'respond', 'several_mentioned_me_among', ['bob', 'ada']],
    ['no mention', [], undefined, 'claim', 'no_mention', []],
    ['a thread owned by me: its reply mentions no one', [], ['ada'], 'respond', 'thread_mine', ['ada']],
    ['a thread owned by me: its reply mentions another', ['bob'], ['ada'], 'respond', 'thread_mine', ['ada']],
    ['a thread owned by another: its reply mentions me', ['ada'], ['bob'], 'silent', 'thread_others', ['bob']],
    ['a thread both own', [], ['ada', 'bob'], 'respond', 'thread_shared_with_me', ['ada', 'bob']],
    ['a thread nobody owns, a reply with no mention', [], [], 'claim', 'no_mention', []],
    ['a thread nobody owns, a reply to me', ['ada'], [], 'respond', 'only_me_mentioned', ['ada']],
    ['a thread nobody owns, a reply to another', ['bob'], [], 'silent', 'others_mentioned', ['bob']],
  ])('%s', (_label, mentions, threadMentions, action, rule, mentioned) => {
    const v = decideMention({ agent: 'ada', mentions, threadMentions }, fleet);
    expect(v).toEqual({ action, rule, mentioned, decidedBy: threadMentions !== undefined && threadMentions.length > 0 ? 'thread_parent' : 'message' });
  });

  it('names in any case, with @ or <@…>, display names and repeats all resolve to agent names, once', () => {
    expect(decideMention({ agent: 'ada', mentions: ['@ADA', '<@Ada Lovelace>', 'ada'] }, fleet)).toMatchObject({
      action: 'respond',
      rule: 'only_me_mentioned',
    });
    expect(decideMention({ agent: 'Ada', mentions: ['ada'] }, fleet)).toMatchObject({ action: 'respond', mentioned: ['ada'] });
    expect(decideMention({ agent: 'bob', mentions: ['Bobby', 'Ada Lovelace'] }, fleet)).toMatchObject({
      rule: 'several_mentioned_me_among',
      mentioned: ['bob', 'ada'],
    });
  });

  it('with the fleet named, a mention of a person is no agent’s: the turn is claimed; without, it silences', () => {
    expect(decideMention({ agent: 'ada', mentions: ['alice'] }, fleet)).toMatchObject({ action: 'claim', mentioned: [] });
    expect(decideMention({ agent: 'ada', mentions: ['alice'] }, open)).toMatchObject({ action: 'silent', mentioned: ['alice'] });
    // `--alias` names of the asking agent count even without a fleet list.
    expect(decideMention({ agent: 'ada', mentions: ['Countess'] }, aliasBook(undefined, 'ada', ['Countess']))).toMatchObject({ action: 'respond' });
  });
});

describe('mentionsInText', () => {
  it.each<[string, string[]]>([
    ['@ada can you look?', ['ada']],
    ['thanks @Ada Lovelace, and @bob.', ['ada lovelace', 'bob']],
    ['<@bob> and <@cy>: review', ['bob', 'cy']],
    ['mail me at someone@ada.example', []],
    ['@@ada', []],
    ['no one here', []],
    ["@bobby's turn, @alice too", ['bobby', 'alice']],
    ['(@cy)', ['cy']],
  ])('%j → %j', (text, want) => {
    expect(mentionsInText(text, fleet)).toEqual(want);
  });

  it('a display name is taken whole, not as its first word plus prose', () => {
    const v = decideMention({ agent: 'ada', mentions: mentionsInText('@Ada Lovelace please', fleet) }, fleet);
    expect(v).toMatchObject({ action: 'respond', mentioned: ['ada'] });
  });
});
