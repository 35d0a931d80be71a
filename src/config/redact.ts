// Credentials never leave the process in printed configuration: /server_info, logs and error
// messages show URLs without their password (or bare token) and never the API keys.

const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^/\s@:]*)(:[^/\s@]*)?@/gi;

const SECRET_KEYS = new Set(['apiKeys']);

const MASK = '***';

/** `text` with the password of every URL in it masked (a userinfo without a password is masked whole: it is a token). */
export function redactUrls(text: string): string {
  return text.replace(URL_USERINFO, (_match, scheme: string, user: string, password: string | undefined) =>
    password === undefined ? `${scheme}${MASK}@` : `${scheme}${user}:${MASK}@`,
  );
}

/** A deep copy of `value` with secret keys dropped and credentials masked in every string. */
export function redactConfig(value: unknown): unknown {
  if (typeof value === 'string') return redactUrls(value);
  if (Array.isArray(value)) return value.map(redactConfig);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([k]) => !SECRET_KEYS.has(k)).map(([k, v]) => [k, redactConfig(v)]));
  }
  return value;
}
