// Where images may come from: data: URLs (base64, an image media type), file:// only inside
// --allowed-local-media-path (no escape through `..` or a symlink), http(s) only from
// --allowed-media-domains, every redirect hop included, within the size and time limits.

import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RequestValidationError } from '../../../../src/engine/errors';
import { OpenAIHttpError } from '../../../../src/serving/openai-error';
import { loadMediaBytes } from '../../../../src/serving/media/media-source';
import { mediaOptionsFrom, TEXT_ONLY, type MediaOptions } from '../../../../src/serving/media/media-options';

const PAYLOAD = Buffer.from('not really an image, just bytes');
const b64 = PAYLOAD.toString('base64');

function options(overrides: Partial<MediaOptions> = {}): MediaOptions {
  const base = mediaOptionsFrom(
    {
      model: 'm', allowedLocalMediaPath: null, allowedMediaDomains: [], imageFetchTimeoutSeconds: 5, mediaUrlAllowRedirects: true,
      maxImageFilesizeMb: 1, maxImagePixels: 1000, limitMmPerPrompt: {}, mediaIoKwargs: {}, mmProcessorKwargs: null,
    },
    TEXT_ONLY,
  );
  return { ...base, ...overrides };
}

async function refusal(url: string, opts: MediaOptions): Promise<Error> {
  try {
    await loadMediaBytes(url, opts, 'messages');
  } catch (err) {
    return err as Error;
  }
  throw new Error(`${url} was loaded`);
}

describe('data: URLs', () => {
  it('decodes base64 with or without an image media type', async () => {
    expect(Buffer.from(await loadMediaBytes(`data:image/png;base64,${b64}`, options(), 'messages'))).toEqual(PAYLOAD);
    expect(Buffer.from(await loadMediaBytes(`DATA:;base64,${b64}`, options(), 'messages'))).toEqual(PAYLOAD);
  });

  it("refuses vLLM's way what it cannot read", async () => {
    expect((await refusal('data:image/png;base64', options())).message).toMatch(/missing ',' separator/);
    expect((await refusal(`data:image/png,${b64}`, options())).message).toBe('Only base64 data URLs are supported for now.');
    expect((await refusal(`data:text/plain;base64,${b64}`, options())).message).toMatch(/not an image type/);
    expect((await refusal('data:image/png;base64,a*b=', options())).message).toMatch(/not valid base64/);
    expect((await refusal('data:image/png;base64,abc', options())).message).toMatch(/not valid base64/);
  });

  it('refuses more than --max-image-filesize-mb before decoding', async () => {
    const big = Buffer.alloc(2048).toString('base64');
    const err = await refusal(`data:image/png;base64,${big}`, options({ maxImageBytes: 1024 }));
    expect(err).toBeInstanceOf(RequestValidationError);
    expect(err.message).toMatch(/2048 bytes, more than the 1024 allowed/);
  });
});

describe('file:// URLs', () => {
  let root: string;
  let allowed: string;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'ortllm-media-'));
    allowed = join(root, 'allowed');
    mkdirSync(join(allowed, 'sub'), { recursive: true });
    writeFileSync(join(allowed, 'sub', 'a.png'), PAYLOAD);
    writeFileSync(join(root, 'secret.png'), 'secret');
    symlinkSync(join(root, 'secret.png'), join(allowed, 'link.png'));
    symlinkSync(join(allowed, 'sub', 'a.png'), join(allowed, 'inner-link.png'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('are refused without --allowed-local-media-path', async () => {
    const err = await refusal(`file://${join(allowed, 'sub', 'a.png')}`, options());
    expect(err.message).toBe('Cannot load local files without `--allowed-local-media-path`.');
  });

  it('read files inside the directory, through links that stay inside', async () => {
    const opts = options({ allowedLocalMediaPath: allowed });
    expect(Buffer.from(await loadMediaBytes(`file://${join(allowed, 'sub', 'a.png')}`, opts, 'messages'))).toEqual(PAYLOAD);
    expect(Buffer.from(await loadMediaBytes(`file://${join(allowed, 'inner-link.png')}`, opts, 'messages'))).toEqual(PAYLOAD);
  });

  it('refuse a path that leaves the directory by .. or by a symlink', async () => {
    const opts = options({ allowedLocalMediaPath: allowed });
    for (const url of [`file://${allowed}/sub/../../secret.png`, `file://${allowed}/sub/%2E%2E/%2E%2E/secret.png`, `file://${join(allowed, 'link.png')}`, `file://${allowed}`]) {
      const err = await refusal(url, opts);
      expect(err).toBeInstanceOf(RequestValidationError);
      expect(err.message).toMatch(/must be a subpath of `--allowed-local-media-path/);
    }
  });

  it('refuse a missing file and a directory without saying more', async () => {
    const opts = options({ allowedLocalMediaPath: allowed });
    expect((await refusal(`file://${allowed}/nope.png`, opts)).message).toMatch(/does not exist or cannot be read/);
    expect((await refusal(`file://${allowed}/sub`, opts)).message).toMatch(/not a regular file/);
  });
});

describe('http(s) URLs', () => {
  let server: Server;
  let base: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/image.png') return res.end(PAYLOAD);
      if (req.url === '/hop') return res.writeHead(302, { location: '/image.png' }).end();
      if (req.url === '/away') return res.writeHead(302, { location: `http://localhost:${(server.address() as AddressInfo).port}/image.png` }).end();
      if (req.url === '/big') return res.end(Buffer.alloc(4096));
      if (req.url === '/chunked') {
        // No Content-Length: the limit is met while reading.
        res.write(Buffer.alloc(800));
        return res.end(Buffer.alloc(800));
      }
      if (req.url === '/slow') return void setTimeout(() => res.end(PAYLOAD), 2000).unref();
      if (req.url === '/gone') return res.writeHead(404).end();
      res.writeHead(503).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });

  const allowLocal = (overrides: Partial<MediaOptions> = {}) => options({ allowedMediaDomains: ['127.0.0.1'], ...overrides });

  it('are refused by default (no allowed domains) and from other hosts', async () => {
    const none = await refusal(`${base}/image.png`, options());
    expect(none.message).toBe('The URL must be from one of the allowed domains: []. Input URL domain: 127.0.0.1');
    const other = await refusal(`${base.replace('127.0.0.1', 'localhost')}/image.png`, allowLocal());
    expect(other.message).toBe("The URL must be from one of the allowed domains: ['127.0.0.1']. Input URL domain: localhost");
  });

  it('download from an allowed host, following a redirect on it', async () => {
    expect(Buffer.from(await loadMediaBytes(`${base}/image.png`, allowLocal(), 'messages'))).toEqual(PAYLOAD);
    expect(Buffer.from(await loadMediaBytes(`${base}/hop`, allowLocal(), 'messages'))).toEqual(PAYLOAD);
  });

  it('refuse a redirect to another host, and any redirect with VLLM_MEDIA_URL_ALLOW_REDIRECTS=0', async () => {
    const away = await refusal(`${base}/away`, allowLocal());
    expect(away).toBeInstanceOf(RequestValidationError);
    expect(away.message).toMatch(/Input URL domain: localhost$/);
    const noRedirects = await refusal(`${base}/hop`, allowLocal({ allowRedirects: false }));
    expect((noRedirects as OpenAIHttpError).status).toBe(422);
  });

  it('bound the size and the time, and map the answers as vLLM does', async () => {
    const big = (await refusal(`${base}/big`, allowLocal({ maxImageBytes: 1024 }))) as OpenAIHttpError;
    expect(big.status).toBe(422);
    expect(big.message).toMatch(/^Failed to fetch media from URL: the media is 4096 bytes/);
    const chunked = (await refusal(`${base}/chunked`, allowLocal({ maxImageBytes: 1024 }))) as OpenAIHttpError;
    expect([chunked.status, chunked.message]).toEqual([422, 'Failed to fetch media from URL: the media is more than the 1024 bytes allowed']);
    expect((await loadMediaBytes(`${base}/chunked`, allowLocal({ maxImageBytes: 1600 }), 'messages')).length).toBe(1600);
    const slow = (await refusal(`${base}/slow`, allowLocal({ fetchTimeoutMs: 200 }))) as OpenAIHttpError;
    expect(slow.status).toBe(500);
    expect(slow.message).toMatch(/VLLM_IMAGE_FETCH_TIMEOUT/);
    const gone = (await refusal(`${base}/gone`, allowLocal())) as OpenAIHttpError;
    expect([gone.status, gone.message]).toEqual([422, 'Failed to fetch media from URL: HTTP 404 error']);
    expect(((await refusal(`${base}/down`, allowLocal())) as OpenAIHttpError).status).toBe(500);
  });

  it('refuse other schemes', async () => {
    expect((await refusal('ftp://127.0.0.1/a.png', allowLocal())).message).toBe('The URL must be either a HTTP, data or file URL.');
    expect((await refusal('just text', allowLocal())).message).toBe('The URL must be either a HTTP, data or file URL.');
  });
});
