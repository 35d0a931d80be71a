// Builds the Nest app on the Fastify adapter from a ServerConfig, without listening. Used by
// main (ortllm serve), by the OpenAPI script and by tests. Feature modules come from
// src/modules/feature-modules.ts.
//
// What happens to a request before any route code runs, in order (Fastify onRequest hooks, then
// the body parser): access log and X-Request-Id, the drain (503 while shutting down), the API key
// (401 before the body is read), 405 for a known path with the wrong method, a request with a body
// waits its turn on the HTTP thread (request-turns.ts), then the JSON body parser with its size,
// time and shape limits (common/body/). Every other body type gets 415. An answer given before
// the body has arrived lingers (common/lingering-close.ts); shutdown ends the lingering sockets.

import multipart from '@fastify/multipart';
import { readFileSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyServerOptions } from 'fastify';
import { AppModule, AppModuleOptions } from './app.module';
import { installApiKeyAuth } from './common/api-key-auth';
import { registerJsonBodyParser } from './common/body/json-body-parser';
import { corsOptions } from './common/cors';
import { installDrain } from './common/drain';
import { endLingering } from './common/lingering-close';
import { jsonLimitsOf } from './common/body/json-limits';
import {
  clientErrorHandler, frameworkErrors, installMethodNotAllowed, installMissingApiAnswers, installOptionsAnswers, refuseOtherBodyTypes,
} from './common/framework-errors';
import { installAccessLog, installRequestLog, nestLogLevels, ServerLogger } from './common/logging';
import { OpenAIExceptionFilter } from './common/openai-exception.filter';
import { installRequestIdEcho } from './common/request-id';
import { installRequestTurns } from './common/request-turns';
import { createBodyPipes } from './common/body-pipes';
import { configureStreams } from './common/sse';
import { planServedModelOf } from './config/engine-args';
import type { ServerConfig } from './config/server-config';
import { setUpOutputParsers } from './serving/parser-plugins';
import { DOCS_PATHS, setupDocs } from './modules/docs/openapi';
import { audioRoutes, GENERATION_MODEL, servedModelFor, type ServedModel } from './modules/feature-modules';
import { missingApiMessage } from './modules/missing-apis';

export interface CreateAppOptions extends AppModuleOptions {
  /** Scan modules without instantiating providers (no engine is built): the OpenAPI script. */
  preview?: boolean;
}

function fastifyOptions(config: ServerConfig): FastifyServerOptions & { https?: object } {
  const options: FastifyServerOptions & { https?: object } = {
    bodyLimit: config.maxRequestBodyBytes,
    // Keep-alive sockets are closed at shutdown; requests in flight are allowed to finish.
    forceCloseConnections: 'idle',
    // Node's own bound on receiving a whole request (headers and body, any content type); the
    // JSON parser enforces the same bound itself with an enveloped 408.
    requestTimeout: config.bodyReadTimeoutSeconds * 1000,
    clientErrorHandler,
    frameworkErrors,
  };
  if (config.rootPath) {
    // Behind a path proxy the prefix may or may not be stripped already: accept both.
    const prefix = config.rootPath;
    options.rewriteUrl = (req) => {
      const url = req.url ?? '/';
      if (url === prefix) return '/';
      return url.startsWith(`${prefix}/`) || url.startsWith(`${prefix}?`) ? url.slice(prefix.length) || '/' : url;
    };
  }
  if (config.keepAliveTimeoutSeconds !== null) options.keepAliveTimeout = config.keepAliveTimeoutSeconds * 1000;
  if (config.sslKeyfile && config.sslCertfile) {
    options.https = {
      key: readFileSync(config.sslKeyfile),
      cert: readFileSync(config.sslCertfile),
      ...(config.sslCaCerts ? { ca: readFileSync(config.sslCaCerts) } : {}),
      ...(config.sslCiphers ? { ciphers: config.sslCiphers } : {}),
      // Python's ssl.CERT_OPTIONAL (1) asks for a client certificate; CERT_REQUIRED (2) also rejects without a valid one.
      ...(config.sslCertReqs > 0 ? { requestCert: true, rejectUnauthorized: config.sslCertReqs === 2 } : {}),
    };
  }
  return options;
}

export async function createApp(config: ServerConfig, options: CreateAppOptions = {}): Promise<NestFastifyApplication> {
  await setUpOutputParsers(config);
  const adapter = new FastifyAdapter(fastifyOptions(config));
  const fastify = adapter.getInstance();
  // JSON only: Fastify's text/plain parser and Nest's urlencoded one would let a cross-site form
  // drive the server without a CORS preflight. Routes that take uploads register their own
  // multipart parser (and its limits) after this. Parser failures (malformed JSON, limits, 413)
  // reach OpenAIExceptionFilter through Nest's Fastify error handler.
  fastify.removeAllContentTypeParsers();
  registerJsonBodyParser(fastify, {
    limits: jsonLimitsOf(config),
    maxBodyBytes: config.maxRequestBodyBytes,
    bodyReadTimeoutMs: config.bodyReadTimeoutSeconds * 1000,
  });
  refuseOtherBodyTypes(fastify);
  configureStreams(fastify, { stallTimeoutMs: config.streamStallTimeoutSeconds * 1000 });

  if (!config.disableUvicornAccessLog) installAccessLog(fastify, config.disableAccessLogForEndpoints);
  if (config.enableRequestIdHeaders) installRequestIdEcho(fastify);
  installDrain(fastify);
  installApiKeyAuth(fastify, config.apiKeys, config.disableFastapiDocs ? [] : DOCS_PATHS);
  fastify.addHook('preClose', (done) => {
    endLingering(fastify.server);
    done();
  });
  installMethodNotAllowed(fastify);
  installOptionsAnswers(fastify);
  installRequestTurns(fastify);
  if (config.enableLogRequests) installRequestLog(fastify, config.maxLogLen);

  const servedModel = await servedModelOf(config, options);
  installMissingApiAnswers(fastify, missingApiMessage(config, servedModel));
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, { ...options, servedModel }), adapter, {
    // Colors only on a terminal: redirected logs (files, Kubernetes) stay plain text.
    logger: new ServerLogger({ logLevels: nestLogLevels(config.logLevel), colors: Boolean(process.stdout.isTTY) }),
    abortOnError: false,
    preview: options.preview,
    // The parsers are the ones registered above.
    bodyParser: false,
  });
  // multipart/form-data bodies (audio uploads) for the speech-to-text routes; the per-request file
  // limit is --max-audio-clip-filesize-mb (multipart-form.ts).
  if (!options.preview && audioRoutes(config, servedModel)) await app.register(multipart);
  app.enableCors(corsOptions(config));
  app.useGlobalFilters(new OpenAIExceptionFilter());
  app.useGlobalPipes(...createBodyPipes(config.unknownRequestFields));
  if (!config.disableFastapiDocs && !options.preview) setupDocs(app, config);
  return app;
}

/**
 * What the model does decides which routes exist, before the engine has loaded anything: from
 * the given engine, else from the model's metadata (config.json / GGUF header and the flags).
 */
async function servedModelOf(config: ServerConfig, options: CreateAppOptions): Promise<ServedModel> {
  if (options.servedModel) return options.servedModel;
  if (options.engine) return servedModelFor(options.engine.modelOutput, options.engine.pooler);
  if (options.preview || options.allFeatures) return GENERATION_MODEL;
  const plan = await planServedModelOf(config);
  return servedModelFor(plan.output, plan.pooler);
}
