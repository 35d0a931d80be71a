// The KV connector registry (vLLM's KVConnectorFactory): --kv-transfer-config's kv_connector names
// one of these. A new connector is one entry here and a class implementing KvConnector.

import type { KvConnector, KvConnectorContext, KvConnectorFactory } from './kv-connector';
import { TcpConnector } from './tcp-connector';

const CONNECTORS: Record<string, KvConnectorFactory> = {
  TcpConnector: (context) => new TcpConnector(context),
};

export function knownKvConnectors(): string[] {
  return Object.keys(CONNECTORS);
}

export function createKvConnector(name: string, context: KvConnectorContext): KvConnector {
  const factory = Object.hasOwn(CONNECTORS, name) ? CONNECTORS[name] : undefined;
  if (!factory) throw new Error(`--kv-transfer-config: unknown kv_connector '${name}'; known connectors: ${knownKvConnectors().join(', ')}`);
  return factory(context);
}
