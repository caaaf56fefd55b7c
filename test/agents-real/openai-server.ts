import type { ServerResponse } from 'node:http';
import { type ModelServer, type RecordedRequest, json, sse, startModelServer } from './model-server.ts';
import { type ApiError, ERROR_TEXT, type Scenario, shellCommand, turnAt } from './scenario.ts';

/**
 * The OpenAI Responses API (`POST /v1/responses`, streaming SSE) as Codex calls it through a custom
 * model provider (`wire_api = "responses"`): response.created, one output item (an assistant message
 * or an `exec_command` function call), response.completed. Errors are the API's JSON error bodies.
 */
interface InputItem {
  type?: string;
  role?: string;
  content?: string | { type: string; text?: string }[];
  output?: unknown;
}
interface ResponsesRequest {
  model: string;
  input: InputItem[];
}

/** The user's words: every user message's text, in order (Codex adds its environment context as one). */
export function openaiPrompt(body: ResponsesRequest): string {
  return body.input
    .filter((i) => i.role === 'user')
    .map((i) => (typeof i.content === 'string' ? i.content : (i.content ?? []).map((c) => c.text ?? '').join('\n')))
    .join('\n');
}

const OPENAI_ERRORS: Record<ApiError, [number, string]> = {
  overloaded: [503, 'server_overloaded'],
  bad_request: [400, 'invalid_request_error'],
  server_error: [500, 'server_error'],
};

function answer(res: ServerResponse, body: ResponsesRequest, turnIndex: number, scenario: Scenario): void {
  const turn = turnAt(scenario, turnIndex);
  if ('hang' in turn) return;
  if ('error' in turn) {
    const [status, type] = OPENAI_ERRORS[turn.error];
    json(res, status, { error: { message: ERROR_TEXT[turn.error], type, param: null, code: type } });
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let seq = 0;
  const event = (type: string, fields: Record<string, unknown>) => sse(res, { type, sequence_number: seq++, ...fields }, type);
  const response = {
    id: `resp_scripted_${turnIndex}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'in_progress',
    model: body.model,
    output: [],
  };
  event('response.created', { response });
  const item =
    'text' in turn
      ? {
          id: `msg_scripted_${turnIndex}`,
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: turn.text, annotations: [] }],
        }
      : {
          id: `fc_scripted_${turnIndex}`,
          type: 'function_call',
          status: 'completed',
          call_id: `call_scripted_${turnIndex}`,
          name: 'exec_command',
          arguments: JSON.stringify({ cmd: shellCommand(turn, openaiPrompt(body)) }),
        };
  event('response.output_item.added', { output_index: 0, item });
  event('response.output_item.done', { output_index: 0, item });
  const usage = {
    input_tokens: 10,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 15,
  };
  event('response.completed', { response: { ...response, status: 'completed', output: [item], usage } });
  res.end();
}

/** The turn of a request is the number of tool calls already in its input (a retry gets the same turn). */
export function startOpenAiServer(scenario: Scenario): Promise<ModelServer> {
  return startModelServer((req: RecordedRequest, res) => {
    if (req.method !== 'POST' || !req.url.startsWith('/v1/responses'))
      return json(res, 404, { error: { message: `no ${req.method} ${req.url} here`, type: 'not_found' } });
    const body = req.body as ResponsesRequest;
    answer(res, body, body.input.filter((i) => i.type === 'function_call').length, scenario);
  });
}
