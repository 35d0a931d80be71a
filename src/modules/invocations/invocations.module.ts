import { Module } from '@nestjs/common';
import { servingProvider } from '../engine/serving-provider';
import { INVOCATION_ROUTES } from './invocation-routes';
import { InvocationsController } from './invocations.controller';

/** POST /invocations (SageMaker), routed to the endpoint the body's shape names. */
@Module({ controllers: [InvocationsController], providers: [...new Set(INVOCATION_ROUTES.map((r) => r.serving))].map((s) => servingProvider(s)) })
export class InvocationsModule {}
