/** Shared pieces: the router, the confirmation dialog (focus-trapped, Escape closes), problem display, badges. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Problem } from './api.ts';
import { feed, type FeedEvent } from './events.ts';

const BASE = '/ui';

/** The current path inside the dashboard (`/instances/abc`), query included. */
export function currentRoute(): string {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return (p || '/') + location.search;
}

const routeListeners = new Set<() => void>();
window.addEventListener('popstate', () => routeListeners.forEach((f) => f()));

/** Navigates inside the dashboard without reloading. */
export function navigate(to: string): void {
  history.pushState(null, '', BASE + to);
  routeListeners.forEach((f) => f());
  window.scrollTo(0, 0);
}

export function useRoute(): string {
  const [r, setR] = useState(currentRoute());
  useEffect(() => {
    const f = () => setR(currentRoute());
    routeListeners.add(f);
    return () => routeListeners.delete(f);
  }, []);
  return r;
}

/** A link inside the dashboard (a real `<a href>`, so it works with the keyboard and middle-click). */
export function Link(props: { to: string; children: ComponentChildren; class?: string; 'aria-current'?: 'page' | undefined }) {
  return (
    <a
      href={BASE + props.to}
      class={props.class}
      aria-current={props['aria-current']}
      onClick={(e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
}

/** Calls `fn` on every live event (optionally only those `match` accepts). */
export function useFeed(fn: (e: FeedEvent) => void, deps: unknown[] = []): void {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => feed.subscribe((e) => ref.current(e)), deps);
}

/** Reruns `fn` every `ms` while the page is shown. */
export function useInterval(fn: () => void, ms: number | null): void {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    if (ms === null) return;
    const t = setInterval(() => ref.current(), ms);
    return () => clearInterval(t);
  }, [ms]);
}

export function problemOf(e: unknown): Problem {
  if (e instanceof ApiError) return e.problem;
  return { status: 0, title: 'Error', detail: e instanceof Error ? e.message : String(e) };
}

/** A ProblemDetails, readable: status, title, detail and the other fields. */
export function ProblemView(props: { problem: Problem | undefined | null; label?: string }) {
  const p = props.problem;
  if (!p) return null;
  const { status, title, detail, type, instance, ...rest } = p;
  return (
    <div class="problem" role="alert">
      <p>
        <strong>
          {props.label ? `${props.label}: ` : ''}
          {status ? `${status} ` : ''}
          {title ?? ''}
        </strong>
      </p>
      <p class="detail">{detail}</p>
      {Object.keys(rest).length > 0 || type ? (
        <details>
          <summary>all fields</summary>
          <pre tabIndex={0}>{JSON.stringify({ type, instance, ...rest }, null, 2)}</pre>
        </details>
      ) : null}
    </div>
  );
}

const STATE_CLASS: Record<string, string> = {
  COMPLETED: 'ok',
  INSTANTIATED: 'ok',
  ONBOARDED: 'ok',
  ENABLED: 'ok',
  STARTED: 'ok',
  done: 'ok',
  healthy: 'ok',
  PROCESSING: 'busy',
  STARTING: 'busy',
  ROLLING_BACK: 'busy',
  PROCESSING_ONBOARD: 'busy',
  UPLOADING: 'busy',
  waiting: 'busy',
  firing: 'busy',
  healing: 'busy',
  FAILED_TEMP: 'warn',
  suppressed: 'warn',
  held: 'warn',
  STOPPED: 'warn',
  faulty: 'bad',
  degraded: 'warn',
  unknown: 'muted',
  FAILED: 'bad',
  failed: 'bad',
  ERROR: 'bad',
  ROLLED_BACK: 'muted',
  NOT_INSTANTIATED: 'muted',
  dropped: 'muted',
};

export function Badge(props: { value: string | undefined }) {
  const v = props.value ?? '—';
  return <span class={`badge ${STATE_CLASS[v] ?? 'muted'}`}>{v}</span>;
}

/**
 * A modal confirmation: shows the exact request (method, path, JSON body), keeps the focus
 * inside while open (Tab cycles), Escape or Cancel closes it and gives the focus back.
 */
export function ConfirmDialog(props: {
  title: string;
  method: string;
  path: string;
  body?: unknown;
  confirmLabel: string;
  danger?: boolean;
  children?: ComponentChildren;
  onConfirm: () => Promise<void>;
  onClose: () => void;
}) {
  const ref = useRef<HTMLDivElement>(null);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<Problem | null>(null);
  useEffect(() => {
    const opener = document.activeElement as HTMLElement | null;
    const el = ref.current;
    const focusables = () => [...(el?.querySelectorAll<HTMLElement>('button, [href], input, select, textarea, [tabindex]:not([tabindex="-1"])') ?? [])].filter((x) => !x.hasAttribute('disabled'));
    (el?.querySelector<HTMLElement>('[data-autofocus]') ?? focusables()[0])?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        props.onClose();
        return;
      }
      if (e.key !== 'Tab') return;
      const f = focusables();
      if (f.length === 0) return;
      const first = f[0] as HTMLElement;
      const last = f[f.length - 1] as HTMLElement;
      if (e.shiftKey && (document.activeElement === first || !el?.contains(document.activeElement))) {
        e.preventDefault();
        last.focus();
      } else if (!e.shiftKey && (document.activeElement === last || !el?.contains(document.activeElement))) {
        e.preventDefault();
        first.focus();
      }
    };
    document.addEventListener('keydown', onKey, true);
    return () => {
      document.removeEventListener('keydown', onKey, true);
      opener?.focus?.();
    };
  }, []);
  const request = `${props.method} ${props.path}${props.body !== undefined ? `\n\n${JSON.stringify(props.body, null, 2)}` : ''}`;
  return (
    <div class="backdrop">
      <div class="dialog" role="dialog" aria-modal="true" aria-labelledby="dialog-title" ref={ref}>
        <h2 id="dialog-title">{props.title}</h2>
        {props.children}
        <p>This request will be sent:</p>
        <pre class="request" data-testid="request-json" tabIndex={0} aria-label="request">
          {request}
        </pre>
        <ProblemView problem={err} />
        <div class="actions">
          <button
            type="button"
            class={props.danger ? 'danger' : 'primary'}
            disabled={busy}
            data-autofocus
            onClick={async () => {
              setBusy(true);
              setErr(null);
              try {
                await props.onConfirm();
                props.onClose();
              } catch (e) {
                setErr(problemOf(e));
                setBusy(false);
              }
            }}
          >
            {busy ? 'Sending…' : props.confirmLabel}
          </button>
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
        </div>
      </div>
    </div>
  );
}

/** Formats an ISO time as local time (seconds). */
export function time(iso: string | undefined | null): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { hour12: false });
}

export function shortId(id: string | undefined): string {
  return id ? (id.length > 13 ? `${id.slice(0, 8)}…` : id) : '—';
}

/** The column heads of a data table (`<thead>` with one `scope="col"` cell per name). */
export function ColumnHeads(props: { names: readonly string[] }) {
  return (
    <thead>
      <tr>
        {props.names.map((n) => (
          <th key={n} scope="col">
            {n}
          </th>
        ))}
      </tr>
    </thead>
  );
}

/** One labelled fact of a `<dl class="facts">` (a `<dt>`/`<dd>` pair in its own group). */
export function Fact(props: { label: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{props.label}</dt>
      <dd>{props.children}</dd>
    </div>
  );
}
