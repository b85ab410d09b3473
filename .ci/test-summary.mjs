// Reads `go test -json` on stdin and prints what plain `go test` prints (a line per package, and
// the output of failing tests and of tests still running when their package failed), then every
// skipped test with the reason it gave, the ten slowest top-level tests, then the closing line `N passed, N failed, N skipped`
// (tests and subtests). Exits 1 when a test or a package failed.
import { createInterface } from 'node:readline';

const counts = { pass: 0, fail: 0, skip: 0 };
const held = new Map(); // "pkg test" -> output lines, printed only if the test fails
let failed = false;
const skipped = []; // {pkg, test, reason}
const timings = []; // {name, seconds} of top-level tests that ended

// reason is what a skipped test said (t.Skip's message), without go test's own lines.
function reason(lines) {
  return lines
    .filter((l) => !/^\s*(=== |--- SKIP)/.test(l))
    .map((l) => l.trim().replace(/^[\w.-]+\.go:\d+: /, ''))
    .filter((l) => l !== '')
    .join(' ');
}

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  let e;
  try {
    e = JSON.parse(line);
  } catch {
    process.stdout.write(line + '\n'); // the go command's own messages
    continue;
  }
  if (e.Action === 'build-output') {
    process.stdout.write(e.Output);
    continue;
  }
  if (e.Action === 'build-fail') {
    failed = true;
    continue;
  }
  const key = `${e.Package} ${e.Test ?? ''}`;
  if (e.Test) {
    if (e.Action === 'output') {
      if (!held.has(key)) held.set(key, []);
      held.get(key).push(e.Output);
    } else if (e.Action in counts) {
      counts[e.Action]++;
      if (e.Action !== 'skip' && !e.Test.includes('/')) {
        timings.push({ name: `${e.Package.replace(/^github\.com\/[^/]+\/[^/]+\//, '')} ${e.Test}`, seconds: e.Elapsed ?? 0 });
      }
      if (e.Action === 'fail') {
        failed = true;
        process.stdout.write((held.get(key) ?? []).join(''));
      }
      if (e.Action === 'skip') {
        skipped.push({ pkg: e.Package, test: e.Test, reason: reason(held.get(key) ?? []) });
      }
      held.delete(key);
    }
    continue;
  }
  if (e.Action === 'output' && !/^(PASS|FAIL)\n$/.test(e.Output) && !e.Output.startsWith('=== ')) {
    process.stdout.write(e.Output); // ok/FAIL/? package lines, package-level messages
  }
  if (e.Action === 'fail') {
    failed = true;
    // Tests that never ended were running when the package died (a timeout's panic, a crash):
    // their output says where; a test that timed out gets no fail event of its own.
    for (const [k, lines] of held) {
      if (!k.startsWith(`${e.Package} `)) continue;
      const tail = lines.slice(-40);
      process.stdout.write(`--- ${k.slice(e.Package.length + 1)} did not end (last ${tail.length} lines):\n${tail.join('')}`);
      held.delete(k);
    }
  }
}

if (skipped.length > 0) {
  process.stdout.write(`\nSkipped (${skipped.length}):\n`);
  for (const s of skipped) {
    process.stdout.write(`  ${s.pkg.replace(/^github\.com\/[^/]+\/[^/]+\//, '')} ${s.test}: ${s.reason || '(no reason given)'}\n`);
  }
  process.stdout.write('\n');
}
if (timings.length > 0) {
  timings.sort((a, b) => b.seconds - a.seconds);
  process.stdout.write('Slowest tests:\n');
  for (const t of timings.slice(0, 10)) process.stdout.write(`  ${t.seconds.toFixed(1).padStart(7)} s  ${t.name}\n`);
  process.stdout.write('\n');
}
process.stdout.write(`${counts.pass} passed, ${counts.fail} failed, ${counts.skip} skipped\n`);
process.exit(failed ? 1 : 0);
