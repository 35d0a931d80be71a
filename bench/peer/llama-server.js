#!/usr/bin/env node
// A minimal OpenAI-style streaming /v1/completions server over llama.cpp (@fugood/llama.node),
// so `npm run bench` measures llama.cpp exactly as it measures ortllm: same HTTP client, same SSE
// parsing, same prompts. Usage: node llama-server.js MODEL.gguf PARALLEL [PORT]
'use strict';
const http = require('node:http');
const { loadModel } = require('@fugood/llama.node');

async function main() {
  const [modelPath, parallelArg, portArg] = process.argv.slice(2);
  const parallel = Number(parallelArg || 1);
  const context = await loadModel({
    model: modelPath,
    n_ctx: 1024 * Math.max(parallel, 1),
    n_parallel: parallel,
    n_threads: 1, // the benchmark's stated peer configuration
    n_batch: 512,
    kv_unified: true,
  });
  await context.parallel.enable({ n_parallel: parallel, n_batch: 512 });
  // Parallel mode does not add BOS (the serial path does): prepend it, as ortllm adds it.
  const bos = '<s>';

  const server = http.createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/completions') {
      res.writeHead(404).end();
      return;
    }
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      let params;
      try {
        params = JSON.parse(body);
      } catch {
        res.writeHead(400).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      let completionTokens = 0;
      try {
        const { promise, stop } = await context.parallel.completion(
          {
            prompt: bos + params.prompt,
            n_predict: params.max_tokens ?? 16,
            temperature: params.temperature ?? 0,
            ignore_eos: Boolean(params.ignore_eos),
          },
          (_id, data) => {
            completionTokens++;
            res.write(`data: ${JSON.stringify({ choices: [{ index: 0, text: data.token, finish_reason: null }] })}\n\n`);
          },
        );
        req.on('close', () => {
          if (!res.writableEnded) stop();
        });
        const result = await promise;
        const usage = { prompt_tokens: result.tokens_evaluated, completion_tokens: result.tokens_predicted ?? completionTokens };
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, text: '', finish_reason: result.stopped_limit ? 'length' : 'stop' }], usage })}\n\n`);
      } catch (err) {
        res.write(`data: ${JSON.stringify({ error: { message: String(err && err.message) } })}\n\n`);
      }
      res.end('data: [DONE]\n\n');
    });
  });
  server.listen(Number(portArg || 0), '127.0.0.1', () => {
    console.log(`llama.cpp peer ready at http://127.0.0.1:${server.address().port}`);
  });
  const shutdown = () => server.close(() => context.release().finally(() => process.exit(0)));
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
