// A node:test reporter that adds up, per test file, the durations of its top-level tests and
// suites, and writes them as JSON lines ({ file, ms }) when the run ends. scripts/run-tests.mjs
// prints the slowest files after the summary (time spent waiting for the lab lock included). A
// suite declared by a shared helper (e.g. one per database in test/helpers/db.ts) is counted under
// the helper's file, where node:test says it was declared.
export default async function* fileTimes(source) {
  const perFile = new Map();
  for await (const event of source) {
    if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.nesting === 0 && event.data.file) {
      perFile.set(event.data.file, (perFile.get(event.data.file) ?? 0) + (event.data.details?.duration_ms ?? 0));
    }
  }
  for (const [file, ms] of perFile) yield `${JSON.stringify({ file, ms: Math.round(ms) })}\n`;
}
