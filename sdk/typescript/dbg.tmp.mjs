import { createServer } from 'node:http';
import { Boomerang } from 'boomerang-client';
let n = 0;
const s = createServer((req, res) => { n++; console.log('req', n, req.url);
  if (n === 1) { res.writeHead(503, { 'retry-after': '1', 'content-type': 'application/problem+json' }); res.end('{"title":"x","status":503}'); return; }
  res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"tasks":[]}'); });
await new Promise((r) => s.listen(0, '127.0.0.1', r));
const b = new Boomerang({ baseUrl: `http://127.0.0.1:${s.address().port}`, apiKey: 'x', retry: { initialDelayMs: 10 } });
console.log(await b.tasks.list());
s.close();
