// Runs the compiled client against a server: node run.mjs BASE_URL TOKEN
import { run } from "./out/client.js";

const problems = await run(process.argv[2], process.argv[3]);
for (const p of problems) console.error(p);
process.exit(problems.length ? 1 : 0);
