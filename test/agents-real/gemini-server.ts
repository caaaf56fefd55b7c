import type { ServerResponse } from 'node:http';
import { type ModelServer, type RecordedRequest, json, startModelServer } from './model-server.ts';
import { type ApiError, ERROR_TEXT, type Scenario, shellCommand, turnAt } from './scenario.ts';

/**
 * The Gemini API as Gemini CLI calls it with GOOGLE_GEMINI_BASE_URL: the agent's turns on
 * `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` (one SSE `data:` chunk each), and its
 * side questions (JSON-schema answers: a task router, a next-speaker check) on `:generateContent`.
 * Errors are Google's JSON error bodies.
 */
interface Part {
  text?: string;
  functionCall?: unknown;
  functionResponse?: unknown;
}
interface GenerateRequest {
  contents: { role: string; parts: Part[] }[];
  generationConfig?: { responseJsonSchema?: JsonSchema; responseSchema?: JsonSchema };
}
interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  enum?: string[];
}

/** The user's words: the text of every user turn before the first answer. */
export function geminiPrompt(body: GenerateRequest): string {
  const first = body.contents.findIndex((c) => c.role === 'model');
  return body.contents
    .slice(0, first === -1 ? undefined : first)
    .flatMap((c) => c.parts.map((p) => p.text ?? ''))
    .join('\n');
}

const GEMINI_ERRORS: Record<ApiError, [number, string]> = {
  overloaded: [503, 'UNAVAILABLE'],
  bad_request: [400, 'INVALID_ARGUMENT'],
  server_error: [500, 'INTERNAL'],
};

/** A value of `schema`'s shape, for a side question: the first enum value, 1 for numbers, a word for strings. */
function sample(schema: JsonSchema | undefined): unknown {
  const type = schema?.type?.toLowerCase();
  if (schema?.enum?.length) return schema.enum[0];
  if (type === 'object') return Object.fromEntries(Object.entries(schema?.properties ?? {}).map(([k, v]) => [k, sample(v)]));
  if (type === 'integer' || type === 'number') return 1;
  if (type === 'boolean') return false;
  if (type === 'array') return [];
  return 'scripted';
}

const candidate = (part: Part) => ({
  candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
  usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
  modelVersion: 'scripted-model',
});

function answer(res: ServerResponse, body: GenerateRequest, turnIndex: number, scenario: Scenario): void {
  const turn = turnAt(scenario, turnIndex);
  if ('hang' in turn) return;
  if ('error' in turn) {
    const [code, status] = GEMINI_ERRORS[turn.error];
    json(res, code, { error: { code, message: ERROR_TEXT[turn.error], status } });
    return;
  }
  const part: Part =
    'text' in turn
      ? { text: turn.text }
      : { functionCall: { name: 'run_shell_command', args: { command: shellCommand(turn, geminiPrompt(body)), description: 'Scripted step' } } };
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(`data: ${JSON.stringify(candidate(part))}\r\n\r\n`);
}

/** The turn of a request is the number of tool calls already in its conversation (a retry gets the same turn). */
export function startGeminiServer(scenario: Scenario): Promise<ModelServer> {
  return startModelServer((req: RecordedRequest, res) => {
    const body = req.body as GenerateRequest;
    if (req.method === 'POST' && req.url.includes(':countTokens')) return json(res, 200, { totalTokens: 10 });
    if (req.method === 'POST' && req.url.includes(':generateContent')) {
      const schema = body.generationConfig?.responseJsonSchema ?? body.generationConfig?.responseSchema;
      return json(res, 200, candidate({ text: JSON.stringify(sample(schema)) }));
    }
    if (req.method !== 'POST' || !req.url.includes(':streamGenerateContent'))
      return json(res, 404, { error: { code: 404, message: req.url, status: 'NOT_FOUND' } });
    const calls = body.contents.filter((c) => c.role === 'model' && c.parts.some((p) => p.functionCall !== undefined)).length;
    answer(res, body, calls, scenario);
  });
}
