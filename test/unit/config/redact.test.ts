import { redactConfig, redactUrls } from '../../../src/config/redact';

describe('redactUrls', () => {
  it.each([
    ['redis://default:s3cret@10.0.0.1:6379/0', 'redis://default:***@10.0.0.1:6379/0'],
    ['rediss://:s3cret@cache.internal/1', 'rediss://:***@cache.internal/1'],
    ['https://ghp_token@github.com/x', 'https://***@github.com/x'],
    ['Cannot connect to redis://u:p@h:1/0 and http://a:b@c', 'Cannot connect to redis://u:***@h:1/0 and http://a:***@c'],
    ['redis://127.0.0.1:6379/0', 'redis://127.0.0.1:6379/0'],
    ['memory', 'memory'],
  ])('%s', (text, redacted) => {
    expect(redactUrls(text)).toBe(redacted);
  });
});

describe('redactConfig', () => {
  it('drops the API keys and masks passwords at any depth, leaving the input as it was', () => {
    const config = { apiKeys: ['k1'], responsesStore: 'redis://default:pw@h:1/0', nested: { urls: ['http://u:pw@x'] }, port: 8000 };
    expect(redactConfig(config)).toEqual({ responsesStore: 'redis://default:***@h:1/0', nested: { urls: ['http://u:***@x'] }, port: 8000 });
    expect(config.responsesStore).toBe('redis://default:pw@h:1/0');
  });
});
