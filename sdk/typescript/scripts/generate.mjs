// Generates src/schema.ts, the API's types, from the server's own OpenAPI document
// (`boomerang openapi`) with openapi-typescript.
//
//   node scripts/generate.mjs           rewrite src/schema.ts
//   node scripts/generate.mjs --check   exit 1 if src/schema.ts differs from what the
//                                       document gives (the types must not drift)
//
// The binary is $BOOMERANG_BIN, else target/debug/boomerang at the repository's root.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const schemaFile = join(packageDir, 'src', 'schema.ts');

const HEADER = `// The Boomerang API's types, generated from its OpenAPI document (\`boomerang openapi\`)
// by scripts/generate.mjs with openapi-typescript. Do not edit: run \`npm run generate\`.
`;

export function binary() {
  return process.env.BOOMERANG_BIN ?? resolve(packageDir, '../../target/debug/boomerang');
}

/** The text src/schema.ts should hold for the document the binary prints now. */
export async function generate(bin = binary()) {
  const document = JSON.parse(execFileSync(bin, ['openapi'], { encoding: 'utf8' }));
  const ast = await openapiTS(document);
  return HEADER + astToString(ast);
}

async function main() {
  const fresh = await generate();
  if (process.argv.includes('--check')) {
    const current = readFileSync(schemaFile, 'utf8');
    if (current !== fresh) {
      console.error(`${schemaFile} is out of date with \`${binary()} openapi\`: run \`npm run generate\``);
      process.exit(1);
    }
    console.log('src/schema.ts matches the OpenAPI document');
  } else {
    writeFileSync(schemaFile, fresh);
    console.log(`wrote ${schemaFile}`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
