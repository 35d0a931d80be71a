// `ortllm serve`: builds the app, listens, prints the ready line, and shuts down gracefully on
// SIGTERM/SIGINT: the listener stays open and answers new requests 503 (common/drain.ts) while
// the requests in flight finish within --shutdown-timeout; then the server closes, the engine
// stops and the process exits 0. A second signal stops the engine at once (its streams end with
// an error frame) and exits 0 as soon as the engine worker has left onnxruntime: exiting while
// it is inside a native call would abort the process instead.

import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AddressInfo } from 'node:net';
import { createApp } from '../app-factory';
import { drainOf } from '../common/drain';
import { reportedModelName, ServerConfig } from '../config/server-config';
import { EngineService } from '../modules/engine/engine.service';

const ALL_INTERFACES = '0.0.0.0';
/** How long the engine gets to stop (its worker finishing the step under way) before exiting anyway. */
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
  const shutdown = gracefulShutdown(app, config, logger);
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

function gracefulShutdown(app: NestFastifyApplication, config: ServerConfig, logger: Logger): (signal: NodeJS.Signals) => void {
  const fastify = app.getHttpAdapter().getInstance();
  const drain = drainOf(fastify);
  const engine = app.get(EngineService);
  let phase: 'serving' | 'draining' | 'stopping' = 'serving';

  /** Stops the engine (bounded), then exits 0. */
  const stopEngineAndExit = (): void => {
    const exit = (): never => process.exit(0);
    setTimeout(exit, ENGINE_STOP_GRACE_MS).unref();
    engine.shutdown().then(exit, exit);
  };

  let closing = false;
  const closeAndExit = (): void => {
    if (closing || phase === 'stopping') return;
    closing = true;
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

  return (signal) => {
    if (phase === 'stopping') {
      logger.warn(`${signal} again: the engine is already stopping`);
      return;
    }
    if (phase === 'draining') {
      phase = 'stopping';
      logger.warn(`${signal} again: stopping the engine now and exiting`);
      stopEngineAndExit();
      return;
    }
    phase = 'draining';
    logger.log(
      `${signal}: draining (new requests get 503); waiting up to ${config.shutdownTimeoutSeconds}s ` +
        `for ${drain.requestsInFlight} request(s) in flight`,
    );
    drain.start();
    // Idle keep-alive clients reconnect elsewhere now rather than meet a 503 later.
    fastify.server.closeIdleConnections();
    const deadline = setTimeout(() => {
      // Stop the engine first: its in-flight streams end with an error frame, the requests finish,
      // and the drain completes.
      logger.warn('requests still in flight after the shutdown timeout: stopping the engine');
      engine.shutdown().then(closeAndExit, closeAndExit);
    }, config.shutdownTimeoutSeconds * 1000);
    deadline.unref();
    void drain.idle().then(() => {
      clearTimeout(deadline);
      closeAndExit();
    });
  };
}

function listeningAt(address: AddressInfo | string | null, config: ServerConfig): string {
  if (typeof address === 'string' || address === null) return `unix:${config.uds ?? String(address)}`;
  const scheme = config.sslCertfile ? 'https' : 'http';
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `${scheme}://${host}:${address.port}${config.rootPath}`;
}
