// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; [k: string]: any }; [k: string]: any };
export function validateObject(doc: K8sObject): Promise<string[]>;
export function parseManifests(text: string): K8sObject[];
