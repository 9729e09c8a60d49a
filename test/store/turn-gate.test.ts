/**
 * The turn gate: one caller per turn of the event loop, the others one per later turn, in order,
 * with the loop's other work (I/O, immediates) running in between; an idle caller never waits.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TurnGate } from '../../src/store/turn-gate.ts';

/** Counts turns of the event loop: one increment per check phase while running. */
function turnCounter(): { now(): number; stop(): void } {
  let turns = 0;
  let on = true;
  const tick = (): void => {
    turns++;
    if (on) setImmediate(tick);
  };
  setImmediate(tick);
  return { now: () => turns, stop: () => (on = false) };
}

describe('turn gate', () => {
  it('lets the first caller of a turn through at once', async () => {
    const gate = new TurnGate();
    assert.equal(gate.pass(), undefined);
    // a later turn is free again
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    assert.equal(gate.pass(), undefined);
  });

  it('queues the other callers of a turn, one per later turn, in order, with the loop turning in between', async () => {
    const gate = new TurnGate();
    const turns = turnCounter();
    const order: number[] = [];
    const at: number[] = [];
    const first = gate.pass();
    assert.equal(first, undefined);
    order.push(0);
    at.push(turns.now());
    const waiting = [1, 2, 3, 4].map((i) => {
      const p = gate.pass();
      assert.ok(p instanceof Promise, `caller ${i} waits`);
      return p.then(() => {
        order.push(i);
        at.push(turns.now());
      });
    });
    assert.equal(gate.waiting, 4);
    await Promise.all(waiting);
    turns.stop();
    assert.deepEqual(order, [0, 1, 2, 3, 4]);
    for (let i = 2; i < at.length; i++) assert.ok((at[i] as number) > (at[i - 1] as number), `caller ${i - 1} ran in an earlier turn than caller ${i}: ${at.join(',')}`);
    assert.equal(gate.waiting, 0);
  });

  it('other work scheduled meanwhile runs before the queued callers are all through', async () => {
    const gate = new TurnGate();
    const events: string[] = [];
    gate.pass();
    const queued = Array.from({ length: 5 }, (_, i) => (gate.pass() as Promise<void>).then(() => events.push(`caller ${i}`)));
    setImmediate(() => events.push('other'));
    await Promise.all(queued);
    const other = events.indexOf('other');
    assert.ok(other >= 0 && other < events.indexOf('caller 4'), `other work ran between the callers: ${events.join(', ')}`);
  });
});
