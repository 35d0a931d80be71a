// Builds the Nest app on the Fastify adapter from a ServerConfig, without listening. Used by
// main (ortllm serve), by the OpenAPI script and by tests. Feature modules come from
// src/modules/feature-modules.ts.

import multipart from '@fastify/multipart';
import { ConsoleLogger } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { Reflector, NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyServerOptions } from 'fastify';
import { AppModule, AppModuleOptions } from './app.module';
import { ApiKeyGuard } from './common/api-key.guard';
import { corsOptions } from './common/cors';
import { installAccessLog, installRequestLog, nestLogLevels } from './common/logging';
import { OpenAIExceptionFilter } from './common/openai-exception.filter';
import { installRequestIdEcho } from './common/request-id';
import { createBodyPipes } from './common/body-pipes';
import { toLoadModelOptions, type ServerConfig } from './config/server-config';
import { planServedModel } from './model/load-model';
import { setUpOutputParsers } from './serving/parser-plugins';
import { setupDocs } from './modules/docs/openapi';
import { audioRoutes, GENERATION_MODEL, servedModelFor, type ServedModel } from './modules/feature-modules';

export interface CreateAppOptions extends AppModuleOptions {
  /** Scan modules without instantiating providers (no engine is built): the OpenAPI script. */
  preview?: boolean;
}

function fastifyOptions(config: ServerConfig): FastifyServerOptions & { https?: object } {
  const options: FastifyServerOptions & { https?: object } = {
    bodyLimit: config.maxRequestBodyBytes,
    // Keep-alive sockets are closed at shutdown; requests in flight are allowed to finish.
    forceCloseConnections: 'idle',
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
  // Body-parsing failures (malformed JSON, 413) reach OpenAIExceptionFilter through Nest's own
  // Fastify error handler, as HttpExceptions carrying Fastify's status and message.
  if (config.enableRequestIdHeaders) installRequestIdEcho(fastify);
  if (!config.disableUvicornAccessLog) installAccessLog(fastify, config.disableAccessLogForEndpoints);
  if (config.enableLogRequests) installRequestLog(fastify, config.maxLogLen);

  const servedModel = await servedModelOf(config, options);
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, { ...options, servedModel }), adapter, {
    // Colors only on a terminal: redirected logs (files, Kubernetes) stay plain text.
    logger: new ConsoleLogger({ logLevels: nestLogLevels(config.logLevel), colors: Boolean(process.stdout.isTTY) }),
    abortOnError: false,
    preview: options.preview,
  });
  // multipart/form-data bodies (audio uploads) for the speech-to-text routes; the per-request file
  // limit is --max-audio-clip-filesize-mb (multipart-form.ts).
  if (!options.preview && audioRoutes(config, servedModel)) await app.register(multipart);
  app.enableCors(corsOptions(config));
  app.useGlobalFilters(new OpenAIExceptionFilter());
  app.useGlobalPipes(...createBodyPipes(config.unknownRequestFields));
  app.useGlobalGuards(new ApiKeyGuard(app.get(Reflector), config.apiKeys));
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
  const plan = await planServedModel(toLoadModelOptions(config));
  return servedModelFor(plan.output, plan.pooler);
}
