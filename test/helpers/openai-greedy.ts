// The real server with an `openai` client, and a served model's greedy continuation of a token-id prompt, as token ids, through the official
// `openai` client (completions with return_tokens_as_token_ids).
import OpenAIClient from 'openai';
import type OpenAI from 'openai';
import { startServer, type TestServer } from './server';

export async function greedyTokenIds(client: OpenAI, model: string, prompt: number[], count: number): Promise<number[]> {
  const res = await client.completions.create({
    model,
    prompt,
    max_tokens: count,
    temperature: 0,
    logprobs: 1,
    ignore_eos: true,
    return_tokens_as_token_ids: true,
  } as OpenAI.CompletionCreateParamsNonStreaming);
  return res.choices[0].logprobs!.tokens!.map((t) => Number(t.replace('token_id:', '')));
}

/** The real server on `model` (a directory or GGUF file) as `name`, with an `openai` client for it. */
export async function serveWithClient(model: string, name: string, maxModelLen = 512): Promise<{ server: TestServer; client: OpenAIClient }> {
  const server = await startServer(['--served-model-name', name, '--max-model-len', String(maxModelLen)], { model });
  return { server, client: new OpenAIClient({ baseURL: `${server.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 }) };
}
