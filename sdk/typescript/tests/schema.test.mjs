// The checked-in types are what the server's OpenAPI document gives today, and the
// package's version and licence are the API's.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { generate, schemaFile } from '../scripts/generate.mjs';
import { BIN, packageDir } from './support.mjs';

const document = JSON.parse(execFileSync(BIN, ['openapi'], { encoding: 'utf8' }));
const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));

test('src/schema.ts matches the OpenAPI document (run `npm run generate` if not)', async () => {
  const fresh = await generate(BIN);
  assert.ok(fresh === readFileSync(schemaFile, 'utf8'), 'src/schema.ts is out of date: run `npm run generate`');
});

test('the package version is the API version, and its licence the API\'s', () => {
  assert.equal(pkg.version, document.info.version);
  assert.equal(pkg.license, document.info.license.identifier);
});
