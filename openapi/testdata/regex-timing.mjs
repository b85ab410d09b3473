// Times each pattern on its candidate worst-case inputs in Node's
// (backtracking) regex engine. Reads [{pattern, inputs}] as JSON on stdin,
// writes [{pattern, ms}] (the slowest input's time, the fastest of three
// tries) as JSON on stdout.
import { readFileSync } from 'node:fs';

const cases = JSON.parse(readFileSync(0, 'utf8'));
const out = [];
for (const { pattern, inputs } of cases) {
  // 'u' as JSON Schema's ECMA-262 dialect needs for \p{...}.
  const re = new RegExp(pattern, 'u');
  let slowest = 0;
  for (const s of inputs) {
    // The fastest of three tries: a backtracking blow-up is slow every
    // time, a loaded machine's preemption only once in a while.
    let ms = Infinity;
    for (let i = 0; i < 3; i++) {
      const t0 = process.hrtime.bigint();
      re.test(s);
      ms = Math.min(ms, Number(process.hrtime.bigint() - t0) / 1e6);
    }
    if (ms > slowest) slowest = ms;
  }
  out.push({ pattern, ms: slowest });
}
process.stdout.write(JSON.stringify(out));
