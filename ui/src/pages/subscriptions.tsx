/** Subscriptions: the LCM notification subscriptions (v2) and their delivery state. */
import { useEffect, useState } from 'preact/hooks';
import { listAll, type Problem } from '../api.ts';
import { ColumnHeads, problemOf, ProblemView, shortId } from '../components.tsx';

interface Subscription {
  id: string;
  callbackUri: string;
  verbosity?: string;
  filter?: Record<string, unknown>;
}

export function SubscriptionsPage() {
  const [subs, setSubs] = useState<Subscription[] | null>(null);
  const [err, setErr] = useState<Problem | null>(null);
  useEffect(() => {
    listAll<Subscription>('/vnflcm/v2/subscriptions')
      .then((s) => setSubs(s))
      .catch((e) => setErr(problemOf(e)));
  }, []);
  return (
    <section aria-labelledby="subs-h">
      <h1 id="subs-h">Subscriptions</h1>
      <ProblemView problem={err} />
      {subs === null && !err ? (
        <p aria-busy="true">Loading…</p>
      ) : subs && subs.length === 0 ? (
        <p>No subscriptions.</p>
      ) : subs ? (
        <table data-testid="subs-table">
          <ColumnHeads names={['Callback', 'Verbosity', 'Filter', 'Id']} />
          <tbody>
            {subs.map((s) => (
              <tr key={s.id}>
                <td>
                  <code>{s.callbackUri}</code>
                </td>
                <td>{s.verbosity ?? 'FULL'}</td>
                <td>
                  <code>{s.filter ? JSON.stringify(s.filter) : 'all events'}</code>
                </td>
                <td>
                  <code title={s.id}>{shortId(s.id)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
