import type { ServerResponse } from 'node:http';
import { type ModelServer, type RecordedRequest, json, sse, startModelServer } from './model-server.ts';
import { type ApiError, ERROR_TEXT, type Scenario, shellCommand, turnAt } from './scenario.ts';

/**
 * The Anthropic Messages API (`POST /v1/messages`, streaming SSE) as Claude Code calls it with
 * ANTHROPIC_BASE_URL: message_start, one content block (text or a `Bash` tool_use), message_delta
 * with the stop reason, message_stop. Errors are the API's JSON error bodies (529 overloaded_error,
 * 400 invalid_request_error).
 */
interface MessagesRequest {
  model: string;
  stream?: boolean;
  messages: { role: string; content: string | { type: string; text?: string }[] }[];
}

const textOf = (content: MessagesRequest['messages'][number]['content']): string =>
  typeof content === 'string' ? content : content.map((c) => (c.type === 'text' ? (c.text ?? '') : '')).join('\n');

/** The user's prompt: the text of the user messages before the first answer. */
export function anthropicPrompt(body: MessagesRequest): string {
  const first = body.messages.findIndex((m) => m.role === 'assistant');
  return body.messages
    .slice(0, first === -1 ? undefined : first)
    .map((m) => textOf(m.content))
    .join('\n');
}

const ANTHROPIC_ERRORS: Record<ApiError, [number, string]> = {
  overloaded: [529, 'overloaded_error'],
  bad_request: [400, 'invalid_request_error'],
  server_error: [500, 'api_error'],
};

function answer(res: ServerResponse, body: MessagesRequest, turnIndex: number, scenario: Scenario): void {
  const turn = turnAt(scenario, turnIndex);
  if ('hang' in turn) return; // accepted, never answered
  if ('error' in turn) {
    const [status, type] = ANTHROPIC_ERRORS[turn.error];
    json(res, status, { type: 'error', error: { type, message: ERROR_TEXT[turn.error] } });
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const id = `msg_scripted_${turnIndex}`;
  const usage = { input_tokens: 10, output_tokens: 1 };
  sse(
    res,
    {
      type: 'message_start',
      message: { id, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage },
    },
    'message_start',
  );
  let stop: string;
  if ('text' in turn) {
    sse(res, { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start');
    sse(res, { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: turn.text } }, 'content_block_delta');
    stop = 'end_turn';
  } else {
    const input = { command: shellCommand(turn, anthropicPrompt(body)), description: 'Scripted step' };
    sse(
      res,
      { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: `toolu_scripted_${turnIndex}`, name: 'Bash', input: {} } },
      'content_block_start',
    );
    sse(res, { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(input) } }, 'content_block_delta');
    stop = 'tool_use';
  }
  sse(res, { type: 'content_block_stop', index: 0 }, 'content_block_stop');
  sse(res, { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } }, 'message_delta');
  sse(res, { type: 'message_stop' }, 'message_stop');
  res.end();
}

/**
 * The turn of a request is the number of answers already in its conversation, so a retried request
 * (Claude retries a 529) gets the same turn again.
 */
export function startAnthropicServer(scenario: Scenario): Promise<ModelServer> {
  return startModelServer((req: RecordedRequest, res) => {
    if (req.method !== 'POST' || !req.url.startsWith('/v1/messages'))
      return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: req.url } });
    const body = req.body as MessagesRequest;
    if (req.url.startsWith('/v1/messages/count_tokens')) return json(res, 200, { input_tokens: 10 });
    answer(res, body, body.messages.filter((m) => m.role === 'assistant').length, scenario);
  });
}
