// Times each pattern on its candidate worst-case inputs in Node's
// (backtracking) regex engine. Reads [{pattern, inputs}] as JSON on stdin,
// writes [{pattern, ms}] (the slowest input's time) as JSON on stdout.
import { readFileSync } from 'node:fs';

const cases = JSON.parse(readFileSync(0, 'utf8'));
const out = [];
for (const { pattern, inputs } of cases) {
  // 'u' as JSON Schema's ECMA-262 dialect needs for \p{...}.
  const re = new RegExp(pattern, 'u');
  let slowest = 0;
  for (const s of inputs) {
    const t0 = process.hrtime.bigint();
    re.test(s);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (ms > slowest) slowest = ms;
  }
  out.push({ pattern, ms: slowest });
}
process.stdout.write(JSON.stringify(out));
