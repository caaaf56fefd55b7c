import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { findPackageRoot } from '../bin-path.ts';

export interface StaticAsset {
  body: Buffer;
  contentType: string;
  etag: string;
}

/** The page's files, in the package (`assets/dashboard/`): ES modules as written, no build step, nothing fetched from elsewhere. */
export const ASSET_FILES: Record<string, string> = {
  '/': 'index.html',
  '/index.html': 'index.html',
  '/app.js': 'app.js',
  '/state.js': 'state.js',
  '/dom.js': 'dom.js',
  '/list.js': 'list.js',
  '/job-view.js': 'job-view.js',
  '/style.css': 'style.css',
  '/icon.svg': 'icon.svg',
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export function assetsDir(): string {
  return path.join(findPackageRoot(), 'assets', 'dashboard');
}

/** Reads the page's files once, at start: a missing one is an install problem, said at once rather than on a request. */
export function loadAssets(dir: string = assetsDir()): Map<string, StaticAsset> {
  const byFile = new Map<string, StaticAsset>();
  const out = new Map<string, StaticAsset>();
  for (const [route, file] of Object.entries(ASSET_FILES)) {
    let asset = byFile.get(file);
    if (!asset) {
      const body = readFileSync(path.join(dir, file));
      asset = {
        body,
        contentType: TYPES[path.extname(file)] ?? 'application/octet-stream',
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      };
      byFile.set(file, asset);
    }
    out.set(route, asset);
  }
  return out;
}
