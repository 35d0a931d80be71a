// `ortllm serve`: builds the app, listens, prints the ready line, and shuts down gracefully on
// SIGTERM/SIGINT (stop accepting, let in-flight requests finish within --shutdown-timeout,
// stop the engine, exit 0). A second signal exits at once.

import { Logger } from '@nestjs/common';
import type { AddressInfo } from 'node:net';
import { createApp } from '../app-factory';
import { reportedModelName, ServerConfig } from '../config/server-config';
import { EngineService } from '../modules/engine/engine.service';

const ALL_INTERFACES = '0.0.0.0';
/** How long the engine gets to stop once the shutdown timeout has passed. */
const ENGINE_STOP_GRACE_MS = 10_000;

export async function serve(config: ServerConfig, notices: string[] = []): Promise<void> {
  const logger = new Logger('ortllm');
  // vLLM flags accepted without effect: one line each, before the (long) model load.
  for (const notice of notices) logger.warn(notice);
  const app = await createApp(config);
  if (config.uds) await app.listen({ path: config.uds });
  else await app.listen({ port: config.port, host: config.host ?? ALL_INTERFACES });
  // One line, on stdout, that scripts parse: with --port 0 it is the only way to learn the port.
  process.stdout.write(`INFO ortllm serving ${reportedModelName(config)} at ${listeningAt(app.getHttpServer().address(), config)}\n`);

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn(`${signal} again: exiting now`);
      process.exit(0);
    }
    stopping = true;
    logger.log(`${signal}: no new connections; waiting up to ${config.shutdownTimeoutSeconds}s for requests in flight`);
    const deadline = setTimeout(() => {
      // Stop the engine first: its in-flight streams end with an error frame, and exiting while
      // the worker thread is inside onnxruntime would abort the process instead of exiting 0.
      logger.warn('requests still in flight after the shutdown timeout: stopping the engine');
      const exit = (): never => process.exit(0);
      setTimeout(exit, ENGINE_STOP_GRACE_MS).unref();
      app.get(EngineService).shutdown().then(exit, exit);
    }, config.shutdownTimeoutSeconds * 1000);
    deadline.unref();
    app.close().then(
      () => {
        logger.log('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error(`shutdown failed: ${(err as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

function listeningAt(address: AddressInfo | string | null, config: ServerConfig): string {
  if (typeof address === 'string' || address === null) return `unix:${config.uds ?? String(address)}`;
  const scheme = config.sslCertfile ? 'https' : 'http';
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `${scheme}://${host}:${address.port}${config.rootPath}`;
}
