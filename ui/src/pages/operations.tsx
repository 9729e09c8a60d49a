/** Operations: the op occs, newest first, updated live from the feed; one op's progress, error and retry / fail / rollback. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, FINAL_STATES, listAll, type OpOcc, type Problem } from '../api.ts';
import { Badge, ColumnHeads, ConfirmDialog, Fact, Link, navigate, problemOf, ProblemView, shortId, time, useFeed, useInterval } from '../components.tsx';
import type { FeedEvent } from '../events.ts';

interface TimelineEntry {
  id: number;
  at: string;
  opId?: string;
  instanceId?: string;
  text: string;
  state?: string;
}

/** Live events of this page view (newest first). */
const timeline: TimelineEntry[] = [];
function describe(e: FeedEvent): TimelineEntry {
  const d = e.data;
  const auto = d.isAutomaticInvocation ? ' (automatic)' : '';
  const text =
    e.type === 'VnfLcmOperationOccurrenceNotification'
      ? `${d.operation} ${d.operationState}${auto}`
      : e.type === 'VnfIdentifierCreationNotification'
        ? 'instance created'
        : e.type === 'VnfIdentifierDeletionNotification'
          ? 'instance deleted'
          : e.type;
  return { id: e.id, at: String(d.timeStamp ?? new Date().toISOString()), opId: d.vnfLcmOpOccId as string | undefined, instanceId: d.vnfInstanceId as string | undefined, text, state: d.operationState as string | undefined };
}

function OpDetail(props: { id: string; onChanged: () => void }) {
  const [op, setOp] = useState<OpOcc | null>(null);
  const [err, setErr] = useState<Problem | null>(null);
  const [task, setTask] = useState<'retry' | 'fail' | 'rollback' | null>(null);
  const path = `/vnflcm/v2/vnf_lcm_op_occs/${encodeURIComponent(props.id)}`;
  const load = async () => {
    try {
      setOp((await api<OpOcc>(path)).data);
      setErr(null);
    } catch (e) {
      setErr(problemOf(e));
    }
  };
  useEffect(() => {
    setOp(null);
    void load();
  }, [props.id]);
  useFeed((e) => {
    if (e.data.vnfLcmOpOccId === props.id) void load();
  }, [props.id]);
  // progress (management driver steps) changes without a state change: poll while it runs
  useInterval(() => void load(), op && !FINAL_STATES.has(op.operationState) && op.operationState !== 'FAILED_TEMP' ? 1000 : null);
  if (err) return <ProblemView problem={err} label="Operation" />;
  if (!op) return <p aria-busy="true">Loading…</p>;
  const canTask = op.operationState === 'FAILED_TEMP';
  const mine = timeline.filter((t) => t.opId === op.id);
  return (
    <section class="card" aria-labelledby="op-h" data-testid="op-detail" data-state={op.operationState}>
      <h2 id="op-h">
        {op.operation} <Badge value={op.operationState} />
      </h2>
      <dl class="facts">
        <Fact label="Id">
          <code>{op.id}</code>
        </Fact>
        <Fact label="Instance">
          <Link to={`/instances/${encodeURIComponent(op.vnfInstanceId)}`}>{shortId(op.vnfInstanceId)}</Link>
        </Fact>
        <Fact label="Started">{time(op.startTime)}</Fact>
        <Fact label="State since">{time(op.stateEnteredTime)}</Fact>
        <Fact label="Automatic">{op.isAutomaticInvocation ? 'yes (auto-heal)' : 'no'}</Fact>
      </dl>
      {op.vnfmProgress ? (
        <div class="progress" role="status">
          <h3>Now running</h3>
          <dl class="facts">
            {Object.entries(op.vnfmProgress).map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{typeof v === 'object' ? JSON.stringify(v) : String(v)}</dd>
              </div>
            ))}
          </dl>
        </div>
      ) : null}
      {op.vnfmRetry ? (
        <p class="note" role="status">
          Step {op.vnfmRetry.step} failed {op.vnfmRetry.failedAttempts} of {op.vnfmRetry.maxAttempts} times; next attempt at {time(op.vnfmRetry.nextAttemptTime)}.
        </p>
      ) : null}
      <ProblemView problem={op.error} label="Error" />
      {canTask ? (
        <div class="actions" role="group" aria-label="Operation tasks">
          <button type="button" class="primary" onClick={() => setTask('retry')}>
            Retry…
          </button>
          <button type="button" onClick={() => setTask('rollback')}>
            Roll back…
          </button>
          <button type="button" class="danger" onClick={() => setTask('fail')}>
            Mark failed…
          </button>
        </div>
      ) : null}
      {mine.length > 0 ? (
        <>
          <h3>Seen live</h3>
          <ol class="timeline">
            {mine.map((t) => (
              <li key={t.id}>
                {time(t.at)} — {t.text}
              </li>
            ))}
          </ol>
        </>
      ) : null}
      <details>
        <summary>Request and resource changes</summary>
        <pre tabIndex={0}>{JSON.stringify({ operationParams: op.operationParams, resourceChanges: op.resourceChanges }, null, 2)}</pre>
      </details>
      {task ? (
        <ConfirmDialog
          title={`${task[0]?.toUpperCase()}${task.slice(1)} the operation`}
          method="POST"
          path={`${path}/${task}`}
          confirmLabel={task === 'fail' ? 'Mark failed' : task === 'retry' ? 'Retry' : 'Roll back'}
          danger={task === 'fail'}
          onClose={() => setTask(null)}
          onConfirm={async () => {
            await api(`${path}/${task}`, { method: 'POST' });
            await load();
            props.onChanged();
          }}
        />
      ) : null}
    </section>
  );
}

export function OperationsPage(props: { route: string }) {
  const params = new URLSearchParams(props.route.split('?')[1] ?? '');
  const selected = params.get('op');
  const [state, setState] = useState('');
  const [ops, setOps] = useState<OpOcc[] | null>(null);
  const [next, setNext] = useState<string | undefined>();
  const [err, setErr] = useState<Problem | null>(null);
  const [, setTick] = useState(0);
  const pending = useRef<number | undefined>(undefined);
  const load = async () => {
    try {
      // the list is oldest first: read it (bounded) and show the newest
      const all = await listAll<OpOcc>('/vnflcm/v2/vnf_lcm_op_occs', { filter: state ? `(eq,operationState,${state})` : undefined }, 5000);
      all.sort((a, b) => b.startTime.localeCompare(a.startTime));
      setOps(all.slice(0, 100));
      setNext(all.length > 100 ? 'more' : undefined);
      setErr(null);
    } catch (e) {
      setErr(problemOf(e));
    }
  };
  useEffect(() => {
    void load();
  }, [state]);
  useFeed((e) => {
    timeline.unshift(describe(e));
    if (timeline.length > 200) timeline.length = 200;
    setTick((t) => t + 1);
    // coalesce bursts of events into one reload
    if (pending.current === undefined) pending.current = window.setTimeout(() => {
      pending.current = undefined;
      void load();
    }, 100);
  }, [state]);
  return (
    <section aria-labelledby="ops-h">
      <h1 id="ops-h">Operations</h1>
      {selected ? <OpDetail id={selected} onChanged={() => void load()} /> : null}
      <div class="toolbar">
        <label>
          State
          <select value={state} onChange={(e) => setState((e.target as HTMLSelectElement).value)}>
            <option value="">any</option>
            {['STARTING', 'PROCESSING', 'COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLING_BACK', 'ROLLED_BACK'].map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
      </div>
      <ProblemView problem={err} />
      <div class="two-col">
        <div>
          <h2>Operation occurrences</h2>
          {ops === null ? (
            <p aria-busy="true">Loading…</p>
          ) : ops.length === 0 ? (
            <p>No operations.</p>
          ) : (
            <table data-testid="ops-table">
              <ColumnHeads names={['Operation', 'State', 'Automatic', 'Started', 'Instance']} />
              <tbody>
                {ops.map((o) => (
                  <tr key={o.id} data-op={o.id} data-state={o.operationState} class={o.id === selected ? 'selected' : undefined}>
                    <td>
                      <Link to={`/operations?op=${o.id}`}>{o.operation}</Link>
                    </td>
                    <td>
                      <Badge value={o.operationState} />
                    </td>
                    <td>{o.isAutomaticInvocation ? 'auto-heal' : ''}</td>
                    <td>{time(o.startTime)}</td>
                    <td>
                      <Link to={`/instances/${encodeURIComponent(o.vnfInstanceId)}`}>{shortId(o.vnfInstanceId)}</Link>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {next ? <p class="muted">Showing the newest 100; narrow with the state filter.</p> : null}
        </div>
        <div>
          <h2>Live timeline</h2>
          {timeline.length === 0 ? (
            <p class="muted">Events appear here as they happen.</p>
          ) : (
            <ol class="timeline" aria-live="polite" data-testid="timeline">
              {timeline.slice(0, 50).map((t) => (
                <li key={t.id}>
                  <span class="muted">{time(t.at)}</span>{' '}
                  {t.opId ? (
                    <a href={`/ui/operations?op=${t.opId}`} onClick={(e) => { e.preventDefault(); navigate(`/operations?op=${t.opId}`); }}>
                      {t.text}
                    </a>
                  ) : (
                    t.text
                  )}{' '}
                  {t.state ? <Badge value={t.state} /> : null}
                </li>
              ))}
            </ol>
          )}
        </div>
      </div>
    </section>
  );
}
